"""Devices, their executor threads and the offload policy (aiograd/device.py, aiograd/autograd/executors.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd import _aio
from aiograd.autograd import executors
from aiograd.autograd.engine import Engine
from aiograd.autograd.executors import live_threads, policy, runtime
from aiograd.ops.pointwise.elementwise import ELEMENTWISE
from aiograd.ops.linalg import MmBackward0

SinBackward0 = ELEMENTWISE["sin"].nodes[0]  # made from the row's formula (ops/_pointwise.py)


@pytest.fixture
def offload_mode() -> Iterator[Any]:
    """Restore the offload mode after the test."""
    before = ag.get_offload()
    yield ag.set_offload
    ag.set_offload(before)


@pytest.fixture
def thread_log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the thread each SinBackward0/MmBackward0 kernel runs on."""
    log: list[str] = []
    for cls in (SinBackward0, MmBackward0):
        orig = cls.apply

        def apply(self: Any, grads: Any, orig: Any = orig) -> Any:
            log.append(threading.current_thread().name)
            return orig(self, grads)

        monkeypatch.setattr(cls, "apply", apply)
    return log


def test_device_names_and_identity() -> None:
    assert ag.device("cpu") is ag.device("cpu:0")
    assert ag.device("cpu:1") is ag.device("cpu:1")
    assert str(ag.device("cpu:1")) == "cpu:1"
    assert ag.device("cpu") == "cpu"
    assert ag.tensor([1.0]).device == ag.device("cpu")


def test_bad_device_names_are_refused_clearly() -> None:
    with pytest.raises(RuntimeError, match="Expected a device like 'cpu' or 'cpu:1'"):
        ag.device("gpu")
    with pytest.raises(RuntimeError, match="no CUDA backend"):
        ag.device("cuda:0")


def test_ops_on_two_devices_raise() -> None:
    a = ag.ones(3)
    b = ag.ones(3).to("cpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ag.ones(2, 2) @ ag.ones(2, 2).to("cpu:2")


def test_set_offload_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="'auto', 'always', 'never'"):
        ag.set_offload("sometimes")


async def test_to_device_is_differentiable_and_grad_returns_to_source() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    y = x.to("cpu:1")
    assert y.device == ag.device("cpu:1")
    assert y.grad_fn.name() == "ToCopyBackward0"
    loss = ((y * y).sum()).to("cpu")
    await loss.backward()
    assert x.grad.device == ag.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def _branchy_graph(seed: int) -> tuple[ag.Tensor, ag.Tensor, ag.Tensor]:
    ag.manual_seed(seed)
    x = ag.randn(40, 40, dtype=ag.float64, requires_grad=True)
    w = ag.randn(40, 40, dtype=ag.float64, requires_grad=True)
    w1 = w.to("cpu:1")
    y = x
    for _ in range(6):
        y = (y @ w).sin() * 0.5 + ((y.to("cpu:1") @ w1).sin()).to("cpu") * 0.5
    return x, w, y.sum()


@pytest.mark.parametrize("mode", ["never", "always", "auto"])
async def test_offload_modes_give_identical_gradients(mode: str, offload_mode: Any) -> None:
    offload_mode("never")
    x, w, loss = _branchy_graph(0)
    await loss.backward()
    ref = (x.grad.numpy().copy(), w.grad.numpy().copy())
    offload_mode(mode)
    x, w, loss = _branchy_graph(0)
    await loss.backward()
    # Equal up to summation order: with two devices, which branch's gradient is
    # added first into a shared input buffer depends on which thread finishes first.
    np.testing.assert_allclose(x.grad.numpy(), ref[0], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(w.grad.numpy(), ref[1], rtol=1e-12, atol=1e-9)


async def test_always_runs_kernels_on_their_device_thread(offload_mode: Any, thread_log: list[str]) -> None:
    offload_mode("always")
    x, w, loss = _branchy_graph(1)
    await loss.backward()
    assert thread_log, "no kernel ran"
    assert {"aiograd-cpu", "aiograd-cpu:1"} <= {name.rsplit("_", 1)[0] for name in thread_log}
    assert threading.current_thread().name not in thread_log


async def test_never_runs_kernels_inline(offload_mode: Any, thread_log: list[str]) -> None:
    offload_mode("never")
    x, w, loss = _branchy_graph(2)
    await loss.backward()
    assert set(thread_log) == {threading.current_thread().name}


async def _tick_until(stop: anyio.Event) -> None:
    """Another coroutine of the loop: a 1 ms ticker, as a server or a monitor would run."""
    while not stop.is_set():
        await anyio.sleep(0.001)


async def test_auto_offloads_large_kernels_and_keeps_tiny_ones_inline(offload_mode: Any, thread_log: list[str]) -> None:
    offload_mode("auto")
    big = ag.randn(300, 300, dtype=ag.float64, requires_grad=True)
    tiny = ag.randn(3, dtype=ag.float64, requires_grad=True)
    loss = (big @ big).sum() + tiny.sin().sum()
    policy.rates[MmBackward0] = 1e-9  # 300^3 * 2 flops: 54 ms predicted, far past a slice
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_tick_until, stop)  # someone waits for the loop (NOTE [Nobody waiting])
            await loss.backward()
            stop.set()
    finally:
        policy.rates.pop(MmBackward0, None)
    loop_thread = threading.current_thread().name
    # MmBackward0 (300^3 multiply-adds) leaves the loop; the 3-element SinBackward0 does not.
    assert thread_log.count(loop_thread) == 1
    assert any(name.startswith("aiograd-cpu") for name in thread_log)


