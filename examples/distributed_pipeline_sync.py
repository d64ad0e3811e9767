"""pytorch/examples' RPC pipeline (DistResNet50), ported as torch writes it: synchronous, with RRefs.

The model is split in two shards, one per worker. ``DistNet.forward`` cuts
the batch into micro-batches and, for each, asks the first shard with
``p1_rref.remote().forward(x_rref)`` (the result stays on the first worker:
an RRef) and the second with ``p2_rref.rpc_async().forward(y_rref)``, which
fetches the intermediate result straight from the first worker; the
micro-batches are in flight together and their outputs are concatenated.
As in torch, the training loop is synchronous: the driver runs it in a
thread (``await asyncio.to_thread(train, ...)``), where ``fut.wait()``,
``with dist.context()``, ``dist.backward`` and the optimizer's ``step``
block (docs: "Synchronous code, as torch writes it"). torch's example has
two ResNet-50 halves; two small MLP halves keep this quick. Its gradients
equal those of the same model trained in one process.

    python examples/distributed_pipeline_sync.py                  # a local cluster of 2 workers
    python examples/distributed_pipeline_sync.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn as nn
import aiograd.nn.functional as F

F64 = ag.float64


class Shard1(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        ag.manual_seed(seed)
        self.seq = nn.Sequential(nn.Linear(10, 32, dtype=F64), nn.ReLU(), nn.Linear(32, 32, dtype=F64), nn.ReLU())

    def forward(self, x_rref: dist.RRef) -> ag.Tensor:
        return self.seq(x_rref.to_here())  # blocking: a method runs on a worker thread

    def parameter_rrefs(self) -> list[dist.RRef]:
        return [dist.RRef(p) for p in self.parameters()]


class Shard2(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        ag.manual_seed(seed + 1)
        self.fc = nn.Linear(32, 4, dtype=F64)

    def forward(self, y_rref: dist.RRef) -> ag.Tensor:
        return self.fc(y_rref.to_here())

    def parameter_rrefs(self) -> list[dist.RRef]:
        return [dist.RRef(p) for p in self.parameters()]


class DistNet(nn.Module):
    """The driver's view of the pipelined model (torch's DistResNet50)."""

    def __init__(self, split_size: int, workers: list[str], seed: int) -> None:
        super().__init__()
        self.split_size = split_size
        self.p1_rref = dist.remote(workers[0], Shard1, args=(seed,))
        self.p2_rref = dist.remote(workers[1], Shard2, args=(seed,))

    def forward(self, xs: ag.Tensor) -> ag.Tensor:
        out_futures = []
        for x in xs.split(self.split_size, dim=0):
            x_rref = dist.RRef(x)
            y_rref = self.p1_rref.remote().forward(x_rref)
            out_futures.append(self.p2_rref.rpc_async().forward(y_rref))
        return ag.cat([f.wait() for f in out_futures])

    def parameter_rrefs(self) -> list[dist.RRef]:
        return self.p1_rref.rpc_sync().parameter_rrefs() + self.p2_rref.rpc_sync().parameter_rrefs()


def batches(steps: int, seed: int) -> list[tuple[ag.Tensor, ag.Tensor]]:
    rng = np.random.default_rng(seed)
    return [(ag.tensor(rng.standard_normal((12, 10))), ag.tensor(rng.integers(0, 4, 12))) for _ in range(steps)]


def train(workers: list[str], data: list[tuple[ag.Tensor, ag.Tensor]], seed: int, lr: float) -> dict[str, Any]:
    """torch's run_master: synchronous, on a driver thread."""
    model = DistNet(split_size=4, workers=workers, seed=seed)
    opt = dist.DistributedOptimizer(ag.optim.SGD, model.parameter_rrefs(), lr=lr)
    losses = []
    for inputs, labels in data:
        with dist.context() as context_id:
            loss = F.cross_entropy(model(inputs), labels)
            dist.backward(context_id, [loss])
            opt.step(context_id)
        losses.append(float(loss.item()))
    shard1 = model.p1_rref.to_here()
    shard2 = model.p2_rref.to_here()
    return {"losses": losses, "params": [p.detach().numpy() for p in [*shard1.parameters(), *shard2.parameters()]]}


async def main(address: str | None = None, steps: int = 4, seed: int = 0, lr: float = 0.1) -> dict[str, Any]:
    await dist.init(n_workers=2, address=address)
    try:
        data = batches(steps, seed)
        result = await asyncio.to_thread(train, dist.workers()[:2], data, seed, lr)
        local1, local2 = Shard1(seed), Shard2(seed)
        opt = ag.optim.SGD([*local1.parameters(), *local2.parameters()], lr=lr)
        for inputs, labels in data:  # the same model and steps in one process
            opt.zero_grad()
            await F.cross_entropy(local2.fc(local1.seq(inputs)), labels).backward()
            opt.step()
        result["max_param_diff"] = max(
            float(np.abs(a - b.detach().numpy()).max())
            for a, b in zip(result.pop("params"), [*local1.parameters(), *local2.parameters()]))
        return result
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address))
    print(f"losses: {[round(x, 4) for x in result['losses']]}")
    print(f"largest parameter difference from one process: {result['max_param_diff']:.2e}")
