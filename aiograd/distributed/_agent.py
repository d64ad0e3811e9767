"""The Agent: aiograd's side of one process of the cluster, and the Dask handlers it serves.

Every process (the driver, each worker) has one. It owns that process's
autograd contexts, the values its RRefs name, its parts of backward passes,
and talks to the other processes through Dask: requests go out through a
Dask ``ConnectionPool`` (the worker's, or the driver's server's) and arrive
as handlers of a Dask ``Server`` (the worker itself, or the small server the
driver listens with). Nothing here opens a socket or frames a message: Dask's
comms, handlers and serialization carry it all.

NOTE [Deadlines and lost workers]: every request has a deadline (its
``timeout``, else ``rpc_timeout``) and races the departure of its target:
Dask's worker-removal events (the scheduler's ``remove-worker`` event on the
driver, the scheduler plugin's broadcast on workers) resolve a per-address
future that later requests check, and stop every pending request to that
address (NOTE [One deadline timer]); a broken connection is the same news.
Either way the request fails at once with ``WorkerLostError`` naming the
worker, never a hang.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import inspect
import itertools
import os
import re
import secrets
import threading
import time
import types
from typing import Any, Callable

from ..autograd import grad_mode as _gm
from ._errors import WorkerLostError, pack_exception, rebuild_exception
from ._nodes import record_recv, record_send
from ._rref_store import RRefStore
from ._state import _current_agent, _current_context, _current_part
from .context import DistContext
from ._engine import Part

__all__ = ["Agent", "natural_key", "LOST_KEPT_S"]

LOST_KEPT_S = 60.0  # how long a departed process's name and lost-future are kept (NOTE [Deadlines and lost workers])


SHORT_WAIT_S = 0.001  # the longest the loop waits for a short call's thread (NOTE [Short calls])
SHORT_CALL_S = 0.0005  # a function whose last call was done this soon after it was handed over counts as short


class _Job:
    """One call on a thread of ``_Threads``: the function, then its outcome."""

    __slots__ = ("fn", "value", "error", "handed", "elapsed", "finished", "done", "future")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn: Callable[[], Any] | None = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.handed = time.perf_counter()  # when the loop handed it over
        self.elapsed = 0.0  # from then to the function's return: the thread's wake-up and the call
        self.finished = False
        self.done: threading.Lock | None = None  # held until the job finishes, when the loop may wait on it
        self.future: asyncio.Future[Any] | None = None  # set when the loop awaits the outcome instead

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class _CallThread:
    """One thread of ``_Threads``, woken through its own pipe (NOTE [Waking a call thread])."""

    __slots__ = ("pool", "job", "stopping", "read_fd", "write_fd", "thread")

    def __init__(self, pool: "_Threads", index: int) -> None:
        self.pool = pool
        self.job: _Job | None = None
        self.stopping = False
        self.read_fd, self.write_fd = os.pipe()
        self.thread = threading.Thread(target=self._serve, name=f"aiograd-dist-call-{index}", daemon=True)

    def hand(self, job: _Job) -> None:
        """Give this (idle) thread ``job`` to run."""
        self.job = job
        os.write(self.write_fd, b"\0")  # the GIL is let go before the thread is woken

    def stop(self) -> None:
        """End the thread once the call it may be running (or was just handed) has returned."""
        self.stopping = True
        os.write(self.write_fd, b"\0")

    def _serve(self) -> None:
        pool = self.pool
        try:
            while True:
                os.read(self.read_fd, 1)
                job, self.job = self.job, None
                if job is None:
                    if self.stopping:
                        return
                    continue
                pool.serve(job, self)
                del job  # its result is the caller's now, not this thread's to keep
        finally:
            os.close(self.read_fd)
            os.close(self.write_fd)


class _Threads:
    """The threads that run plain remote functions (NOTE [Blocking calls]): a thread per call at once.

    An idle thread takes the next call; a new one starts when none is idle,
    so calls that block (``rpc_sync`` waiting on another call to this
    process) never wait for a free thread. One ``call_soon_threadsafe`` per
    result that the loop awaits: about half the CPU time of
    ``loop.run_in_executor`` (no concurrent Future, no chained futures).

    NOTE [Short calls]: most remote functions return within microseconds
    (an accessor, a small layer), and handing their result back through the
    event loop (the self-pipe, a wake-up from ``select``, a future, a task
    step) cost more than the call itself. Timed in one process on the
    shared 2-core machine (load 2-3), the callee's handler of a small
    ``rpc_async`` took 180-200 µs with the hand-back through the loop and
    about 100 µs with the wait below (40-50 µs for an ``async def``
    function, which needs no thread). When the function last ran for at
    most ``SHORT_CALL_S`` (or never ran here), the loop thread waits for
    the thread on a lock, without the GIL, for at most ``SHORT_WAIT_S``,
    and takes the result directly. A call that takes longer (it blocks, it
    computes, it calls ``rpc_sync`` back into this loop) is awaited through
    the loop as before once the wait ends, so the loop is never held longer
    than ``SHORT_WAIT_S``, and that function is not waited on again until it
    is short again. "Ran" counts from the hand-over to the function's
    return, the thread's wake-up included: on a machine so busy that
    threads wait for a core, calls stop being waited on, instead of each
    holding the loop for the whole ``SHORT_WAIT_S`` in vain.

    NOTE [Waking a call thread]: each thread sleeps in ``os.read`` on a pipe
    of its own, and the loop thread wakes it with ``os.write``, which lets
    go of the GIL *before* the system call that wakes the thread. Woken
    through a queue (a lock released with the GIL held), the thread's first
    act was to wait for the GIL the loop thread still held, and on a busy
    machine, where the woken thread takes the loop thread's core, every
    hand-over cost two more context switches: a bare hand-over and wait
    took 30 µs and 5.5 switches per call through a ``SimpleQueue``, 10 µs
    and 2 switches through a pipe (one process, the shared 2-core machine
    at load 1.8). A thread that finishes its call puts itself back on the
    idle stack before it hands the result over, so the next call finds it.
    Each thread holds the two ends of its pipe (closed when it stops): as
    many threads as calls ever ran at once, each kept for the next calls.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()  # orders a job's finishing against the loop giving up its wait
        self.idle: collections.deque[_CallThread] = collections.deque()  # appended by threads, popped by the loop
        self.threads: list[_CallThread] = []
        self.last_elapsed: dict[Any, float] = {}  # code object -> how long its last call ran (NOTE [Short calls])

    def start(self, fn: Callable[[], Any], wait: bool) -> _Job:
        """Hand ``fn`` to a thread; with ``wait``, ``finish`` may then wait for it on the loop thread."""
        job = _Job(fn)
        if wait:
            job.done = threading.Lock()
            job.done.acquire()
        else:
            job.future = self.loop.create_future()
        try:
            t = self.idle.pop()  # the latest to finish: the likeliest still in a core's caches
        except IndexError:
            t = _CallThread(self, len(self.threads))
            self.threads.append(t)
            t.thread.start()
        t.hand(job)
        return job

    def finish(self, job: _Job) -> bool:
        """Wait up to ``SHORT_WAIT_S`` for ``job``: True when it finished, else ``job.future`` is set to await."""
        assert job.done is not None
        if job.done.acquire(timeout=SHORT_WAIT_S):
            return True
        with self.lock:
            if job.finished:  # between the timeout and the lock
                return True
            job.future = self.loop.create_future()
        return False

    def run(self, fn: Callable[[], Any], key: Any) -> tuple[bool, Any]:
        """``(True, value)`` when ``fn`` finished within the short wait (NOTE [Short calls]), else
        ``(False, future)``; ``key`` (the function's code object, or None: never waited on) keys its timing."""
        last = self.last_elapsed.get(key)
        wait = key is not None and (last is None or last <= SHORT_CALL_S)
        job = self.start(fn, wait)
        if wait and self.finish(job):
            self._note(key, job.elapsed)
            return True, job.outcome()
        assert job.future is not None
        if key is not None:
            job.future.add_done_callback(functools.partial(self._noted, key, job))
        return False, job.future

    def _noted(self, key: Any, job: _Job, _: Any) -> None:
        self._note(key, job.elapsed)

    def _note(self, key: Any, elapsed: float) -> None:
        if len(self.last_elapsed) >= 1024 and key not in self.last_elapsed:
            self.last_elapsed.clear()
        self.last_elapsed[key] = elapsed

    def serve(self, job: _Job, thread: _CallThread) -> None:
        """Run ``job`` on ``thread`` (its own thread) and hand the outcome back."""
        fn, job.fn = job.fn, None
        assert fn is not None
        try:
            job.value = fn()
        except StopIteration as e:  # a future cannot hold it
            job.error = RuntimeError(f"the remote function raised StopIteration: {e!r}")
        except BaseException as e:
            job.error = e
        job.elapsed = time.perf_counter() - job.handed
        del fn
        with self.lock:
            job.finished = True
            post = job.future is not None
        # Idle again before the result is handed back, so that this thread goes straight
        # from waking the loop thread to waiting (without the GIL) for the next call: the
        # loop thread, woken, does not wait for the GIL.
        self.idle.append(thread)
        if post:
            try:
                self.loop.call_soon_threadsafe(_settle, job)
            except RuntimeError:
                pass  # the loop is closed: nobody waits any more (the thread waits for ``close``, its pipe open)
        else:
            assert job.done is not None
            job.done.release()

    def close(self) -> None:
        """Stop the idle threads now and the busy ones when their call returns."""
        threads, self.threads = self.threads, []
        self.idle.clear()
        for t in threads:
            t.stop()  # a thread closes its pipe only after this, its last wake-up
        deadline = time.monotonic() + 0.5
        for t in threads:
            t.thread.join(max(0.0, deadline - time.monotonic()))


