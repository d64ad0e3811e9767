"""Starting or joining the cluster: ``init``, ``shutdown``, ``workers``, ``get_worker_name``.

``await dist.init(n_workers=2)`` starts a local Dask cluster of worker
processes (scheduler, nannies and workers on 127.0.0.1 only, no dashboard);
``address=`` joins an existing scheduler instead. Either way the driver gets
an asynchronous Dask ``Client``, a small Dask ``Server`` of its own (so that
workers can send gradients back to it), and registers the plugins that give
each worker an agent (see _plugins.py). Dask is imported here, on first use.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from ._agent import Agent
from ._state import current_agent, process, require_asyncio

__all__ = ["init", "shutdown", "workers", "get_worker_name", "get_worker_info", "WorkerInfo"]

DRIVER_NAME = "driver"


def _import_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError as e:  # pragma: no cover - the test environment has it
        raise ImportError(
            "aiograd.distributed runs on Dask distributed, which is not installed: "
            "pip install aiograd[distributed]"
        ) from e


class Driver:
    """What ``dist.init`` started in the driver's process, closed by ``dist.shutdown``."""

    def __init__(self, agent: Agent, client: Any, cluster: Any, server: Any) -> None:
        self.agent = agent
        self.client = client
        self.cluster = cluster  # the embedded LocalCluster, or None when joining one
        self.server = server

    async def close(self) -> None:
        agent = self.agent
        mine = [c for c in agent.contexts.values() if c.origin[1] == agent.address]
        for ctx in mine:
            try:
                await agent.release_context(ctx)
            except Exception:  # pragma: no cover - best effort: workers drop them when the client leaves
                pass
        await agent.close()
        try:
            self.client.unsubscribe_topic("all")
        except Exception:  # pragma: no cover
            pass
        await self.server.close()
        await self.client.close()
        if self.cluster is not None:
            await self.cluster.close()


async def init(
    n_workers: int = 2, *, address: str | None = None, rpc_timeout: float = 60.0, security: Any = None
) -> None:
    """Start a local cluster of ``n_workers`` worker processes on 127.0.0.1, or join ``address``.

    ``rpc_timeout`` (seconds) is the deadline of every cross-process call that
    gives none. ``security`` is a Dask ``Security`` object (TLS between driver,
    scheduler and workers). Workers are named ``worker0``, ``worker1``... in
    the local cluster, and keep their Dask names when joining one.
    """
    require_asyncio("dist.init")
    if process.driver is not None:
        raise RuntimeError("aiograd.distributed is already initialized: `await dist.shutdown()` first")
    if not (isinstance(rpc_timeout, (int, float)) and rpc_timeout > 0):
        raise ValueError(f"rpc_timeout must be a positive number of seconds, got {rpc_timeout!r}")
    if address is None and not (isinstance(n_workers, int) and n_workers >= 1):
        raise ValueError(f"n_workers must be a positive int, got {n_workers!r}")
    _import_dask()
    if address is not None and security is None and str(address).startswith("tls://"):
        raise ValueError(
            f"{address} is a TLS scheduler: pass the driver's certificates, "
            "dist.init(address=..., security=distributed.security.Security(tls_ca_file=..., "
            "tls_client_cert=..., tls_client_key=..., require_encryption=True))"
        )
    from distributed import Client, LocalCluster  # dask on first use (the distributed extra)
    from distributed.comm.addressing import get_address_host, parse_address
    from distributed.core import Server
    from distributed.security import Security

    from ._plugins import AgentSchedulerPlugin, AgentWorkerPlugin  # on first use, as dask above

    security = security if security is not None else Security()
    cluster: Any = None
    client: Any = None
    server: Any = None
    try:
        if address is None:
            cluster = LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, asynchronous=True, security=security, silence_logs=logging.ERROR,
                # The scheduler always serves HTTP (health, metrics): on a free loopback port, no dashboard.
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
            )
            # Name the workers as torch names its RPC peers (Dask would use 0, 1, ...).
            cluster.worker_spec = {f"worker{i}": spec for i, spec in enumerate(cluster.worker_spec.values())}
            await cluster
            client = await Client(cluster, asynchronous=True, security=security)
            host = "127.0.0.1"
        else:
            client = await Client(address, asynchronous=True, security=security)
            # Listen where this process reaches the scheduler: workers reach it there too.
            host = get_address_host(client.scheduler_comm.comm.local_address)
        protocol = parse_address(client.scheduler.address)[0]
        server = Server({}, connection_args=security.get_connection_args("client"), needs_workdir=False)
        await server
        await server.listen(f"{protocol}://{host}:0", **security.get_listen_args("client"))
        agent = Agent(DRIVER_NAME, server.address, server.rpc, client.scheduler, rpc_timeout, client_id=client.id)
        server.handlers.update(agent.handlers)
        try:
            await client.register_plugin(AgentSchedulerPlugin())
            await client.register_plugin(AgentWorkerPlugin(rpc_timeout))
        except Exception as e:
            raise RuntimeError(
                f"could not start aiograd on the cluster ({type(e).__name__}: {e}): install aiograd[distributed] "
                "(the same version as here) on the scheduler and on every worker"
            ) from e
        if cluster is not None:
            await client.wait_for_workers(n_workers)
        client.subscribe_topic("all", lambda event: _on_cluster_event(agent, event))
        await agent.refresh_directory()
    except BaseException:
        for closing in (server, client, cluster):
            if closing is not None:
                try:
                    await closing.close()
                except Exception:  # pragma: no cover - already failing
                    pass
        raise
    process.driver = Driver(agent, client, cluster, server)


def _on_cluster_event(agent: Agent, event: Any) -> None:
    """Dask's scheduler events (topic "all"): workers leaving or joining (NOTE [Deadlines and lost workers])."""
    _, msg = event
    if not isinstance(msg, dict):
        return
    action = msg.get("action")
    if action == "remove-worker":
        agent.peer_lost(msg["worker"])
    elif action == "add-worker" and not agent.closed:
        agent.spawn(agent.refresh_directory())


async def shutdown() -> None:
    """Release this driver's contexts, close its client and server, and the local cluster it started.

    Idempotent; leaves no process, thread or task of aiograd behind.
    """
    driver = process.driver
    if driver is None:
        return
    process.driver = None
    await driver.close()


def workers() -> list[str]:
    """The names of the workers, sorted (worker2 before worker10) and stable."""
    return current_agent().worker_names()


def get_worker_name() -> str:
    """``"driver"`` in the process that called ``init``; the worker's name inside a remote call."""
    return current_agent().name


class WorkerInfo(NamedTuple):
    """torch.distributed.rpc.WorkerInfo: a process's ``name`` and an integer ``id``.

    The driver's id is 0 and each worker's is its position in
    ``dist.workers()`` plus one (worker0 is 1), as the examples of torch give
    the master rank 0. Ids follow the sorted names, so they are stable while
    the workers stay; a worker that joins later may shift the ids after it.
    """

    name: str
    id: int


def get_worker_info(name: str | None = None) -> WorkerInfo:
    """The ``WorkerInfo`` of process ``name`` (this process's by default; ``"driver"`` for the driver)."""
    agent = current_agent()
    if name is None:
        name = agent.name
    if name == DRIVER_NAME:
        return WorkerInfo(DRIVER_NAME, 0)
    names = agent.worker_names()
    if name not in names:
        raise RuntimeError(
            f"could not find destination name {name!r}: the workers are {', '.join(names) or 'none'}"
        )
    return WorkerInfo(name, names.index(name) + 1)
