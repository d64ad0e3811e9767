"""Many tasks training one model: the pattern of docs/server.md is safe and keeps the loop free.

The pattern: ``loss = await ag.offload(compute_loss)``, ``await loss.backward()``,
``await opt.step_async()``, with no lock. Every task's gradient is applied
exactly once, and no pass fails because a step changed a parameter it saved.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
import aiograd.optim as optim

TASKS = 8


async def _shuffle(rng: random.Random) -> None:
    """Yield a random number of times, so the tasks interleave differently at each await."""
    for _ in range(rng.randrange(4)):
        await anyio.sleep(0)


async def test_eight_concurrent_training_tasks_all_contribute_exactly() -> None:
    """A linear loss has a gradient that does not depend on the weights, so the final
    weights say exactly which gradients were applied: each task's inputs are a distinct
    power of two, and SGD at lr=1 must subtract every one of them once."""
    lin = nn.Linear(4, 3).to(ag.float64)
    with ag.no_grad():
        lin.weight.data = np.zeros((3, 4))
        lin.bias.data = np.zeros(3)
    opt = optim.SGD(lin.parameters(), lr=1.0)
    xs = [np.full((2, 4), 2.0**i) for i in range(TASKS)]
    rng = random.Random(0)
    errors: list[BaseException] = []

    async def train(i: int) -> None:
        # x requires grad, so the forward saves the weight: a step changing it in place
        # between this forward and this backward would make the backward fail.
        x = ag.tensor(xs[i], requires_grad=True)
        try:
            loss = await ag.offload(lambda: lin(x).sum())
            await _shuffle(rng)
            await loss.backward()
            await _shuffle(rng)
            await opt.step_async()
        except BaseException as e:  # reported below with the others
            errors.append(e)

    async with anyio.create_task_group() as tg:
        for i in range(TASKS):
            tg.start_soon(train, i)
    assert errors == []
    column_sums = sum(x.sum(axis=0) for x in xs)  # d loss / d weight[j, :] of every task, summed
    np.testing.assert_array_equal(lin.weight.detach().numpy(), -np.tile(column_sums, (3, 1)))
    np.testing.assert_array_equal(lin.bias.detach().numpy(), np.full(3, -2.0 * TASKS))
    assert all(p.grad is None for p in lin.parameters())


async def test_an_in_place_step_between_forward_and_backward_is_what_fails() -> None:
    """Why the pattern exists: torch's opt.step() writes the weights another pass saved."""
    lin = nn.Linear(4, 3).to(ag.float64)
    opt = optim.SGD(lin.parameters(), lr=0.1)
    x = ag.tensor(np.ones((2, 4)), requires_grad=True)
    first, second = lin(x).sum(), lin(x).sum()
    await first.backward()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        await second.backward()
    opt.zero_grad()
    first, second = lin(x).sum(), lin(x).sum()
    await first.backward()
    await opt.step_async()
    await second.backward()


def _mlp(seed: int, width: int) -> nn.Module:
    ag.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


async def test_eight_tasks_train_one_mlp_without_failures() -> None:
    model = _mlp(0, 64)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((32, 64), dtype=np.float32))
    y = ag.tensor(rng.integers(0, 10, 32))
    losses: list[float] = []

    async def train(i: int) -> None:
        for _ in range(3):
            loss = await ag.offload(lambda: F.cross_entropy(model(x), y))
            await loss.backward()
            await opt.step_async()
            losses.append(loss.item())

    async with anyio.create_task_group() as tg:
        for i in range(TASKS):
            tg.start_soon(train, i)
    assert len(losses) == 3 * TASKS
    assert opt.state[next(iter(model.parameters()))]["step"] >= 1
    final = F.cross_entropy(model(x), y).item()
    assert final < losses[0]  # it learned


@pytest.fixture
def big_mlp() -> tuple[nn.Module, ag.Tensor, ag.Tensor]:
    """Built outside the watched test: initializing 2048x2048 weights takes ~100 ms here."""
    rng = np.random.default_rng(1)
    x = ag.tensor(rng.standard_normal((1024, 64), dtype=np.float32))
    return _mlp(1, 2048), x, ag.tensor(rng.integers(0, 10, 1024))


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """Move the test runner's objects out of the collector's sight: a full collection of
    pytest's large heap holds the GIL for up to ~100 ms on a loaded machine, which is
    not what the watchdog is here to measure."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.mark.no_blocking(max_ms=150)
async def test_a_training_step_through_the_pattern_never_blocks_the_loop(
    big_mlp: tuple[nn.Module, ag.Tensor, ag.Tensor], frozen_heap: None
) -> None:
    """Sized so that the forward alone, run on the loop, would block it for longer than the
    limit (~250 ms at one BLAS thread); the limit leaves room for a loaded CI machine."""
    model, x, y = big_mlp
    opt = optim.SGD(model.parameters(), lr=1e-3)

    def compute_loss() -> Any:
        return F.cross_entropy(model(x), y)

    async def train() -> None:
        loss = await ag.offload(compute_loss)
        await loss.backward()
        await opt.step_async()

    async with anyio.create_task_group() as tg:
        tg.start_soon(train)
        tg.start_soon(train)
