"""aiograd.profiler: what the backward engine ran, node by node, where and when.

    with ag.profiler.profile() as prof:        # or `async with`
        await loss.backward()
    prof.events                                # one NodeEvent per node run
    prof.export_chrome_trace("trace.json")     # Perfetto / chrome://tracing
    print(prof.table(sort_by="total", row_limit=10))
    fig = prof.timeline()                      # a matplotlib Figure

A profile records every pass started while it is active, in any task, thread
or loop of the process, including concurrent passes and reentrant passes
nested in a node (NOTE [Profiles are process-wide] in autograd/monitor.py).
Each node run is one event: the node's ``name()``, the id of its pass
(``graph_task``), the pass's reentrant ``depth``, the node's ``device``, the
``thread`` it ran on, whether it was ``offloaded`` to its device's executor
thread or ran inline on the loop thread, and ``start``/``end`` in
``time.perf_counter`` seconds. A node whose backward awaits (a checkpoint, an
async Function) spans its await, so the nodes of the pass it awaits lie
inside it. When no profile is active the engine records nothing and pays
nothing measurable.
"""

from __future__ import annotations

import io
import json
import os
from collections import defaultdict
from time import perf_counter
from typing import Any, Mapping, NamedTuple, Sequence

from ._optional import require
from .autograd.monitor import NodeEvent, start_profile, stop_profile

__all__ = ["profile", "NodeEvent"]

Track = tuple[str, int]  # (device, thread id): one track per device and thread
_SORT_KEYS = ("total", "calls", "mean", "max", "name")
_MAX_LANES = 8  # lanes per timeline row; deeper overlaps share the top lane


