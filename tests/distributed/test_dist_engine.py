"""aiograd.distributed._engine: the distributed backward pass (dist_engine.cpp's rules), its errors and cancellation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import aiograd as ag
import aiograd.distributed as dist
from _dist_helpers import (
    Recorder,
    assert_all_released,
    cluster_env,
    slow_on_backward,
    wait_until_started,
    workers_state,
)

pytestmark = [pytest.mark.distributed, pytest.mark.asyncio]

F64 = ag.float64


def stage1(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
    return (x @ w).tanh()


async def stage2(h: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
    return (h * v).sigmoid()


def local_loss(x: ag.Tensor, w: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
    return (stage2_sync(stage1(x, w), v) ** 2).sum()


def stage2_sync(h: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
    return (h * v).sigmoid()


def leaves() -> tuple[ag.Tensor, ag.Tensor, ag.Tensor]:
    ag.manual_seed(1)
    return (ag.randn(4, 3, dtype=F64, requires_grad=True), ag.randn(3, 5, dtype=F64, requires_grad=True),
            ag.randn(5, dtype=F64, requires_grad=True))


async def local_grads(x: ag.Tensor, w: ag.Tensor, v: ag.Tensor) -> list[np.ndarray]:
    gs = await ag.grad(local_loss(x, w, v), [x, w, v])
    return [g.numpy() for g in gs]


async def distributed_loss(x: ag.Tensor, w: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
    h = await dist.rpc_async("worker0", stage1, args=(x, w))
    out = await dist.rpc_async("worker1", stage2, args=(h, v))
    return (out ** 2).sum()


class Holder:
    """A module-like value kept on a worker, whose parameters get their gradients there."""

    def __init__(self) -> None:
        ag.manual_seed(2)
        self.w = ag.nn.Parameter(ag.randn(3, 3, dtype=F64))

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return (x @ self.w).tanh()

    def grad_of_w(self, context_id: int) -> np.ndarray | None:
        g = dist.get_gradients(context_id).get(self.w)
        return None if g is None else g.numpy()

    def w_grad_attribute(self) -> object:
        return self.w.grad


def two_outputs(x: ag.Tensor) -> tuple[ag.Tensor, ag.Tensor]:
    a = x * 3.0
    return a.sin(), a.cos()


def returns_nothing_with_grad(x: ag.Tensor) -> float:
    return float((x * 2.0).sum().item())


class FailsOnSecondBackward(ag.Function):
    calls = 0

    @staticmethod
    def forward(ctx: object, x: ag.Tensor) -> ag.Tensor:
        return x * 2.0

    @staticmethod
    def backward(ctx: object, g: ag.Tensor) -> ag.Tensor:
        FailsOnSecondBackward.calls += 1
        if FailsOnSecondBackward.calls > 1:
            raise ValueError("backward failed on purpose")
        return g * 2.0


def fails_on_second_backward(x: ag.Tensor) -> ag.Tensor:
    return FailsOnSecondBackward.apply(x)


# ----- gradients ----------------------------------------------------------------------------------


async def test_backward_equals_the_local_pass(dist_cluster: str) -> None:
    x, w, v = leaves()
    expected = await local_grads(x, w, v)
    async with dist.context() as cid:
        loss = await distributed_loss(x, w, v)
        await dist.backward(cid, [loss])
        grads = dist.get_gradients(cid)
        assert set(grads) == {x, w, v}
        for t, e in zip((x, w, v), expected):
            np.testing.assert_allclose(grads[t].numpy(), e, rtol=0, atol=1e-10)
    assert x.grad is None and w.grad is None and v.grad is None  # never .grad


async def test_the_profiler_sees_the_driver_part(dist_cluster: str) -> None:
    x, w, v = leaves()
    async with dist.context() as cid:
        loss = await distributed_loss(x, w, v)
        with ag.profiler.profile() as prof:
            await dist.backward(cid, [loss])
    names = {e.name for e in prof.events}
    assert {"RecvRpcBackward", "SendRpcBackward", "AccumulateGrad"} <= names


async def test_leaves_on_a_worker_get_their_gradients_there(dist_cluster: str) -> None:
    holder = dist.remote("worker1", Holder)
    w_local = (await holder.to_here()).w  # a fresh leaf that requires grad: fetched outside a context
    x = ag.randn(2, 3, dtype=F64, requires_grad=True)
    loss_local = (x @ w_local).tanh().sum()
    gx, gw = await ag.grad(loss_local, [x, w_local])
    async with dist.context() as cid:
        out = await holder.rpc_async().forward(x)
        await dist.backward(cid, [out.sum()])
        np.testing.assert_allclose(await holder.rpc_async().grad_of_w(cid), gw.numpy(), atol=1e-12)
        np.testing.assert_allclose(dist.get_gradients(cid)[x].numpy(), gx.numpy(), atol=1e-12)
        assert await holder.rpc_async().w_grad_attribute() is None


async def grad_of_w_through(holder: dist.RRef, context_id: int) -> object:
    """Runs on a worker: asks the holder's owner (another worker) for its gradient of w."""
    return await holder.rpc_async().grad_of_w(context_id)


