"""The Dask plugins that put aiograd on a cluster: an agent per worker, departures told to every worker.

``dist.init`` registers both (idempotently, so several drivers share them).
The worker plugin gives each worker an ``Agent`` whose handlers join the
worker's own (its engine then runs on the worker's event loop). The
scheduler plugin turns Dask's removal hooks into messages to the workers'
agents: a worker that left (its pending requests fail, the contexts it
started are dropped) and a driver whose client disconnected (its contexts
and RRef values are dropped). Both must be importable where they run:
install aiograd on the scheduler and on every worker.
"""

from __future__ import annotations

import asyncio
from typing import Any

from distributed.core import Status
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from ._agent import Agent

__all__ = ["AgentWorkerPlugin", "AgentSchedulerPlugin"]


class AgentWorkerPlugin(WorkerPlugin):
    """Starts an aiograd agent on each worker, serving on the worker's loop."""

    name = "aiograd"
    idempotent = True  # a second driver on the cluster keeps the agents running

    def __init__(self, rpc_timeout: float) -> None:
        self.rpc_timeout = rpc_timeout
        self.agent: Any = None

    async def setup(self, worker: Any) -> None:
        agent = Agent(str(worker.name), worker.address, worker.rpc, worker.scheduler, self.rpc_timeout)
        worker.handlers.update(agent.handlers)
        self.agent = agent
        try:
            await agent.refresh_directory()
        except Exception:  # the directory fills on first use instead
            pass

    async def teardown(self, worker: Any) -> None:
        agent, self.agent = self.agent, None
        if agent is not None:
            for op in agent.handlers:
                worker.handlers.pop(op, None)
            await agent.close()


class AgentSchedulerPlugin(SchedulerPlugin):
    """Tells the workers' agents when a worker leaves or joins, and when a driver's client goes away."""

    name = "aiograd-scheduler"
    idempotent = True

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    async def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        if _running(scheduler):
            await _tell(scheduler, list(scheduler.workers), "aiograd_peer_lost", address=worker)

    async def add_worker(self, scheduler: Any, worker: str) -> None:
        if not _running(scheduler):
            return
        ws = scheduler.workers.get(worker)
        name = ws.name if ws is not None else worker
        others = [w for w in scheduler.workers if w != worker]  # the new one sets its agent up itself
        await _tell(scheduler, others, "aiograd_peer_joined", address=worker, name=str(name))

    def remove_client(self, scheduler: Any, client: str) -> None:
        if not _running(scheduler):
            return
        task = asyncio.ensure_future(_tell(scheduler, list(scheduler.workers), "aiograd_client_gone", client=client))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _tell(scheduler: Any, workers: list[str], op: str, **msg: Any) -> None:
    """Send ``op`` to each worker's agent; one that cannot be reached is skipped silently.

    Not ``scheduler.broadcast``: that logs an ERROR for every worker it cannot
    reach, and when workers leave together (a cluster shutting down, several
    killed) the ones told about the first are often dying themselves.
    """

    async def one(address: str) -> None:
        try:
            await asyncio.wait_for(getattr(scheduler.rpc(address), op)(**msg), TELL_TIMEOUT_S)
        except Exception:
            pass  # it is leaving too: its own removal is announced to the others

    await asyncio.gather(*(one(a) for a in workers))


TELL_TIMEOUT_S = 10.0


def _running(scheduler: Any) -> bool:
    """Whether the scheduler still serves (no messages while it closes: its comms are going away)."""
    return scheduler.status == Status.running
