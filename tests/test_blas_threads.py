"""BLAS threads that widen while the machine has cores to spare (aiograd/autograd/blas_threads.py).

NOTE [Adaptive BLAS threads]: the switching is driven by hand here (a fake clock,
fake load readings, a fake /proc/stat), so every test is deterministic: no
assertion depends on how fast anything ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd import executors
from aiograd.autograd.blas_threads import (WORKER_NICE_ENV_VAR, AdaptiveThreads, BlasWorkers, MachineLoad,
                                           worker_nice_by_env)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _adaptive(readings: list[tuple[float, float] | None]) -> tuple[AdaptiveThreads, list[int], FakeClock]:
    applied: list[int] = []
    clock = FakeClock()
    a = AdaptiveThreads(applied.append, lambda: readings.pop(0), clock)
    a.configure(True, 1, 2)
    return a, applied, clock


def test_widens_jobs_while_the_machine_is_idle_and_not_once_load_arrives() -> None:
    a, applied, clock = _adaptive([(0.1, 0.05), (1.0, 0.0), (0.0, 0.9), (0.2, 0.2)])
    a.before_job()
    assert applied == [2] and a.is_wide()  # other processes and the loop left the cores free
    a.after_job()
    assert applied == [2, 1] and not a.is_wide()  # between jobs, the pools are narrow
    clock.now += a.period_s
    a.before_job()
    a.after_job()
    assert applied == [2, 1]  # a busy neighbour: the job runs narrow, and nothing is resized
    clock.now += a.period_s
    a.before_job()
    assert applied == [2, 1]  # a busy loop: narrow as well
    a.after_job()
    clock.now += a.period_s
    a.before_job()
    a.before_job()  # already wide: no second call
    assert applied == [2, 1, 2]
    a.after_job()
    assert applied == [2, 1, 2, 1] and a.switches == 4


def test_reads_the_load_at_most_once_a_period() -> None:
    readings: list[tuple[float, float] | None] = [(0.0, 0.0), (1.5, 0.0)]
    a, applied, clock = _adaptive(readings)
    a.before_job()
    a.after_job()
    clock.now += a.period_s / 2
    for _ in range(10):
        a.before_job()
        a.after_job()
    assert applied == [2, 1] * 11 and readings == [(1.5, 0.0)]  # the reading holds for the period
    clock.now += a.period_s / 2
    a.before_job()
    assert readings == [] and not a.is_wide() and len(applied) == 22


def test_an_unknown_load_keeps_the_narrow_size() -> None:
    a, applied, clock = _adaptive([None, (0.0, 0.0), None])
    a.before_job()
    assert applied == [] and a.current == 1
    clock.now += a.period_s
    a.before_job()
    clock.now += a.period_s
    a.before_job()  # unknown again: the job that was wide stays so until it ends
    a.after_job()
    a.before_job()
    assert applied == [2, 1]


def test_the_threshold_counts_the_neighbours_and_the_loop_together() -> None:
    a, _, _ = _adaptive([])
    below = a.widen_below
    assert a.decide((below / 2, below / 2)) == 2
    assert a.decide((below / 2, below / 2 + 0.01)) == 1
    assert a.decide((below + 0.01, 0.0)) == 1


def test_inactive_never_reads_nor_resizes() -> None:
    readings: list[tuple[float, float] | None] = [(0.0, 0.0)]
    a, applied, _ = _adaptive(readings)
    for active, narrow, wide in ((False, 1, 2), (True, 2, 2)):  # turned off; nothing to widen to
        a.configure(active, narrow, wide)
        a.before_job()
        a.after_job()
        assert not a.active and applied == [] and readings == [(0.0, 0.0)]


# ----- reading the load ---------------------------------------------------------------


def _stat(path: Path, busy: int, idle: int) -> None:
    # cpu user nice system idle iowait irq softirq steal guest guest_nice (in clock ticks)
    path.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 {busy // 2} 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")


def test_machine_load_separates_other_processes_from_this_one_and_from_the_loop(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    hz = float(os.sysconf("SC_CLK_TCK"))
    wall, process, thread = FakeClock(), FakeClock(), {7: 3.0}
    _stat(stat, busy=1000, idle=5000)
    m = MachineLoad(str(stat), wall, process, thread_clock=lambda ident: thread[ident])
    assert m.available
    m.watch(7)
    assert m.read() is None  # the first reading has nothing to compare with
    # 2 s later: the machine was busy 3 s of CPU (guest time is already in user time), of
    # which this process used 1 s and its loop thread 0.5 s
    wall.now += 2.0
    process.now += 1.0
    thread[7] += 0.5
    _stat(stat, busy=1000 + int(3 * hz), idle=5000 + int(1 * hz))
    other, loop = m.read()  # type: ignore[misc]
    assert other == pytest.approx(1.0) and loop == pytest.approx(0.25)
    m.watch(8)  # another thread hands work over: its clock starts now
    thread[8] = 9.0
    assert m.read() is None


def test_machine_load_is_unavailable_without_proc_stat(tmp_path: Path) -> None:
    m = MachineLoad(str(tmp_path / "missing"))
    assert not m.available and m.read() is None


# ----- in the executors ---------------------------------------------------------------


@pytest.fixture
def driven(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[float, float] | None]]:
    """The process's adaptive sizing at its default, reading the loads this list holds."""
    if executors.available_cores() < 2 or not executors._machine.available:
        pytest.fail("these tests need Linux and 2 cores (CI has both)")
    before = executors._blas.requested
    # the sizing at its default: no size chosen through the environment (``make test`` sets
    # OPENBLAS_NUM_THREADS=1 and the like, which turn the sizing off)
    for var in (executors.ENV_VAR, *executors.BLAS_ENV_VARS):
        monkeypatch.delenv(var, raising=False)
    readings: list[tuple[float, float] | None] = []
    monkeypatch.setattr(executors._adaptive, "_read", lambda: readings.pop(0) if readings else None)
    # as with the default device alone (another test file may have started cpu:1's executor,
    # and two executors on 2 cores leave nothing to widen to)
    monkeypatch.setattr(executors, "live_threads", lambda: 1)
    ag.set_num_threads(None)
    yield readings
    executors._blas.requested = before
    monkeypatch.undo()
    executors._blas.apply()


