"""What a backward pass reports while it runs: profiler events and progress.

NOTE [Pass monitor]: a GraphTask carries a ``PassMonitor`` only when a
profile is active or ``progress=`` was given as the pass starts; otherwise
``GraphTask.monitor`` is None and all the hot loop pays is two tests of a
local variable per node. The engine calls

- ``ran(node, start)`` on the loop thread after it evaluated a node inline
  (hooks, ``apply``, or the staging of an AccumulateGrad). A node whose apply
  awaits is timed across the await, so the nodes of the reentrant pass it
  awaits lie inside its span;
- ``ran_on_device(node, start, end)`` on a device thread, right after that
  thread ran a node's kernels (the event is appended there: ``list.append``
  is atomic);
- ``device_node_done()`` on the loop thread when the driver gets that node's
  outputs back;
- ``finish()`` when the pass ends, however it ends.

Progress is counted and reported on the loop thread only, so a user's
callback (or the tqdm bar) never runs on a device thread.

NOTE [Profiles are process-wide]: a profile records every pass *started*
while it is active, in any task, thread or event loop of the process. The
active profiles are one process-wide tuple that each GraphTask reads once,
when it starts. A context variable would miss the passes of tasks that were
already running when the profile began (the request handlers of a server,
the other coroutines of a notebook), which "every pass started while
profiling is on" must include: a profile is a window in time over the
process, as torch.profiler's is. A pass still running when the profile ends
is recorded up to that moment.
"""

from __future__ import annotations

import itertools
import threading
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Protocol

from .._optional import require

if TYPE_CHECKING:
    from .graph import Node

__all__ = ["NodeEvent", "PassMonitor", "pass_monitor", "start_profile", "stop_profile", "active_profiles"]


class NodeEvent(NamedTuple):
    """One node run: what ran, for which pass, where, and when (``time.perf_counter`` seconds)."""

    name: str
    graph_task: int  # the pass's id, unique in this process
    depth: int  # reentrant depth of the pass (0: not nested in another pass)
    device: str  # the node's device, e.g. "cpu" or "cpu:1"
    thread: str  # name of the thread the node ran on
    offloaded: bool  # True: on its device's executor thread; False: inline on the loop thread
    start: float
    end: float
    thread_id: int  # threading.get_ident() of that thread (names need not be unique)

    @property
    def duration(self) -> float:
        """Seconds from start to end."""
        return self.end - self.start


class _Sink(Protocol):
    """What a PassMonitor records into (``aiograd.profiler.profile``)."""

    def _add(self, event: NodeEvent) -> None: ...


_new_event = tuple.__new__  # builds a NodeEvent without NamedTuple's Python-level __new__ (3x faster)
_device_names: dict[Any, str] = {}


def _device_name(device: Any) -> str:
    name = _device_names.get(device)
    if name is None:
        name = _device_names[device] = str(device)
    return name


_active: tuple[_Sink, ...] = ()
_active_lock = threading.Lock()
_graph_task_ids = itertools.count(1)


def start_profile(profile: _Sink) -> None:
    """Make ``profile`` receive the events of every pass started from now on (NOTE [Profiles are process-wide])."""
    global _active
    with _active_lock:
        _active = _active + (profile,)


def stop_profile(profile: _Sink) -> None:
    """Passes started from now on no longer report to ``profile``."""
    global _active
    with _active_lock:
        _active = tuple(p for p in _active if p is not profile)


def active_profiles() -> tuple[_Sink, ...]:
    return _active


ProgressCallback = Callable[[int, int], Any]


class _TqdmProgress:
    """``progress=True``: a tqdm.auto bar (a widget in notebooks, text in terminals)."""

    def __init__(self, total: int) -> None:
        tqdm = require("tqdm.auto", "backward(progress=True)").tqdm
        self.bar = tqdm(total=total, unit="node", desc="backward")

    def __call__(self, done: int, total: int) -> None:
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def _progress_sink(progress: Any, total: int) -> ProgressCallback:
    if progress is True:
        return _TqdmProgress(total)
    if callable(progress):
        return progress
    raise TypeError(
        f"progress must be True, False/None or a callable taking (done, total), got {type(progress).__name__}"
    )


def nodes_to_run(first: "Node", table: Iterable["Node"], exec_info: "dict[Node, list[Any]] | None") -> int:
    """How many nodes a pass will evaluate: every node it reaches, or only the needed ones
    when ``inputs`` pruned the graph (ExecInfo)."""
    if exec_info is None:
        return 1 + sum(1 for _ in table)
    return sum(1 for n in itertools.chain((first,), table) if (e := exec_info.get(n)) is not None and e[0])


class PassMonitor:
    """The profiler and progress plumbing of one pass (NOTE [Pass monitor])."""

    __slots__ = ("profiles", "graph_task", "depth", "thread", "thread_id", "progress", "done", "total",
                 "interval", "next_report")

    def __init__(self, profiles: tuple[_Sink, ...], depth: int, progress: "ProgressCallback | None", total: int,
                 interval: float) -> None:
        self.profiles = profiles
        self.graph_task = next(_graph_task_ids)
        self.depth = depth
        # A pass is driven by one coroutine, so its inline nodes all run on this thread.
        thread = threading.current_thread()
        self.thread = thread.name
        self.thread_id = thread.ident or 0
        self.progress = progress
        self.done = 0
        self.total = total
        self.interval = interval
        self.next_report = perf_counter() + interval

    def ran(self, node: "Node", start: float) -> None:
        """``node`` was evaluated inline on the loop thread from ``start`` until now."""
        end = perf_counter()
        if self.profiles:
            self._record(_new_event(NodeEvent, (node.name(), self.graph_task, self.depth, _device_name(node.device),
                                                self.thread, False, start, end, self.thread_id)))
        if self.progress is not None:
            self._advance(end)

    def ran_on_device(self, node: "Node", start: float, end: float, thread: threading.Thread | None = None) -> None:
        """``node``'s kernels ran on this (device) thread, or on ``thread`` for it (its background
        thread, NOTE [Jobs run below the loop] in background.py), from ``start`` to ``end``."""
        if self.profiles:
            thread = thread or threading.current_thread()
            self._record(_new_event(NodeEvent, (node.name(), self.graph_task, self.depth, _device_name(node.device),
                                                thread.name, True, start, end, thread.ident or 0)))

    def device_node_done(self) -> None:
        """The driver (loop thread) received the outputs of an offloaded node."""
        if self.progress is not None:
            self._advance(perf_counter())

    def finish(self) -> None:
        """The pass ended (completed, failed or cancelled): close the progress bar."""
        close = getattr(self.progress, "close", None)
        if close is not None:
            close()

    def _record(self, event: NodeEvent) -> None:
        for profile in self.profiles:
            profile._add(event)

    def _advance(self, now: float) -> None:
        # Monotone, at most once per interval, and always once at (total, total).
        self.done += 1
        if self.done == self.total or now >= self.next_report:
            self.next_report = now + self.interval
            self.progress(self.done, self.total)  # type: ignore[misc]


def pass_monitor(depth: int, progress: Any, first: "Node", table: Iterable["Node"],
                 exec_info: "dict[Node, list[Any]] | None", interval: float) -> PassMonitor | None:
    """The monitor of a pass about to start, or None when nothing watches it (the common case)."""
    profiles = _active
    wants_progress = progress is not None and progress is not False
    if not wants_progress and not profiles:
        return None
    sink = None
    total = 0
    if wants_progress:
        total = nodes_to_run(first, table, exec_info)
        sink = _progress_sink(progress, total)
    return PassMonitor(profiles, depth, sink, total, interval)