def _settle(job: _Job) -> None:
    fut = job.future
    assert fut is not None
    if fut.cancelled():
        return
    if job.error is not None:
        fut.set_exception(job.error)
    else:
        fut.set_result(job.value)
    job.value = job.error = None


class _Waiting:
    """A request waiting for its reply (NOTE [One deadline timer])."""

    __slots__ = ("task", "address", "deadline", "why")

    def __init__(self, task: "asyncio.Task[Any]", address: str, deadline: float) -> None:
        self.task = task
        self.address = address
        self.deadline = deadline  # on the loop's clock
        self.why: str | None = None  # "deadline" or "lost", once this agent cancelled the task

    def stop(self, why: str) -> None:
        if self.why is None:
            self.why = why
            self.task.cancel()


def _uncancel(task: "asyncio.Task[Any]") -> bool:
    """Take back one cancellation this module requested of ``task`` (NOTE [A request in its caller's task]).

    True when another one is still pending (the caller itself was cancelled
    meanwhile). Python 3.10 keeps no count: False there.
    """
    uncancel = getattr(task, "uncancel", None)
    return uncancel is not None and uncancel() > 0


_HANDLER_SIGNATURE = inspect.Signature([inspect.Parameter("msg", inspect.Parameter.VAR_KEYWORD)])


