"""Data-parallel training that scales past the driver: ``dist.DataParallel``.

The pattern of the data-parallel example (the driver pickles the parameters
into every call and gathers every gradient) sends every byte through one
process: for N workers and P bytes of parameters, about 2·N·P bytes per step.
``DataParallel`` keeps that traffic between the workers:

NOTE [Replicas reduced at shards]: each worker holds a replica of the model
(the driver sends it once, at ``start``) and its own optimizer. A step is one
small message from the driver per worker; each worker computes its loss and
local gradients, flattens them into one vector and splits it into N shards,
shard k being owned by the k-th worker. Every worker sends shard k to its
owner (reduce-scatter: N - 1 messages of P/N bytes), each owner sums the N
contributions of its shard, and every worker fetches the N summed shards
back (all-gather). Each worker then holds the mean gradient, bit for bit the
same on all of them (the same sums in the same order), and applies the same
optimizer step, so the replicas stay equal without parameters ever being
sent again. Per step each worker moves about 2·P·(N-1)/N bytes, as a ring
all-reduce does, and the driver about N times a few hundred bytes,
independently of the model's size.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.api import grad
from ..tensor import Tensor
from ._cluster import workers as all_workers
from ._state import current_agent, require_asyncio
from .rpc import rpc_async

__all__ = ["DataParallel"]

_group_ids = itertools.count(1)


class _Mailbox:
    """One owned shard of one step: contributions summed as they arrive, in worker order."""

    __slots__ = ("parts", "done", "total", "fetched")

    def __init__(self) -> None:
        self.parts: dict[int, np.ndarray] = {}
        self.done = asyncio.Event()
        self.total: np.ndarray | None = None
        self.fetched = 0


class _Replica:
    """A worker's state in one DataParallel group (kept in its agent's ``local_state``)."""

    def __init__(self, module: Any, loss_fn: Callable[..., Any], optimizer_class: type, defaults: dict[str, Any],
                 workers: list[str], rank: int) -> None:
        self.module = module
        self.params: list[Tensor] = [p for p in module.parameters() if p.requires_grad]
        self.loss_fn = loss_fn
        self.optimizer = optimizer_class(self.params, **defaults)
        self.workers = workers
        self.rank = rank
        self.boxes: dict[tuple[int, int], _Mailbox] = {}

    def box(self, step: int, shard: int) -> _Mailbox:
        b = self.boxes.get((step, shard))
        if b is None:
            b = self.boxes[(step, shard)] = _Mailbox()
        return b


def _key(group: int) -> str:
    return f"aiograd.DataParallel.{group}"


def _replica(group: int) -> _Replica:
    replica = current_agent().local_state.get(_key(group))
    if replica is None:
        raise RuntimeError(f"this worker holds no replica of DataParallel group {group}: was it closed?")
    return replica


async def _setup(group: int, module: Any, loss_fn: Any, optimizer_class: type, defaults: dict[str, Any],
                 workers: list[str], rank: int) -> None:
    current_agent().local_state[_key(group)] = _Replica(module, loss_fn, optimizer_class, defaults, workers, rank)


async def _teardown(group: int) -> None:
    current_agent().local_state.pop(_key(group), None)


async def _contribute(group: int, step: int, shard: int, sender: int, part: np.ndarray) -> None:
    """The owner of ``shard`` receives one worker's part of it (reduce-scatter)."""
    replica = _replica(group)
    box = replica.box(step, shard)
    box.parts[sender] = part
    if len(box.parts) == len(replica.workers):
        total = box.parts[0].copy()
        for r in range(1, len(replica.workers)):  # a fixed order: the same sum on every worker
            total += box.parts[r]
        box.total, box.parts = total, {}
        box.done.set()


async def _reduced(group: int, step: int, shard: int) -> np.ndarray:
    """The summed ``shard`` of ``step``, once every worker contributed (all-gather)."""
    replica = _replica(group)
    box = replica.box(step, shard)
    await box.done.wait()
    box.fetched += 1
    total = box.total
    assert total is not None
    if box.fetched == len(replica.workers):
        del replica.boxes[(step, shard)]
    return total