class profile:
    """Records the node runs of every backward pass started while it is active (``with``/``async with``)."""

    def __init__(self) -> None:
        self._events: list[NodeEvent] = []  # in the order they were recorded
        self._by_start: list[NodeEvent] = []  # the same, in start order (rebuilt when more arrived)
        self._recording = False
        self.start: float | None = None  # perf_counter() when recording began
        self.end: float | None = None  # ... and ended

    # ----- recording ---------------------------------------------------------------
    def __enter__(self) -> "profile":
        if self.start is not None:
            raise RuntimeError("this profile has already been used; make a new profile() for another recording")
        self.start = perf_counter()
        self._recording = True
        start_profile(self)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_profile(self)
        self._recording = False
        self.end = perf_counter()

    async def __aenter__(self) -> "profile":
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def _add(self, event: NodeEvent) -> None:
        """Called by the engine (loop thread) and by device threads; ``list.append`` is atomic."""
        if self._recording:
            self._events.append(event)

    @property
    def events(self) -> list[NodeEvent]:
        """The node runs recorded, in order of start."""
        n = len(self._events)
        if len(self._by_start) != n:
            # Device threads append as their kernels finish (never sort the list they append to).
            self._by_start = sorted(self._events[:n], key=_start_of)
        return self._by_start

    # ----- Chrome trace ----------------------------------------------------------------
    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as a Chrome trace (``{"traceEvents": [...]}``) for Perfetto or chrome://tracing.

        One complete event (``"ph": "X"``, ``ts``/``dur`` in microseconds since
        the profile started) per node run, named by the node, with
        ``args = {graph_task, depth, device, offloaded}``; one track (``tid``)
        per device and thread, labelled by ``thread_name`` metadata. Events
        of one track that overlap without nesting (two awaiting nodes of
        concurrent passes) go to an extra track of that device and thread, as
        a trace viewer requires slices of one track to nest.
        """
        pid = os.getpid()
        t0 = self._origin()
        trace: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "aiograd backward"}}
        ]
        tid = 0
        for (device, _), events in _tracks(self.events).items():
            for lane_nr, lane in enumerate(_nested_lanes(events)):
                tid += 1
                label = _track_label(events[0]) + (f" (overlap {lane_nr})" if lane_nr else "")
                trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
                trace.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                              "args": {"sort_index": tid}})
                for ev in lane:
                    ts = round((ev.start - t0) * 1e6, 3)
                    end = round((ev.end - t0) * 1e6, 3)
                    trace.append({
                        "ph": "X", "name": ev.name, "cat": "backward", "pid": pid, "tid": tid,
                        "ts": ts, "dur": round(end - ts, 3),
                        "args": {"graph_task": ev.graph_task, "depth": ev.depth, "device": device,
                                 "offloaded": ev.offloaded},
                    })
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)

    # ----- table -----------------------------------------------------------------------
    def table(self, sort_by: str = "total", row_limit: int | None = None) -> str:
        """Calls, total, mean and max time per node name, as text, largest first (``sort_by="name"``: A to Z).

        ``sort_by`` is one of "total", "calls", "mean", "max", "name";
        ``row_limit`` keeps the first rows. Times are inclusive: a node that
        awaits a reentrant pass includes that pass.
        """
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(map(repr, _SORT_KEYS))}, got {sort_by!r}")
        if row_limit is not None and (not isinstance(row_limit, int) or row_limit < 0):
            raise ValueError(f"row_limit must be a non-negative int or None, got {row_limit!r}")
        rows = _stats_by_name(self.events)
        if sort_by == "name":
            rows.sort(key=lambda r: r.name)
        else:
            rows.sort(key=lambda r: (-getattr(r, sort_by), r.name))
        if row_limit is not None:
            rows = rows[:row_limit]
        cells = [("Name", "Calls", "Total", "Mean", "Max")] + [
            (r.name, str(r.calls), _fmt_time(r.total), _fmt_time(r.mean), _fmt_time(r.max)) for r in rows
        ]
        widths = [max(len(c[i]) for c in cells) for i in range(5)]
        rule = "  ".join("-" * w for w in widths)
        lines = [rule]
        for i, c in enumerate(cells):
            lines.append("  ".join([c[0].ljust(widths[0])] + [x.rjust(w) for x, w in zip(c[1:], widths[1:])]))
            if i == 0:
                lines.append(rule)
        lines.append(rule)
        n_tasks = len({ev.graph_task for ev in self.events})
        lines.append(f"{len(self.events)} node runs in {n_tasks} graph tasks")
        return "\n".join(lines)

    # ----- timeline --------------------------------------------------------------------
    def timeline(self, labels: Mapping[int, str] | None = None) -> Any:
        """A matplotlib ``Figure``: a Gantt row per device and thread, bars colored by graph task.

        ``labels`` names passes in the legend, by graph task id: passes given
        the same name share one color and one legend entry (the passes of one
        task, say), in the order of ``labels``; the others are listed as
        ``graph task N``. Nodes of reentrant passes (depth >= 1) are hatched. A row splits into
        stacked lanes where runs overlap: the nodes a reentrant pass runs sit
        above the node that awaits it, as in a flame graph.
        Needs matplotlib (``pip install 'aiograd[viz]'``). It uses no pyplot
        state, so it works under any backend (Agg included), and it shows as a
        PNG when a notebook cell returns it.
        """
        mpl_figure = require("matplotlib.figure", "profile.timeline()")
        from matplotlib import colormaps  # the viz extra, on first use (as require above)
        from matplotlib.patches import Patch

        events = self.events
        tracks = _tracks(events)
        fig = _figure_class(mpl_figure)(figsize=(10, 1.6 + 0.6 * max(1, len(tracks))), layout="constrained")
        ax = fig.add_subplot()
        ax.set_xlabel("ms since the profile started")
        if not events:
            ax.set_title("aiograd profile: no node ran")
            ax.set_yticks([])
            return fig
        t0 = self._origin()
        depth_of = {ev.graph_task: ev.depth for ev in events}
        names = dict(labels or {})
        for gt in dict.fromkeys(ev.graph_task for ev in events):
            names.setdefault(gt, f"graph task {gt} (depth {depth_of[gt]})")
        legend = {name: i for i, name in enumerate(dict.fromkeys(names[gt] for gt in names if gt in depth_of))}
        order = {gt: legend[names[gt]] for gt in depth_of}
        cmap = colormaps["tab10"]
        for row, evs in enumerate(tracks.values()):
            lanes = _disjoint_lanes(evs, _MAX_LANES)
            height = 0.8 / len(lanes)
            for lane_nr, lane in enumerate(lanes):
                bars: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
                for ev in lane:
                    bars[(ev.graph_task, ev.depth)].append(((ev.start - t0) * 1e3, (ev.end - ev.start) * 1e3))
                y = row + 0.4 - (lane_nr + 1) * height  # lane 0 at the bottom of the row
                for (gt, depth), xranges in bars.items():
                    color = cmap(order[gt] % cmap.N)
                    # hatch lines take the edge color: dark on nested passes, none on the others
                    ax.broken_barh(xranges, (y, height * 0.9), facecolors=color,
                                   edgecolors="0.15" if depth else color, linewidth=0.3,
                                   hatch="///" if depth else None)
        ax.set_yticks(range(len(tracks)), [_track_label(evs[0]) for evs in tracks.values()])
        ax.set_ylim(len(tracks) - 0.5, -0.5)
        handles = [Patch(color=cmap(i % cmap.N), label=name) for name, i in list(legend.items())[:12]]
        if any(ev.depth for ev in events):
            handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="reentrant (depth ≥ 1)"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
        ax.set_title(f"aiograd profile: {len(events)} node runs in {len(depth_of)} graph tasks")
        return fig

    # ----- helpers ---------------------------------------------------------------------
    def _origin(self) -> float:
        if self.start is not None:
            return self.start
        return self.events[0].start if self.events else 0.0

    def __repr__(self) -> str:
        state = "recording" if self._recording else "stopped"
        return f"<aiograd.profiler.profile {state}, {len(self._events)} events>"


class _Stats(NamedTuple):
    name: str
    calls: int
    total: float
    mean: float
    max: float


def _stats_by_name(events: Sequence[NodeEvent]) -> list[_Stats]:
    acc: dict[str, list[Any]] = {}  # name -> [calls, total, max]
    for ev in events:
        d = ev.end - ev.start
        s = acc.get(ev.name)
        if s is None:
            acc[ev.name] = [1, d, d]
        else:
            s[0] += 1
            s[1] += d
            s[2] = max(s[2], d)
    return [_Stats(name, calls, total, total / calls, mx) for name, (calls, total, mx) in acc.items()]


_FIGURE: list[type] = []


def _figure_class(mpl_figure: Any) -> type:
    """``matplotlib.figure.Figure`` that a notebook displays as PNG without pyplot's inline backend."""
    if not _FIGURE:

        class Figure(mpl_figure.Figure):
            """A matplotlib Figure with ``_repr_png_`` (a bare Figure has no notebook display of its own)."""

            def _repr_png_(self) -> bytes:
                buf = io.BytesIO()
                self.savefig(buf, format="png", bbox_inches="tight")
                return buf.getvalue()

        Figure.__module__ = __name__
        _FIGURE.append(Figure)
    return _FIGURE[0]


