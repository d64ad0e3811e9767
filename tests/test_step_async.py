"""Optimizer.step_async: step() then zero_grad(), off the loop, copy-on-write (NOTE [Step off the loop])."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import anyio
import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.optim as optim

OPTIMIZERS: dict[str, Callable[[Any], optim.Optimizer]] = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd-momentum-nesterov": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
    "adamw-amsgrad": lambda ps: optim.AdamW(ps, lr=0.01, amsgrad=True),
    "rmsprop-centered": lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "adagrad": lambda ps: optim.Adagrad(ps, lr=0.1),
    "adadelta": lambda ps: optim.Adadelta(ps),
    "adamax": lambda ps: optim.Adamax(ps),
    "nadam": lambda ps: optim.NAdam(ps),
    "radam": lambda ps: optim.RAdam(ps),
}


def _model(seed: int) -> nn.Module:
    ag.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)).to(ag.float64)


def _loss(model: nn.Module, i: int) -> ag.Tensor:
    rng = np.random.default_rng(i)
    x = ag.tensor(rng.standard_normal((3, 5)))
    return (model(x) ** 2).mean()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
async def test_step_async_equals_step_then_zero_grad(name: str) -> None:
    sync_model, async_model = _model(0), _model(0)
    sync_opt, async_opt = OPTIMIZERS[name](sync_model.parameters()), OPTIMIZERS[name](async_model.parameters())
    for i in range(4):
        await _loss(sync_model, i).backward()
        sync_opt.step()
        sync_opt.zero_grad()
        await _loss(async_model, i).backward()
        await async_opt.step_async()
        assert all(p.grad is None for p in async_model.parameters())
    for a, b in zip(sync_model.parameters(), async_model.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    sync_state, async_state = sync_opt.state_dict()["state"], async_opt.state_dict()["state"]
    assert sync_state.keys() == async_state.keys()
    for i in sync_state:
        for k, v in sync_state[i].items():
            np.testing.assert_array_equal(np.asarray(async_state[i][k]), np.asarray(v), err_msg=k)


async def test_step_async_replaces_arrays_and_bumps_versions() -> None:
    model = _model(1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    p = next(iter(model.parameters()))
    old_array, old_version = p._data, p._version
    old_values = old_array.copy()
    await _loss(model, 0).backward()
    await opt.step_async()
    assert p._data is not old_array and p._version == old_version + 1
    np.testing.assert_array_equal(old_array, old_values)  # copy-on-write: the old array is untouched


async def test_a_pass_recorded_before_the_step_still_runs_on_the_old_values() -> None:
    model = _model(2)
    opt = optim.SGD(model.parameters(), lr=0.5)
    reference = _model(2)
    first, late = _loss(model, 0), _loss(model, 1)  # both recorded on the same values
    expected = _loss(reference, 1)
    await first.backward()
    await opt.step_async()  # a sync opt.step() here makes late.backward() fail (in-place check)
    await late.backward()
    await expected.backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


async def test_a_plain_step_under_a_pass_in_flight_fails_and_points_at_step_async() -> None:
    model = _model(2)
    opt = optim.SGD(model.parameters(), lr=0.5)
    first, late = _loss(model, 0), _loss(model, 1)  # another task's pass, recorded before the step
    await first.backward()
    opt.step()
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*`await opt\.step_async\(\)`"):
        await late.backward()


async def test_the_copy_keeps_the_parameters_dtype_and_takes_the_gradients_layout() -> None:
    w = ag.tensor(np.ones((3, 2), dtype=np.float32), requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    w._grad = ag.Tensor._wrap(np.asfortranarray(np.full((3, 2), 0.5)))  # float64, Fortran-ordered
    await opt.step_async()
    assert w.dtype == np.float32 and w._data.flags.f_contiguous
    assert opt.state[w]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(w.detach().numpy(), 0.9, rtol=1e-6)


async def test_step_async_without_gradients_does_nothing() -> None:
    model = _model(3)
    opt = optim.Adam(model.parameters())
    before = [p._data for p in model.parameters()]
    await opt.step_async()
    assert [p._data for p in model.parameters()] == before and not opt.state


async def test_gradients_committed_during_a_step_are_kept_for_the_next(executor_blocked: threading.Event) -> None:
    w = ag.tensor([1.0, 1.0], dtype=ag.float64, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    await (w * ag.tensor([1.0, 2.0], dtype=ag.float64)).sum().backward()
    async with anyio.create_task_group() as tg:
        tg.start_soon(opt.step_async)  # takes [1, 2], then waits behind the blocked executor
        await anyio.sleep(0.01)
        await (w * ag.tensor([4.0, 8.0], dtype=ag.float64)).sum().backward()
        executor_blocked.set()
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, -1.0])
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 8.0])


async def test_cancelled_step_that_has_not_started_gives_the_gradients_back(
    executor_blocked: threading.Event,
) -> None:
    w = ag.tensor([1.0, 1.0], dtype=ag.float64, requires_grad=True)
    opt = optim.SGD([w], lr=1.0, momentum=0.5)
    await (w * 3).sum().backward()
    with anyio.move_on_after(0.02) as scope:
        await opt.step_async()
    assert scope.cancelled_caught
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 1.0])
    assert not opt.state


async def test_cancelled_step_that_is_running_is_applied_in_full() -> None:
    class SlowSGD(optim.SGD):
        def step(self, closure: Any = None) -> Any:
            time.sleep(0.1)
            return super().step(closure)

    w = ag.tensor([1.0, 1.0], dtype=ag.float64, requires_grad=True)
    opt = SlowSGD([w], lr=1.0)
    await (w * 3).sum().backward()
    with anyio.move_on_after(0.03) as scope:
        await opt.step_async()
    assert scope.cancelled_caught
    np.testing.assert_array_equal(w.detach().numpy(), [-2.0, -2.0])
    assert w.grad is None


async def test_a_step_that_raises_changes_nothing_and_gives_the_gradients_back() -> None:
    class Faulty(optim.SGD):
        def _update_group(self, group: dict[str, Any]) -> None:
            super()._update_group(group)  # writes every parameter and momentum buffer...
            raise ValueError("update failed")  # ...then fails

    w = ag.tensor([1.0, 1.0], dtype=ag.float64, requires_grad=True)
    opt = Faulty([w], lr=1.0, momentum=0.5)
    await (w * 3).sum().backward()
    with pytest.raises(ValueError, match="update failed"):
        await opt.step_async()
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    assert not opt.state


async def test_step_hooks_run_and_an_lr_scheduler_sees_the_step() -> None:
    w = ag.tensor([1.0], dtype=ag.float64, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    calls: list[str] = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    for _ in range(2):
        await (w * 2).sum().backward()
        await opt.step_async()
        sched.step()  # no "lr_scheduler.step() before optimizer.step()" warning (warnings are errors)
    assert calls == ["pre", "post", "pre", "post"]
    np.testing.assert_array_equal(w.detach().numpy(), [1.0 - 2.0 - 1.0])
    assert opt.param_groups[0]["lr"] == 0.25
