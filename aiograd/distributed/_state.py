"""Where a coroutine finds its process's agent, its autograd context and its part of a pass.

NOTE [Current agent]: every process in the cluster has one ``Agent``: the
driver's is made by ``dist.init``, each worker's by the worker plugin. A
coroutine serving a request on a worker sees that worker's agent through a
context variable (set by the handler), so several workers in one process (a
test cluster with in-process workers) never mix their state; anything else
sees the driver's agent. The current autograd context and the current part of
a backward pass are context variables too, so concurrent coroutines never see
each other's (DESIGN.md §3, state kept in contextvars).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from typing import TYPE_CHECKING, Any, Awaitable, Coroutine, TypeVar

from .._aio import running_loop_kind

if TYPE_CHECKING:
    from ._agent import Agent
    from ._engine import Part
    from .context import DistContext

__all__ = ["current_agent", "current_context", "require_asyncio", "run_shielded", "run_blocking", "awaitable_or_run", "submit"]

T = TypeVar("T")

_current_agent: contextvars.ContextVar["Agent | None"] = contextvars.ContextVar("aiograd_dist_agent", default=None)
_current_context: contextvars.ContextVar["DistContext | None"] = contextvars.ContextVar(
    "aiograd_dist_context", default=None
)
_current_part: contextvars.ContextVar["Part | None"] = contextvars.ContextVar("aiograd_dist_part", default=None)


class _Process:
    """The driver's state in this process (set by ``dist.init``, cleared by ``dist.shutdown``)."""

    driver: Any = None  # the _cluster.Driver


process = _Process()


def current_agent() -> "Agent":
    """This process's agent (NOTE [Current agent]); a clear error before ``dist.init``."""
    agent = _current_agent.get()
    if agent is not None:
        return agent
    driver = process.driver
    if driver is None:
        raise RuntimeError("aiograd.distributed is not initialized: call `await dist.init()` first")
    return driver.agent


def current_context() -> "DistContext | None":
    """The autograd context the running coroutine is in (None outside ``async with dist.context()``)."""
    return _current_context.get()


def require_asyncio(what: str) -> None:
    """Dask distributed runs on asyncio only: refuse trio (and no loop) with a clear error."""
    kind = running_loop_kind()
    if kind == "asyncio":
        return
    if kind is None:
        raise RuntimeError(f"{what} must be awaited inside a running asyncio event loop")
    raise RuntimeError(
        f"{what}: aiograd.distributed runs on Dask distributed, which needs an asyncio event loop "
        f"(asyncio or uvloop), but this code runs on {kind}"
    )


async def run_shielded(aw: Awaitable[T]) -> T:
    """Await ``aw`` to its end even if the caller is cancelled meanwhile; then re-raise the cancellation.

    Cleanup that must reach other processes (releasing a context, cancelling a
    pass on every worker) runs this way, so cancelling the caller never leaves
    a worker holding state.
    """
    task = asyncio.ensure_future(aw)
    cancelled: BaseException | None = None
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError as e:
            if task.done():
                raise
            cancelled = e
    if cancelled is not None:
        raise cancelled
    return result


def run_blocking(what: str, alternative: str, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on this process's aiograd event loop from a thread that runs no loop, and wait for it.

    NOTE [Blocking calls]: torch's blocking names (``rpc_sync``, ``rref.to_here()``,
    ``dist_autograd.backward``, a ``with`` context) work here from any thread
    that runs no event loop: a plain remote function on a worker's thread, a
    driver thread started with ``asyncio.to_thread``. The work itself runs on
    the loop of the agent (the worker's, or the one ``dist.init`` ran on), in
    a copy of the caller's context variables (its agent, its autograd context,
    grad mode), and the calling thread waits. In a thread that runs a loop
    they refuse with an error naming the awaitable form, since waiting there
    would stop the loop that must serve the reply.
    """
    if running_loop_kind() is not None:
        coro.close()
        raise RuntimeError(
            f"{what} blocks until it completes, and this thread runs an event loop that the reply needs: "
            f"use `{alternative}` here, or call {what} from a thread that runs no loop "
            "(a plain remote function, `await asyncio.to_thread(fn)` on the driver)"
        )
    fut = submit(what, coro)
    try:
        return fut.result()
    except BaseException:
        fut.cancel()
        raise


def submit(what: str, coro: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
    """Start ``coro`` on this process's aiograd loop from another thread (NOTE [Blocking calls])."""
    try:
        agent = current_agent()
    except BaseException:
        coro.close()
        raise
    loop = agent.loop
    if loop.is_closed() or not loop.is_running():
        coro.close()
        raise RuntimeError(
            f"{what}: the event loop that runs aiograd.distributed in this process (the one `dist.init` ran on) "
            "is not running; call it from a thread while that loop runs"
        )
    return asyncio.run_coroutine_threadsafe(coro, loop)  # in a copy of this thread's context variables


def awaitable_or_run(what: str, alternative: str, coro: Coroutine[Any, Any, T]) -> Any:
    """``coro`` itself under a running loop (to be awaited); without one, its result (NOTE [Blocking calls])."""
    if running_loop_kind() is not None:
        return coro
    return run_blocking(what, alternative, coro)