def natural_key(name: str) -> list[Any]:
    """Sort key that puts worker2 before worker10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


class Agent:
    """aiograd's state and handlers in one process (module docstring)."""

    def __init__(
        self,
        name: str,
        address: str,
        pool: Callable[[str], Any],
        scheduler: Any,
        rpc_timeout: float,
        client_id: str | None = None,
    ) -> None:
        self.name = name
        self.address = address
        self.pool = pool  # Dask ConnectionPool: pool(address).<handler>(**msg)
        self.scheduler = scheduler  # Dask rpc to the scheduler (identity: the worker directory)
        self.rpc_timeout = float(rpc_timeout)
        self.client_id = client_id  # the driver's Dask client id (None on workers)
        self.loop = asyncio.get_running_loop()
        self.contexts: dict[int, DistContext] = {}
        self.directory: dict[str, str] = {}  # worker name -> address
        self.names: dict[str, str] = {address: name}  # address -> name, of every process seen
        self.clients: dict[str, str] = {}  # Dask client id -> address of that driver
        self.rrefs = RRefStore(address)
        # Messages and payload bytes this process sent and received as a caller (measurements, see
        # benchmarks/distributed_scaling.py): requests out, and the payloads of calls and their replies.
        # Handlers served count in "messages_in", and the gradients they receive in "bytes_in".
        self.traffic = {"messages": 0, "bytes_out": 0, "bytes_in": 0, "messages_in": 0}
        self.local_state: dict[str, Any] = {}  # dist.worker_local's values (NOTE [Functions sent by value])
        self._lost: dict[str, asyncio.Future[None]] = {}  # NOTE [Deadlines and lost workers]
        self._waiting: dict[int, _Waiting] = {}  # requests waiting for their reply (NOTE [One deadline timer])
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = float("inf")
        self._unresponsive: set[str] = set()  # addresses whose last request ran past its deadline
        self._prefix = secrets.randbits(31) << 32
        self._counter = itertools.count(1)
        self._background: set[asyncio.Task[Any]] = set()
        self._threads = _Threads(self.loop)
        from . import _wire  # here, not at the top: _wire imports dask, which an agent's process has

        self._wire = _wire
        self.closed = False
        self.handlers: dict[str, Callable[..., Any]] = {
            name: self._handler(getattr(self, "_on_" + name[len("aiograd_"):]))
            for name in (
                "aiograd_call",
                "aiograd_grads",
                "aiograd_pass",
                "aiograd_cancel_pass",
                "aiograd_release",
                "aiograd_peers",
                "aiograd_rref_delete",
                "aiograd_peer_lost",
                "aiograd_peer_joined",
                "aiograd_client_gone",
            )
        }

    # ----- ids, contexts ---------------------------------------------------------------
    def new_id(self) -> int:
        """An id unique in the cluster: a random 31-bit prefix per process and a counter."""
        return self._prefix | next(self._counter)

    def new_context(self) -> DistContext:
        ctx = DistContext(self.new_id(), (self.name, self.address), self.client_id)
        self.contexts[ctx.id] = ctx
        return ctx

    def context(self, context_id: int) -> DistContext:
        ctx = self.contexts.get(context_id)
        if ctx is None:
            raise RuntimeError(f"Could not find autograd context with id: {context_id}")
        return ctx

    def _context_from(self, meta: Any, caller: tuple[str, str]) -> DistContext:
        """The context a message names, created on first contact (NOTE [Context lifetime])."""
        cid, origin_name, origin_address, origin_client, commits = meta
        ctx = self.contexts.get(cid)
        if ctx is None:
            ctx = self.contexts[cid] = DistContext(cid, (origin_name, origin_address), origin_client)
        elif commits:
            ctx.learn_commits(commits)  # NOTE [Commits travel along]
        for name, address in (caller, (origin_name, origin_address)):
            if address != self.address:
                ctx.add_peer(name, address)
        return ctx

    def debug_info(self) -> dict[str, int]:
        return {
            # a part staged and waiting for its commit (NOTE [Commits travel along]) is no running pass
            "num_current_backward_passes": sum(
                1 for c in self.contexts.values() if c.part is not None and not c.part.task.done()),
            "num_autograd_contexts": len(self.contexts),
        }

    async def release_context(self, ctx: DistContext) -> None:
        """Release ``ctx`` here and on every process it reached (the origin leaving ``dist.context()``).

        NOTE [Releasing past a failed peer]: a peer whose last request ran past
        its deadline (its event loop is blocked: an ``async def`` remote
        function calling ``time.sleep``, a hung native call) or that left is
        released in the background, bounded by ``rpc_timeout``: leaving the
        context never waits on a peer that already failed. It drops the
        context when its loop runs again (or with the driver's client).
        """
        await self._drop_context(ctx.id)
        waited: list[str] = []
        later: list[str] = []
        for a in list(ctx.peers):
            lost = self._lost.get(a)
            (later if a in self._unresponsive or (lost is not None and lost.done()) else waited).append(a)
        for a in later:
            self.spawn(self._release_quietly(a, ctx.id))
        await asyncio.gather(*(self.request(a, "aiograd_release", ctx_id=ctx.id) for a in waited),
                             return_exceptions=True)

    async def _release_quietly(self, address: str, context_id: int) -> None:
        try:
            await self.request(address, "aiograd_release", ctx_id=context_id)
        except Exception:
            pass  # gone for good, or still stuck: it drops the context with the driver's client

    async def _drop_context(self, context_id: int) -> None:
        ctx = self.contexts.pop(context_id, None)
        if ctx is not None and ctx.part is not None:
            part, ctx.part = ctx.part, None
            await part.cancel()

    async def participants(self, ctx: DistContext) -> dict[str, str]:
        """Every other process holding ``ctx`` (asks the origin when this process is not it)."""
        peers = dict(ctx.peers)
        origin_name, origin_address = ctx.origin
        if origin_address != self.address:
            reply = await self.request(origin_address, "aiograd_peers", ctx_id=ctx.id)
            for name, address in reply.get("peers", ()):
                peers[address] = name
        peers.pop(self.address, None)
        return peers

    # ----- the directory of workers ----------------------------------------------------------
    async def refresh_directory(self) -> None:
        info = await self.scheduler.identity()
        workers = info.get("workers", {})
        self.directory = {str(w.get("name", addr)): addr for addr, w in workers.items()}
        for name, address in self.directory.items():
            self.names[address] = name
            fut = self._lost.get(address)
            if fut is not None and fut.done():
                del self._lost[address]  # the address serves again (a restarted worker)

    def worker_names(self) -> list[str]:
        return sorted(self.directory, key=natural_key)

    def known_address(self, to: str) -> str | None:
        """The address of the process named ``to``, if this one knows it (NOTE [Reaching the driver])."""
        if to == self.name:
            return self.address
        address = self.directory.get(to)
        if address is not None:
            return address
        # NOTE [Reaching the driver]: drivers are no Dask workers, so the scheduler's
        # directory lacks them; a worker knows a driver once it served a request of
        # it. The origin of the current context comes first (with several drivers
        # attached, it is the driver this work is for), then the latest caller.
        ctx = _current_context.get()
        if ctx is not None and ctx.origin[0] == to:
            return ctx.origin[1]
        for address, name in reversed(list(self.names.items())):
            if name == to:
                lost = self._lost.get(address)
                if lost is None or not lost.done():
                    return address
        return None

    async def resolve(self, to: str) -> str:
        """The address of process ``to`` (the scheduler is asked again when the name is not known)."""
        if not isinstance(to, str):
            raise TypeError(f"the destination must be a worker name (str), got {type(to).__name__}")
        address = self.known_address(to)
        if address is None:
            await self.refresh_directory()
            address = self.directory.get(to)
        if address is None:
            raise RuntimeError(
                f"could not find destination name {to!r}: the workers are {', '.join(self.worker_names()) or 'none'}"
            )
        return address

    # ----- requests out ------------------------------------------------------------------
    def _arm_sweep(self, when: float) -> None:
        if self._sweep is not None and not self._waiting:  # (a request still waiting keeps its deadline)
            self._sweep.cancel()
        self._sweep_at = when
        self._sweep = self.loop.call_at(when, self._sweep_deadlines)

    def _sweep_deadlines(self) -> None:
        """Stop the requests past their deadline; wake again at the earliest one left (NOTE [One deadline timer])."""
        self._sweep, self._sweep_at = None, float("inf")
        now = self.loop.time()
        earliest = float("inf")
        for waiting in list(self._waiting.values()):
            if waiting.deadline <= now:
                waiting.stop("deadline")
            elif waiting.why is None and waiting.deadline < earliest:
                earliest = waiting.deadline
        if earliest != float("inf"):
            self._arm_sweep(earliest)

    def _lost_future(self, address: str) -> "asyncio.Future[None]":
        fut = self._lost.get(address)
        if fut is None:
            fut = self._lost[address] = self.loop.create_future()
        return fut

    async def request(self, address: str, op: str, *, timeout: float | None = None, **msg: Any) -> Any:
        """One Dask request to the agent at ``address`` (NOTE [Deadlines and lost workers])."""
        name = self.names.get(address, address)
        lost = self._lost_future(address)
        if lost.done():
            raise WorkerLostError(name, "it left the cluster")
        limit = self.rpc_timeout if timeout is None else float(timeout)
        self.traffic["messages"] += 1
        # NOTE [A request in its caller's task]: the Dask call is awaited in the caller's own
        # task; the deadline and the departure cancel that task from callbacks, and the
        # cancellation is turned into the error here (and taken back with ``uncancel``,
        # Python >= 3.11, so that an enclosing ``asyncio.timeout`` or TaskGroup still counts
        # right). A task of its own per request cost a Task and a loop iteration per call.
        # NOTE [One deadline timer]: the request waits in ``self._waiting``, which one timer
        # of the agent sweeps at the earliest deadline, and which ``peer_lost`` searches for
        # the departed address: no timer, callback or closure per request (3 µs of a small
        # call, in one process at load 2).
        task = asyncio.current_task(self.loop)  # (given the loop: no getpid() call before Python 3.12)
        assert task is not None
        waiting = _Waiting(task, address, self.loop.time() + limit)
        key = id(waiting)
        self._waiting[key] = waiting
        if waiting.deadline < self._sweep_at:
            self._arm_sweep(waiting.deadline)
        try:
            reply = await getattr(self.pool(address), op)(**msg)
        except asyncio.CancelledError:
            if waiting.why is None or _uncancel(task):
                raise  # the caller was cancelled (the call was, with it)
        except OSError as e:  # CommClosedError, refused or reset connections
            if waiting.why is None:
                raise WorkerLostError(name, f"the connection to it broke ({type(e).__name__}: {e})") from None
            _uncancel(task)  # our cancellation, turned into a closed comm on its way through Dask
        else:
            # (a task whose cancellation was requested gets no result at this await: ``why`` is None)
            self._unresponsive.discard(address)
            return reply
        finally:
            del self._waiting[key]
        if waiting.why == "lost" or lost.done():
            raise WorkerLostError(name, "it left the cluster")
        self._unresponsive.add(address)  # NOTE [Releasing past a failed peer]
        raise TimeoutError(f"RPC to {name} ({op}) ran for more than the set timeout ({limit:g} s)")

    async def call(
        self,
        address: str,
        fn: Any,
        args: Any,
        kwargs: Any,
        *,
        ctx: DistContext | None,
        timeout: float | None = None,
        kind: str = "call",
        rref_id: int | None = None,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` at ``address`` inside ``ctx``; Send/Recv recorded for tensors with grad."""
        encode, from_wire, to_wire = self._wire.encode, self._wire.from_wire, self._wire.to_wire

        # NOTE [One pickle per call]: the call's header (who calls, in which context, the message
        # and RRef ids) travels inside the payload's pickle, beside the function and its arguments,
        # and the reply's inside the result's: a Dask message of one field, whose reply is the
        # payload itself, which Dask's sizeof (run on every message it writes) and msgpack walk
        # in no time.
        message_id = self.new_id() if ctx is not None else None
        header = (kind, self.name, self.address, self.client_id, ctx.meta() if ctx is not None else None,
                  message_id, rref_id)
        payload, sent = encode((header, fn, args, kwargs), with_grad=ctx is not None and _gm.is_grad_enabled())
        for rref in payload.rrefs:  # an RRef reaches its owner only after its value is made there
            await rref._created()
        if sent:
            assert ctx is not None and message_id is not None
            record_send(ctx, message_id, sent)
        name = self.names.get(address, address)
        if ctx is not None and address != self.address:
            ctx.add_peer(name, address)
        self.traffic["bytes_out"] += payload.nbytes
        try:
            reply = await self.request(address, "aiograd_call", timeout=timeout, p=to_wire(payload))
            if isinstance(reply, dict):  # the handler failed (a reply is the payload itself otherwise)
                raise rebuild_exception(reply["error"])
            received = from_wire(reply)
            self.traffic["bytes_in"] += received.nbytes
            (value, result_id, peers, commits), crossing = received.decode()
        except BaseException:
            if sent and message_id is not None:
                ctx.send_functions.pop(message_id, None)  # type: ignore[union-attr]
            raise
        if ctx is not None:
            for peer_name, peer_address in peers or ():
                if peer_address != self.address:
                    ctx.add_peer(peer_name, peer_address)
            if commits:
                ctx.learn_commits(commits)  # a pass the callee (or a process it called) initiated
            if crossing:
                record_recv(ctx, (name, address), result_id, crossing)
        return value

    # ----- handlers in ---------------------------------------------------------------------
    def _handler(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """A Dask handler running ``method`` as this agent; its errors go back packed (NOTE [Remote exceptions])."""

        async def handle(**msg: Any) -> Any:
            self.traffic["messages_in"] += 1
            tokens = (_current_agent.set(self), _current_context.set(None), _current_part.set(None),
                      _gm._grad_enabled.set(True))
            try:
                return await method(**msg)
            except Exception as e:
                return {"error": pack_exception(e, self.name)}
            finally:
                _gm._grad_enabled.reset(tokens[3])
                _current_part.reset(tokens[2])
                _current_context.reset(tokens[1])
                _current_agent.reset(tokens[0])

        handle.__name__ = method.__name__
        # Dask reads every handler's signature for every message it serves (is the first
        # parameter "comm"?): given here, inspect answers without building it, 10 µs less a call.
        handle.__signature__ = _HANDLER_SIGNATURE  # type: ignore[attr-defined]
        return handle

    async def run_function(self, fn: Any, args: Any, kwargs: Any) -> Any:
        """Run a remote function: ``async def`` ones on this loop, plain ones on a thread (``_Threads``)
        with this coroutine's context variables (the loop keeps serving; it waits at most
        ``SHORT_WAIT_S`` for a function that last ran short, NOTE [Short calls])."""
        code: Any
        if fn.__class__ is types.FunctionType and not fn.__dict__:  # most calls: what inspect would answer, sooner
            code = fn.__code__
            if code.co_flags & inspect.CO_COROUTINE:
                return await fn(*args, **kwargs)
        elif inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
            return await fn(*args, **kwargs)
        else:
            code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        run = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        finished, result = self._threads.run(run, code)
        if not finished:
            result = await result
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _on_call(self, p: Any) -> Any:
        encode, from_wire, to_wire = self._wire.encode, self._wire.from_wire, self._wire.to_wire
        (header, fn, args, kwargs), crossing = from_wire(p).decode()  # NOTE [One pickle per call]
        kind, caller_name, caller_address, client, ctx, message_id, rref_id = header
        caller = (str(caller_name), str(caller_address))
        self.names[caller[1]] = caller[0]
        if client is not None:
            self.clients[client] = caller[1]
        dctx = self._context_from(ctx, caller) if ctx is not None else None
        if crossing and dctx is not None:
            record_recv(dctx, caller, message_id, crossing)
        me = (self.name, self.address)
        token = _current_context.set(dctx)
        try:
            if kind == "remote":
                slot = self.rrefs.slot(rref_id, caller[1])
                try:
                    slot.resolve(await self.run_function(fn, args, kwargs))
                except BaseException as e:
                    slot.fail(e)
                    raise
                value = None
            else:
                value = await self.run_function(fn, args, kwargs)
        finally:
            _current_context.reset(token)
        result_id = self.new_id() if dctx is not None else None
        peers = commits = None
        if dctx is not None:
            peers, commits = dctx.peer_list(me), dctx.meta()[4]
        out, crossing = encode((value, result_id, peers, commits), with_grad=dctx is not None)
        if crossing:
            assert dctx is not None and result_id is not None
            record_send(dctx, result_id, crossing)
        # The payload is the whole reply (no dict around it: Dask sizes and packs every
        # message it writes, a dict field by field); an error is a dict (``_handler``).
        return to_wire(out)

    def _part_for(self, ctx_meta: Any, pass_id: int, retain_graph: bool, initiator: Any) -> Any:
        """This process's part of pass ``pass_id``, started by whichever message arrives first."""
        ctx = self.contexts.get(ctx_meta[0])
        if ctx is None:
            return None
        ctx.learn_commits(ctx_meta[4])  # the previous pass's, before this one starts (NOTE [Commits travel along])
        if pass_id in ctx.finished_passes:
            return None
        part = ctx.part
        if part is not None:
            if part.pass_id == pass_id:
                return part
            raise RuntimeError(f"a backward pass is already running in autograd context {ctx.id}")
        ctx.part = part = Part(self, ctx, pass_id, retain_graph, (str(initiator[0]), str(initiator[1])))
        return part

    async def _on_grads(
        self, ctx: Any, pass_id: int, retain_graph: bool, initiator: Any, message_id: int, payload: Any
    ) -> Any:
        if ctx[0] not in self.contexts:
            raise RuntimeError(f"Could not find autograd context with id: {ctx[0]}")
        part = self._part_for(ctx, pass_id, retain_graph, initiator)
        if part is not None:
            from ._wire import from_wire  # on first use: _wire imports dask

            received = from_wire(payload)
            self.traffic["bytes_in"] += received.nbytes
            grads, _ = received.decode()
            part.feed(message_id, grads)
        return {}

    async def _on_pass(self, ctx: Any, pass_id: int, retain_graph: bool, initiator: Any) -> Any:
        part = self._part_for(ctx, pass_id, retain_graph, initiator)
        if part is None:
            return {}  # the context never reached here, or the pass was cancelled meanwhile
        err = await part.outcome()
        if err is None:
            if not part.staged:  # NOTE [Two-phase commit]: nothing to commit, so nothing to wait for
                await self._end_part(ctx[0], pass_id, commit=True)
            return {}  # staged gradients wait for the news (NOTE [Commits travel along])
        await self._end_part(ctx[0], pass_id)
        if isinstance(err, asyncio.CancelledError):
            return {"cancelled": True}  # by the initiator, which waits no more
        raise err

    async def _end_part(self, context_id: int, pass_id: int, commit: bool = False) -> None:
        ctx = self.contexts.get(context_id)
        if ctx is None:
            return
        ctx.finished_passes.add(pass_id)
        part = ctx.part
        if part is None or part.pass_id != pass_id:
            return
        ctx.part = None
        if commit:
            part.commit()
        else:
            await part.cancel()

    async def _on_cancel_pass(self, ctx_id: int, pass_id: int) -> Any:
        await self._end_part(ctx_id, pass_id)
        return {}

    async def _on_release(self, ctx_id: int) -> Any:
        await self._drop_context(ctx_id)
        return {}

    async def _on_peers(self, ctx_id: int) -> Any:
        ctx = self.context(ctx_id)
        return {"peers": ctx.peer_list((self.name, self.address))}

    # ----- RRef values (kept in self.rrefs, see _rref_store.py) ----------------------------
    async def _on_rref_delete(self, rref_ids: list[int]) -> Any:
        self.rrefs.delete(rref_ids)
        return {}

    def forget_rref(self, address: str, rref_id: int, creation: Any) -> None:
        """The creating handle of an RRef was collected: free its value on the owner (any thread)."""
        if self.closed:
            return
        try:
            self.loop.call_soon_threadsafe(self._queue_forget, address, rref_id, creation)
        except RuntimeError:
            pass  # the loop is closed: the owner's state went with the cluster

    def _queue_forget(self, address: str, rref_id: int, creation: Any) -> None:
        if not self.closed and self.rrefs.forget(address, rref_id, creation):
            self.spawn(self._flush_forgotten(address))

    async def _flush_forgotten(self, address: str) -> None:
        await asyncio.sleep(0)  # let the collections of this moment join one message
        ids = await self.rrefs.forgotten(address)
        if address == self.address:
            self.rrefs.delete(ids)
            return
        try:
            await self.request(address, "aiograd_rref_delete", rref_ids=ids)
        except Exception:
            pass  # the owner is gone, and its values with it

    # ----- departures -------------------------------------------------------------------
    async def _on_peer_lost(self, address: str) -> Any:
        self.peer_lost(address)
        return {}

    async def _on_peer_joined(self, address: str, name: Any) -> Any:
        self.directory[str(name)] = address
        self.names[address] = str(name)
        fut = self._lost.get(address)
        if fut is not None and fut.done():
            del self._lost[address]
        return {}

    async def _on_client_gone(self, client: str) -> Any:
        address = self.clients.pop(client, None)
        for ctx in list(self.contexts.values()):
            if ctx.origin_client == client:
                await self._drop_context(ctx.id)
        if address is not None:
            self.rrefs.drop_created_by(address)
        return {}

    def peer_lost(self, address: str) -> None:
        """A process left (Dask's removal event): fail what waits on it, drop what it owned."""
        if address == self.address:
            return
        name = self.names.get(address, address)
        fut = self._lost_future(address)
        if not fut.done():
            fut.set_result(None)
        for waiting in list(self._waiting.values()):
            if waiting.address == address:
                waiting.stop("lost")
        for n, a in list(self.directory.items()):
            if a == address:
                del self.directory[n]
        for client, a in list(self.clients.items()):
            if a == address:
                del self.clients[client]
        self._unresponsive.discard(address)
        # Its name and lost-future stay a while, so that late errors still name it; then they go
        # (a cluster whose workers come and go must not grow these maps forever).
        self.loop.call_later(LOST_KEPT_S, self._forget_departed, address, fut)
        for ctx in list(self.contexts.values()):
            if ctx.origin[1] == address:
                self.spawn(self._drop_context(ctx.id))
            elif ctx.part is not None and ctx.part.initiator[1] == address:
                ctx.part.fail(WorkerLostError(name, "it started this backward pass and left the cluster"))

    def _forget_departed(self, address: str, fut: "asyncio.Future[None]") -> None:
        if self._lost.get(address) is fut and address not in self.directory.values():
            del self._lost[address]
            self.names.pop(address, None)

    # ----- lifetime ---------------------------------------------------------------------------
    def spawn(self, coro: Any) -> "asyncio.Task[Any]":
        """Run ``coro`` in the background; ``close`` cancels and awaits whatever is left."""
        task = self.loop.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        """Drop every context, part and RRef value of this process; stop background work."""
        self.closed = True
        for cid in list(self.contexts):
            await self._drop_context(cid)
        self.rrefs.clear()
        self.local_state.clear()
        tasks = list(self._background)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._sweep is not None and not self._waiting:  # (a request still waiting keeps its deadline)
            self._sweep.cancel()
            self._sweep, self._sweep_at = None, float("inf")
        self._threads.close()