def test_policy_learns_rates_from_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_aio, "loop_may_want_turn", lambda within: True)  # as if a loop ran other coroutines

    class FakeNode:
        work = 10_000_000

    policy.rates.pop(FakeNode, None)
    policy.warmed_up.discard(FakeNode)
    # The first run of a type (a lazy import, first-touch page faults: 200 ms) teaches nothing:
    # the type keeps the default rate rather than one 20,000x too slow for a dozen passes.
    policy.observe(FakeNode(), 0.2)  # type: ignore[arg-type]
    assert FakeNode not in policy.rates
    assert policy.predict(FakeNode()) == pytest.approx(FakeNode.work * policy.default_rate)  # type: ignore[arg-type]
    # Measured fast (10 us for 1e7 units): predicted below the threshold, stays inline.
    policy.observe(FakeNode(), 1e-5)  # type: ignore[arg-type]
    assert policy.rates[FakeNode] == pytest.approx(1e-12)
    assert not policy.should_offload(FakeNode(), 1e-3, True)  # type: ignore[arg-type]
    # Later runs measure slow (10 ms): the learned rate rises and it is offloaded.
    for _ in range(5):
        policy.observe(FakeNode(), 1e-2)  # type: ignore[arg-type]
    assert policy.should_offload(FakeNode(), 1e-3, False)  # type: ignore[arg-type]
    policy.rates.pop(FakeNode, None)


