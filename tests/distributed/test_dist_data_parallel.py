"""aiograd.distributed.data_parallel: replicas per worker, gradients reduced at shards among the workers."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn.functional as F

pytestmark = [pytest.mark.distributed, pytest.mark.asyncio]

F64 = ag.float64


def make_model() -> ag.nn.Module:
    ag.manual_seed(5)
    return ag.nn.Sequential(ag.nn.Linear(64, 32, dtype=F64), ag.nn.Tanh(), ag.nn.Linear(32, 3, dtype=F64))


def mse(model: ag.nn.Module, x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
    return F.mse_loss(model(x), y)


def batches(step: int, n: int) -> list[tuple[ag.Tensor, ag.Tensor]]:
    rng = np.random.default_rng(step)
    return [(ag.tensor(rng.standard_normal((2, 64))), ag.tensor(rng.standard_normal((2, 3)))) for _ in range(n)]


async def test_data_parallel_training_equals_one_process_and_keeps_parameters_off_the_driver(dist_cluster: str) -> None:
    n = len(dist.workers())
    local = make_model()
    opt = ag.optim.Adam(local.parameters(), lr=0.01)
    ddp = await dist.DataParallel.start(make_model(), mse, ag.optim.Adam, lr=0.01)
    try:
        agent = dist_agent()
        param_bytes = sum(p.detach().numpy().nbytes for p in local.parameters())
        for step in range(3):
            args = batches(step, n)
            opt.zero_grad()
            expected = sum(mse(local, x, y) for x, y in args) / n  # the mean of the workers' losses
            await expected.backward()
            opt.step()
            before = dict(agent.traffic)
            loss = await ddp.step(args)
            through_driver = sum(agent.traffic[k] - before[k] for k in ("bytes_out", "bytes_in"))
            assert agent.traffic["messages"] - before["messages"] == n  # one call per worker, nothing else
            assert through_driver < param_bytes / 4  # the parameters and gradients stay among the workers
            assert loss == pytest.approx(float(expected.item()), rel=1e-12)
        state = await ddp.state_dict()
        for k, v in local.state_dict().items():
            np.testing.assert_allclose(state[k].detach().numpy(), v.detach().numpy(), rtol=1e-10, atol=1e-13)
    finally:
        await ddp.close()
    with pytest.raises(RuntimeError, match="closed"):
        await ddp.step(batches(0, n))


async def test_data_parallel_checks_its_arguments(dist_cluster: str) -> None:
    ddp = await dist.DataParallel.start(make_model(), mse, ag.optim.SGD, workers=["worker1"], lr=0.1)
    try:
        with pytest.raises(ValueError, match=r"one args tuple per worker \(1\), got 2"):
            await ddp.step(batches(0, 2))
        assert isinstance(await ddp.step(batches(0, 1)), float)
    finally:
        await ddp.close()


def dist_agent() -> object:
    from aiograd.distributed._state import current_agent

    return current_agent()
