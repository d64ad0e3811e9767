"""A pipeline: driver -> worker0 -> worker1 -> driver, with micro-batches in flight together.

Stage 1 lives on worker0 and stage 2 on worker1. The driver sends each
micro-batch to worker0, which runs stage 1 and itself calls worker1 for
stage 2; the result comes back to worker0 and on to the driver. The
micro-batches run concurrently (the workers serve them as they come), the
driver sums their losses and one ``dist.backward`` sends the gradients back
through the same chain: the same as the model run locally.

    python examples/distributed_pipeline.py                  # a local cluster on 127.0.0.1
    python examples/distributed_pipeline.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn.functional as F

F64 = ag.float64


def make_stage(index: int) -> ag.nn.Module:
    ag.manual_seed(200 + index)
    if index == 0:
        return ag.nn.Sequential(ag.nn.Linear(16, 32, dtype=F64), ag.nn.Tanh())
    return ag.nn.Linear(32, 4, dtype=F64)


async def through_both_stages(stage1: dist.RRef, stage2: dist.RRef, x: ag.Tensor) -> ag.Tensor:
    """Runs on stage 1's worker: stage 1 here, then stage 2 on its worker (a nested call)."""
    h = stage1.local_value()(x)
    return await stage2.rpc_async().forward(h)


def gradients_here(stage: dist.RRef, context_id: int) -> list[np.ndarray]:
    grads = dist.get_gradients(context_id)
    return [grads[p].numpy() for p in stage.local_value().parameters()]


async def main(address: str | None = None, micro_batches: int = 4, steps: int = 5) -> dict[str, float]:
    await dist.init(n_workers=2, address=address)
    try:
        w0, w1 = dist.workers()[:2]
        stages = [dist.remote(w0, make_stage, args=(0,)), dist.remote(w1, make_stage, args=(1,))]
        params = [p for s in stages for p in await dist.parameter_rrefs(s)]
        opt = dist.DistributedOptimizer(ag.optim.SGD, params, lr=0.05)
        rng = np.random.default_rng(0)
        x = ag.tensor(rng.standard_normal((8 * micro_batches, 16)))
        y = ag.tensor(rng.integers(0, 4, 8 * micro_batches))
        chunks = list(zip(x.chunk(micro_batches), y.chunk(micro_batches)))

        local = ag.nn.Sequential(make_stage(0), make_stage(1))  # the same model, for comparison
        local_loss = sum(F.cross_entropy(local(xb), yb) for xb, yb in chunks)
        local_grads = await ag.grad(local_loss, list(local.parameters()))

        losses = []
        for step in range(steps):
            async with dist.context() as context_id:
                outs = await asyncio.gather(*(
                    dist.rpc_async(w0, through_both_stages, args=(stages[0], stages[1], xb)) for xb, _ in chunks
                ))
                loss = sum((F.cross_entropy(o, yb) for o, (_, yb) in zip(outs, chunks)), ag.tensor(0.0, dtype=F64))
                await dist.backward(context_id, [loss])
                if step == 0:
                    grads = [g for s, w in zip(stages, (w0, w1))
                             for g in await dist.rpc_async(w, gradients_here, args=(s, context_id))]
                    max_diff = max(float(np.abs(a - b.numpy()).max()) for a, b in zip(grads, local_grads))
                await opt.step(context_id)
                losses.append(float(loss.item()))
        return {"first_loss": losses[0], "last_loss": losses[-1], "max_grad_diff": max_diff}
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address))
    print(f"loss {result['first_loss']:.4f} -> {result['last_loss']:.4f} in 5 steps")
    print(f"largest gradient difference from the local run: {result['max_grad_diff']:.2e}")
    assert result["max_grad_diff"] < 1e-10 and result["last_loss"] < result["first_loss"]