@pytest.mark.skipif(executors.kernel_clock is not time.thread_time, reason="the thread CPU clock is coarse here")
def test_policy_learns_from_cpu_time_not_from_preemption(offload_mode: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A kernel that waits 20 ms without working, as one preempted on a busy machine:
    # timed on the wall clock it taught a rate that sent it past a slice ever after.
    orig = SinBackward0.apply

    def preempted(self: Any, grads: Any) -> Any:
        time.sleep(0.02)
        return orig(self, grads)

    monkeypatch.setattr(SinBackward0, "apply", preempted)
    offload_mode("auto")
    policy.rates.pop(SinBackward0, None)
    try:
        x = ag.randn(20000, dtype=ag.float64, requires_grad=True)
        for _ in range(3):
            x.sin().sum().backward_sync()
        assert SinBackward0 in policy.rates
        assert policy.rates[SinBackward0] * 20000 < 1e-3  # 20 ms of waiting are not 20 ms of work
    finally:
        policy.rates.pop(SinBackward0, None)


def test_policy_offloads_only_for_responsiveness_or_parallelism(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_aio, "loop_may_want_turn", lambda within: True)  # as if a loop ran other coroutines

    class FakeNode:
        work = 1_000_000

    policy.rates[FakeNode] = 5e-10  # predicted 500 us: above the hand-off threshold, within a slice
    try:
        assert not policy.should_offload(FakeNode(), 1e-3, False)  # type: ignore[arg-type]  # nothing to overlap
        assert policy.should_offload(FakeNode(), 1e-3, True)  # type: ignore[arg-type]  # the loop has work
        assert policy.should_offload(FakeNode(), 2e-4, False)  # type: ignore[arg-type]  # overruns the slice
        policy.rates[FakeNode] = 1e-10  # predicted 100 us: not worth a hand-off even with work to overlap
        assert not policy.should_offload(FakeNode(), 1e-3, True)  # type: ignore[arg-type]
    finally:
        policy.rates.pop(FakeNode, None)


def test_policy_stretch_runs_kernels_a_little_past_a_slice_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeNode:
        work = 1_000_000

    monkeypatch.setattr(policy, "stretch", 1.5)
    monkeypatch.setattr(_aio, "loop_may_want_turn", lambda within: True)  # as if a loop ran other coroutines
    policy.rates[FakeNode] = 1.2e-9  # predicted 1.2 ms: past a 1 ms slice, within 1.5 of them
    try:
        assert not policy.should_offload(FakeNode(), 1e-3, False)  # type: ignore[arg-type]
        policy.rates[FakeNode] = 2e-9  # predicted 2 ms: past the stretch
        assert policy.should_offload(FakeNode(), 1e-3, False)  # type: ignore[arg-type]
    finally:
        policy.rates.pop(FakeNode, None)


async def test_auto_runs_a_sequential_graph_of_mid_sized_kernels_inline(offload_mode: Any,
                                                                      thread_log: list[str]) -> None:
    # Kernels predicted above the hand-off threshold but within a time slice, one after
    # another: offloading them would buy nothing, so they stay on the loop thread.
    offload_mode("auto")
    policy.rates[MmBackward0] = 4e-10
    try:
        w = ag.randn(64, 64, dtype=ag.float64, requires_grad=True)
        h = ag.randn(64, 64, dtype=ag.float64)
        for _ in range(4):
            h = h @ w  # MmBackward0 work: 64^3 * 2 flops, predicted ~210 us
        await h.sum().backward()
    finally:
        policy.rates.pop(MmBackward0, None)
    assert thread_log and set(thread_log) == {threading.current_thread().name}


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_a_loop_with_nothing_else_to_run_keeps_long_kernels_inline(offload_mode: Any,
                                                                         thread_log: list[str]) -> None:
    # NOTE [Nobody waiting]: no other coroutine, timer or watched socket wants the loop, so a
    # kernel past a slice runs on the loop thread; a 1 ms ticker beside it sends it away.
    offload_mode("auto")
    policy.rates[MmBackward0] = 1e-6  # every product predicted far past a slice
    try:
        w = ag.randn(64, 64, dtype=ag.float64, requires_grad=True)
        loss = (ag.randn(64, 64, dtype=ag.float64) @ w).sum()
        await loss.backward()
        assert thread_log == [threading.current_thread().name]
        thread_log.clear()
        stop = anyio.Event()
        ticker = asyncio.ensure_future(_tick_until(stop))
        try:
            await (ag.randn(64, 64, dtype=ag.float64) @ w).sum().backward()
        finally:
            stop.set()
            await ticker
        assert len(thread_log) == 1 and thread_log[0].startswith("aiograd-cpu")
    finally:
        policy.rates.pop(MmBackward0, None)


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_loop_may_want_turn_sees_callbacks_timers_and_sockets() -> None:
    assert not _aio.loop_may_want_turn(0.01)  # this test's coroutine alone
    loop = asyncio.get_running_loop()
    handle = loop.call_soon(lambda: None)
    assert _aio.loop_may_want_turn(0.01)
    handle.cancel()
    await asyncio.sleep(0)  # the cancelled handle leaves the ready queue
    far = loop.call_later(60, lambda: None)
    assert not _aio.loop_may_want_turn(0.01)  # due long after the kernel would end
    assert _aio.loop_may_want_turn(120)
    far.cancel()
    near = loop.call_later(0.005, lambda: None)
    assert _aio.loop_may_want_turn(0.01)
    near.cancel()
    assert not _aio.loop_may_want_turn(0.01)  # a cancelled timer wants nothing
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    try:
        assert _aio.loop_may_want_turn(0.01)  # a listening socket may bring a request at any moment
    finally:
        server.close()
        await server.wait_closed()
    assert not _aio.loop_may_want_turn(0.01)


@pytest.mark.asyncio(loop_factories=["uvloop"])
async def test_loop_may_want_turn_assumes_uvloop_is_busy() -> None:
    assert _aio.loop_may_want_turn(0.01)  # its queues are not Python objects: it cannot be told


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_loop_may_want_turn_assumes_trio_is_busy() -> None:
    assert _aio.loop_may_want_turn(0.01)


def test_loop_may_want_turn_without_a_loop_is_false() -> None:
    assert not _aio.loop_may_want_turn(1.0)


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_turn_probe_sees_callbacks_due_timers_sockets_posted_calls_and_a_cancel() -> None:
    wanted = _aio.turn_probe()
    assert not wanted()  # this test's coroutine alone
    loop = asyncio.get_running_loop()
    handle = loop.call_soon(lambda: None)
    assert wanted()
    handle.cancel()
    await asyncio.sleep(0)
    later = loop.call_later(0.05, lambda: None)
    assert not wanted()  # a timer not yet due would not run in a turn taken now
    await asyncio.sleep(0.06)
    later.cancel()
    timer = loop.call_at(loop.time() - 1.0, lambda: None)  # due already
    assert wanted()
    timer.cancel()
    assert not wanted()
    posted = threading.Thread(target=loop.call_soon_threadsafe, args=(lambda: None,))
    posted.start()
    posted.join()
    assert wanted()  # a call another thread posted
    await asyncio.sleep(0)  # the call runs; the loop reads its wake-up byte after this coroutine's turn
    await asyncio.sleep(0)
    assert not wanted()
    task = asyncio.current_task()
    assert task is not None
    task.cancel()  # a cancel of the running task waits for its next suspension
    assert wanted()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(0)
    task.uncancel()
    assert not wanted()
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    try:
        assert wanted()  # a listening socket may bring a request at any moment
    finally:
        server.close()
        await server.wait_closed()
    assert not wanted()


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_turn_probe_is_always_true_on_a_loop_with_signal_handlers() -> None:
    # a signal for the loop's handler is only a byte in its wake-up pipe until the loop reads it
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, lambda: None)
    try:
        assert _aio.turn_probe()()
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
    assert not _aio.turn_probe()()