async def test_a_worker_reached_only_through_another_sees_the_committed_gradient(dist_cluster: str) -> None:
    # NOTE [Commits travel along]: no commit message; the news reaches worker1 through worker0's call.
    holder = dist.remote("worker1", Holder)
    w_local = (await holder.to_here()).w
    x = ag.randn(2, 3, dtype=F64, requires_grad=True)
    (gw,) = await ag.grad((x @ w_local).tanh().sum() * 3.0, [w_local])
    async with dist.context() as cid:
        out = await holder.rpc_async().forward(x)
        await dist.backward(cid, [out.sum()], retain_graph=True)
        await dist.backward(cid, [out.sum() * 2.0])  # the second pass commits the first on the way
        assert (await workers_state())["worker1"]["num_current_backward_passes"] == 0
        got = await dist.rpc_async("worker0", grad_of_w_through, args=(holder, cid))
        np.testing.assert_allclose(got, gw.numpy(), atol=1e-12)


async def test_retain_graph_then_again_adds_up(dist_cluster: str) -> None:
    x, w, v = leaves()
    expected = await local_grads(x, w, v)
    async with dist.context() as cid:
        loss = await distributed_loss(x, w, v)
        await dist.backward(cid, [loss], retain_graph=True)
        await dist.backward(cid, [loss])
        np.testing.assert_allclose(dist.get_gradients(cid)[w].numpy(), 2 * expected[1], atol=1e-10)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            await dist.backward(cid, [loss])


async def test_several_contexts_run_backward_concurrently(dist_cluster: str) -> None:
    x, w, v = leaves()
    expected = await local_grads(x, w, v)

    async def one(scale: float) -> np.ndarray:
        async with dist.context() as cid:
            loss = (await distributed_loss(x, w, v)) * scale
            await dist.backward(cid, [loss])
            return dist.get_gradients(cid)[w].numpy()

    results = await asyncio.gather(*(one(s) for s in (1.0, 2.0, 3.0)))
    for s, r in zip((1.0, 2.0, 3.0), results):
        np.testing.assert_allclose(r, s * expected[1], atol=1e-10)


async def test_a_sent_tensor_that_does_not_lead_to_the_roots_gets_no_gradient(dist_cluster: str) -> None:
    x = ag.tensor([0.5, 1.0], dtype=F64, requires_grad=True)
    y = ag.tensor([2.0], dtype=F64, requires_grad=True)
    async with dist.context() as cid:
        s, c = await dist.rpc_async("worker0", two_outputs, args=(x,))  # c is never used
        assert await dist.rpc_async("worker1", returns_nothing_with_grad, args=(y,)) == 4.0
        await asyncio.wait_for(dist.backward(cid, [s.sum()]), 20)
        grads = dist.get_gradients(cid)
        np.testing.assert_allclose(grads[x].numpy(), 3 * np.cos(3 * x.detach().numpy()), atol=1e-12)
        assert y not in grads


async def backward_from_here(x: ag.Tensor, context_id: int) -> list[float]:
    """Runs on a worker: the pass starts here, and reaches the driver that sent ``x``."""
    loss = (x * x).sum()
    await dist.backward(context_id, [loss])
    return [dist.debug_info()["num_current_backward_passes"]]


async def test_a_pass_can_start_on_a_worker(dist_cluster: str) -> None:
    x = ag.tensor([1.0, -3.0], dtype=F64, requires_grad=True)
    async with dist.context() as cid:
        assert await dist.rpc_async("worker1", backward_from_here, args=(x, cid)) == [0]
        np.testing.assert_array_equal(dist.get_gradients(cid)[x].numpy(), [2.0, -6.0])


def big_stage(x: ag.Tensor) -> ag.Tensor:
    return (x * 2.0).tanh()


@pytest.mark.no_blocking(max_ms=200)
async def test_the_driver_loop_keeps_running_during_big_transfers_and_backward(dist_cluster: str) -> None:
    x = ag.randn(1 << 20, dtype=F64, requires_grad=True)  # 8 MB each way, twice
    async with dist.context() as cid:
        y = await dist.rpc_async("worker0", big_stage, args=(x,))
        z = await dist.rpc_async("worker1", big_stage, args=(y,))
        await dist.backward(cid, [z.sum()])
        assert dist.get_gradients(cid)[x].shape == x.shape


