"""The blocking entry points (``backward_sync``, ``grad_sync``) drive the engine on the
calling thread without an event loop (NOTE [Loop-free passes] in _aio.py), and a pass
whose loop is closed under it goes away quietly."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
from helpers import t64
from aiograd import _aio
from test_cancellation import _Boom  # a custom Function whose backward raises


@pytest.fixture
def offload_always() -> Iterator[None]:
    before = ag.get_offload()
    ag.set_offload("always")
    yield
    ag.set_offload(before)


class _Spy(ag.Function):
    """Identity whose backward records which event loop (if any) runs it."""

    seen: list[str | None] = []

    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        return x * 1

    @staticmethod
    def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        _Spy.seen.append(_aio.running_loop_kind())
        return g


def test_backward_sync_starts_no_event_loop() -> None:
    _Spy.seen = []
    x = t64([1.0, 2.0])
    (_Spy.apply(x) * x).sum().backward_sync()
    assert _Spy.seen == [None]
    assert x.grad.tolist() == [2.0, 4.0]
    (g,) = ag.grad_sync((_Spy.apply(x) ** 2).sum(), [x])
    assert _Spy.seen == [None, None]
    assert g.tolist() == [2.0, 4.0]


def test_backward_sync_starts_no_thread_per_call() -> None:
    x = t64([1.0, 2.0])
    (x * 2).sum().backward_sync()
    before = threading.active_count()
    for _ in range(50):
        (x * 2).sum().backward_sync()
    assert threading.active_count() == before
    assert x.grad.tolist() == [102.0, 102.0]


def test_backward_sync_leaves_the_callers_context_alone() -> None:
    x = t64([1.0, 2.0])
    y = (x * 2).sum()
    with ag.no_grad():
        y.backward_sync()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()
    assert x.grad.tolist() == [2.0, 2.0]
    assert ag.autograd.engine.current_graph_task() is None


def test_backward_sync_with_kernels_on_device_threads(offload_always: None) -> None:
    ag.manual_seed(0)
    x = ag.randn(30, 30, dtype=ag.float64, requires_grad=True)
    w = ag.randn(30, 30, dtype=ag.float64, requires_grad=True)

    def loss() -> ag.Tensor:
        return ((x @ w).tanh() @ w).sin().sum()

    loss().backward_sync()
    got = (x.grad.numpy().copy(), w.grad.numpy().copy())
    x.grad = w.grad = None
    ag.set_offload("never")
    asyncio.run(loss().backward())
    np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-12)


def test_failed_backward_sync_with_device_work_leaves_grads_and_engine_usable(offload_always: None) -> None:
    x = t64([1.0, 2.0])
    x.grad = ag.tensor([5.0, 5.0], dtype=ag.float64)
    with pytest.raises(ValueError, match="boom"):
        ((x * 3).sin() + _Boom.apply(x)).sum().backward_sync()
    assert x.grad.tolist() == [5.0, 5.0]
    (x * 3).sum().backward_sync()
    assert x.grad.tolist() == [8.0, 8.0]


class _AsyncSquare(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    async def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        await asyncio.sleep(0)  # user code that needs a real event loop
        await anyio.sleep(0)
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_backward_sync_runs_an_async_backward_on_a_loop_of_its_own() -> None:
    x = t64([1.0, 3.0])
    (_AsyncSquare.apply(x) * 2).sum().backward_sync()
    assert x.grad.tolist() == [4.0, 12.0]
    assert _aio.running_loop_kind() is None


def test_backward_sync_through_reentrant_checkpoint() -> None:
    x = t64([0.5, 1.5])
    y = ag.checkpoint(lambda a: (a.sin() * a).exp(), x, use_reentrant=True)
    y.sum().backward_sync()
    ref = t64([0.5, 1.5])
    asyncio.run((ref.sin() * ref).exp().sum().backward())
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


def test_backward_sync_inside_a_sync_backward_of_a_backward_sync() -> None:
    """A reentrant blocking call: the inner pass is one level deeper, like an awaited one."""
    depths: list[int] = []

    class Inner(ag.Function):
        @staticmethod
        def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
            z = t64([1.0])
            z.register_hook(lambda g: depths.append(ag.autograd.engine.current_graph_task().reentrant_depth))
            with ag.enable_grad():
                (z * 2).sum().backward_sync()
            depths.append(ag.autograd.engine.current_graph_task().reentrant_depth)
            return g * z.grad

    x = t64([1.0, 2.0])
    Inner.apply(x).sum().backward_sync()
    assert x.grad.tolist() == [2.0, 2.0]
    assert depths == [1, 0]


# ----- a loop closed under a pending pass ---------------------------------------------


class _Stuck(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        return x * 1

    @staticmethod
    async def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        await asyncio.Event().wait()  # never set: the pass is pending when the loop closes
        return g


def _close_loop_under_pending_backward(loss: ag.Tensor) -> list[str]:
    """Start ``loss``'s backward on a loop, close the loop while the pass waits in ``_Stuck``,
    let the garbage collector finalize the pass; return what reached ``sys.unraisablehook``."""

    async def pass_() -> None:  # made on the loop: outside one, backward() would run at once
        await ag.backward(loss)

    return _close_loop_under_pending(pass_())


def _close_loop_under_pending(coro: Any) -> list[str]:
    unraisable: list[Any] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        loop = asyncio.new_event_loop()
        task = loop.create_task(coro)
        del coro
        loop.run_until_complete(asyncio.sleep(0.05))
        assert not task.done()
        loop.close()
        task._log_destroy_pending = False  # the test abandons it on purpose
        del task
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    return [f"{u.exc_type.__name__}: {u.exc_value}" for u in unraisable]


def test_closing_a_loop_with_a_pending_backward_is_quiet_and_leaves_grads() -> None:
    """The pass's coroutine is closed by the garbage collector, outside its task's context:
    nothing may be printed ("Token was created in a different Context"), and .grad stays."""
    x = t64([1.0, 2.0])
    assert _close_loop_under_pending_backward((_Stuck.apply(x) * x).sum()) == []
    assert x.grad is None
    asyncio.run((x * 2).sum().backward())
    assert x.grad.tolist() == [2.0, 2.0]


def test_closing_a_loop_with_pending_device_work_is_quiet(offload_always: None) -> None:
    ag.manual_seed(0)
    x = ag.randn(50, 50, dtype=ag.float64, requires_grad=True)
    assert _close_loop_under_pending_backward((_Stuck.apply(x) + (x @ x).tanh()).sum()) == []
    assert x.grad is None


def test_closing_a_loop_under_a_pending_no_grad_coroutine_is_quiet() -> None:
    @ag.no_grad()
    async def waits() -> None:
        await asyncio.Event().wait()

    @ag.inference_mode()
    async def waits_too() -> None:
        await asyncio.Event().wait()

    assert _close_loop_under_pending(waits()) == []
    assert _close_loop_under_pending(waits_too()) == []
    assert ag.is_grad_enabled()
