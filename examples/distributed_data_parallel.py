"""Data parallelism: an MLP trained on scikit-learn's digits by two workers, gradients averaged.

The driver holds the parameters (a parameter server); each worker holds half
of the training set. Every step, inside one autograd context, both workers
compute the loss of a minibatch of their half from the driver's parameters
(which cross with autograd), the driver averages the two losses, and
``dist.backward`` brings each worker's gradients back along the recv -> send
edges: the context then holds the average of the two gradients, which a
``DistributedOptimizer`` (here on the driver's own parameters) applies.

    python examples/distributed_data_parallel.py                  # a local cluster on 127.0.0.1
    python examples/distributed_data_parallel.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn.functional as F

HIDDEN = 64


def init_params(seed: int = 0) -> list[ag.Tensor]:
    ag.manual_seed(seed)
    w1 = ag.nn.Linear(64, HIDDEN)
    w2 = ag.nn.Linear(HIDDEN, 10)
    return [w1.weight, w1.bias, w2.weight, w2.bias]


def mlp(params: list[ag.Tensor], x: ag.Tensor) -> ag.Tensor:
    w1, b1, w2, b2 = params
    return F.linear(F.linear(x, w1, b1).relu(), w2, b2)


class Shard:
    """One worker's part of the training set."""

    def __init__(self, x: ag.Tensor, y: ag.Tensor) -> None:
        self.x = x
        self.y = y

    def __len__(self) -> int:
        return len(self.y)

    def loss(self, params: list[ag.Tensor], index: np.ndarray) -> ag.Tensor:
        return F.cross_entropy(mlp(params, self.x[index]), self.y[index])


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    return train_test_split(x, data.target, test_size=0.2, random_state=0, stratify=data.target)


async def main(address: str | None = None, epochs: int = 20, batch: int = 64, lr: float = 0.01) -> dict[str, float]:
    await dist.init(n_workers=2, address=address)
    try:
        workers = dist.workers()[:2]
        x_train, x_test, y_train, y_test = digits()
        halves = np.array_split(np.arange(len(y_train)), len(workers))
        shards = [dist.remote(w, Shard, args=(ag.tensor(x_train[h]), ag.tensor(y_train[h])))
                  for w, h in zip(workers, halves)]
        params = init_params()
        opt = dist.DistributedOptimizer(ag.optim.Adam, [dist.RRef(p) for p in params], lr=lr)
        rng = np.random.default_rng(0)
        steps = epochs * (len(halves[0]) // batch)
        for _ in range(steps):
            async with dist.context() as context_id:
                losses = await asyncio.gather(*(
                    s.rpc_async().loss(params, rng.choice(len(h), batch, replace=False))
                    for s, h in zip(shards, halves)
                ))
                loss = sum(losses[1:], losses[0]) / len(losses)  # the average: its gradient averages theirs
                await dist.backward(context_id, [loss])
                await opt.step(context_id)
        with ag.no_grad():
            predicted = mlp(params, ag.tensor(x_test)).numpy().argmax(axis=1)
        return {"steps": steps, "final_loss": float(loss.item()), "test_accuracy": float((predicted == y_test).mean())}
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address))
    print(f"{result['steps']} steps, last loss {result['final_loss']:.4f}, test accuracy {result['test_accuracy']:.3f}")
    assert result["test_accuracy"] >= 0.95
