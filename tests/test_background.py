"""Executor jobs below the loop's priority while the machine is quiet (NOTE [Jobs run below the loop])."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd import background, executors
from aiograd.autograd.background import (EXECUTOR_NICE_ENV_VAR, BackgroundThread, ask_long_slice,
                                         executor_nice_by_env)
from aiograd.autograd.blas_threads import AdaptiveThreads

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are Linux's")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.fixture
def bg() -> Iterator[BackgroundThread]:
    b = BackgroundThread("test-background", 10)
    yield b
    b.stop()


# ---------------------------------------------------------------- the thread


@linux_only
def test_a_job_runs_on_the_background_thread_below_the_process(bg: BackgroundThread) -> None:
    base = _nice()
    name, nice = bg.run(lambda: (threading.current_thread().name, _nice()))
    assert name == "test-background" and nice == base + 10
    assert _nice() == base  # the caller keeps its priority
    assert bg.lowered and bg.wanted() and bg.jobs == 1
    assert bg.run(lambda a, b: a + b, 2, 3) == 5  # arguments in, result out; the same thread again
    assert bg.jobs == 2


def test_the_initializer_runs_on_the_thread_before_its_first_job() -> None:
    marks: list[str] = []
    b = BackgroundThread("test-background-init", 10, initializer=lambda: marks.append(threading.current_thread().name))
    try:
        if not b.wanted():
            pytest.skip("no background thread here")
        assert b.run(lambda: list(marks)) == ["test-background-init"]
    finally:
        b.stop()


@linux_only
def test_an_exception_is_raised_on_the_caller_and_the_thread_goes_on(bg: BackgroundThread) -> None:
    def fail() -> None:
        raise ValueError("in the job")

    with pytest.raises(ValueError, match="in the job"):
        bg.run(fail)

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # a BaseException too: nothing is lost on the way
        bg.run(interrupt)
    assert bg.run(lambda: "still here") == "still here"


@linux_only
def test_stop_ends_the_thread_and_a_later_job_starts_a_new_one(bg: BackgroundThread) -> None:
    first = bg.run(threading.get_ident)
    thread = bg._thread
    assert thread is not None and thread.is_alive()
    bg.stop()
    assert not thread.is_alive()
    bg.stop()  # twice: nothing to do
    assert bg.run(threading.get_ident) != first or not thread.is_alive()
    assert bg._thread is not None and bg._thread.is_alive()


def test_never_wanted_with_no_step_or_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not BackgroundThread("x", 0).wanted()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not BackgroundThread("x", 10).wanted()  # another system: a thread's priority is the process's


@linux_only
def test_a_refused_lowering_turns_the_thread_down(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> None:
        raise PermissionError("not here")

    monkeypatch.setattr(os, "setpriority", refuse)
    b = BackgroundThread("test-background-refused", 10)
    try:
        assert b.wanted()  # not known before it starts
        assert b.run(lambda: 7) == 7  # the job that found out still ran
        assert not b.lowered and not b.wanted()  # from now on, the jobs stay on the executor thread
    finally:
        b.stop()


def _starving(monkeypatch: pytest.MonkeyPatch) -> tuple[BackgroundThread, FakeClock, list[float]]:
    """A background thread whose clock and run delay the jobs themselves advance."""
    clock = FakeClock()
    delay = [0.0]
    monkeypatch.setattr(background, "_own_run_delay", lambda: lambda: delay[0])
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "setpriority", lambda *a: None)
    monkeypatch.setattr(background, "ask_long_slice", lambda tid: False)
    return BackgroundThread("test-background-starving", 10, clock=clock), clock, delay


def test_a_job_that_waited_most_of_its_time_for_a_core_starved(monkeypatch: pytest.MonkeyPatch) -> None:
    b, clock, delay = _starving(monkeypatch)

    def job(seconds: float, waited: float) -> None:
        clock.now += seconds
        delay[0] += waited

    try:
        b.run(job, 0.010, 0.008)
        assert b.last_starved and b.starved == 1  # 80% of 10 ms runnable but not on a core
        b.run(job, 0.010, 0.005)
        assert not b.last_starved and b.starved == 1  # 50%: our own loop taking the core, not a neighbour
        b.run(job, 0.0005, 0.0005)
        assert not b.last_starved  # too short to judge
        with pytest.raises(RuntimeError):
            b.run(lambda: (job(0.01, 0.01), (_ for _ in ()).throw(RuntimeError("late")))[1])
        assert b.last_starved and b.starved == 2  # a job that raised is judged too
    finally:
        b.stop()


def test_executor_nice_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXECUTOR_NICE_ENV_VAR, raising=False)
    assert executor_nice_by_env(10) == 10
    monkeypatch.setenv(EXECUTOR_NICE_ENV_VAR, "3")
    assert executor_nice_by_env(10) == 3
    monkeypatch.setenv(EXECUTOR_NICE_ENV_VAR, "0")
    assert executor_nice_by_env(10) == 0
    for bad in ("-1", "20", "ten"):
        monkeypatch.setenv(EXECUTOR_NICE_ENV_VAR, bad)
        with pytest.raises(ValueError, match=EXECUTOR_NICE_ENV_VAR):
            executor_nice_by_env(10)


@linux_only
def test_a_long_slice_is_asked_for_the_thread_only() -> None:
    box: list[Any] = []

    def ask() -> None:
        tid = threading.get_native_id()
        before = _nice()
        box.append((ask_long_slice(tid), _nice() == before))

    t = threading.Thread(target=ask)
    t.start()
    t.join()
    taken, same_nice = box[0]
    assert same_nice  # the request keeps the thread's niceness (sched_setattr sets both)
    assert isinstance(taken, bool)
    assert not ask_long_slice(2 ** 22 + 7)  # no such thread: refused, not raised


# ---------------------------------------------------------------- when the jobs go there


def _adaptive(readings: list[tuple[float, float] | None]) -> tuple[AdaptiveThreads, FakeClock]:
    clock = FakeClock()
    a = AdaptiveThreads(lambda n: None, lambda: readings.pop(0), clock)
    a.configure(True, 1, 2)
    return a, clock


def test_jobs_go_below_the_loop_after_a_quiet_second_and_not_beside_a_neighbour() -> None:
    quiet, busy = (0.1, 0.3), (0.9, 0.1)
    a, clock = _adaptive([quiet] * 12 + [busy, quiet] + [quiet] * 11)
    step = a.period_s * 1.001  # a reading a period apart (no float rounding at the second's edge)
    for _ in range(10):  # quiet readings for 0.9 s: not yet
        a.before_job()
        a.after_job()
        assert not a.quiet
        clock.now += step
    a.before_job()
    a.after_job()
    assert a.quiet  # 1.0 s of quiet readings (the loop's own load does not count)
    clock.now += step
    a.before_job()
    assert a.quiet
    clock.now += step
    a.before_job()  # a neighbour used 0.9 of a core
    assert not a.quiet
    for _ in range(10):
        clock.now += step
        a.before_job()
        assert not a.quiet  # the quiet second starts again from the first quiet reading
    clock.now += step
    a.before_job()
    assert a.quiet


def test_a_starved_job_keeps_the_jobs_up_for_another_quiet_second() -> None:
    a, clock = _adaptive([(0.0, 0.0)] * 30)
    a.before_job()
    clock.now += a.quiet_for_s
    a._next = 0.0
    a.before_job()
    assert a.quiet
    a.unsettle()
    assert not a.quiet
    for _ in range(9):
        clock.now += a.period_s
        a.before_job()
        assert not a.quiet
    clock.now += a.period_s + 1e-9
    a.before_job()
    assert a.quiet


def test_configure_forgets_the_quiet() -> None:
    a, clock = _adaptive([(0.0, 0.0)] * 3)
    a.quiet_for_s = 0.0
    a.before_job()
    assert a.quiet
    a.configure(True, 1, 2)
    assert not a.quiet


# ---------------------------------------------------------------- through the executors


@pytest.fixture
def quiet_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The adaptive sizing found the machine quiet (and reads nothing more during the test)."""
    if not executors.runtime(ag.device("cpu")).background.wanted():
        pytest.skip("jobs cannot run below the loop here (not Linux, AIOGRAD_EXECUTOR_NICE=0, or refused)")
    assert executors.runtime(ag.device("cpu")).executor  # started: its start configures the sizing
    monkeypatch.setattr(executors._adaptive, "active", False)
    monkeypatch.setattr(executors._adaptive, "quiet", True)
    yield


