"""aiograd.distributed.rpc: rpc_async, remote and RRefs, tensors on the wire, remote errors, deadlines."""

from __future__ import annotations

import asyncio
import gc
import time

import numpy as np
import pytest

import aiograd as ag
import aiograd.distributed as dist

pytestmark = [pytest.mark.distributed, pytest.mark.asyncio]


def double(x: ag.Tensor) -> ag.Tensor:
    return x * 2.0


async def async_add(x: ag.Tensor, *, y: float) -> ag.Tensor:
    await asyncio.sleep(0)
    return x + y


def whoami() -> tuple[str, list[str]]:
    return dist.get_worker_name(), dist.workers()


async def call_the_other(x: ag.Tensor) -> ag.Tensor:
    me = dist.get_worker_name()
    other = next(w for w in dist.workers() if w != me)
    return (await dist.rpc_async(other, double, args=(x * 3.0,))) + 1.0


def describe(x: ag.Tensor) -> tuple[bool, str | None]:
    return x.requires_grad, None if x.grad_fn is None else x.grad_fn.name()


def make_leaf_requiring_grad() -> ag.Tensor:
    return ag.tensor([1.0, 2.0], requires_grad=True) * 1.0


class Boom(Exception):
    pass


def raise_value_error() -> None:
    raise ValueError("bad value 42")


