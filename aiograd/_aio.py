"""The engine's small window onto the async runtime (asyncio, uvloop or trio).

Everything the engine awaits goes through here, on anyio, so one engine runs
on any of the three loops: yielding at the end of a time slice, waiting for
device work, and running a kernel on a device's executor thread.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import anyio
import anyio.lowlevel

__all__ = ["checkpoint", "Event", "running_loop_kind", "in_async_context"]

checkpoint = anyio.lowlevel.checkpoint
Event = anyio.Event


def running_loop_kind() -> str | None:
    """``"asyncio"``, ``"trio"`` or None when no event loop runs in this thread."""
    try:
        asyncio.get_running_loop()
        return "asyncio"
    except RuntimeError:
        pass
    try:
        import sniffio

        return sniffio.current_async_library()
    except Exception:
        return None


def checkpoint_function() -> Callable[[], Any]:
    """The cheapest way to yield to the running loop: ``asyncio.sleep(0)`` on asyncio, anyio's otherwise."""
    if running_loop_kind() == "asyncio":
        return _asyncio_yield
    return checkpoint


def _asyncio_yield() -> Any:
    return asyncio.sleep(0)


def in_async_context() -> bool:
    return running_loop_kind() is not None


def run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a coroutine function to completion from synchronous code (no running loop)."""
    return asyncio.run(fn(*args))


def thread_poster() -> Callable[..., None]:
    """A function that, called from any thread, schedules ``fn(*args)`` on the running loop's thread."""
    if running_loop_kind() == "trio":
        import trio

        return trio.lowlevel.current_trio_token().run_sync_soon
    return asyncio.get_running_loop().call_soon_threadsafe


def shielded() -> Any:
    """A cancel scope that shields its body (used to wait for kernels already running on threads)."""
    return anyio.CancelScope(shield=True)