def _where() -> tuple[str, bool]:
    return threading.current_thread().name, executors.on_executor_thread()


async def test_offload_runs_below_the_loop_on_a_quiet_machine(quiet_machine: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    name, marked = await ag.offload(_where)
    assert name == "aiograd-cpu_background" and marked  # an executor thread: nested work runs inline there

    def inner() -> tuple[str, bool]:
        return executors.submit(_where).result(timeout=30)  # queued from an executor thread: run at once

    assert (await ag.offload(inner))[0] == "aiograd-cpu_background"  # no wait for itself (issue 19, item 1)
    with pytest.raises(ZeroDivisionError):
        await ag.offload(lambda: 1 / 0)
    monkeypatch.setattr(executors._adaptive, "quiet", False)
    assert (await ag.offload(_where))[0].startswith("aiograd-cpu_")
    assert (await ag.offload(_where))[0] != "aiograd-cpu_background"  # beside a neighbour: the executor thread


class _Failing:
    """A node whose kernel raises (run through the real ``_timed_apply``)."""

    def apply(self, grads: list[Any]) -> Any:
        raise RuntimeError("backward failed on purpose")


async def test_backward_nodes_run_below_the_loop_and_a_failure_loses_nothing(
        quiet_machine: None, offload_always: None, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    fail = [False]
    timed_apply = executors._timed_apply

    def recording(ctx: Any, node: Any, grads: list[Any]) -> Any:
        threads.append(threading.current_thread().name)
        return timed_apply(ctx, _Failing() if fail[0] else node, grads)

    monkeypatch.setattr(executors, "_timed_apply", recording)
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    await (x * x).sum().backward()
    assert threads and set(threads) == {"aiograd-cpu_background"}
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(6.0).reshape(2, 3))
    before = x.grad.numpy().copy()
    fail[0] = True
    with pytest.raises(RuntimeError, match="on purpose"):
        await (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), before)  # the failed pass left .grad as it was
    fail[0] = False
    await (x * x).sum().backward()  # and the engine works afterwards
    np.testing.assert_allclose(x.grad.numpy(), 2 * before)