class NeedsTwoArgs(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(a)  # pickles as NeedsTwoArgs(a): cannot be rebuilt
        self.b = b


def raise_unrebuildable() -> None:
    raise NeedsTwoArgs("two args needed", "b")


async def sleep_for(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


class Gate:
    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self) -> str:
        await self.event.wait()
        return "passed"

    async def open(self) -> str:
        self.event.set()
        return "opened"


class Counter:
    def __init__(self, start: int) -> None:
        self.n = start

    def add(self, k: int) -> int:
        self.n += k
        return self.n

    async def aget(self) -> int:
        return self.n


def holds(rref_id: int) -> bool:
    from aiograd.distributed._state import current_agent

    return rref_id in current_agent().rrefs


def owner_local_value(rref: dist.RRef) -> int:
    return rref.local_value().n


# ----- rpc_async -----------------------------------------------------------------------------


async def test_rpc_async_runs_plain_and_async_functions(dist_cluster: str) -> None:
    w0, w1 = dist.workers()
    assert (w0, w1) == ("worker0", "worker1")
    assert dist.get_worker_name() == "driver"
    x = ag.tensor([1.0, 2.0])
    np.testing.assert_array_equal((await dist.rpc_async(w0, double, args=(x,))).numpy(), [2.0, 4.0])
    r = await dist.rpc_async(w1, async_add, args=(x,), kwargs={"y": 0.5})
    np.testing.assert_array_equal(r.numpy(), [1.5, 2.5])
    assert await dist.rpc_async(w1, whoami) == ("worker1", ["worker0", "worker1"])


async def test_nested_calls_worker_to_worker_and_back(dist_cluster: str) -> None:
    x = ag.tensor([1.0, -1.0], dtype=ag.float64)
    r = await dist.rpc_async("worker0", call_the_other, args=(x,))
    np.testing.assert_array_equal(r.numpy(), [7.0, -5.0])


async def test_outside_a_context_tensors_cross_as_fresh_leaves_both_ways(dist_cluster: str) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert await dist.rpc_async("worker0", describe, args=(x * 1.0,)) == (True, None)
    assert await dist.rpc_async("worker0", describe, args=(ag.tensor([1.0]),)) == (False, None)
    back = await dist.rpc_async("worker0", make_leaf_requiring_grad)
    assert back.requires_grad and back.grad_fn is None


async def test_inside_a_context_send_and_recv_are_recorded(dist_cluster: str) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    async with dist.context():
        assert await dist.rpc_async("worker0", describe, args=(x * 1.0,)) == (True, "RecvRpcBackward")
        assert await dist.rpc_async("worker0", describe, args=(ag.tensor([1.0]),)) == (False, None)
        back = await dist.rpc_async("worker0", make_leaf_requiring_grad)
        assert back.requires_grad and back.grad_fn.name() == "RecvRpcBackward"
        with ag.no_grad():  # nothing recorded: a fresh leaf, as outside a context
            assert await dist.rpc_async("worker0", describe, args=(x,)) == (True, None)


async def test_async_remote_functions_on_one_worker_run_concurrently(dist_cluster: str) -> None:
    gate = dist.remote("worker1", Gate)
    waiting = asyncio.ensure_future(gate.rpc_async().wait())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    assert await gate.rpc_async().open() == "opened"  # served while wait() still runs there
    assert await asyncio.wait_for(waiting, 10) == "passed"


# ----- errors and deadlines -----------------------------------------------------------------


async def test_unknown_worker_name(dist_cluster: str) -> None:
    with pytest.raises(RuntimeError, match="could not find destination name 'nobody'"):
        await dist.rpc_async("nobody", double, args=(ag.tensor([1.0]),))
    with pytest.raises(RuntimeError, match="could not find destination name"):
        dist.remote("nobody", Counter, args=(1,))


async def test_remote_exception_keeps_its_type_worker_name_and_traceback(dist_cluster: str) -> None:
    with pytest.raises(ValueError) as info:
        await dist.rpc_async("worker1", raise_value_error)
    msg = str(info.value)
    assert "bad value 42" in msg and "worker1" in msg and "raise_value_error" in msg and "Traceback" in msg
    with pytest.raises(RuntimeError, match="NeedsTwoArgs: two args needed .raised on worker0"):
        await dist.rpc_async("worker0", raise_unrebuildable)


async def test_call_past_its_deadline_raises_timeout_error(dist_cluster: str) -> None:
    with pytest.raises(TimeoutError, match="worker0"):
        await dist.rpc_async("worker0", sleep_for, args=(5.0,), timeout=0.3)
    assert await dist.rpc_async("worker0", sleep_for, args=(0.0,), timeout=5) == "slept"


# ----- RRefs ------------------------------------------------------------------------------------


async def test_remote_rref_to_here_methods_and_local_value(dist_cluster: str) -> None:
    rref = dist.remote("worker1", Counter, args=(10,))
    assert rref.owner() == "worker1"
    assert (await rref.to_here()).n == 10
    assert await rref.rpc_async().add(5) == 15
    assert await rref.rpc_async().aget() == 15
    assert await dist.rpc_async("worker1", owner_local_value, args=(rref,)) == 15
    with pytest.raises(RuntimeError, match="only be called on the owner"):
        rref.local_value()
    with pytest.raises(RuntimeError, match="only be called on the owner"):
        await dist.rpc_async("worker0", owner_local_value, args=(rref,))
    mine = dist.RRef(Counter(3))
    assert mine.owner() == "driver" and mine.local_value().n == 3
    assert await mine.rpc_async().add(1) == 4


async def test_rref_creation_error_is_raised_by_its_users(dist_cluster: str) -> None:
    rref = dist.remote("worker0", raise_value_error)
    with pytest.raises(ValueError, match="bad value 42"):
        await rref.to_here()


async def test_parameter_rrefs_of_a_remote_module(dist_cluster: str) -> None:
    ag.manual_seed(0)
    model_rref = dist.remote("worker0", ag.nn.Linear, args=(3, 2))
    params = await dist.parameter_rrefs(model_rref)
    assert len(params) == 2 and all(p.owner() == "worker0" for p in params)
    here = await params[0].to_here()
    assert isinstance(here, ag.nn.Parameter) and here.shape == (2, 3)
    assert here.requires_grad and here.grad_fn is None  # a parameter server's parameters keep requires_grad
    module = await model_rref.to_here()
    assert isinstance(module, ag.nn.Linear) and isinstance(module.weight, ag.nn.Parameter)
    assert module.weight.requires_grad
    np.testing.assert_array_equal(module.weight.detach().numpy(), here.detach().numpy())


async def test_the_value_of_a_collected_rref_is_freed_on_its_owner(dist_cluster: str) -> None:
    rref = dist.remote("worker1", Counter, args=(1,))
    await rref.to_here()
    rid = rref._id
    assert await dist.rpc_async("worker1", holds, args=(rid,))
    del rref
    gc.collect()
    for _ in range(500):
        if not await dist.rpc_async("worker1", holds, args=(rid,)):
            break
        await asyncio.sleep(0.02)
    assert not await dist.rpc_async("worker1", holds, args=(rid,))


# ----- torch's blocking names (NOTE [Blocking calls]) ----------------------------------------------


def sync_chain(x: ag.Tensor) -> tuple[str, ag.Tensor, str]:
    """A plain remote function (a worker thread): torch's rpc_sync, to the other worker and to the driver."""
    me = dist.get_worker_name()
    other = next(w for w in dist.workers() if w != me)
    y = dist.rpc_sync(other, double, args=(x,))
    fut = dist.rpc_async(other, double, args=(y,))
    assert isinstance(fut, dist.Future)
    z = fut.wait()
    return me, z, dist.rpc_sync("driver", dist.get_worker_name)


async def async_reaches_driver() -> str:
    return await dist.rpc_async("driver", dist.get_worker_name)


def rpc_sync_on_a_loop() -> None:
    async def inner() -> None:
        dist.rpc_sync("worker0", double, args=(ag.tensor([1.0]),))

    asyncio.run(inner())


async def test_rpc_sync_and_future_wait_from_a_worker_thread(dist_cluster: str) -> None:
    me, z, driver = await dist.rpc_async("worker1", sync_chain, args=(ag.tensor([1.0, 2.0]),))
    assert me == "worker1" and driver == "driver"
    np.testing.assert_array_equal(z.numpy(), [4.0, 8.0])
    assert await dist.rpc_async("worker0", async_reaches_driver) == "driver"


async def test_rpc_sync_in_a_running_loop_points_at_rpc_async(dist_cluster: str) -> None:
    with pytest.raises(RuntimeError, match=r"use `await dist.rpc_async\(...\)` here"):
        dist.rpc_sync("worker0", double, args=(ag.tensor([1.0]),))


async def test_rpc_sync_from_a_driver_thread(dist_cluster: str) -> None:
    def train() -> tuple[ag.Tensor, int]:
        counter = dist.remote("worker0", Counter, args=(1,))
        counter.rpc_sync().add(2)
        return dist.rpc_sync("worker1", double, args=(ag.tensor([3.0]),)), counter.rpc_sync().add(0)

    y, n = await asyncio.to_thread(train)
    assert y.tolist() == [6.0] and n == 3


async def test_rref_proxies_rpc_sync_and_remote(dist_cluster: str) -> None:
    counter = dist.remote("worker1", Counter, args=(5,))
    n_rref = counter.remote().add(1)  # an RRef to 6, kept on worker1
    assert isinstance(n_rref, dist.RRef) and n_rref.owner() == "worker1"
    assert await n_rref.to_here() == 6
    assert await counter.rpc_async().aget() == 6
    with pytest.raises(RuntimeError, match=r"use `await rref.rpc_async\(\).add\(...\)` here"):
        counter.rpc_sync().add(1)


def info_here() -> tuple[object, object, object]:
    return tuple(dist.get_worker_info()), tuple(dist.get_worker_info("driver")), dist.get_worker_info("worker0").id


async def test_get_worker_info(dist_cluster: str) -> None:
    info = dist.get_worker_info()
    assert (info.name, info.id) == ("driver", 0)
    assert dist.get_worker_info("worker1") == dist.WorkerInfo("worker1", 2)
    assert await dist.rpc_async("worker1", info_here) == (("worker1", 2), ("driver", 0), 1)
    with pytest.raises(RuntimeError, match="could not find destination name 'nobody'"):
        dist.get_worker_info("nobody")


# ----- functions sent by value, per-worker state (NOTE [Functions sent by value]) -----------------

_SERVER: Counter | None = None


def singleton_by_global() -> int:
    global _SERVER
    if _SERVER is None:
        _SERVER = Counter(0)
    return _SERVER.add(1)


def singleton_by_worker_local() -> int:
    return dist.worker_local("test_dist_rpc.counter", lambda: Counter(0)).add(1)


async def test_a_by_value_function_assigning_a_global_warns_and_worker_local_persists(dist_cluster: str) -> None:
    from aiograd.distributed import rpc

    rpc._checked_code.discard(singleton_by_global.__code__)
    with pytest.warns(RuntimeWarning, match=r"singleton_by_global assigns the global\(s\) _SERVER and travels by value"):
        first = await dist.rpc_async("worker0", singleton_by_global)
    assert (first, await dist.rpc_async("worker0", singleton_by_global)) == (1, 1)  # a fresh copy each call
    counts = [await dist.rpc_async("worker1", singleton_by_worker_local) for _ in range(3)]
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2]


# ----- leaving a context past a peer that timed out (NOTE [Releasing past a failed peer]) ----------


async def blocks_its_loop(seconds: float) -> str:
    time.sleep(seconds)  # the mistake: a blocking call in an async remote function
    return "done"


async def test_leaving_a_context_does_not_wait_for_a_peer_that_timed_out(dist_cluster: str) -> None:
    async with dist.context():
        with pytest.raises(TimeoutError, match="worker0"):
            await dist.rpc_async("worker0", blocks_its_loop, args=(2.0,), timeout=0.3)
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 1.0
    for _ in range(200):  # worker0 releases it once its loop runs again
        if (await dist.rpc_async("worker0", dist.debug_info))["num_autograd_contexts"] == 0:
            break
        await asyncio.sleep(0.05)
    assert (await dist.rpc_async("worker0", dist.debug_info))["num_autograd_contexts"] == 0
