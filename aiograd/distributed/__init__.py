"""aiograd.distributed: distributed autograd on Dask distributed (torch.distributed.rpc + .autograd).

    import aiograd.distributed as dist

    await dist.init(n_workers=2)                  # local cluster on 127.0.0.1 (or address=...)
    w1, w2 = dist.workers()
    async with dist.context() as context_id:
        h = await dist.rpc_async(w1, stage1, args=(x,))
        out = await dist.rpc_async(w2, stage2, args=(h,))
        await dist.backward(context_id, [out.sum()])
        grads = dist.get_gradients(context_id)    # {tensor: grad} of this process's leaves
    await dist.shutdown()

Importing this package does not import Dask (``dist.init`` does: pip install
aiograd[distributed]). Every worker must have aiograd installed.
"""

from __future__ import annotations

from ._cluster import WorkerInfo, get_worker_info, get_worker_name, init, shutdown, workers
from ._engine import backward
from ._errors import WorkerLostError
from .context import context, debug_info, get_gradients
from .data_parallel import DataParallel
from .optimizer import DistributedOptimizer
from .rpc import Future, RRef, parameter_rrefs, remote, rpc_async, rpc_sync, worker_local

__all__ = [
    "init",
    "shutdown",
    "workers",
    "get_worker_name",
    "get_worker_info",
    "WorkerInfo",
    "rpc_async",
    "rpc_sync",
    "Future",
    "worker_local",
    "remote",
    "RRef",
    "parameter_rrefs",
    "context",
    "backward",
    "get_gradients",
    "DistributedOptimizer",
    "DataParallel",
    "debug_info",
    "WorkerLostError",
]
