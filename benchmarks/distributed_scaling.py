"""Bytes and messages through the driver per data-parallel step, at 2, 4 and 8 local workers.

    PYTHONPATH=$PWD python -m benchmarks.distributed_scaling [--workers 2 4 8] [--params 1048576]

Two ways to train the same model (``--params`` float32 parameters, one
Linear layer) data-parallel, counted on the driver's agent (its ``traffic``
counters: requests it sent and served, payload bytes of calls, replies and
gradients it received):

- "through the driver": the pattern of examples/distributed_data_parallel.py:
  the driver holds the parameters, pickles them into every worker's call
  inside a context, and ``dist.backward`` brings every worker's gradient
  back to it;
- ``dist.DataParallel``: replicas on the workers, gradients reduced at
  shards among them (NOTE [Replicas reduced at shards]).

Counts do not depend on the machine's load (times would); the
extrapolation to N workers is linear in N for both, with a slope of
about 2·P bytes per worker for the first and a few hundred bytes for the
second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from typing import Any

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn.functional as F

BATCH = 4


def _loss(params: list[ag.Tensor], x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
    return F.mse_loss(F.linear(x, params[0], params[1]), y)


def _module_loss(model: Any, x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
    return F.mse_loss(model(x), y)


def _snapshot(agent: Any) -> dict[str, int]:
    return dict(agent.traffic)


def _delta(after: dict[str, int], before: dict[str, int], steps: int) -> dict[str, float]:
    return {
        "messages": (after["messages"] + after["messages_in"] - before["messages"] - before["messages_in"]) / steps,
        "bytes": (after["bytes_out"] + after["bytes_in"] - before["bytes_out"] - before["bytes_in"]) / steps,
    }


async def measure(n_workers: int, n_params: int, steps: int) -> dict[str, Any]:
    side = int(math.isqrt(n_params))
    await dist.init(n_workers=n_workers)
    try:
        from aiograd.distributed._state import current_agent

        agent = current_agent()
        ag.manual_seed(0)
        model = ag.nn.Linear(side, side)
        data = [(ag.randn(BATCH, side), ag.randn(BATCH, side)) for _ in range(n_workers)]
        workers = dist.workers()

        # Through the driver: parameters in every call, gradients back to the driver.
        params = [model.weight, model.bias]
        opt = dist.DistributedOptimizer(ag.optim.SGD, [dist.RRef(p) for p in params], lr=0.01)

        async def driver_step() -> None:
            async with dist.context() as cid:
                losses = await asyncio.gather(*(
                    dist.rpc_async(w, _loss, args=(params, x, y)) for w, (x, y) in zip(workers, data)))
                await dist.backward(cid, [sum(losses) / n_workers])
                await opt.step(cid)

        await driver_step()
        before = _snapshot(agent)
        for _ in range(steps):
            await driver_step()
        through = _delta(_snapshot(agent), before, steps)

        # DataParallel: replicas on the workers.
        ddp = await dist.DataParallel.start(model, _module_loss, ag.optim.SGD, lr=0.01)
        try:
            await ddp.step(data)
            before = _snapshot(agent)
            for _ in range(steps):
                await ddp.step(data)
            replicas = _delta(_snapshot(agent), before, steps)
        finally:
            await ddp.close()
        batch_bytes = sum(x.numpy().nbytes + y.numpy().nbytes for x, y in data)
        return {"workers": n_workers, "param_bytes": side * side * 4 + side * 4, "batch_bytes_per_step": batch_bytes,
                "through_driver": through, "data_parallel": replicas}
    finally:
        await dist.shutdown()


async def main(workers: list[int], n_params: int, steps: int) -> list[dict[str, Any]]:
    rows = []
    for n in workers:
        row = await measure(n, n_params, steps)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--params", type=int, default=1 << 20)
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    asyncio.run(main(a.workers, a.params, a.steps))
