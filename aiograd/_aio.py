"""The engine's small window onto the async runtime (asyncio, uvloop or trio), or onto none.

Everything the engine awaits goes through here, on anyio, so one engine runs
on any of the three loops: yielding at the end of a time slice, waiting for
device work, and running a kernel on a device's executor thread.

NOTE [Loop-free passes]: ``backward_sync``/``grad_sync`` are called where no
event loop runs, and starting one per call (``asyncio.run``) costs more than
a whole pass over a small graph. So they drive the engine's coroutine by hand
on the calling thread (``run_without_loop``), and every await point of the
engine has a loop-free form that never suspends: the time-slice yield does
nothing (nothing else runs on this thread), waiting for device work blocks on
a ``ThreadInbox`` that device threads post their results to, the shield
around abandoning a pass is a no-op (nothing can cancel it), and a node whose
backward is a coroutine (an async custom Function, a checkpoint) is run to
completion on a private event loop (``awaitable_anywhere``), so user code
that awaits asyncio or anyio primitives works as under ``await``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
from typing import Any, Awaitable, Callable, Generator, Mapping

import anyio
import anyio.lowlevel

try:  # trio depends on sniffio and names itself there while it runs a thread's loop
    from sniffio import thread_local as _sniffio_thread
except ImportError:  # pragma: no cover - then only asyncio can be running
    _sniffio_thread = None  # type: ignore[assignment]

__all__ = [
    "checkpoint",
    "Event",
    "running_loop_kind",
    "in_async_context",
    "run_without_loop",
    "ThreadInbox",
    "awaitable_anywhere",
    "loop_may_want_turn",
    "turn_probe",
]

checkpoint = anyio.lowlevel.checkpoint
Event = anyio.Event


def running_loop_kind() -> str | None:
    """``"asyncio"``, ``"trio"`` or None when no event loop runs in this thread.

    Cheap in every case (no exception raised): every ``backward()`` asks it (NOTE [Sync outside
    a loop]). Only per-thread facts count: asyncio's running loop and the name trio gives
    sniffio's thread-local. sniffio's context variable (which anyio sets, on asyncio too) is
    not asked, because a thread started with a copy of a task's context (an executor job, a
    DataLoader worker) carries it although no loop runs there."""
    if asyncio._get_running_loop() is not None:
        return "asyncio"
    if _sniffio_thread is None:
        return None
    return _sniffio_thread.name


def checkpoint_function() -> Callable[[], Any]:
    """The cheapest way to yield to the running loop: ``asyncio.sleep(0)`` on asyncio, anyio's
    otherwise, and nothing at all in a loop-free pass (NOTE [Loop-free passes])."""
    kind = running_loop_kind()
    if kind == "asyncio":
        return _asyncio_yield
    if kind is None:
        return no_yield
    return checkpoint


def _asyncio_yield() -> Any:
    return asyncio.sleep(0)


async def no_yield() -> None:
    """The time-slice yield of a loop-free pass: nothing else runs on this thread to yield to."""


def in_async_context() -> bool:
    return running_loop_kind() is not None


def run_without_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """Run the coroutine ``fn(*args)`` to completion on this thread with no event loop.

    It runs in a copy of the current context, as ``asyncio.run`` would run it,
    and must never suspend: only the engine's loop-free passes qualify
    (NOTE [Loop-free passes]).
    """
    coro = fn(*args)
    ctx = contextvars.copy_context()
    try:
        ctx.run(coro.send, None)
    except StopIteration as done:
        return done.value
    ctx.run(coro.close)
    raise RuntimeError("aiograd internal error: a backward pass without an event loop tried to suspend")


class ThreadInbox:
    """Calls posted from other threads, run by the thread that waits on the inbox.

    The loop-free stand-in for ``loop.call_soon_threadsafe``: device threads post
    their results here, and the pass's driver runs them when it waits for work.
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()

    def __call__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._calls.put((fn, args))

    def run_posted(self) -> None:
        """Block until a call is posted, then run it and every other call already posted."""
        fn, args = self._calls.get()
        fn(*args)
        while True:
            try:
                fn, args = self._calls.get_nowait()
            except queue.Empty:
                return
            fn(*args)


def thread_poster() -> Callable[..., Any]:
    """A function that, called from any thread, schedules ``fn(*args)`` on the running loop's
    thread (a ``ThreadInbox`` that the driver drains when no loop runs)."""
    kind = running_loop_kind()
    if kind == "trio":
        import trio  # only when a trio loop runs: trio is optional

        return trio.lowlevel.current_trio_token().run_sync_soon
    if kind is None:
        return ThreadInbox()
    return asyncio.get_running_loop().call_soon_threadsafe


def shielded() -> Any:
    """A cancel scope that shields its body (used to wait for kernels already running on threads).

    Without a running loop nothing can cancel the body, and anyio has no scope to offer."""
    if running_loop_kind() is None:
        return contextlib.nullcontext()
    return anyio.CancelScope(shield=True)


