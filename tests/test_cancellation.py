"""Cancellation and failure: staged gradients are all-or-nothing, and nothing is left behind."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd.executors import _RUNTIMES


def _long_graph(n: int = 300) -> tuple[ag.Tensor, ag.Tensor, ag.Tensor]:
    ag.manual_seed(0)
    x = ag.randn(64, 64, dtype=ag.float64, requires_grad=True)
    w = ag.randn(64, 64, dtype=ag.float64, requires_grad=True)
    y = x
    for _ in range(n):
        y = (y @ w).tanh()
    return x, w, y.sum()


def _nothing_left_behind() -> None:
    """No node of the pass is queued on a device, and its withdrawn jobs are no-ops:
    once a marker job submitted now has run, each executor's queue is empty."""
    for rt in _RUNTIMES.values():
        assert rt.queued() == 0
        ex = rt._executor
        if ex is not None:
            ex.submit(lambda: None).result(timeout=10)
            assert ex._work_queue.qsize() == 0  # type: ignore[attr-defined]


async def _prime_grads(x: ag.Tensor, w: ag.Tensor) -> tuple[np.ndarray, np.ndarray]:
    await ((x * 2).sum() + (w * 3).sum()).backward()
    return x.grad.numpy().copy(), w.grad.numpy().copy()


@pytest.mark.asyncio
async def test_task_cancel_leaves_grads_untouched(offload_always: None) -> None:
    x, w, loss = _long_graph()
    gx, gw = await _prime_grads(x, w)
    tasks_before = asyncio.all_tasks()
    task = asyncio.ensure_future(loss.backward())
    await asyncio.sleep(0.005)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(w.grad.numpy(), gw)
    assert asyncio.all_tasks() == tasks_before
    _nothing_left_behind()
    # The engine keeps working.
    z = (x * x).sum()
    await z.backward()
    np.testing.assert_allclose(x.grad.numpy(), gx + 2 * x.detach().numpy())


@pytest.mark.asyncio
async def test_asyncio_timeout_and_wait_for_cancel_the_pass(offload_always: None) -> None:
    x, w, loss = _long_graph()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(loss.backward(retain_graph=True), timeout=0.002)
    assert x.grad is None and w.grad is None
    _nothing_left_behind()
    if hasattr(asyncio, "timeout"):
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.002):
                await loss.backward(retain_graph=True)
        assert x.grad is None
        _nothing_left_behind()
    await loss.backward()
    assert x.grad is not None


async def test_anyio_cancel_scope_cancels_the_pass(offload_always: None) -> None:
    """Runs on asyncio, uvloop and trio."""
    x, w, loss = _long_graph()
    with anyio.move_on_after(0.002) as scope:
        await loss.backward(retain_graph=True)
    assert scope.cancelled_caught
    assert x.grad is None and w.grad is None
    _nothing_left_behind()
    await loss.backward()
    assert x.grad is not None and w.grad is not None


async def test_cancel_inline_pass_stops_within_a_slice() -> None:
    """With kernels inline, the driver still notices cancellation at its next time-slice yield."""
    before = ag.get_offload()
    ag.set_offload("never")
    try:
        x = ag.tensor(np.ones(4), requires_grad=True)
        y = x
        for _ in range(60_000):
            y = y * 1.0
        loss = y.sum()
        with anyio.move_on_after(0.003) as scope:
            await loss.backward()
        assert scope.cancelled_caught
        assert x.grad is None
    finally:
        ag.set_offload(before)


class _Boom(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        raise ValueError("boom in backward")


async def test_failing_node_commits_nothing_including_retained_grads(offload_always: None) -> None:
    a = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    b = ag.tensor([3.0, 4.0], dtype=ag.float64, requires_grad=True)
    h = a * b
    h.retain_grad()
    loss = (h * h).sum() + _Boom.apply(b).sum()
    with pytest.raises(ValueError, match="boom in backward"):
        await loss.backward()
    assert a.grad is None and b.grad is None and h.grad is None
    _nothing_left_behind()
    await (h * h).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (a * b).detach().numpy() * b.detach().numpy())


async def test_post_accumulate_hooks_run_only_on_commit(offload_always: None) -> None:
    a = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    seen: list[np.ndarray] = []
    a.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    loss = (a * 2).sum() + _Boom.apply(a).sum()
    with pytest.raises(ValueError):
        await loss.backward()
    assert seen == []
    await (a * 2).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [2.0, 2.0])


class _CancelMyTask(ag.Function):
    """Identity whose backward cancels the task running the pass: by then the leaves of
    the branches that ran before it have their gradients staged."""

    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        return g


@pytest.mark.asyncio
async def test_cancel_after_leaves_were_staged_leaves_every_grad_untouched() -> None:
    """NOTE [Staged gradients]: a pass cancelled after some leaves' gradients were staged
    writes none of them (the other cancellation tests cancel before any leaf is reached)."""
    before = ag.get_offload()
    ag.set_offload("never")  # the cancelling backward runs on the loop, inside the pass's task
    try:
        a = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
        b = ag.tensor([3.0, 4.0], dtype=ag.float64, requires_grad=True)
        c = ag.tensor([5.0, 6.0], dtype=ag.float64, requires_grad=True)
        a.grad = ag.tensor([10.0, 20.0], dtype=ag.float64)
        # Nodes run from the last recorded: the a/c branch first (a's, c's and h's
        # gradients are staged), then _CancelMyTask, then the long chain before it, whose
        # time-slice yields see the cancel.
        y = b
        for _ in range(20_000):
            y = y * 1.0
        y = _CancelMyTask.apply(y)
        h = a * c
        h.retain_grad()
        loss = y.sum() + (h * 2.0).sum()
        reached: list[str] = []
        a.register_hook(lambda g: reached.append("a"))
        c.register_hook(lambda g: reached.append("c"))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.ensure_future(loss.backward())
        assert sorted(reached) == ["a", "c"]  # the leaves were reached before the cancel
        np.testing.assert_array_equal(a.grad.numpy(), [10.0, 20.0])
        assert b.grad is None and c.grad is None and h.grad is None
    finally:
        ag.set_offload(before)