@pytest.mark.asyncio(loop_factories=["uvloop"])
async def test_turn_probe_assumes_uvloop_is_busy() -> None:
    assert _aio.turn_probe()()


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_turn_probe_assumes_trio_is_busy() -> None:
    assert _aio.turn_probe()()


def test_turn_probe_without_a_loop_is_false() -> None:
    assert not _aio.turn_probe()()


def _counting_yields(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the engine's yields to asyncio from here on (NOTE [Nobody waiting])."""
    count = [0]
    plain = _aio._asyncio_yield

    def counted() -> Any:
        count[0] += 1
        return plain()

    monkeypatch.setattr(_aio, "_asyncio_yield", counted)
    return count


def _chain_loss(n: int) -> ag.Tensor:
    x = ag.tensor(np.ones(4), requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0
    return y.sum()


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_a_pass_on_an_idle_loop_does_not_yield(monkeypatch: pytest.MonkeyPatch, offload_mode: Any) -> None:
    offload_mode("never")
    old = ag.get_time_slice()
    ag.set_time_slice(1e-6)  # every check finds the slice over
    loss = _chain_loss(2000)
    yields = _counting_yields(monkeypatch)
    try:
        await loss.backward()
    finally:
        ag.set_time_slice(old)
    assert yields[0] == 0


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_a_pass_yields_to_a_signal_handler_of_the_loop(offload_mode: Any) -> None:
    # The signal (sent by a hook half-way through the pass) sits in the loop's wake-up pipe, where
    # the loop's queues do not show it: its handler must still run before the pass ends.
    offload_mode("never")
    loop = asyncio.get_running_loop()
    handled: list[bool] = []
    finished = False
    x = ag.tensor(np.ones(4), requires_grad=True)
    y = x
    for k in range(60_000):
        y = y * 1.0
        if k == 30_000:
            y.register_hook(lambda g: os.kill(os.getpid(), signal.SIGUSR1))
    loop.add_signal_handler(signal.SIGUSR1, lambda: handled.append(finished))
    try:
        await y.sum().backward()
        finished = True
        while not handled:
            await asyncio.sleep(0)
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
    assert handled == [False], "the signal's handler waited for the whole pass"


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_a_pass_yields_when_a_timer_falls_due(offload_mode: Any) -> None:
    offload_mode("never")
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()
    loss = _chain_loss(60_000)
    loop.call_later(0.002, fired.set)
    t0 = time.perf_counter()
    task = asyncio.ensure_future(loss.backward())
    await fired.wait()
    fired_after = time.perf_counter() - t0
    done = task.done()
    await task
    elapsed = time.perf_counter() - t0
    if elapsed < 0.05:
        pytest.skip(f"the pass took {elapsed * 1e3:.0f} ms: too short to tell")
    assert not done, f"the timer ran only after the pass ({fired_after * 1e3:.1f} of {elapsed * 1e3:.1f} ms)"


def test_a_pass_without_an_event_loop_hands_off_nothing_for_responsiveness(offload_mode: Any,
                                                                           thread_log: list[str]) -> None:
    # backward_sync: no loop waits for a turn, so a kernel past a slice gains nothing on the
    # device thread (the calling thread would wait for it) and runs on the calling thread.
    offload_mode("auto")
    policy.rates[MmBackward0] = 1e-6  # every product predicted far past a slice
    try:
        w = ag.randn(64, 64, dtype=ag.float64, requires_grad=True)
        h = ag.randn(64, 64, dtype=ag.float64)
        for _ in range(3):
            h = h @ w
        h.sum().backward_sync()
    finally:
        policy.rates.pop(MmBackward0, None)
    assert len(thread_log) == 3 and set(thread_log) == {threading.current_thread().name}


async def test_thread_count_is_constant_over_many_passes(offload_mode: Any) -> None:
    offload_mode("always")
    x, w, loss = _branchy_graph(3)
    await loss.backward()
    threads_before = threading.active_count()
    executors_before = live_threads()
    for seed in range(10):
        x, w, loss = _branchy_graph(seed)
        await loss.backward()
    assert threading.active_count() == threads_before
    assert live_threads() == executors_before


async def test_reentrant_backward_with_device_work_does_not_deadlock(offload_mode: Any) -> None:
    """A node whose backward awaits a nested pass that itself needs the device threads."""
    offload_mode("always")

    class Nested(ag.Function):
        @staticmethod
        def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
            ctx.save_for_backward(x)
            return x * 1.0

        @staticmethod
        async def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
            (x,) = ctx.saved_tensors
            with ag.enable_grad():
                x1 = x.detach().to("cpu:1").requires_grad_()
                inner = (x1 @ x1).sin().sum()
            (gx,) = await ag.grad(inner, [x1])
            return g * gx.to("cpu")

    threads_before = threading.active_count()
    x = ag.randn(30, 30, dtype=ag.float64, requires_grad=True)
    y = (x.to("cpu:1") @ x.to("cpu:1")).to("cpu")
    loss = Nested.apply(y).sum()
    await loss.backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    assert threading.active_count() <= threads_before + 2  # at most the two device executors, once


def test_device_runtime_is_shared_per_device() -> None:
    assert runtime(ag.device("cpu:1")) is runtime(ag.device("cpu:1"))
    assert runtime(ag.device("cpu:1")) is not runtime(ag.device("cpu"))
    assert isinstance(Engine(), Engine)


def test_device_module_is_a_leaf() -> None:
    """aiograd/device.py imports nothing of aiograd, so every layer may name a device."""
    import ast
    import inspect as _inspect

    import aiograd.device

    tree = ast.parse(_inspect.getsource(aiograd.device))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m in imported if m.startswith("aiograd") or m.startswith(".")] == []
    assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))


def test_discard_drops_a_passes_queued_nodes_on_every_device() -> None:
    class FakeTask:
        error = None
        reentrant_depth = 0

    class FakeNode:
        sequence_nr = 7

    mine, other = FakeTask(), FakeTask()
    rts = [runtime(ag.device("cpu")), runtime(ag.device("cpu:3"))]
    for rt in rts:
        with rt._lock:  # queued but never submitted: no device thread pops them
            rt._queue.push(mine, FakeNode(), [])  # type: ignore[arg-type]
            rt._queue.push(other, FakeNode(), [])  # type: ignore[arg-type]
    assert executors.discard(mine) == 2  # type: ignore[arg-type]
    assert [rt.queued() for rt in rts] == [1, 1]
    assert executors.discard(other) == 2  # type: ignore[arg-type]
    assert [rt.queued() for rt in rts] == [0, 0]