# ----- errors ------------------------------------------------------------------------------------------


async def test_argument_errors(dist_cluster: str) -> None:
    x, w, v = leaves()
    with pytest.raises(RuntimeError, match="Could not find autograd context with id: 12345"):
        await dist.backward(12345, [x.sum()])
    with pytest.raises(RuntimeError, match="Could not find autograd context with id: 12345"):
        dist.get_gradients(12345)
    async with dist.context() as cid:
        out = await dist.rpc_async("worker0", stage1, args=(x, w))
        with pytest.raises(RuntimeError, match="all roots need to be scalar"):
            await dist.backward(cid, [out])
        with pytest.raises(RuntimeError, match="requires_grad not set"):
            await dist.backward(cid, [ag.tensor(1.0)])
        with pytest.raises(RuntimeError, match="RecvRpcBackward can only run in a distributed backward"):
            await out.sum().backward()
        await dist.backward(cid, [out.sum()])


async def test_an_error_in_a_worker_node_reaches_the_driver_and_changes_no_gradient(dist_cluster: str) -> None:
    x = ag.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    async with dist.context() as cid:
        out = (await dist.rpc_async("worker1", fails_on_second_backward, args=(x,))).sum()
        await dist.backward(cid, [out], retain_graph=True)
        before = dist.get_gradients(cid)[x].numpy().copy()
        with pytest.raises(ValueError, match="backward failed on purpose.*worker1"):
            await dist.backward(cid, [out], retain_graph=True)
        np.testing.assert_array_equal(dist.get_gradients(cid)[x].numpy(), before)
        assert dist.debug_info()["num_current_backward_passes"] == 0


async def test_cancelling_the_driver_backward_cancels_every_part(dist_cluster: str) -> None:
    x = ag.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    recorder = dist.remote("worker0", Recorder)
    async with dist.context() as cid:
        out = await dist.rpc_async("worker0", slow_on_backward, args=(x, recorder))
        task = asyncio.ensure_future(dist.backward(cid, [out.sum()]))
        await wait_until_started(recorder)
        assert (await workers_state())["worker0"]["num_current_backward_passes"] == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await recorder.rpc_async().get() == ["started", "cancelled"]
        assert all(s["num_current_backward_passes"] == 0 for s in (await workers_state()).values())
        assert dist.get_gradients(cid) == {}


async def test_leaving_the_context_releases_it_everywhere_even_on_error_or_cancel(dist_cluster: str) -> None:
    x, w, v = leaves()
    with pytest.raises(KeyError):
        async with dist.context():
            await distributed_loss(x, w, v)
            assert all(s["num_autograd_contexts"] == 1 for s in (await workers_state()).values())
            raise KeyError("leave")
    await assert_all_released()

    async def stays() -> None:
        async with dist.context():
            await distributed_loss(x, w, v)
            await asyncio.sleep(30)

    task = asyncio.ensure_future(stays())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_all_released()


async def test_a_pass_past_its_deadline_raises_timeout_error(dask_cluster: str) -> None:
    await dist.init(address=dask_cluster, rpc_timeout=2.0)
    try:
        x = ag.tensor([1.0], dtype=F64, requires_grad=True)
        recorder = dist.remote("worker1", Recorder)
        async with dist.context() as cid:
            out = await dist.rpc_async("worker1", slow_on_backward, args=(x, recorder))
            with pytest.raises(TimeoutError, match="worker1"):
                await dist.backward(cid, [out.sum()])
        assert await recorder.rpc_async().get() == ["started", "cancelled"]
        await assert_all_released()
    finally:
        await dist.shutdown()


async def test_contexts_of_a_driver_that_disconnects_are_released(dist_cluster: str) -> None:
    script = textwrap.dedent(f"""
        import asyncio, os
        import aiograd as ag, aiograd.distributed as dist

        async def main():
            await dist.init(address={dist_cluster!r})
            ctx = dist.context()
            await ctx.__aenter__()
            await dist.rpc_async("worker0", abs, args=(ag.tensor([-1.0], requires_grad=True),))
            print("entered", flush=True)
            os._exit(0)  # gone without leaving the context

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], env=cluster_env(), capture_output=True, text=True,
                         timeout=120)
    assert "entered" in out.stdout, out.stderr
    for _ in range(200):
        if (await workers_state())["worker0"]["num_autograd_contexts"] == 0:
            break
        await asyncio.sleep(0.05)
    assert (await workers_state())["worker0"]["num_autograd_contexts"] == 0
