"""Device runtimes (executor thread + shared ready queue), the offload policy, BLAS threads, ``ag.offload``.

NOTE [Devices and executors]: every device owns one single-thread executor and
a priority ready queue shared by all GraphTasks (ordered as torch's
ReadyQueue). A GraphTask's driver dispatches a node to its device when the
offload policy judges the node's kernels large; the device thread pops the
most urgent node of its queue, runs ``apply`` (numpy releases the GIL, so two
devices, and the loop thread, really run in parallel) and posts the outputs
back to the driver, which alone touches the GraphTask's dependency table.
Nodes whose backward awaits (async custom Functions, reentrant backward) are
never dispatched: they run on the loop, so a device thread never waits for a
nested pass and no thread is ever added.

NOTE [Work on an executor thread]: an executor thread never waits for work
queued to an executor. A pass driven on one (``backward_sync`` or
``await loss.backward()`` in a function run by ``ag.offload``, a node's
backward that starts a pass) runs every node inline, whatever the offload
mode, and ``submit``/``offload`` called there run their function at once on
that thread. Otherwise the thread would queue work to itself, or to another
device thread that may be waiting for it, and wait forever (issue 19). The
threads are marked by their executor's initializer (``on_executor_thread``).

NOTE [Executors and fork]: a forked child has only the thread that forked.
The executors, their queues and aiograd's locks are reset in the child
(``os.register_at_fork``), so its first offloaded kernel starts a fresh
executor thread instead of queueing to one that no longer exists (a
``ThreadPoolExecutor`` copied with an idle worker thinks it has one).
"""

from __future__ import annotations

import contextvars
import inspect
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from time import get_clock_info, perf_counter, thread_time
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np
import threadpoolctl

from .. import _aio
from ..device import CPU, Device
from .background import BackgroundThread, executor_nice_by_env
from .blas_threads import AdaptiveThreads, BlasWorkers, MachineLoad, adaptive_enabled_by_env, worker_nice_by_env
from .ready_queue import ReadyQueue
from . import accumulate, monitor

if TYPE_CHECKING:
    from .engine import GraphTask
    from .graph import Node

__all__ = [
    "DeviceRuntime",
    "runtime",
    "discard",
    "live_threads",
    "OffloadPolicy",
    "policy",
    "set_offload",
    "get_offload",
    "offload",
    "submit",
    "await_job",
    "set_num_threads",
    "get_num_threads",
    "on_executor_thread",
    "kernel_clock",
]

T = TypeVar("T")

_thread_state = threading.local()  # ``executor`` is True on aiograd's executor threads


def _mark_executor_thread() -> None:
    _thread_state.executor = True


def on_executor_thread() -> bool:
    """Whether the calling thread is one of aiograd's executor threads (NOTE [Work on an executor thread])."""
    return getattr(_thread_state, "executor", False)