def _start_of(ev: NodeEvent) -> float:
    return ev.start


def _tracks(events: Sequence[NodeEvent]) -> dict[Track, list[NodeEvent]]:
    """Events grouped by (device, thread): inline tracks first, then device threads, by device."""
    groups: dict[Track, list[NodeEvent]] = defaultdict(list)
    for ev in events:
        groups[(ev.device, ev.thread_id)].append(ev)
    keys = sorted(groups, key=lambda k: (groups[k][0].offloaded, k[0], groups[k][0].thread, k[1]))
    return {k: groups[k] for k in keys}


def _track_label(ev: NodeEvent) -> str:
    return f"{ev.device} · {ev.thread} ({'device thread' if ev.offloaded else 'inline'})"


def _nested_lanes(events: Sequence[NodeEvent]) -> list[list[NodeEvent]]:
    """Split one track's events into lanes in which any two events are disjoint or nested.

    Runs on one thread are sequential, except that a node whose backward
    awaits spans the nodes run meanwhile: nested in it when they are of its
    own reentrant pass, but two awaiting nodes of concurrent passes may
    overlap without nesting. The usual case is one lane.
    """
    lanes: list[list[NodeEvent]] = []
    open_ends: list[list[float]] = []  # per lane: ends of the events enclosing the current time
    for ev in sorted(events, key=lambda e: (e.start, -e.end)):
        for lane, stack in zip(lanes, open_ends):
            while stack and stack[-1] <= ev.start:
                stack.pop()
            if not stack or ev.end <= stack[-1]:
                stack.append(ev.end)
                lane.append(ev)
                break
        else:
            lanes.append([ev])
            open_ends.append([ev.end])
    return lanes


def _disjoint_lanes(events: Sequence[NodeEvent], max_lanes: int) -> list[list[NodeEvent]]:
    """Split one track's events into at most ``max_lanes`` lanes of non-overlapping events (first fit)."""
    lanes: list[list[NodeEvent]] = []
    ends: list[float] = []
    for ev in sorted(events, key=lambda e: (e.start, -e.end)):
        for i, end in enumerate(ends):
            if end <= ev.start:
                break
        else:
            i = len(lanes) if len(lanes) < max_lanes else max_lanes - 1
            if i == len(lanes):
                lanes.append([])
                ends.append(ev.end)
        lanes[i].append(ev)
        ends[i] = max(ends[i], ev.end)
    return lanes


def _fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f}ms"
    return f"{seconds * 1e6:.3f}us"
