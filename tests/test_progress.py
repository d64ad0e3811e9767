"""``backward(progress=...)`` and ``grad(progress=...)`` (the progress half of autograd/monitor.py)."""

from __future__ import annotations

import sys
import threading
from time import perf_counter
from typing import Any, Callable

import pytest

import aiograd as ag
from aiograd.autograd import monitor
from aiograd.autograd.engine import current_graph_task
from aiograd.profiler import profile


class Recorder:
    """A progress callable that keeps every (done, total), with when and on which thread it came."""

    def __init__(self, clock: Callable[[], float] = perf_counter) -> None:
        self.clock = clock
        self.calls: list[tuple[int, int]] = []
        self.times: list[float] = []
        self.threads: set[str] = set()

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))
        self.times.append(self.clock())
        self.threads.add(threading.current_thread().name)

    def assert_monotone_and_complete(self) -> int:
        assert self.calls, "the callback was never called"
        (total,) = {t for _, t in self.calls}
        dones = [d for d, _ in self.calls]
        assert dones == sorted(dones) and len(set(dones)) == len(dones)
        assert self.calls[-1] == (total, total)
        return total


def _x(n: int = 3) -> ag.Tensor:
    return ag.tensor([0.1 * (i + 1) for i in range(n)], dtype=ag.float64, requires_grad=True)


def _chain(x: ag.Tensor, n: int) -> ag.Tensor:
    for _ in range(n):
        x = x.sin()
    return x.sum()


async def _events_of(run: Any) -> int:
    """How many node runs the profiler sees for ``await run()``."""
    with profile() as prof:
        await run()
    return len(prof.events)


async def test_callback_is_monotone_and_ends_at_total_total() -> None:
    rec = Recorder()
    x = _x()
    await _chain(x, 10).backward(progress=rec)
    assert rec.assert_monotone_and_complete() == 12  # 10 sin + sum + AccumulateGrad
    assert x.grad is not None


async def test_total_is_what_the_pass_runs_after_pruning_for_inputs() -> None:
    x, y = _x(), _x()

    def loss() -> ag.Tensor:
        return (x.sin() + y.cos()).sum()

    cases = {
        "backward": lambda p=None: loss().backward(progress=p),
        "backward(inputs)": lambda p=None: loss().backward(inputs=[x], progress=p),
        "grad": lambda p=None: ag.grad(loss(), [x], progress=p),
        "grad two": lambda p=None: ag.grad(loss(), [x, y], progress=p),
    }
    totals = {}
    for name, run in cases.items():
        rec = Recorder()
        await run(rec)
        totals[name] = rec.assert_monotone_and_complete()
        assert totals[name] == await _events_of(run), name  # the profiler sees exactly those nodes run
    # Sum, Add, Sin, Cos, AccumulateGrad x2 / inputs=[x]: no Cos branch / grad: AccumulateGrad captures only
    assert totals == {"backward": 6, "backward(inputs)": 4, "grad": 3, "grad two": 4}


class _StepClock:
    """A clock that advances ``step`` seconds each time it is read (the monitor's reads only)."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def test_at_most_once_per_time_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _StepClock(ag.get_time_slice() / 10)  # each node seems to take a tenth of a slice
    monkeypatch.setattr(monitor, "perf_counter", clock)
    rec = Recorder(clock=lambda: clock.now)
    await _chain(_x(), 300).backward(progress=rec)
    assert rec.assert_monotone_and_complete() == 302
    gaps = [b - a for a, b in zip(rec.times[:-2], rec.times[1:-1])]  # the last call always comes
    assert all(g >= ag.get_time_slice() * (1 - 1e-9) for g in gaps)
    assert 28 <= len(rec.calls) <= 32  # about one per slice: 302 nodes over 30.2 slices


async def test_offloaded_nodes_count_and_the_callback_stays_on_the_loop_thread(offload_always: None) -> None:
    rec = Recorder()
    x = _x(64)
    await _chain(x, 20).backward(progress=rec)
    assert rec.assert_monotone_and_complete() == 22
    assert rec.threads == {threading.current_thread().name}


async def test_a_reentrant_pass_is_one_node_of_the_outer_pass() -> None:
    rec = Recorder()
    w = ag.tensor([[1.0, 0.5], [0.0, 2.0]], dtype=ag.float64, requires_grad=True)
    x = _x(2)
    out = ag.checkpoint(lambda t: (t @ w).tanh().sin(), x, use_reentrant=True).sum()
    await out.backward(progress=rec)
    # Sum, the checkpoint node, AccumulateGrad of x (w, closed over, is written by the reentrant pass)
    assert rec.assert_monotone_and_complete() == 3


async def test_tqdm_bar(capsys: pytest.CaptureFixture[str]) -> None:
    await _chain(_x(), 30).backward(progress=True)
    err = capsys.readouterr().err
    assert "backward" in err and "32/32" in err and "100%" in err


def test_backward_sync_takes_progress() -> None:
    rec = Recorder()
    _chain(_x(), 4).backward_sync(progress=rec)
    assert rec.assert_monotone_and_complete() == 6


async def test_a_pass_has_a_monitor_only_when_profiled_or_showing_progress() -> None:
    """NOTE [Pass monitor]: unwatched passes carry none, so the hot loop skips all of it."""
    seen: list[Any] = []

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            seen.append(current_graph_task().monitor)
            return g

    for off in (None, False):
        await Probe.apply(_x()).sum().backward(progress=off)
    assert seen == [None, None]
    await Probe.apply(_x()).sum().backward(progress=lambda done, total: None)
    with profile():
        await Probe.apply(_x()).sum().backward()
    assert seen[2] is not None and seen[3] is not None


async def test_a_failing_pass_stops_reporting_and_leaves_grad_alone() -> None:
    def boom(grad: Any) -> None:
        raise ValueError("boom")

    rec = Recorder()
    x = _x()
    h = x * 1
    h.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        await _chain(h, 3).backward(progress=rec)
    assert x.grad is None
    assert all(d < t for d, t in rec.calls)


async def test_bad_progress_values_are_refused() -> None:
    with pytest.raises(TypeError, match=r"progress must be True, False/None or a callable taking \(done, total\)"):
        await _chain(_x(), 2).backward(progress="yes")
    with pytest.raises(TypeError, match="progress must be"):
        await ag.grad(_chain(_x(), 2), [_x()], progress=3, allow_unused=True)


async def test_progress_bar_without_tqdm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in [m for m in sys.modules if m == "tqdm" or m.startswith("tqdm.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    x = _x()
    with pytest.raises(ModuleNotFoundError, match=r"progress=True\) needs .*'tqdm'.*pip install 'aiograd\[viz\]'"):
        await _chain(x, 2).backward(progress=True)
    assert x.grad is None
    rec = Recorder()
    await _chain(x, 2).backward(progress=rec)  # a callable needs no tqdm
    rec.assert_monotone_and_complete()