def _due() -> None:
    executors._adaptive._next = 0.0  # the period is over: the next job reads the load


async def test_an_offloaded_call_runs_wide_while_the_machine_is_idle(driven: list[tuple[float, float] | None]) -> None:
    narrow = executors._BlasThreads.default()
    wide = executors.available_cores() // max(1, executors.live_threads())
    assert executors._adaptive.active and ag.get_num_threads() == narrow and wide > narrow
    driven.append((0.0, 0.1))
    _due()
    assert await ag.offload(ag.get_num_threads) == wide
    assert ag.get_num_threads() == narrow  # narrow again once the job is over
    driven.append((1.0, 0.0))  # a busy neighbour
    _due()
    assert await ag.offload(ag.get_num_threads) == narrow


async def test_an_offloaded_kernel_of_a_backward_runs_wide(driven: list[tuple[float, float] | None],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    apply_sync = executors._apply_sync

    def recording(node: object, grads: object) -> object:  # on the executor thread, in the job
        seen.append(ag.get_num_threads())
        return apply_sync(node, grads)  # type: ignore[arg-type]

    monkeypatch.setattr(executors, "_apply_sync", recording)
    x = ag.tensor(np.ones((64, 64)), requires_grad=True)
    loss = (x @ x).sum()
    driven.append((0.0, 0.0))
    _due()
    ag.set_offload("always")
    try:
        await loss.backward()
    finally:
        ag.set_offload("auto")
    narrow = executors._BlasThreads.default()
    assert seen and seen[0] == executors.available_cores() // max(1, executors.live_threads()) > narrow
    assert ag.get_num_threads() == narrow
    np.testing.assert_allclose(x.grad.numpy(), np.full((64, 64), 128.0))


def test_while_a_job_runs_wide_blas_nodes_leave_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A product run on the loop would wait for the executor's wide product: ``auto`` offloads it."""
    a = ag.tensor(np.ones((8, 8)), requires_grad=True)
    node = (a @ a).grad_fn
    assert type(node).__name__ in executors.BLAS_NODES
    elementwise = (a * 2).grad_fn
    fake, applied, clock = _adaptive([(0.0, 0.0), (0.0, 0.0)])
    monkeypatch.setattr(executors, "_adaptive", fake)
    assert not executors.policy.should_offload(node, 1e-3, False)  # tiny: inline
    clock.now += 1.0  # its hold is over (NOTE [Loop products hold BLAS narrow])
    fake.before_job()
    assert fake.is_wide() and executors.policy.should_offload(node, 1e-3, False)
    assert not executors.policy.should_offload(elementwise, 1e-3, False)  # not a BLAS product: unchanged
    fake.after_job()
    assert not executors.policy.should_offload(node, 1e-3, False)


def test_a_job_starting_while_the_loop_runs_a_blas_node_stays_narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """NOTE [Loop products hold BLAS narrow]: the loop, deciding to run a product inline, holds BLAS
    narrow for twice its predicted time; a job that starts meanwhile runs narrow, one after runs wide."""
    a = ag.tensor(np.ones((8, 8)), requires_grad=True)
    node = (a @ a).grad_fn
    fake, applied, clock = _adaptive([(0.0, 0.0), (0.0, 0.0)])
    monkeypatch.setattr(executors, "_adaptive", fake)
    monkeypatch.setattr(executors.policy, "rates", {type(node): 2e-3 / node.work})  # predicted: 2 ms
    assert not executors.policy.should_offload(node, 1.0, False)  # inline, holding BLAS narrow for 4 ms
    clock.now += 0.003  # the node still runs when a job starts
    fake.before_job()
    assert applied == [] and not fake.is_wide() and fake.held == 1
    fake.after_job()
    clock.now += 0.0015  # the hold is over
    fake._next = 0.0
    fake.before_job()
    assert applied == [2] and fake.is_wide()
    fake.after_job()


async def test_a_blas_node_run_on_the_loop_holds_blas_narrow_while_it_runs(
        driven: list[tuple[float, float] | None], monkeypatch: pytest.MonkeyPatch) -> None:
    adaptive = executors._adaptive
    during: list[int] = []
    held = adaptive.hold_narrow

    def hold(seconds: float) -> bool:
        ok = held(seconds)
        during.append(adaptive.loop_holds)
        return ok

    monkeypatch.setattr(adaptive, "hold_narrow", hold)
    monkeypatch.setattr(executors.policy, "rates", {})  # predicted at the default rate: 0.5 ms, inline
    x = ag.tensor(np.ones((64, 64)), requires_grad=True)
    loss = (x @ x).sum()  # MmBackward0: 2 * 64**3 of work, inline on the loop (nothing else waits)
    await loss.backward()
    assert during == [1] and adaptive.loop_holds == 0  # held while it ran, released after
    np.testing.assert_allclose(x.grad.numpy(), np.full((64, 64), 128.0))


def test_a_hold_ends_when_its_node_has_run_or_when_its_time_is_over() -> None:
    fake, applied, clock = _adaptive([(0.0, 0.0)] * 4)
    assert fake.hold_narrow(0.004) and fake.hold_narrow(0.004)  # two passes' nodes on the loop
    fake.release_hold()
    fake.before_job()
    assert applied == [] and fake.held == 1  # one node still runs
    fake.after_job()
    fake.release_hold()
    fake._next = 0.0
    fake.before_job()
    assert applied == [2]  # both ran: the job widens at once, before the hold's time is over
    fake.after_job()
    assert fake.hold_narrow(0.004)  # a node that raises: never released
    clock.now += 0.005
    fake._next = 0.0
    fake.before_job()
    assert applied == [2, 1, 2]  # its hold is over with its time
    fake.after_job()
    assert fake.hold_narrow(0.004) and fake.loop_holds == 1  # the stale hold no longer counts


def test_the_loop_and_a_widening_job_always_see_each_other() -> None:
    """Each side writes its mark before it reads the other's: a job that sees no hold has marked
    itself wide before the loop looks (the node goes to the executor); a loop that sees BLAS narrow
    has held before the job looks (the job stays narrow)."""
    fake, applied, clock = _adaptive([(0.0, 0.0)])
    fake.before_job()  # the job widened first ...
    assert fake.is_wide() and not fake.hold_narrow(0.002)  # ... so the loop hands its node over
    assert fake.loop_holds == 0  # and holds nothing
    fake.after_job()
    fake, applied, clock = _adaptive([(0.0, 0.0)])
    seen: list[bool] = []
    real_set = fake._set_threads

    def racing_set(n: int) -> None:
        seen.append(True)
        real_set(n)

    fake._set_threads = racing_set
    assert fake.hold_narrow(0.002)  # the loop held first ...
    fake.before_job()  # ... so the job does not widen
    assert seen == [] and not fake.is_wide()


def test_a_size_set_from_outside_holds_while_it_is_set() -> None:
    touched = [True]
    applied: list[int] = []
    clock = FakeClock()
    a = AdaptiveThreads(applied.append, lambda: (0.0, 0.0), clock, untouched=lambda: not touched[0])
    a.configure(True, 1, 2)
    a.before_job()
    assert applied == [] and not a.is_wide()  # a threadpoolctl block (or a BLAS variable) is in force
    a.after_job()
    touched[0] = False  # the block ended
    a.before_job()
    assert applied == [2]


async def test_a_threadpoolctl_block_or_a_variable_keeps_jobs_narrow(driven: list[tuple[float, float] | None],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import threadpoolctl

    narrow = executors._BlasThreads.default()
    driven.extend([(0.0, 0.0)] * 3)
    _due()
    with threadpoolctl.threadpool_limits(limits=narrow + 1, user_api="blas"):
        assert await ag.offload(ag.get_num_threads) == narrow + 1  # not resized by aiograd
    monkeypatch.setenv("AIOGRAD_NUM_THREADS", str(narrow))
    _due()
    assert await ag.offload(ag.get_num_threads) == narrow
    monkeypatch.delenv("AIOGRAD_NUM_THREADS")
    _due()
    assert await ag.offload(ag.get_num_threads) > narrow


def test_a_size_chosen_by_the_user_turns_it_off(driven: list[tuple[float, float] | None]) -> None:
    ag.set_num_threads(1)
    assert not executors._adaptive.active
    ag.set_num_threads(None)
    assert executors._adaptive.active


_PROBE = (
    "import json, aiograd as ag\n"
    "from aiograd.autograd import executors\n"
    "print(json.dumps([executors._adaptive.active, ag.get_num_threads()]))\n"
)


@pytest.mark.parametrize(("env", "active"), [({}, True), ({"AIOGRAD_ADAPTIVE_THREADS": "0"}, False),
                                             ({"AIOGRAD_NUM_THREADS": "1"}, False),
                                             ({"OPENBLAS_NUM_THREADS": "1"}, False)])
def test_the_environment_turns_it_off(env: dict[str, str], active: bool) -> None:
    clean = {k: v for k, v in os.environ.items()
             if k not in (executors.ENV_VAR, "AIOGRAD_ADAPTIVE_THREADS", *executors.BLAS_ENV_VARS)}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         timeout=120, check=True)
    is_active, threads = json.loads(out.stdout.strip().splitlines()[-1])
    assert is_active == (active and executors.available_cores() > 1 and executors._machine.available)
    if "OPENBLAS_NUM_THREADS" not in env:
        assert threads == (1 if env else executors._BlasThreads.default())  # starts narrow


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
@pytest.mark.filterwarnings("ignore:This process .*is multi-threaded, use of fork:DeprecationWarning")
def test_a_child_forked_during_a_wide_job_starts_narrow(driven: list[tuple[float, float] | None]) -> None:
    narrow = executors._BlasThreads.default()
    driven.append((0.0, 0.0))
    _due()
    executors._adaptive.before_job()  # as a job starting on this thread
    assert executors._adaptive.is_wide() and ag.get_num_threads() > narrow
    found = executors._workers.done
    executors._workers.done = True  # the parent found its BLAS workers (NOTE [BLAS workers yield])
    try:
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            ok = not executors._adaptive.is_wide() and ag.get_num_threads() == narrow
            ok = ok and not executors._workers.done  # its workers are new threads: looked for again
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        executors._workers.done = found
        executors._adaptive.after_job()
    assert os.waitstatus_to_exitcode(status) == 0
    assert ag.get_num_threads() == narrow


def test_every_blas_node_name_names_a_node_class() -> None:
    # BLAS_NODES matches by class name: a renamed class would silently stop leaving the loop
    from aiograd.autograd.graph import Node

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    assert executors.BLAS_NODES <= {cls.__name__ for cls in subclasses(Node)}


# ----- NOTE [BLAS workers yield] -------------------------------------------------------


class FakeThreads:
    """Foreign threads with CPU clocks a test advances by hand, and the renices asked for."""

    def __init__(self, tids: list[int]) -> None:
        self.cpu = {t: 0.0 for t in tids}
        self.reniced: list[tuple[int, int]] = []

    def workers(self, clock: FakeClock) -> BlasWorkers:
        return BlasWorkers(None, lambda: list(self.cpu), self.cpu.__getitem__,
                           lambda tid, step: self.reniced.append((tid, step)), clock)


def test_the_threads_that_worked_during_a_wide_job_are_lowered_once() -> None:
    clock, fake = FakeClock(), FakeThreads([11, 12, 13])
    w = fake.workers(clock)
    w.done = False  # as on Linux
    w.watch()
    clock.now += 0.010
    fake.cpu[12] += 0.006  # a BLAS worker took its share of the kernel
    fake.cpu[13] += 0.0001  # another library's thread woke briefly
    w.check()
    assert fake.reniced == [(12, BlasWorkers.nice_step)] and w.done and w.lowered == [12]


def test_a_job_too_short_or_run_on_one_thread_decides_nothing() -> None:
    clock, fake = FakeClock(), FakeThreads([11])
    w = fake.workers(clock)
    w.done = False
    w.watch()
    clock.now += BlasWorkers.min_job_s / 2
    fake.cpu[11] += BlasWorkers.min_job_s / 2
    w.check()  # too short to tell the share from clock noise
    w.watch()
    clock.now += 0.010  # a small product: BLAS ran it on the calling thread alone
    w.check()
    assert fake.reniced == [] and not w.done
    w.check()  # without a watch: nothing to compare
    assert not w.done


def test_the_sizing_looks_for_the_workers_once_a_period_until_found() -> None:
    clock, fake = FakeClock(), FakeThreads([11])
    looks: list[str] = []

    class Counted(BlasWorkers):
        def watch(self) -> None:
            looks.append("watch")
            super().watch()

        def check(self) -> None:
            looks.append("check")
            super().check()

    w = Counted(None, lambda: list(fake.cpu), fake.cpu.__getitem__,
                lambda tid, step: fake.reniced.append((tid, step)), clock)
    w.done = False
    a = AdaptiveThreads(lambda n: None, lambda: (0.0, 0.0), clock, workers=w)
    a.configure(True, 1, 2)
    a.before_job()
    clock.now += 0.010  # the kernel ran on one thread
    a.after_job()
    a.before_job()  # same period: no second look
    a.after_job()
    assert looks == ["watch", "check", "check"] and not w.done
    clock.now += a.period_s
    a.before_job()
    fake.cpu[11] += 0.005
    clock.now += 0.010
    a.after_job()
    assert w.done and fake.reniced == [(11, BlasWorkers.nice_step)]
    clock.now += a.period_s
    looks.clear()
    a.before_job()
    a.after_job()
    assert looks == ["check"]  # found: no more watching (check without a watch does nothing)


@pytest.mark.parametrize(("value", "step"), [(None, 10), ("0", 0), ("19", 19), (" 5 ", 5)])
def test_the_workers_priority_step_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                             value: str | None, step: int) -> None:
    if value is None:
        monkeypatch.delenv(WORKER_NICE_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(WORKER_NICE_ENV_VAR, value)
    assert worker_nice_by_env() == step


@pytest.mark.parametrize("value", ["-1", "20", "low"])
def test_a_bad_workers_priority_step_is_refused_in_words(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(WORKER_NICE_ENV_VAR, value)
    with pytest.raises(ValueError, match="AIOGRAD_BLAS_WORKER_NICE must be an integer from 0 to 19"):
        worker_nice_by_env()


def test_the_workers_are_left_alone_where_narrow_jobs_use_them_too() -> None:
    clock, fake = FakeClock(), FakeThreads([11])
    w = fake.workers(clock)
    w.done = False
    a = AdaptiveThreads(lambda n: None, lambda: (0.0, 0.0), clock, workers=w)
    a.configure(True, 3, 4)  # 5 cores: narrow kernels run on 3 threads, 2 of them workers
    a.before_job()
    fake.cpu[11] += 0.005
    clock.now += 0.010
    a.after_job()
    assert fake.reniced == [] and not w.done


def test_workers_not_to_be_lowered_are_still_found() -> None:
    clock, fake = FakeClock(), FakeThreads([11])
    w = BlasWorkers(0, lambda: list(fake.cpu), fake.cpu.__getitem__,
                    lambda tid, step: fake.reniced.append((tid, step)), clock)
    w.done = False
    w.watch()
    fake.cpu[11] += 0.005
    clock.now += 0.010
    w.check()
    assert w.found == [11] and w.lowered == [] and fake.reniced == [] and w.done
    w.reset()  # a forked child: its workers are new threads
    assert w.found == [] and w.lowered == []


# ----- NOTE [A starved worker ends the wide period] ------------------------------------


class StarvingWorker:
    """One BLAS worker, already found, whose run delay a test advances by hand."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.broken = False

    def delay_of(self, tid: int) -> float:
        if self.broken:
            raise OSError("no schedstat")
        return self.delay


def _wide_sizing(worker: StarvingWorker) -> tuple[AdaptiveThreads, list[int], FakeClock, list[str]]:
    clock, applied, reads = FakeClock(), list[int](), list[str]()
    w = BlasWorkers(None, lambda: [11], lambda tid: 0.0, lambda tid, step: None, clock, delay_of=worker.delay_of)
    w.found, w.lowered, w.done = [11], [11], True

    def read() -> tuple[float, float]:
        reads.append(f"read at {clock.now:.3f}")
        return (0.0, 0.0)  # an idle machine

    a = AdaptiveThreads(applied.append, read, clock, workers=w)
    a.configure(True, 1, 2)
    return a, applied, clock, reads


def _job(a: AdaptiveThreads, clock: FakeClock, worker: StarvingWorker, seconds: float, waited: float) -> None:
    a.before_job()
    clock.now += seconds
    worker.delay += waited
    a.after_job()


def test_a_worker_that_waited_half_a_wide_job_for_a_core_ends_the_wide_period() -> None:
    worker = StarvingWorker()
    a, applied, clock, reads = _wide_sizing(worker)
    _job(a, clock, worker, 0.004, 0.0002)  # the loop took the worker's core for a moment: still wide
    assert applied == [2, 1] and a.widen and a.starved == 0
    _job(a, clock, worker, 0.030, 0.027)  # a newcomer shares the worker's core
    assert applied == [2, 1, 2, 1] and not a.widen and a.starved == 1
    starved_at = clock.now
    _job(a, clock, worker, 0.003, 0.0)  # the rest of the period runs narrow
    assert applied == [2, 1, 2, 1] and a.current == 1
    # the next reading comes a full period after the starved job, and measures from it
    assert reads[-1] == f"read at {starved_at:.3f}"
    clock.now = starved_at + a.period_s
    _job(a, clock, worker, 0.003, 0.0)
    assert reads[-1] == f"read at {clock.now - 0.003:.3f}" and a.widen and applied[-2:] == [2, 1]


@pytest.mark.parametrize("case", ["short job", "unreadable delay", "no worker found"])
def test_a_wide_job_that_cannot_tell_a_starved_worker_changes_nothing(case: str) -> None:
    worker = StarvingWorker()
    a, applied, clock, _ = _wide_sizing(worker)
    assert a.workers is not None
    if case == "unreadable delay":
        worker.broken = True
    if case == "no worker found":
        a.workers.found = []
    seconds = a.starved_min_s / 2 if case == "short job" else 0.030
    _job(a, clock, worker, seconds, seconds)
    assert a.widen and a.starved == 0 and applied == [2, 1]


def test_a_wide_jobs_start_is_judged_by_that_job_only() -> None:
    worker = StarvingWorker()
    a, _, clock, _ = _wide_sizing(worker)
    a.before_job()  # this thread's job widens...
    a._apply(a.narrow)  # ...and another executor's job, ending first, sets BLAS back
    clock.now += 0.030
    a.after_job()  # nothing left to narrow: the start is dropped, not judged later
    worker.delay += 1.0
    a.widen = False
    a.before_job()  # a narrow job of this thread...
    a._apply(a.wide)  # ...while another executor's job runs wide
    a.after_job()
    assert a.starved == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="run delays are read from Linux's /proc")
def test_a_threads_run_delay_is_read_from_the_kernel() -> None:
    w = BlasWorkers()
    w.found = [threading.get_native_id()]
    first = w.run_delay()
    assert first is not None and first >= 0.0
    assert w.run_delay() is not None  # read again through the descriptor kept open
    w.found = [2 ** 22 + 7]  # no such thread of this process
    assert w.run_delay() is None
    w.reset()
    assert w._delay_files == {}


WORKERS_PROBE = """
import asyncio, json, os, threading
import numpy as np
import aiograd as ag
from aiograd.autograd import executors
executors._adaptive._read = lambda: (0.0, 0.0)  # an idle machine, whatever the test machine's load
executors._adaptive.quiet_for_s = 0.0  # and quiet from the first reading (NOTE [Jobs run below the loop])
executors._BlasThreads.default = staticmethod(lambda: 1)  # narrow kernels on one thread, as on 2 cores
a = np.random.rand(512, 784).astype(np.float32)
b = np.random.rand(784, 512).astype(np.float32)

async def main():
    for _ in range(20):
        executors._adaptive._next = 0.0
        await ag.offload(lambda: a @ b)
        if executors._workers.done:
            break
    python = {t.native_id: t.name for t in threading.enumerate()}
    nice = {int(t): os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")}
    print(json.dumps({"lowered": executors._workers.lowered,
                      "python": {python[t]: n for t, n in nice.items() if t in python},
                      "foreign": {str(t): n for t, n in nice.items() if t not in python}}))

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are read from Linux's /proc")
def test_the_blas_workers_of_a_real_process_run_below_its_python_threads() -> None:
    if executors.available_cores() < 2:
        pytest.fail("this test needs 2 cores (CI has them)")
    env = {k: v for k, v in os.environ.items() if k not in (executors.ENV_VAR, *executors.BLAS_ENV_VARS)}
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", WORKERS_PROBE], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    seen = json.loads(out)
    assert seen["lowered"], seen  # the product at two threads showed its worker
    base = seen["python"]["MainThread"]
    assert all(seen["foreign"][str(t)] == base + BlasWorkers.nice_step for t in seen["lowered"]), seen
    # the loop and the executor thread keep their priority; on an idle machine the jobs ran on the
    # executor's background thread, as far below (NOTE [Jobs run below the loop])
    assert seen["python"]["aiograd-cpu_0"] == base, seen
    assert seen["python"]["aiograd-cpu_background"] == base + BlasWorkers.nice_step, seen
