"""pytorch/examples' batch-updating parameter server, ported: the server waits for every trainer's gradients.

The server holds the model; each trainer fetches it, computes the
gradients of its batch locally, and sends them with ``rpc_sync``. The
server's ``update_and_fetch_model`` is an ``async def`` (torch marks it
``@rpc.functions.async_execution`` and returns a Future): it adds the
gradients, and the call waits, without holding a thread, until the last
trainer's gradients of the round arrived; then the server averages them,
takes an SGD step, and every waiting trainer gets the new model. A model
fetched outside an autograd context keeps ``requires_grad`` on its
parameters (as pickling does), so each trainer's local ``backward`` works on
its copy, as in torch.

    python examples/distributed_batch_updates.py                  # a local cluster: a server, 2 trainers
    python examples/distributed_batch_updates.py --address tcp://host:8786
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

IN, OUT, BATCH = 8, 3, 4


def make_model(seed: int) -> nn.Module:
    ag.manual_seed(seed)
    return nn.Linear(IN, OUT, dtype=ag.float64)


class BatchUpdateParameterServer:
    """Lives on one worker (an RRef's value); its async method runs on that worker's event loop."""

    def __init__(self, batch_update_size: int, seed: int, lr: float) -> None:
        self.model = make_model(seed)
        self.batch_update_size = batch_update_size
        self.curr_update_size = 0
        self.optimizer = ag.optim.SGD(self.model.parameters(), lr=lr)
        self.future_model: asyncio.Future[Any] | None = None
        for p in self.model.parameters():
            p.grad = ag.zeros_like(p)

    def get_model(self) -> nn.Module:
        return self.model

    @staticmethod
    async def update_and_fetch_model(ps_rref: dist.RRef, grads: list[ag.Tensor]) -> nn.Module:
        self: BatchUpdateParameterServer = ps_rref.local_value()
        if self.future_model is None:
            self.future_model = asyncio.get_running_loop().create_future()
        fut = self.future_model
        self.curr_update_size += 1
        with ag.no_grad():
            for p, g in zip(self.model.parameters(), grads):
                p.grad += g
        if self.curr_update_size >= self.batch_update_size:
            with ag.no_grad():
                for p in self.model.parameters():
                    p.grad /= self.batch_update_size
            self.curr_update_size = 0
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=False)
            fut.set_result(self.model)
            self.future_model = None
        return await fut  # type: ignore[no-any-return]


def batches(trainer: int, steps: int) -> list[tuple[ag.Tensor, ag.Tensor]]:
    rng = np.random.default_rng(100 + trainer)
    return [(ag.tensor(rng.standard_normal((BATCH, IN))), ag.tensor(rng.standard_normal((BATCH, OUT))))
            for _ in range(steps)]


def train(ps_rref: dist.RRef, trainer: int, steps: int) -> list[float]:
    """A trainer, on a worker thread, synchronous as in torch."""
    m = ps_rref.rpc_sync().get_model()
    losses = []
    for inputs, labels in batches(trainer, steps):
        loss = F.mse_loss(m(inputs), labels)
        loss.backward()  # local autograd, on this trainer's copy of the model
        losses.append(float(loss.item()))
        m = dist.rpc_sync(ps_rref.owner(), BatchUpdateParameterServer.update_and_fetch_model,
                          args=(ps_rref, [p.grad for p in m.parameters()]))
    return losses


async def main(address: str | None = None, n_trainers: int = 2, steps: int = 4, seed: int = 0,
               lr: float = 0.1) -> dict[str, Any]:
    await dist.init(n_workers=1 + n_trainers, address=address)
    try:
        workers = dist.workers()
        ps_rref = dist.remote(workers[0], BatchUpdateParameterServer, args=(n_trainers, seed, lr))
        # Each trainer on its own worker, not the server's: there, the proxy's method call would run
        # locally and hand the trainer the server's model object itself rather than a copy.
        on = workers[1:1 + n_trainers]
        if len(on) < n_trainers:
            raise RuntimeError(f"{n_trainers} trainers need {n_trainers + 1} workers, the cluster has {len(workers)}")
        losses = await asyncio.gather(*(dist.rpc_async(w, train, args=(ps_rref, i, steps)) for i, w in enumerate(on)))
        trained = (await ps_rref.to_here()).model
        # The same rounds in one process: the mean of the trainers' gradients, one SGD step per round.
        local = make_model(seed)
        opt = ag.optim.SGD(local.parameters(), lr=lr)
        data = [batches(i, steps) for i in range(n_trainers)]
        for step in range(steps):
            opt.zero_grad()
            loss = sum(F.mse_loss(local(data[i][step][0]), data[i][step][1]) for i in range(n_trainers)) / n_trainers
            await loss.backward()
            opt.step()
        diff = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                   for a, b in zip(trained.parameters(), local.parameters()))
        return {"losses": losses, "max_param_diff": diff}
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address))
    print(f"losses per trainer: {result['losses']}")
    print(f"largest parameter difference from one process: {result['max_param_diff']:.2e}")
