"""Model parallelism: an MLP split across two workers, trained from the driver.

The first layer lives on worker0, the second on worker1; the driver sends a
batch through both (driver -> worker0 -> driver -> worker1 -> driver),
computes the loss, runs ``dist.backward`` and steps a ``DistributedOptimizer``
that updates each layer where it lives. The same model run locally gives the
same gradients (to 1e-10 in float64) and the same parameters after the step.

    python examples/distributed_model_parallel.py                  # a local cluster on 127.0.0.1
    python examples/distributed_model_parallel.py --address tcp://host:8786   # an existing one
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn.functional as F

F64 = ag.float64
SIZES = (64, 128, 10)


def make_stage(index: int) -> ag.nn.Module:
    """Layer ``index`` of the MLP, initialised from a seed so that every process builds the same one."""
    ag.manual_seed(100 + index)
    linear = ag.nn.Linear(SIZES[index], SIZES[index + 1], dtype=F64)
    return ag.nn.Sequential(linear, ag.nn.ReLU()) if index == 0 else linear


def gradients_here(stage: dist.RRef, context_id: int) -> list[np.ndarray]:
    """The gradients of a stage's parameters in ``context_id``, on the stage's worker."""
    grads = dist.get_gradients(context_id)
    return [grads[p].numpy() for p in stage.local_value().parameters()]


def parameters_here(stage: dist.RRef) -> list[np.ndarray]:
    return [p.detach().numpy() for p in stage.local_value().parameters()]


def batch(seed: int = 0, n: int = 32) -> tuple[ag.Tensor, ag.Tensor]:
    rng = np.random.default_rng(seed)
    return ag.tensor(rng.standard_normal((n, SIZES[0]))), ag.tensor(rng.integers(0, SIZES[-1], n))


async def main(address: str | None = None, lr: float = 0.1) -> dict[str, float]:
    await dist.init(n_workers=2, address=address)
    try:
        w0, w1 = dist.workers()[:2]
        stages = [dist.remote(w0, make_stage, args=(0,)), dist.remote(w1, make_stage, args=(1,))]
        params = [p for s in stages for p in await dist.parameter_rrefs(s)]
        opt = dist.DistributedOptimizer(ag.optim.SGD, params, lr=lr, momentum=0.9)
        x, y = batch()

        async with dist.context() as context_id:
            h = await stages[0].rpc_async().forward(x)
            logits = await stages[1].rpc_async().forward(h)
            loss = F.cross_entropy(logits, y)
            await dist.backward(context_id, [loss])
            remote_grads = [g for s, w in zip(stages, (w0, w1))
                            for g in await dist.rpc_async(w, gradients_here, args=(s, context_id))]
            await opt.step(context_id)
        remote_params = [p for s, w in zip(stages, (w0, w1)) for p in await dist.rpc_async(w, parameters_here, args=(s,))]

        # The same model, run locally.
        local = ag.nn.Sequential(make_stage(0), make_stage(1))
        local_loss = F.cross_entropy(local(x), y)
        local_grads = await ag.grad(local_loss, list(local.parameters()))
        local_opt = ag.optim.SGD(local.parameters(), lr=lr, momentum=0.9)
        for p, g in zip(local.parameters(), local_grads):
            p.grad = g
        local_opt.step()

        return {
            "loss": float(loss.item()),
            "max_grad_diff": max(float(np.abs(a - b.numpy()).max()) for a, b in zip(remote_grads, local_grads)),
            "max_param_diff": max(float(np.abs(a - p.detach().numpy()).max())
                                  for a, p in zip(remote_params, local.parameters())),
        }
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    result = asyncio.run(main(parser.parse_args().address))
    print(f"loss {result['loss']:.4f}")
    print(f"largest gradient difference from the local run: {result['max_grad_diff']:.2e}")
    print(f"largest parameter difference after one SGD step: {result['max_param_diff']:.2e}")
    assert result["max_grad_diff"] < 1e-10 and result["max_param_diff"] < 1e-10
