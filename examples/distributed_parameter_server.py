"""pytorch/examples' RPC parameter server, ported as torch writes it: synchronous trainers.

A parameter server (the first worker) holds the model; each trainer (the
other workers) runs a synchronous training loop, as in torch's
``rpc_parameter_server.py``: its ``TrainerNet.forward`` calls the server with
``rref.rpc_sync()``, each step runs in ``with dist.context()``, and
``dist.backward`` / ``DistributedOptimizer.step`` block, since a plain
remote function runs on a worker thread (docs: "Synchronous code, as torch
writes it"). Where torch keeps the server in a ``global`` (which a function
sent by value would lose at every call), the server is
``dist.worker_local``. The driver only starts the trainers.

    python examples/distributed_parameter_server.py                  # a local cluster: a server, 2 trainers
    python examples/distributed_parameter_server.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn as nn
import aiograd.nn.functional as F


class Net(nn.Module):
    """The model (torch's example has a small CNN for MNIST; an MLP keeps this quick)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32, dtype=ag.float64)
        self.fc2 = nn.Linear(32, 4, dtype=ag.float64)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class ParameterServer(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        ag.manual_seed(seed)
        self.model = Net()

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return self.model(x)

    def get_param_rrefs(self) -> list[dist.RRef]:
        return [dist.RRef(p) for p in self.model.parameters()]


def get_parameter_server(run: str, seed: int) -> ParameterServer:
    """The server of this worker (torch: a global singleton under a lock)."""
    return dist.worker_local(f"parameter_server/{run}", lambda: ParameterServer(seed))


class TrainerNet(nn.Module):
    def __init__(self, server: str, run: str, seed: int) -> None:
        super().__init__()
        self.param_server_rref = dist.remote(server, get_parameter_server, args=(run, seed))

    def get_global_param_rrefs(self) -> list[dist.RRef]:
        return self.param_server_rref.rpc_sync().get_param_rrefs()  # type: ignore[no-any-return]

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return self.param_server_rref.rpc_sync().forward(x)


def run_training_loop(server: str, run: str, seed: int, batches: list[tuple[ag.Tensor, ag.Tensor]],
                      lr: float) -> list[float]:
    """A trainer, on a worker thread: no await anywhere, as in torch."""
    net = TrainerNet(server, run, seed)
    opt = dist.DistributedOptimizer(ag.optim.SGD, net.get_global_param_rrefs(), lr=lr)
    losses = []
    for x, y in batches:
        with dist.context() as cid:
            loss = F.nll_loss(net(x), y)
            dist.backward(cid, [loss])
            opt.step(cid)
        losses.append(float(loss.item()))
    return losses


def make_batches(n: int, seed: int) -> list[tuple[ag.Tensor, ag.Tensor]]:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, 16)) * 2
    out = []
    for _ in range(n):
        y = rng.integers(0, 4, 8)
        out.append((ag.tensor(centers[y] + rng.standard_normal((8, 16))), ag.tensor(y)))
    return out


async def fetch_model(server: str, run: str, seed: int) -> Net:
    rref = dist.remote(server, get_parameter_server, args=(run, seed))
    return (await rref.to_here()).model  # type: ignore[no-any-return]


async def main(address: str | None = None, n_trainers: int = 2, steps: int = 5, sequential: bool = False,
               run: str | None = None, seed: int = 0, lr: float = 0.05) -> dict[str, Any]:
    """Train; with ``sequential=True`` the trainers take turns, and the result is compared with one process.

    ``run`` names the server (a fresh one per run by default: a server made with
    ``dist.worker_local`` persists on its worker across runs, as it should).
    """
    run = run if run is not None else uuid.uuid4().hex
    await dist.init(n_workers=1 + n_trainers, address=address)
    try:
        server, *trainers = dist.workers()
        trainers = trainers[:n_trainers] or [server]
        data = {t: make_batches(steps, seed=i + 1) for i, t in enumerate(trainers)}
        if sequential:
            losses = [await dist.rpc_async(t, run_training_loop, args=(server, run, seed, data[t], lr))
                      for t in trainers]
        else:  # as torch's example: trainers update the server concurrently (Hogwild)
            losses = await asyncio.gather(*(
                dist.rpc_async(t, run_training_loop, args=(server, run, seed, data[t], lr)) for t in trainers))
        trained = await fetch_model(server, run, seed)
        result: dict[str, Any] = {"losses": losses}
        if sequential:  # the same steps in one process
            ag.manual_seed(seed)
            local = Net()
            opt = ag.optim.SGD(local.parameters(), lr=lr)
            for t in trainers:
                for x, y in data[t]:
                    opt.zero_grad()
                    await F.nll_loss(local(x), y).backward()
                    opt.step()
            result["max_param_diff"] = max(
                float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                for a, b in zip(trained.parameters(), local.parameters()))
        return result
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address, sequential=True))
    print(f"losses per trainer: {result['losses']}")
    print(f"largest parameter difference from one process: {result['max_param_diff']:.2e}")