async def test_a_starved_job_sends_the_next_ones_to_the_executor_thread(quiet_machine: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    bgt = executors.runtime(ag.device("cpu")).background
    monkeypatch.setattr(bgt, "starved_share", 0.0)  # any job of a millisecond or more counts as starved
    assert (await ag.offload(time.sleep, 0.002)) is None
    assert bgt.last_starved and not executors._adaptive.quiet
    assert (await ag.offload(_where))[0] != "aiograd-cpu_background"


def _backward_below_the_loop() -> bool:
    """One backward whose kernels run on the background thread; whether its gradient is right and
    they did run there."""
    seen: list[str] = []
    x = ag.tensor(np.arange(64 * 64, dtype=np.float64).reshape(64, 64) / 4096, requires_grad=True)

    async def main() -> None:
        await (x * x).sum().backward()
        seen.append(await ag.offload(lambda: threading.current_thread().name))

    import asyncio
    asyncio.run(main())
    return seen == ["aiograd-cpu_background"] and bool(np.allclose(x.grad.numpy(), 2 * x.detach().numpy()))


def _quiet_again() -> bool:
    """In the child: its fresh executor's start configured the sizing anew; the machine is quiet again."""
    assert executors.runtime(ag.device("cpu")).executor
    executors._adaptive.active, executors._adaptive.quiet = False, True
    return True


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
@pytest.mark.filterwarnings("ignore:This process .*is multi-threaded, use of fork:DeprecationWarning")
@pytest.mark.timeout(200)
def test_a_forked_child_runs_its_jobs_on_a_background_thread_of_its_own(quiet_machine: None,
                                                                          offload_always: None) -> None:
    assert _backward_below_the_loop()  # the parent's background thread is started and idle at the fork
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 5
        try:
            box: list[bool] = []
            t = threading.Thread(target=lambda: box.append(_quiet_again() and _backward_below_the_loop()),
                                 daemon=True)
            t.start()
            t.join(60)
            code = 3 if t.is_alive() else 0 if box == [True] else 4
        finally:
            os._exit(code)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0  # 3: hung on the parent's thread; 4: wrong or elsewhere
            return
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


async def test_the_profiler_shows_the_thread_a_node_ran_on(quiet_machine: None, offload_always: None) -> None:
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    with ag.profiler.profile() as prof:
        await (x * x).sum().backward()
    offloaded = [e for e in prof.events if e.offloaded]
    assert offloaded and {e.thread for e in offloaded} == {"aiograd-cpu_background"}
