"""Device runtimes: the executor thread and shared ready queue of each device, and the offload policy.

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
"""

from __future__ import annotations

import contextvars
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np

from ..device import Device
from .ready_queue import ReadyQueue

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
]


class DeviceRuntime:
    """The executor thread and shared ready queue of one device."""

    def __init__(self, dev: Device) -> None:
        self.device = dev
        self._executor: ThreadPoolExecutor | None = None
        self._queue = ReadyQueue()
        self._lock = threading.Lock()  # the queue is pushed on the loop thread, popped on the device's

    @property
    def executor(self) -> ThreadPoolExecutor:
        ex = self._executor
        if ex is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"aiograd-{self.device}")
                ex = self._executor
        return ex

    def dispatch(self, gt: "GraphTask", node: "Node", grads: list[Any]) -> "Future[None]":
        """Queue ``node`` of ``gt`` and let the device thread run the most urgent queued node.

        Returns the submitted job: jobs are interchangeable ("run the next queued node").
        Results go back through ``gt.post``, which schedules on the loop's thread.
        """
        with self._lock:
            self._queue.push(gt, node, grads)
        return self.executor.submit(self._run_next, contextvars.copy_context())

    def _run_next(self, ctx: contextvars.Context) -> None:
        with self._lock:
            if not self._queue:
                return
            gt, node, grads = self._queue.pop()
        if gt.error is not None:
            gt.post(gt.device_done, node, grads, None, None, 0.0)
            return
        t0 = perf_counter()
        try:
            outputs = ctx.run(_apply_sync, node, grads)
            err = None
        except BaseException as e:  # handed to the driver, which raises it
            outputs, err = None, e
        t1 = perf_counter()
        if gt.monitor is not None:
            gt.monitor.ran_on_device(node, t0, t1)
        gt.post(gt.device_done, node, grads, outputs, err, t1 - t0)

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


def _apply_sync(node: "Node", grads: list[Any]) -> Any:
    with np.errstate(all="ignore"):
        return node.apply(grads)


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
    threshold_s = 200e-6  # below this a hand-off (60-100 us of CPU) costs more than any overlap buys
    default_rate = 1e-9  # seconds per unit of work, until measured

    def __init__(self) -> None:
        self.mode = "auto"
        self.rates: dict[type, float] = {}

    def engine_min_work(self) -> int:
        """Nodes with less work than this are run inline without asking (the hot loop's test)."""
        if self.mode == "never":
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

        ``time_slice`` is the engine's; ``loop_has_work`` says whether other nodes of the
        pass are ready to run on the loop meanwhile (NOTE [Offload policy]).
        """
        if self.mode != "auto":
            return self.mode == "always"
        predicted = self.predict(node)
        if predicted > time_slice:  # responsiveness: inline, it would hold the loop past a slice
            return True
        return loop_has_work and predicted > self.threshold_s  # parallelism: worth a hand-off

    def observe(self, node: "Node", seconds: float) -> None:
        """Refine the rate of ``node``'s type from one measured run."""
        work = node.work
        if work <= 0:
            return
        cls = node.__class__
        measured = seconds / work
        old = self.rates.get(cls)
        self.rates[cls] = measured if old is None else 0.7 * old + 0.3 * measured


# NOTE [Offload policy]: a hand-off to a device thread costs 60-100 us of CPU on the
# two sides (a queue push under a lock, a future, a wake-up, a call_soon_threadsafe
# back), and while the kernel runs there the loop thread waits unless it has something
# else to do. So ``auto`` offloads a node only when that buys one of two things:
#
# (a) Responsiveness: its predicted time exceeds the engine's time slice. Run inline,
#     it would block every other coroutine of the loop for longer than a slice; on its
#     device thread the driver sleeps in ``wait_for_work`` and the loop stays free.
# (b) Parallelism: other nodes of the pass are ready on the loop (the engine's ready
#     queue is not empty) and the kernel is long enough (``threshold_s``) for the
#     overlap to outweigh the hand-off. Device work already in flight does not count:
#     a kernel run inline overlaps it anyway, and sent to the same busy device it
#     would only queue behind it.
#
# Anything else runs inline, timed so the rates stay current. A node that fits a
# slice but not what is left of the current one makes the driver yield first (the
# engine's NOTE [Hot loop] (g)), so inline kernels never stretch a slice. A sequential
# graph (an MLP, most of a transformer's backward) therefore runs inline and pays no
# hand-off: issue 12 measured 35.8 ms of CPU for a transformer backward with the old
# rule (offload anything predicted above 200 us) against 20.9 ms inline.


policy = OffloadPolicy()


def set_offload(mode: str) -> None:
    """Where backward kernels run: ``"auto"`` (large ones on the device thread), ``"always"``, ``"never"``."""
    if mode not in ("auto", "always", "never"):
        raise ValueError(f"offload mode must be one of 'auto', 'always', 'never', got {mode!r}")
    policy.mode = mode


def get_offload() -> str:
    return policy.mode