async def _step(group: int, step: int, args: tuple[Any, ...]) -> float:
    """One worker's share of a step (NOTE [Replicas reduced at shards])."""
    replica = _replica(group)
    n = len(replica.workers)
    loss = replica.loss_fn(replica.module, *args)
    grads = await grad(loss, replica.params, allow_unused=True)
    flat = np.concatenate([
        (np.zeros(p._data.shape, p._data.dtype) if g is None else g._data).ravel() for p, g in zip(replica.params, grads)
    ]) if replica.params else np.zeros(0)
    shards = np.array_split(flat, n)

    async def send(k: int) -> None:
        if k == replica.rank:
            await _contribute(group, step, k, replica.rank, shards[k])
        else:
            await rpc_async(replica.workers[k], _contribute, args=(group, step, k, replica.rank, shards[k]))

    async def fetch(k: int) -> np.ndarray:
        if k == replica.rank:
            return await _reduced(group, step, k)
        return await rpc_async(replica.workers[k], _reduced, args=(group, step, k))

    await asyncio.gather(*(send(k) for k in range(n)))
    mean = np.concatenate(await asyncio.gather(*(fetch(k) for k in range(n)))) / n
    offset = 0
    for p in replica.params:
        size = p._data.size
        p.grad = Tensor._wrap(mean[offset:offset + size].reshape(p.shape).astype(p._data.dtype, copy=False),
                              p._device)
        offset += size
    replica.optimizer.step()
    for p in replica.params:
        p.grad = None
    return float(loss.item())


async def _state_dict(group: int) -> dict[str, Any]:
    return _replica(group).module.state_dict()


class DataParallel:
    """Data-parallel training: a model replica per worker, gradients reduced among the workers.

    ``ddp = await dist.DataParallel.start(model, loss_fn, ag.optim.SGD, lr=0.1)``
    sends ``model`` once to every worker (``workers=`` picks them; all by
    default), each with its own ``optimizer_class(params, **defaults)``.
    ``await ddp.step(args_per_worker)`` runs one step: worker i computes
    ``loss_fn(model, *args_per_worker[i])`` (a scalar, e.g. the mean loss of
    its minibatch), the gradients are averaged over the workers without
    passing through the driver (NOTE [Replicas reduced at shards]), and every
    replica takes the same optimizer step; it returns the mean of the losses.
    Give ``args_per_worker`` small things (indices into data the workers
    already hold, RRefs) to keep the driver's traffic small.
    """

    def __init__(self, group: int, workers: list[str]) -> None:
        self.group = group
        self.workers = workers
        self.steps = 0
        self._closed = False

    @classmethod
    async def start(
        cls, model: Any, loss_fn: Callable[..., Any], optimizer_class: type, *, workers: Sequence[str] | None = None,
        **defaults: Any,
    ) -> "DataParallel":
        """Send ``model`` to every worker once and set up each replica's optimizer."""
        require_asyncio("dist.DataParallel.start")
        names = list(workers) if workers is not None else all_workers()
        if not names:
            raise ValueError("DataParallel needs at least one worker")
        group = current_agent().new_id()
        await asyncio.gather(*(
            rpc_async(w, _setup, args=(group, model, loss_fn, optimizer_class, defaults, names, rank))
            for rank, w in enumerate(names)
        ))
        return cls(group, names)

    async def step(self, args_per_worker: Sequence[tuple[Any, ...]]) -> float:
        """One training step on every worker; the mean of their losses."""
        if self._closed:
            raise RuntimeError("this DataParallel was closed")
        if len(args_per_worker) != len(self.workers):
            raise ValueError(f"step() needs one args tuple per worker ({len(self.workers)}), got {len(args_per_worker)}")
        step = self.steps
        self.steps += 1
        losses = await asyncio.gather(*(
            rpc_async(w, _step, args=(self.group, step, tuple(a))) for w, a in zip(self.workers, args_per_worker)
        ))
        return float(np.mean(losses))

    async def state_dict(self) -> dict[str, Any]:
        """The model's parameters and buffers (the first worker's replica; all replicas are equal)."""
        return await rpc_async(self.workers[0], _state_dict, args=(self.group,))

    async def close(self) -> None:
        """Drop the replicas and their optimizers on the workers."""
        if not self._closed:
            self._closed = True
            await asyncio.gather(*(rpc_async(w, _teardown, args=(self.group,)) for w in self.workers))
