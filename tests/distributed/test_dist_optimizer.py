"""aiograd.distributed.optimizer: DistributedOptimizer steps every owner with the context's gradients."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
import aiograd.distributed as dist

pytestmark = [pytest.mark.distributed, pytest.mark.asyncio]

F64 = ag.float64


def make_layer(seed: int) -> ag.nn.Linear:
    ag.manual_seed(seed)
    return ag.nn.Linear(3, 3, dtype=F64)


def grads_attribute(layer: dist.RRef) -> list[object]:
    return [p.grad for p in layer.local_value().parameters()]


def loss_of(layers: list[ag.nn.Module], driver_w: ag.Tensor, x: ag.Tensor) -> ag.Tensor:
    return (layers[1](layers[0](x).tanh()) @ driver_w).sum()


@pytest.mark.parametrize(
    ("optimizer", "kwargs"),
    [(ag.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
     (ag.optim.Adam, {"lr": 0.05, "betas": (0.8, 0.9)}),
     (ag.optim.AdamW, {"lr": 0.05, "weight_decay": 0.1})],
    ids=["SGD", "Adam", "AdamW"],
)
async def test_steps_equal_local_optimizers_and_keep_their_state(
    dist_cluster: str, optimizer: type, kwargs: dict[str, object]
) -> None:
    remote_layers = [dist.remote("worker0", make_layer, args=(1,)), dist.remote("worker1", make_layer, args=(2,))]
    ag.manual_seed(3)
    driver_w = ag.randn(3, 2, dtype=F64, requires_grad=True)  # a parameter the driver owns
    params = [p for r in remote_layers for p in await dist.parameter_rrefs(r)] + [dist.RRef(driver_w)]
    opt = dist.DistributedOptimizer(optimizer, params, **kwargs)

    local_layers = [make_layer(1), make_layer(2)]
    local_w = driver_w.detach().clone().requires_grad_()
    local_params = [p for m in local_layers for p in m.parameters()] + [local_w]
    local_opt = optimizer(local_params, **kwargs)

    x = ag.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    for _ in range(3):  # momenta and moments must carry over between steps
        async with dist.context() as cid:
            h = await remote_layers[0].rpc_async().forward(x)
            h = await dist.rpc_async("worker1", _forward_tanh_then, args=(remote_layers[1], h))
            await dist.backward(cid, [(h @ driver_w).sum()])
            await opt.step(cid)
        local_opt.zero_grad()
        await loss_of(local_layers, local_w, x).backward()
        local_opt.step()

    fetched = [await r.to_here() for r in remote_layers]
    for got, want in zip(fetched, local_layers):
        for a, b in zip(got.parameters(), want.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(driver_w.detach().numpy(), local_w.detach().numpy(), atol=1e-12)
    assert driver_w.grad is None
    assert await dist.rpc_async("worker0", grads_attribute, args=(remote_layers[0],)) == [None, None]


def _forward_tanh_then(layer: dist.RRef, h: ag.Tensor) -> ag.Tensor:
    return layer.local_value()(h.tanh())


async def test_needs_rrefs_to_parameters(dist_cluster: str) -> None:
    with pytest.raises(TypeError, match="RRefs to parameters"):
        dist.DistributedOptimizer(ag.optim.SGD, [ag.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        dist.DistributedOptimizer(ag.optim.SGD, [], lr=0.1)


# ----- torch's synchronous trainer, on a worker thread (NOTE [Blocking calls]) ----------------------


def sync_trainer(server: dist.RRef, x: ag.Tensor, steps: int) -> list[float]:
    """The parameter-server example's trainer as torch writes it: no await anywhere."""
    params = dist.parameter_rrefs(server)
    opt = dist.DistributedOptimizer(ag.optim.SGD, params, lr=0.1)
    losses = []
    for _ in range(steps):
        with dist.context() as cid:
            loss = server.rpc_sync().forward(x).pow(2).sum()
            dist.backward(cid, [loss])
            opt.step(cid)
            losses.append(float(loss.item()))
    return losses


async def test_a_synchronous_trainer_on_a_worker_matches_local_training(dist_cluster: str) -> None:
    ag.manual_seed(3)
    x = ag.randn(4, 3, dtype=F64)
    server = dist.remote("worker0", ag.nn.Linear, args=(3, 2), kwargs={"dtype": F64})
    local = await server.to_here()  # the same initial parameters, requiring grad (fresh leaves)
    assert all(p.requires_grad for p in local.parameters())
    opt = ag.optim.SGD(local.parameters(), lr=0.1)
    expected = []
    for _ in range(3):
        opt.zero_grad()
        loss = local(x).pow(2).sum()
        await loss.backward()
        opt.step()
        expected.append(float(loss.item()))
    losses = await dist.rpc_async("worker1", sync_trainer, args=(server, x, 3))
    np.testing.assert_allclose(losses, expected, rtol=1e-12)
    final = await server.to_here()
    np.testing.assert_allclose(final.weight.detach().numpy(), local.weight.detach().numpy(), rtol=1e-12)


# ----- messages of a step (NOTE [Commits travel along]) ---------------------------------------------


async def test_a_model_parallel_step_sends_one_message_per_worker_after_backward(dist_cluster: str) -> None:
    from aiograd.distributed._state import current_agent

    agent = current_agent()
    remote_layers = [dist.remote("worker0", make_layer, args=(1,)), dist.remote("worker1", make_layer, args=(2,))]
    params = [p for r in remote_layers for p in await dist.parameter_rrefs(r)]
    opt = dist.DistributedOptimizer(ag.optim.SGD, params, lr=0.1)
    local_layers = [make_layer(1), make_layer(2)]
    local_opt = ag.optim.SGD([p for m in local_layers for p in m.parameters()], lr=0.1)
    x = ag.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    ops: list[str] = []
    request = agent.request

    async def counted(address: str, op: str, **msg: object) -> object:
        ops.append(op)
        return await request(address, op, **msg)

    agent.request = counted  # type: ignore[method-assign]
    try:
        for step in range(3):
            del ops[:]
            before = agent.traffic["messages"]
            async with dist.context() as cid:
                h = await remote_layers[0].rpc_async().forward(x)
                h = await dist.rpc_async("worker1", _forward_tanh_then, args=(remote_layers[1], h))
                await dist.backward(cid, [h.sum()])
                await opt.step(cid)  # reads the workers' gradients: the commit came with this call
            if step > 0:  # the first step also creates the optimizers on the workers
                assert agent.traffic["messages"] - before == len(ops) == 10
                # Per step from the driver: 2 forward calls, 2 passes, h's gradients to the 2 workers that
                # sent it, 2 optimizer steps and 2 releases; no commit message (12 requests with them).
                assert sorted(ops) == sorted(["aiograd_call"] * 4 + ["aiograd_pass", "aiograd_grads",
                                                                      "aiograd_release"] * 2)
            local_opt.zero_grad()
            await local_layers[1](local_layers[0](x).tanh()).sum().backward()
            local_opt.step()
    finally:
        del agent.request
    fetched = [await r.to_here() for r in remote_layers]
    for got, want in zip(fetched, local_layers):
        for a, b in zip(got.parameters(), want.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
