"""Many backward passes on one loop, time slices, and passes from several tasks."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import numpy as np
import pytest

import aiograd as ag


@pytest.fixture(params=["never", "always"])
def offload(request: pytest.FixtureRequest) -> Iterator[str]:
    before = ag.get_offload()
    ag.set_offload(request.param)
    yield request.param
    ag.set_offload(before)


def _mlp_loss(x: ag.Tensor, w1: ag.Tensor, w2: ag.Tensor) -> ag.Tensor:
    return ((x @ w1).tanh() @ w2).sin().sum()


async def test_concurrent_passes_on_independent_graphs_equal_sequential(offload: str) -> None:
    ag.manual_seed(1)
    w1 = ag.randn(8, 16, dtype=ag.float64, requires_grad=True)
    w2 = ag.randn(16, 4, dtype=ag.float64, requires_grad=True)
    xs = [ag.randn(5, 8, dtype=ag.float64, requires_grad=True) for _ in range(40)]

    for x in xs:
        await _mlp_loss(x, w1, w2).backward()
    seq_x = [x.grad.numpy().copy() for x in xs]
    seq_w1 = w1.grad.numpy().copy()
    for t in [w1, w2, *xs]:
        t.grad = None

    async with anyio.create_task_group() as tg:
        for x in xs:
            tg.start_soon(_backward_of, _mlp_loss(x, w1, w2))
    for x, ref in zip(xs, seq_x):
        np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w1.grad.numpy(), seq_w1, rtol=1e-10, atol=1e-10)


async def _backward_of(loss: ag.Tensor, retain: bool = False) -> None:
    await loss.backward(retain_graph=retain)


async def test_concurrent_passes_over_one_retained_graph(offload: str) -> None:
    ag.manual_seed(2)
    x = ag.randn(20, 20, dtype=ag.float64, requires_grad=True)
    y = x
    for _ in range(15):
        y = (y @ x).tanh() + y.sin()
    loss = y.sum()
    await loss.backward(retain_graph=True)
    one = x.grad.numpy().copy()
    x.grad = None
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(_backward_of, loss, True)
    np.testing.assert_allclose(x.grad.numpy(), 6 * one, rtol=1e-10)


async def test_concurrent_grad_calls_do_not_touch_grad(offload: str) -> None:
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    loss = (x * x * x).sum()
    results: list[np.ndarray] = []

    async def one() -> None:
        (g,) = await ag.grad(loss, [x], retain_graph=True)
        results.append(g.numpy())

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(one)
    assert x.grad is None
    for r in results:
        np.testing.assert_allclose(r, 3 * np.array([1.0, 4.0, 9.0]))


async def test_long_pass_yields_to_other_tasks() -> None:
    """The driver gives the loop back every time slice, so a ticker keeps running."""
    before = ag.get_offload()
    ag.set_offload("never")
    ag.set_time_slice(0.001)
    ticks: list[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            ticks.append(time.perf_counter())
            await anyio.sleep(0)

    try:
        x = ag.tensor(np.ones(4), requires_grad=True)
        y = x
        for _ in range(40_000):
            y = y * 1.0
        loss = y.sum()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.sleep(0)
            t0 = time.perf_counter()
            await loss.backward()
            elapsed = time.perf_counter() - t0
            done = True
        during = [t for t in ticks if t0 <= t <= t0 + elapsed]
        # At least one tick for every ~10 slices; with no yields there would be none.
        assert len(during) >= max(2, int(elapsed / 0.01))
    finally:
        ag.set_offload(before)


def test_set_time_slice_validates() -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        ag.set_time_slice(0)
    old = ag.get_time_slice()
    ag.set_time_slice(0.002)
    assert ag.get_time_slice() == 0.002
    ag.set_time_slice(old)


async def test_many_small_concurrent_passes_complete() -> None:
    ag.manual_seed(3)
    w = ag.randn(4, 4, requires_grad=True)

    async def step(i: int) -> None:
        x = ag.randn(2, 4)
        await ((x @ w).relu().sum() * (i + 1)).backward()

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(step, i)
    assert w.grad is not None and np.isfinite(w.grad.numpy()).all()