class _Ready:
    """An awaitable that is already resolved to ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator that never suspends


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw


def awaitable_anywhere(aw: Awaitable[Any]) -> Awaitable[Any]:
    """What to await for ``aw``: ``aw`` itself under a running loop; without one, ``aw``
    already run to completion on a private event loop (NOTE [Loop-free passes])."""
    if running_loop_kind() is not None:
        return aw
    return _Ready(asyncio.run(_await(aw)))


# NOTE [Nobody waiting]: the engine hands a kernel longer than its time slice to a device
# thread so that the loop's other coroutines get their turns meanwhile (NOTE [Offload
# policy] (a) in autograd/executors.py). When the loop has nothing else to run, that
# hand-off buys nothing and costs 0.35-0.5 ms of CPU. An asyncio event loop can say so
# cheaply: no callback ready to run (a call another thread posted with
# ``call_soon_threadsafe`` is in that queue at once), no timer due before the kernel would
# end, and no file descriptor watched except its own wake-up pipe (a watched socket or
# pipe, of a server, a client, a Jupyter kernel, a subprocess, may deliver work at any
# moment, so it counts as someone waiting). Calls another thread may post while the
# kernel runs (a DataLoader worker's batch, a finished offload) cannot be foreseen: they
# wait for the kernel. Loops this module cannot inspect (uvloop, trio, a proactor loop)
# always count as busy: nothing changes for them. What the loop holds is read from
# asyncio's private fields (``_ready``, ``_scheduled``, ``_ssock``, the selector's map;
# for yields, below, ``_signal_handlers`` and a task's ``_must_cancel``): a loop or task
# without them counts as busy.
#
# The same question, asked for now, decides the engine's yields (``turn_probe``): at the
# end of a time slice, and before an inline kernel that would end past it, the driver
# gives the loop a turn only if something would run in it. A turn of an asyncio loop
# with nothing to run still costs: 4 us alone, about 25,000 instructions (callgrind) from
# inside a training step's backward, whose await chain unwinds and resumes; the
# transformer step of benchmarks/offload.py took 17 of them (issue 19). Two more things
# count for a yield. A cancel of the pass's own task requested while it ran (by a hook, a
# custom backward, ``asyncio.run``'s Ctrl-C handler) waits, in the task, for its next
# suspension: the task's ``_must_cancel`` shows it. And a signal for a handler added
# with ``loop.add_signal_handler`` (a script's SIGTERM) is a byte in the wake-up pipe
# until the loop reads it, which nothing in the loop's queues shows: a loop with such
# handlers yields every slice, as before.
#
# Reading that pipe instead (a ``poll`` of it, under 1 us) was tried and dropped: the
# call releases the GIL, and a thread waiting for the GIL restarts its 5 ms wait each time
# the GIL is released and taken back by the same thread, so a pass that released it every
# slice kept another Python thread waiting for the whole pass (150 ms; with the old yield
# to the loop's own ``epoll``, 17-109 ms). A pass that releases nothing lets CPython's
# switch interval hand the GIL over within 5-15 ms.


def loop_may_want_turn(within: float) -> bool:
    """Whether anything else on this thread's running event loop may want to run in the
    next ``within`` seconds (NOTE [Nobody waiting]); True whenever that cannot be told.

    False without a running loop (nothing else runs on this thread then)."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return running_loop_kind() is not None  # trio: cannot be told
    inspectable = _inspectable(loop)
    if inspectable is None:
        return True
    return _may_want_turn(loop, *inspectable, within)


def turn_probe() -> Callable[[], bool]:
    """For one backward pass on this thread's running loop: a function that says whether a
    yield now would do anything: run a ready callback, a timer due or a watched socket or pipe
    (as ``loop_may_want_turn``), or deliver a cancel of the pass's own task, requested while it
    ran (NOTE [Nobody waiting]). Always False without a running loop; always True on a loop
    that cannot be inspected or that has signal handlers."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return _always_turn if running_loop_kind() is not None else _never_turn
    inspectable = _inspectable(loop)
    if inspectable is None:
        return _always_turn
    fds, wake_fd = inspectable
    task = asyncio.current_task(loop)
    if task is not None and not hasattr(task, "_must_cancel"):
        return _always_turn  # a task whose pending cancel cannot be read
    if getattr(loop, "_signal_handlers", True):
        return _always_turn  # a signal for the loop's handlers shows only in its wake-up pipe

    def wanted() -> bool:
        if task is not None and task._must_cancel:  # cancelled while it ran: the yield delivers it
            return True
        return _may_want_turn(loop, fds, wake_fd, 0.0)  # a timer due later would not run in this turn

    return wanted


def _always_turn() -> bool:
    return True


def _never_turn() -> bool:
    return False


def _inspectable(loop: asyncio.AbstractEventLoop) -> tuple[Mapping[Any, Any], int] | None:
    """The selector's map of watched descriptors and the loop's wake-up descriptor, for asyncio's
    selector loop; None for any other (uvloop, a proactor loop): it cannot be inspected.

    The map is the selector's own dict by descriptor where it has one (``len`` and ``in`` on it
    cost nothing), else its public ``get_map()``: the same keys, through Python calls."""
    selector = getattr(loop, "_selector", None)
    self_pipe = getattr(loop, "_ssock", None)
    if selector is None or self_pipe is None or not hasattr(loop, "_ready") or not hasattr(loop, "_scheduled"):
        return None
    fds = getattr(selector, "_fd_to_key", None)
    try:
        if not isinstance(fds, dict):
            fds = selector.get_map()
        return (fds, self_pipe.fileno()) if fds is not None else None
    except Exception:  # a closed selector or pipe, or a changed private API: cannot be told
        return None


def _may_want_turn(loop: Any, fds: Mapping[Any, Any], wake_fd: int, within: float) -> bool:
    if loop._ready:  # a callback ready to run
        return True
    scheduled = loop._scheduled  # (a list the loop may replace: read it each time)
    if scheduled:
        due = loop.time() + within
        if scheduled[0].when() <= due and any(not t.cancelled() and t.when() <= due for t in scheduled):
            return True
    watched = len(fds)  # a descriptor watched besides the loop's own wake-up pipe
    return watched > 1 or (watched == 1 and wake_fd not in fds)