class DeviceRuntime:
    """The executor thread and shared ready queue of one device."""

    def __init__(self, dev: Device) -> None:
        self.device = dev
        self._executor: ThreadPoolExecutor | None = None
        self._queue = ReadyQueue()
        self._lock = threading.Lock()  # the queue is pushed on the loop thread, popped on the device's
        self.handoffs = 0  # nodes sent to this device's thread so far (benchmarks/offload.py reports them)
        self.background = _background_of(dev)  # runs the jobs below the loop (NOTE [Jobs run below the loop])

    @property
    def executor(self) -> ThreadPoolExecutor:
        ex = self._executor
        if ex is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        1, thread_name_prefix=f"aiograd-{self.device}", initializer=_mark_executor_thread
                    )
                    started = True
                else:
                    started = False
                ex = self._executor
            if started:
                _blas.apply()  # one more executor shares the cores (NOTE [BLAS threads])
        return ex

    def dispatch(self, gt: "GraphTask", node: "Node", grads: list[Any]) -> "Future[None]":
        """Queue ``node`` of ``gt`` and let the device thread run the most urgent queued node.

        Returns the submitted job: jobs are interchangeable ("run the next queued node").
        Results go back through ``gt.post``, which schedules on the loop's thread.
        """
        with self._lock:
            self._queue.push(gt, node, grads)
            self.handoffs += 1
        _machine.watch(threading.get_ident())  # the thread handing work over: the loop's (NOTE [Adaptive BLAS threads])
        return self.executor.submit(self._run_next, contextvars.copy_context())

    def _run_next(self, ctx: contextvars.Context) -> None:
        with self._lock:
            if not self._queue:
                return
            gt, node, grads = self._queue.pop()
        if gt.error is not None:
            gt.post(gt.device_done, node, grads, None, None, 0.0)
            return
        _adaptive.before_job()
        t0 = perf_counter()
        try:
            (outputs, err, secs), ran_on = _run_job(self.background, _timed_apply, ctx, node, grads)
        except BaseException as e:  # no background thread could be started: the driver raises it, nothing hangs
            (outputs, err, secs), ran_on = (None, e, 0.0), None
        _adaptive.after_job()
        t1 = perf_counter()
        if gt.monitor is not None:
            gt.monitor.ran_on_device(node, t0, t1, ran_on)
        gt.post(gt.device_done, node, grads, outputs, err, secs)

    def discard(self, gt: "GraphTask") -> int:
        """Drop the queued (not running) nodes of ``gt``; return how many."""
        with self._lock:
            return self._queue.discard(gt)

    def queued(self) -> int:
        return len(self._queue)

    def shutdown(self) -> None:
        ex, self._executor = self._executor, None
        if ex is not None:
            ex.shutdown(wait=True)
        self.background.stop()


def _apply_sync(node: "Node", grads: list[Any]) -> Any:
    with np.errstate(all="ignore"):
        return node.apply(grads)


def _timed_apply(ctx: contextvars.Context, node: "Node", grads: list[Any]) -> tuple[Any, BaseException | None, float]:
    """Run ``node`` in ``ctx`` on this thread: (outputs, None, kernel seconds), or (None, its error, seconds)."""
    c0 = kernel_clock()
    try:
        outputs, err = ctx.run(_apply_sync, node, grads), None
    except BaseException as e:  # handed to the driver, which raises it
        outputs, err = None, e
    return outputs, err, kernel_clock() - c0


def _background_of(dev: Device) -> BackgroundThread:
    """A device's background thread, not started yet (NOTE [Jobs run below the loop])."""
    return BackgroundThread(f"aiograd-{dev}_background", _EXECUTOR_NICE, initializer=_mark_executor_thread)


# The clock the offload policy learns kernel rates from: the thread's CPU time, so that
# a kernel preempted half-way on a busy machine does not teach a rate many times too
# high (NOTE [Offload policy] (c)); the wall clock where CPU time is coarse (Windows).
kernel_clock = thread_time if get_clock_info("thread_time").resolution <= 1e-6 else perf_counter


_RUNTIMES: dict[Device, DeviceRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime(dev: Device) -> DeviceRuntime:
    """The runtime (executor and queue) of ``dev``, created on first use."""
    rt = _RUNTIMES.get(dev)
    if rt is None:
        with _RUNTIMES_LOCK:
            rt = _RUNTIMES.get(dev)
            if rt is None:
                rt = _RUNTIMES[dev] = DeviceRuntime(dev)
    return rt


def discard(gt: "GraphTask") -> int:
    """Drop the queued (not yet running) nodes of ``gt`` from every device; return how many."""
    return sum(rt.discard(gt) for rt in list(_RUNTIMES.values()))


def _reset_after_fork() -> None:
    """In a forked child: forget the parent's executor threads, queued nodes and locks (NOTE [Executors and fork]).

    The executor objects are dropped, not shut down: their threads do not exist here,
    and the next job starts a fresh one. Locks another thread held at the fork would
    stay held forever: every lock aiograd shares between threads is made anew.
    """
    global _RUNTIMES_LOCK
    _RUNTIMES_LOCK = threading.Lock()
    for rt in _RUNTIMES.values():
        rt._executor = None
        rt.background = _background_of(rt.device)  # its thread is the parent's
        rt._queue = ReadyQueue()
        rt._lock = threading.Lock()
    _thread_state.executor = False  # the forking thread may have been an executor's: here it is the main one
    _blas._lock = threading.Lock()
    _adaptive._lock = threading.Lock()
    _workers.reset()
    _adaptive.after_job()  # forked during a wide job: the child starts narrow (NOTE [Adaptive BLAS threads])
    _machine.watch(threading.get_ident())
    accumulate._GRAD_LOCKS = tuple(threading.Lock() for _ in accumulate._GRAD_LOCKS)
    monitor._active_lock = threading.Lock()


def live_threads() -> int:
    """How many executor threads aiograd has started (one per device used)."""
    return sum(1 for rt in _RUNTIMES.values() if rt._executor is not None)


class OffloadPolicy:
    """Decides whether a node's kernels leave the loop thread (NOTE [Offload policy]).

    ``auto``: a node's predicted time is its work (elements of its gradients,
    or flops for matmul) times a per-node-type rate learned from measured
    runs. Nodes below ``min_work`` are never timed nor offloaded (no clock
    read on the hot path). ``always``/``never`` force the choice.
    """

    min_work = 16384
    threshold_s = 200e-6  # below this a hand-off costs more CPU than overlap buys (NOTE [Offload policy])
    stretch = 1.0  # a kernel predicted up to stretch slices runs inline, from a fresh slice (NOTE [Offload policy] (a))
    default_rate = 1e-9  # seconds per unit of work, until measured
    # how long a hold of BLAS at its narrow size for a node run on the loop lasts at most, unless the
    # node ends it before (NOTE [Loop products hold BLAS narrow]): at least longer than the engine's
    # 1 ms slice, since the engine may give the loop a turn between this decision and the node's run
    hold_min_s = 0.002

    def __init__(self) -> None:
        self.mode = "auto"
        self.rates: dict[type, float] = {}
        self.warmed_up: set[type] = set()  # node types whose first run was seen (and not learned from)

    def engine_min_work(self) -> int:
        """Nodes with less work than this are run inline without asking (the hot loop's test).

        Everything on an executor thread (NOTE [Work on an executor thread])."""
        if self.mode == "never" or getattr(_thread_state, "executor", False):
            return 1 << 62
        if self.mode == "always":
            return -1
        return self.min_work

    def predict(self, node: "Node") -> float:
        """Seconds ``node``'s kernels are expected to take (from its type's measured rate)."""
        if self.mode == "always":
            return math.inf
        return node.work * self.rates.get(node.__class__, self.default_rate)

    def should_offload(self, node: "Node", time_slice: float, loop_has_work: bool) -> bool:
        """Whether ``node`` goes to its device's thread: only when that buys something.

        ``time_slice`` is the engine's (infinite in a pass without an event loop: no loop to
        keep free); ``loop_has_work`` says whether other nodes of the pass are ready to run
        on the loop meanwhile (NOTE [Offload policy]).
        """
        if self.mode != "auto":
            return self.mode == "always"
        predicted = self.predict(node)
        if predicted > time_slice * self.stretch:  # responsiveness: inline, it would hold the loop past a slice...
            if _aio.loop_may_want_turn(predicted):  # ...which matters only if something else may want it
                return True
        if loop_has_work and predicted > self.threshold_s:  # parallelism: worth a hand-off
            return True
        if _adaptive.active and node.__class__.__name__ in BLAS_NODES:
            # inline, unless a job runs wide: its products would wait for that job's (NOTE [Loop products
            # hold BLAS narrow] in blas_threads.py); ``ran_inline`` ends the hold
            return not _adaptive.hold_narrow(max(2.0 * predicted, self.hold_min_s))
        return False

    def ran_inline(self, node: "Node", seconds: float) -> None:
        """``node`` (whose work reached ``min_work``) ran on the loop in ``seconds``: learn from it, and end
        the hold on BLAS's size that ``should_offload`` took for it (NOTE [Loop products hold BLAS narrow])."""
        self.observe(node, seconds)
        if self.mode == "auto" and _adaptive.active and node.__class__.__name__ in BLAS_NODES:
            _adaptive.release_hold()

    def observe(self, node: "Node", seconds: float) -> None:
        """Refine the rate of ``node``'s type from one measured run; a type's first run is not learned from.

        That run pays one-time costs (a lazy import, first-touch page faults) that say
        nothing of the next ones (NOTE [Offload policy] (c)).
        """
        work = node.work
        if work <= 0:
            return
        cls = node.__class__
        measured = seconds / work
        old = self.rates.get(cls)
        if old is not None:
            self.rates[cls] = 0.7 * old + 0.3 * measured
        elif cls in self.warmed_up:
            self.rates[cls] = measured
        else:
            self.warmed_up.add(cls)


# NOTE [Offload policy]: a hand-off to a device thread costs CPU on the two sides (a
# queue push under a lock, a future, a wake-up, a call_soon_threadsafe back, the loop's
# sleep and wake-up: 0.35-0.5 ms in all, measured below), and while the kernel runs
# there the loop thread waits unless it has something else to do. So ``auto``
# offloads a node only when that buys one of two things:
#
# (a) Responsiveness: its predicted time exceeds the engine's time slice. Run inline,
#     it would block every other coroutine of the loop for longer than a slice; on its
#     device thread the driver sleeps in ``wait_for_work`` and the loop stays free.
#     ``stretch`` (1.0) trades one for the other: a kernel predicted up to ``stretch``
#     slices runs inline, after a yield, so the loop may wait that long once, and a
#     kernel of 1-1.5 slices pays no hand-off (0.2-0.5 ms of CPU, below). Left at 1.0
#     until measured on a quiet machine (issue 19: the load of 8-13 made it unmeasurable).
#     Only where something else may want the loop meanwhile (NOTE [Nobody waiting] in
#     _aio.py): a training script's loop with nothing else to run, no timer due and no
#     socket watched keeps such a kernel inline, and pays no hand-off at all.
# (b) Parallelism: other nodes of the pass are ready on the loop (the engine's ready
#     queue is not empty) and the kernel is long enough (``threshold_s``) for the
#     overlap to outweigh the hand-off. Device work already in flight does not count:
#     a kernel run inline overlaps it anyway, and sent to the same busy device it
#     would only queue behind it.
#
# Anything else runs inline, timed so the rates stay current. A node that fits a
# slice but not what is left of the current one makes the driver yield first, when
# something would run in that turn (the engine's NOTE [Hot loop] (g)), so inline kernels
# never stretch a slice. A sequential
# graph (an MLP, most of a transformer's backward) therefore runs inline and pays no
# hand-off: issue 12 measured 35.8 ms of CPU for a transformer backward with the old
# rule (offload anything predicted above 200 us) against 20.9 ms inline.
#
# (c) Rates: a node type's rate is a moving average of its measured runs, except its
#     first run, which pays one-time costs (EmbeddingBackward0's first run imported
#     scipy.sparse: 211 ms for a 40 us kernel). Learned from, that run made every
#     later one predicted above the slice and offloaded for ~15 passes. Runs are timed
#     on the thread's CPU clock (``kernel_clock``), not the wall clock: on a busy
#     machine a kernel preempted half-way measured many times its work, and the rate
#     it taught sent kernels of ~0.1 ms (TransposeBackward0, PermuteBackward0, a
#     transformer's layer norms) to the device thread for responsiveness (issue 19).
#
# (d) A pass without an event loop (``backward_sync``, NOTE [Loop-free passes] in _aio.py)
#     asks with an infinite slice: no loop waits for a turn, and its thread would only
#     wait for the kernel on the device thread, so (a) never applies there; (b) does.
#     The same holds on an executor thread, where every node runs inline (NOTE [Work
#     on an executor thread]).
#
# What a responsiveness hand-off costs (measured on a 2-core VM, one thread per BLAS
# call, a 2.6 ms ConvolutionBackward0 in a 5-6 ms conv forward+backward): ~50 us of
# loop-thread CPU to dispatch, ~80-150 us to sleep in the loop and be woken (a sleep
# and a cross-CPU wake-up; a no-op round trip costs 30-45), ~80 us of the device
# thread's outside ``apply``, and 0-150 us more inside it (its inputs are hot in the
# loop thread's caches): 0.35-0.5 ms of CPU, 6-9% of that step. Not page faults: in
# that state neither mode faults and neither calls mmap, munmap or madvise per step
# (strace), and in a process whose big arrays do fault (glibc's dynamic mmap threshold
# not yet raised by earlier frees) the device thread faults less than the loop thread
# and ``auto`` costs no more than ``never``. Issue 19 measured it again with the loop
# thread's CPU clock apart (``x.sin().sum()`` over 20,000 elements, ``always`` against
# ``never``: two hand-offs a pass; 2 cores at a load of 11-13): +0.38-0.52 ms of
# process CPU per pass, of which 0-0.09 ms on the loop thread; the rest is the device thread's (its wake-up,
# the executor's bookkeeping, ~10 us of it, and the kernel run away from the caches
# that hold its inputs). This is the price of keeping the loop free
# while a kernel longer than a slice runs; a kernel that fits a slice never pays it.
#
# Splitting such a kernel into sub-slice pieces run inline, a turn of the loop between
# two, does not pay either (issue 19, measured): the mlp's 256x512 @ 512x784 weight and
# input gradients (5.1 ms, one BLAS thread, best of 5 x 10, process CPU) cost 5.2 ms in
# 2 bands of rows, 5.5 in 4, 6.2 in 8 and 7.9 in 16; pieces of half a slice need 10 or
# more, and each adds a turn of the loop. A band too thin for BLAS's blocking loses more
# than the hand-off it saves.


# The node types whose backward is a BLAS product (or several): while an executor job
# runs with wide BLAS, such a node run on the loop would wait for that job's product to
# end (NOTE [Adaptive BLAS threads]), so ``auto`` sends it to the executor instead.
BLAS_NODES = frozenset({
    "MmBackward0", "AddmmBackward0", "BmmBackward0", "BaddbmmBackward0", "AddbmmBackward0", "MvBackward0",
    "AddmvBackward0", "DotBackward0", "EinsumBackward0", "ConvolutionBackward0", "LstmBackward0",
    "SqueezeMmBackward", "UnsafeViewMmBackward", "ScaledDotProductFlashAttentionForCpuBackward0",
})

policy = OffloadPolicy()


def set_offload(mode: str) -> None:
    """Where backward kernels run: ``"auto"`` (large ones on the device thread), ``"always"``, ``"never"``."""
    if mode not in ("auto", "always", "never"):
        raise ValueError(f"offload mode must be one of 'auto', 'always', 'never', got {mode!r}")
    policy.mode = mode


def get_offload() -> str:
    return policy.mode


# ----- ag.offload ---------------------------------------------------------------------
#
# NOTE [Offload and cancellation]: ``offload`` runs a plain function on the cpu
# device's executor thread, the thread that also runs offloaded backward
# kernels, so no thread is ever added. A function cannot be interrupted
# half-way, so cancelling the awaiting task (task.cancel(), a timeout, an anyio
# cancel scope) does one of two things: a job that has not started yet is
# withdrawn and never runs; a job that is running is waited for (shielded) and
# its result dropped, then the cancellation is raised. Either way, when the
# cancelled ``await`` returns, nothing of the call runs any more, as anyio's
# ``to_thread.run_sync`` does by default and as the engine does for its kernels
# (NOTE [Cancellation] in engine.py).


def submit(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> "Future[T]":
    """Queue ``fn(*args, **kwargs)`` on the cpu executor, in a copy of the caller's context.

    Called on an executor thread, it runs ``fn`` at once there and returns the finished
    job: that thread must not wait for work queued behind itself (NOTE [Work on an executor thread])."""
    ctx = contextvars.copy_context()
    if not getattr(_thread_state, "executor", False):
        _machine.watch(threading.get_ident())  # the thread handing work over: the loop's (NOTE [Adaptive BLAS threads])
        return runtime(CPU).executor.submit(_sized_job, ctx, fn, args, kwargs)
    job: Future[T] = Future()
    job.set_running_or_notify_cancel()
    try:
        result = ctx.run(fn, *args, **kwargs)
    except BaseException as e:  # handed to the awaiting caller, as the executor would
        job.set_exception(e)
    else:
        job.set_result(result)
    return job


def _sized_job(ctx: contextvars.Context, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    _adaptive.before_job()
    try:
        return _run_job(runtime(CPU).background, _in_context, ctx, fn, args, kwargs)[0]
    finally:
        _adaptive.after_job()


def _in_context(ctx: contextvars.Context, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    return ctx.run(fn, *args, **kwargs)


def _run_job(background: BackgroundThread, fn: Callable[..., T], *args: Any) -> tuple[T, threading.Thread | None]:
    """Run an executor job on this thread or, while the machine is quiet, on ``background`` (NOTE [Jobs run
    below the loop]); its result, and the background thread if it ran there (None: here)."""
    if not (_adaptive.quiet and background.wanted()):
        return fn(*args), None
    try:
        return background.run(fn, *args), background.thread
    finally:
        if background.last_starved:  # a neighbour arrived: the next jobs run here
            _adaptive.unsettle()


async def await_job(job: "Future[T]") -> T:
    """Wait for an executor job from the event loop (NOTE [Offload and cancellation])."""
    done = _aio.Event()
    post = _aio.thread_poster()

    def wake(_: Any) -> None:
        try:
            post(done.set)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    job.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:
        if not job.cancel():  # running: it cannot be stopped, so wait until it is over
            with _aio.shielded():
                await done.wait()
        raise
    return job.result()


async def offload(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` off the event loop and return its result.

    For the synchronous parts of a training step (a forward, a loss, a
    metric): the function runs on aiograd's cpu executor thread (the one that
    runs large backward kernels; no thread is started per call) with the
    caller's grad mode and context variables (a copy of the caller's context,
    so changes the function makes to them stay there). Its exception, if any,
    is raised here. Cancelling the caller withdraws a call that has not
    started, and waits for one that has (NOTE [Offload and cancellation]).

        loss = await ag.offload(lambda: F.cross_entropy(model(x), y))
    """
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"offload runs synchronous functions; {_name(fn)} is a coroutine function: await it")
    result = await await_job(submit(fn, *args, **kwargs))
    if inspect.isawaitable(result):  # ``lambda: coro_fn()``: what it returned would never run
        if inspect.iscoroutine(result):
            result.close()  # refused here, so no "never awaited" warning besides
        raise TypeError(
            f"offload runs synchronous functions; {_name(fn)} returned {type(result).__name__} "
            f"(an awaitable): await it instead of offloading it"
        )
    return result


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


# ----- BLAS threads -------------------------------------------------------------------
#
# NOTE [BLAS threads]: numpy's BLAS (OpenBLAS, MKL...) starts a pool of threads
# per kernel, sized to every core by default. aiograd's device executors
# already run kernels beside the event loop's thread, so BLAS's own pool on
# top oversubscribes the cores, and a BLAS kernel whose threads wait for one
# another stalls badly as soon as any other process wants a core. aiograd
# therefore sizes the BLAS pools itself (threadpoolctl): the cores left after
# the loop's thread, shared by the device executors started so far, at least
# one per kernel. An explicit choice wins: ``set_num_threads(n)``, then the
# AIOGRAD_NUM_THREADS environment variable; and if the user set a BLAS
# variable (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS...) and
# neither of those, aiograd leaves BLAS alone. Applied at import, when an
# executor starts (a BLAS library loaded later is sized then too) and by
# set_num_threads. The limits are per process: they hold for every numpy call
# in it, on any thread. With the default size, an executor job runs with BLAS at
# every core while the machine is idle (NOTE [Adaptive BLAS threads] in
# blas_threads.py).

ENV_VAR = "AIOGRAD_NUM_THREADS"
BLAS_ENV_VARS = (
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _BlasThreads:
    """What aiograd decided for the BLAS pools, and applying it."""

    def __init__(self) -> None:
        self.requested: int | None = None  # set_num_threads
        self.adaptive = adaptive_enabled_by_env()  # NOTE [Adaptive BLAS threads]
        self._lock = threading.Lock()
        self._libs: list[Callable[[int], Any]] = []  # the BLAS libraries' setters, kept for fast resizing
        self._getters: list[Callable[[], Any]] = []

    def target(self) -> int | None:
        """The BLAS threads per kernel aiograd wants, or None to leave BLAS alone."""
        if self.requested is not None:
            return self.requested
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            if not env.isdigit() or int(env) < 1:
                raise ValueError(f"{ENV_VAR} must be a positive integer, got {env!r}")
            return int(env)
        if any(os.environ.get(v, "").strip() for v in BLAS_ENV_VARS):
            return None
        return self.default()

    @staticmethod
    def default() -> int:
        """The cores left after the loop's thread, shared by the started executors, at least 1."""
        return max(1, (available_cores() - 1) // max(1, live_threads()))

    def apply(self) -> None:
        n = self.target()
        if n is not None:
            with self._lock:
                threadpoolctl.threadpool_limits(limits=n, user_api="blas")
                chosen = self.requested is not None or bool(os.environ.get(ENV_VAR, "").strip())
                adaptive = self.adaptive and not chosen and _machine.available
                if adaptive:  # the libraries loaded now (a library loaded later is found at the next apply)
                    libs = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
                    self._libs = [_setter(lib) for lib in libs]
                    self._getters = [lib.get_num_threads for lib in libs]
                wide = max(1, available_cores() // max(1, live_threads()))
                _adaptive.configure(adaptive and bool(self._libs), n, wide)
        else:
            _adaptive.configure(False, 1, 1)

    def untouched(self) -> bool:
        """Nobody sized BLAS since the last ``apply``: no aiograd or BLAS variable set now, every pool
        at the narrow size (a ``threadpool_limits`` block to another size shows here)."""
        env = os.environ
        if env.get(ENV_VAR) or any(env.get(v) for v in BLAS_ENV_VARS):
            return False
        return all(get() == _adaptive.narrow for get in self._getters)

    def set_fast(self, n: int) -> None:
        """Resize the BLAS pools found at the last ``apply`` (microseconds: no library lookup)."""
        for set_threads in self._libs:
            set_threads(n)


def _setter(lib: Any) -> Callable[[int], Any]:
    """The function that sizes ``lib``'s pool from any thread.

    threadpoolctl's ``set_num_threads`` of a pthreads OpenBLAS obeys only the first thread
    that called it and silently does nothing on the others (the executor thread resizes
    here); ``_real_set_num_threads`` is the library's own call. Older threadpoolctl
    versions have no such rule and no such method."""
    return getattr(lib, "_real_set_num_threads", None) or lib.set_num_threads


_blas = _BlasThreads()
_machine = MachineLoad()
_workers = BlasWorkers(worker_nice_by_env())
_EXECUTOR_NICE = executor_nice_by_env(BlasWorkers.nice_step)  # NOTE [Jobs run below the loop]
_adaptive = AdaptiveThreads(_blas.set_fast, _machine.read, untouched=_blas.untouched,
                            workers=_workers)


def _check_threads(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    return n


def set_num_threads(n: int | None) -> None:
    """How many threads one BLAS kernel (a matmul, a conv) may use; None: aiograd's default.

    The default is the cores left after the event loop's thread, shared by
    the device executors in use (NOTE [BLAS threads]): 1 on a 2-core machine;
    with it, a job on an executor thread runs with every core while other
    processes and the loop leave them idle (NOTE [Adaptive BLAS threads]).
    Any ``n`` turns that off: BLAS keeps ``n`` threads.
    Like ``torch.set_num_threads``, it is per process and holds for every
    numpy call. The environment variable AIOGRAD_NUM_THREADS sets it at start.
    """
    _blas.requested = None if n is None else _check_threads(n)
    _blas.apply()
os.register_at_fork(after_in_child=_reset_after_fork)


def get_num_threads() -> int:
    """How many threads a BLAS kernel uses now (the largest pool among the BLAS libraries loaded)."""
    pools = [i.get("num_threads") or 1 for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    return max(pools, default=1)


_blas.apply()
os.register_at_fork(after_in_child=_reset_after_fork)
