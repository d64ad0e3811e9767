"""aiograd.profiler: events of every node run, Chrome traces, the table and the timeline."""

from __future__ import annotations

import io
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd.profiler import NodeEvent, profile


def _x(*values: float) -> ag.Tensor:
    return ag.tensor(list(values), dtype=ag.float64, requires_grad=True)


def _chain(x: ag.Tensor) -> ag.Tensor:
    """sum(cos(sin(x) * 2)): SumBackward0, CosBackward0, MulBackward0, SinBackward0, AccumulateGrad."""
    return ((x.sin() * 2.0).cos()).sum()


CHAIN_NODES = ["SumBackward0", "CosBackward0", "MulBackward0", "SinBackward0", "AccumulateGrad"]


def _trace(prof: profile, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    return json.loads(path.read_text())  # valid JSON or this raises


def _complete(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _track_names(trace: dict[str, Any]) -> dict[int, str]:
    return {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


def _assert_tracks_nest(trace: dict[str, Any]) -> None:
    """Within each track, any two slices are disjoint or nested (what trace viewers require)."""
    by_tid: dict[int, list[tuple[float, float]]] = {}
    for e in _complete(trace):
        by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_tid.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[float] = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, "slices of one track overlap without nesting"
            stack.append(end)


# ----- events ---------------------------------------------------------------------------


async def test_every_node_run_is_one_event_with_its_attributes() -> None:
    x = _x(0.1, 0.2, 0.3)
    loss = _chain(x)
    with profile() as prof:
        await loss.backward()
    events = prof.events
    assert [e.name for e in events] == CHAIN_NODES  # one per node, in the order they ran
    assert all(isinstance(e, NodeEvent) for e in events)
    assert len({e.graph_task for e in events}) == 1
    me = threading.current_thread()
    for e in events:
        assert e.depth == 0 and e.device == "cpu" and not e.offloaded
        assert e.thread == me.name and e.thread_id == me.ident
        assert prof.start <= e.start <= e.end <= prof.end
    assert all(a.end <= b.start for a, b in zip(events, events[1:]))  # inline runs are sequential


async def test_async_with_and_no_recording_outside_the_block() -> None:
    x = _x(1.0)
    await _chain(x).backward()  # before: not recorded
    async with profile() as prof:
        await _chain(x).backward()
    await _chain(x).backward()  # after: not recorded
    assert [e.name for e in prof.events] == CHAIN_NODES


async def test_concurrent_passes_are_distinct_graph_tasks() -> None:
    xs = [_x(0.1 * i, 0.2) for i in range(1, 4)]
    losses = [_chain(x) for x in xs]
    with profile() as prof:
        async with anyio.create_task_group() as tg:
            for loss in losses:
                tg.start_soon(loss.backward)
    by_task: dict[int, list[str]] = {}
    for e in prof.events:
        by_task.setdefault(e.graph_task, []).append(e.name)
    assert len(by_task) == 3
    assert all(sorted(names) == sorted(CHAIN_NODES) for names in by_task.values())


class _Reenter(ag.Function):
    """y = 2x whose backward awaits a nested backward of its own (reentrant, like a checkpoint)."""

    @staticmethod
    def forward(ctx: Any, x: Any, levels: int) -> Any:
        ctx.levels = levels
        return x * 2

    @staticmethod
    async def backward(ctx: Any, g: Any) -> Any:
        if ctx.levels:
            with ag.enable_grad():
                inner = _x(1.0)
                await _Reenter.apply(inner, ctx.levels - 1).sum().backward()
        return g * 2, None


async def test_nested_reentrant_passes_carry_their_depth(tmp_path: Path) -> None:
    x = _x(1.0, 2.0)
    loss = _Reenter.apply(x, 2).sum()
    with profile() as prof:
        await loss.backward()
    events = prof.events
    depths = {e.graph_task: e.depth for e in events}
    assert sorted(depths.values()) == [0, 1, 2]
    outer = {e.depth: e for e in events if e.name == "_ReenterBackward"}
    # each awaiting node spans the whole reentrant pass it awaited
    for d in (0, 1):
        inner = [e for e in events if e.depth == d + 1]
        assert inner and all(outer[d].start <= e.start and e.end <= outer[d].end for e in inner)
    trace = _trace(prof, tmp_path)
    assert sorted({e["args"]["depth"] for e in _complete(trace)}) == [0, 1, 2]
    _assert_tracks_nest(trace)


async def test_checkpoint_nodes_are_recorded_with_the_recomputed_pass() -> None:
    w = ag.tensor(np.eye(3), requires_grad=True)
    x = _x(1.0, 2.0, 3.0)
    out = ag.checkpoint(lambda t: (t @ w).tanh(), x, use_reentrant=True).sum()
    with profile() as prof:
        await out.backward()
    names_at = {d: Counter(e.name for e in prof.events if e.depth == d) for d in (0, 1)}
    assert names_at[0]["SumBackward0"] == 1 and sum(names_at[1].values()) >= 2
    assert names_at[1]["TanhBackward0"] == 1


async def test_offloaded_nodes_are_on_their_device_threads_track(offload_always: None, tmp_path: Path) -> None:
    x = ag.tensor(np.linspace(0, 1, 8), requires_grad=True)
    x1 = x.to("cpu:1")
    loss = (x.sin().sum() + x1.cos().sum().to("cpu"))
    with profile() as prof:
        await loss.backward()
    events = prof.events
    sin = next(e for e in events if e.name == "SinBackward0")
    cos = next(e for e in events if e.name == "CosBackward0")
    acc = next(e for e in events if e.name == "AccumulateGrad")
    assert sin.offloaded and sin.thread.startswith("aiograd-cpu_") and sin.device == "cpu"
    assert cos.offloaded and cos.thread.startswith("aiograd-cpu:1") and cos.device == "cpu:1"
    assert not acc.offloaded and acc.thread == threading.current_thread().name  # staging stays on the loop
    trace = _trace(prof, tmp_path)
    names = _track_names(trace)
    tid_of = {e["name"]: e["tid"] for e in _complete(trace)}
    assert sin.thread in names[tid_of["SinBackward0"]] and "cpu" in names[tid_of["SinBackward0"]]
    assert cos.thread in names[tid_of["CosBackward0"]] and "cpu:1" in names[tid_of["CosBackward0"]]
    assert len({tid_of["SinBackward0"], tid_of["CosBackward0"], tid_of["AccumulateGrad"]}) == 3
    args = next(e["args"] for e in _complete(trace) if e["name"] == "CosBackward0")
    assert args["offloaded"] is True and args["device"] == "cpu:1"


@pytest.mark.asyncio(loop_factories=["asyncio"])
async def test_passes_started_in_other_threads_are_recorded() -> None:
    """NOTE [Profiles are process-wide]: a pass on another thread's loop, started while active, counts."""
    x = _x(0.5)
    with profile() as prof:
        t = threading.Thread(target=lambda: _chain(x).backward_sync(), name="other-loop")
        t.start()
        await anyio.to_thread.run_sync(t.join)
    assert [e.name for e in prof.events] == CHAIN_NODES
    assert {e.thread for e in prof.events} == {"other-loop"}


async def test_a_profile_records_once() -> None:
    with profile() as prof:
        with pytest.raises(RuntimeError, match="already been used; make a new profile"):
            prof.__enter__()
    with pytest.raises(RuntimeError, match="already been used"):
        with prof:
            pass


async def test_nested_profiles_both_record() -> None:
    x = _x(0.5)
    with profile() as outer:
        await _chain(x).backward()
        with profile() as inner:
            await _chain(x).backward()
    assert len(outer.events) == 2 * len(CHAIN_NODES) and len(inner.events) == len(CHAIN_NODES)


# ----- Chrome trace -----------------------------------------------------------------------


async def test_chrome_trace_has_one_complete_event_per_node_run(tmp_path: Path) -> None:
    x = _x(0.1, 0.2)
    with profile() as prof:
        await _chain(x).backward()
        await _chain(x).backward()
    trace = _trace(prof, tmp_path)
    complete = _complete(trace)
    assert len(complete) == len(prof.events) == 2 * len(CHAIN_NODES)
    assert Counter(e["name"] for e in complete) == Counter(CHAIN_NODES * 2)
    names = _track_names(trace)
    for e in complete:
        assert set(e) >= {"ph", "name", "pid", "tid", "ts", "dur", "args"}
        assert set(e["args"]) == {"graph_task", "depth", "device", "offloaded"}
        assert e["ts"] >= 0 and e["dur"] >= 0 and e["tid"] in names
    assert len({e["args"]["graph_task"] for e in complete}) == 2
    for ev, te in zip(prof.events, complete):  # ts/dur in microseconds since the profile started
        assert te["ts"] == pytest.approx((ev.start - prof.start) * 1e6, abs=1e-2)
        assert te["dur"] == pytest.approx((ev.end - ev.start) * 1e6, abs=1e-2)


class _Sleepy(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1

    @staticmethod
    async def backward(ctx: Any, g: Any) -> Any:
        await anyio.sleep(0.05)
        return g


async def test_overlapping_awaiting_nodes_get_separate_tracks(tmp_path: Path) -> None:
    """Two awaiting nodes of concurrent passes overlap without nesting: the second goes to an extra track."""
    a, b = _x(1.0), _x(2.0)

    async def later() -> None:
        await anyio.sleep(0.02)
        await _Sleepy.apply(b).sum().backward()

    with profile() as prof:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_Sleepy.apply(a).sum().backward)
            tg.start_soon(later)
    trace = _trace(prof, tmp_path)
    _assert_tracks_nest(trace)
    sleepy = [e for e in _complete(trace) if e["name"] == "_SleepyBackward"]
    assert len(sleepy) == 2 and sleepy[0]["tid"] != sleepy[1]["tid"]
    assert "overlap" in _track_names(trace)[sleepy[1]["tid"]]


def test_empty_profile_exports_and_tabulates(tmp_path: Path) -> None:
    with profile() as prof:
        pass
    assert _complete(_trace(prof, tmp_path)) == []
    assert "0 node runs" in prof.table()


# ----- table ------------------------------------------------------------------------------


async def test_table_aggregates_calls_total_mean_max_per_name() -> None:
    x = _x(0.1, 0.2)
    with profile() as prof:
        for _ in range(3):
            await _chain(x).backward()
    text = prof.table()
    header = text.splitlines()[1].split()
    assert header == ["Name", "Calls", "Total", "Mean", "Max"]
    rows = {line.split()[0]: line.split() for line in text.splitlines()[3:-2]}
    assert set(rows) == set(CHAIN_NODES)
    assert rows["SinBackward0"][1] == "3" and rows["AccumulateGrad"][1] == "3"
    assert text.splitlines()[-1] == f"{3 * len(CHAIN_NODES)} node runs in 3 graph tasks"

    by_total = [line.split()[0] for line in prof.table(sort_by="total").splitlines()[3:-2]]
    totals = {n: sum(e.end - e.start for e in prof.events if e.name == n) for n in CHAIN_NODES}
    assert by_total == sorted(totals, key=lambda n: -totals[n])
    assert [line.split()[0] for line in prof.table(sort_by="name").splitlines()[3:-2]] == sorted(CHAIN_NODES)
    assert len(prof.table(sort_by="max", row_limit=2).splitlines()) == 3 + 2 + 2
    for key in ("calls", "mean"):
        prof.table(sort_by=key)


def test_table_rejects_unknown_sort_keys() -> None:
    prof = profile()
    with pytest.raises(ValueError, match="sort_by must be one of 'total', 'calls', 'mean', 'max', 'name'"):
        prof.table(sort_by="self_cpu_time_total")
    with pytest.raises(ValueError, match="row_limit"):
        prof.table(row_limit=-1)


# ----- timeline ---------------------------------------------------------------------------


async def test_timeline_is_a_figure_with_a_row_per_device_and_thread(offload_always: None) -> None:
    from matplotlib.figure import Figure

    x = ag.tensor(np.linspace(0, 1, 8), requires_grad=True)
    loss = _Reenter.apply(x.sin(), 1).sum()
    with profile() as prof:
        await loss.backward()
    fig = prof.timeline()
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    tracks = {(e.device, e.thread) for e in prof.events}
    assert len(labels) == len(tracks)
    assert any("inline" in label for label in labels) and any("device thread" in label for label in labels)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("depth 1" in t for t in legend) and any("reentrant" in t for t in legend)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # renders without pyplot or a GUI backend
    assert buf.getvalue().startswith(b"\x89PNG")
    assert fig._repr_png_().startswith(b"\x89PNG")  # what a notebook shows when a cell returns it


def test_timeline_of_an_empty_profile() -> None:
    with profile() as prof:
        pass
    assert "no node ran" in prof.timeline().axes[0].get_title()


def test_timeline_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(ModuleNotFoundError, match=r"profile\.timeline\(\) needs .*'matplotlib'.*pip install 'aiograd\[viz\]'"):
        profile().timeline()


async def test_inline_node_runs_of_concurrent_passes_never_overlap() -> None:
    """A node that would overrun its time slice yields before it runs (engine's NOTE [Hot loop] (g)):
    its event starts after the yield, so the runs on the loop's thread of passes taking turns are
    disjoint (one lane a thread on the timeline), as they ran."""
    rng = np.random.default_rng(0)

    def chain() -> ag.Tensor:
        h = ag.tensor(rng.standard_normal((192, 192), dtype=np.float32))
        for _ in range(12):
            w = rng.standard_normal((192, 192), dtype=np.float32) / np.float32(14.0)
            h = (h @ ag.tensor(w, requires_grad=True)).tanh()
        return h.sum()

    for _ in range(3):
        await chain().backward()  # the offload policy learns what a matrix product costs
    losses = [chain() for _ in range(3)]
    with profile() as prof:
        async with anyio.create_task_group() as tg:
            for loss in losses:
                tg.start_soon(loss.backward)
    runs = sorted((ev.start, ev.end, ev.name) for ev in prof.events if not ev.offloaded)
    assert len({ev.graph_task for ev in prof.events}) == 3
    overlaps = [(a, b) for a, b in zip(runs, runs[1:]) if b[0] < a[1]]
    assert overlaps == []


async def test_timeline_labels_name_passes_and_share_colors_by_name() -> None:
    """``labels`` names passes by graph task: one legend entry and one color a name (the
    passes of one task), in the order given; unnamed passes keep ``graph task N``."""
    xs = [ag.tensor(np.linspace(0, 1, 8), requires_grad=True) for _ in range(3)]
    with profile() as prof:
        for x in xs:
            await (x.sin() * 2).sum().backward()
    gts = list(dict.fromkeys(ev.graph_task for ev in prof.events))
    assert len(gts) == 3
    fig = prof.timeline(labels={gts[2]: "worker", gts[0]: "worker"})
    (ax,) = fig.axes
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["worker", f"graph task {gts[1]} (depth 0)"]
    worker, other = (h.get_facecolor() for h in legend.legend_handles)
    assert worker != other
    bar_colors = {tuple(c.get_facecolor()[0]) for c in ax.collections}
    assert bar_colors == {tuple(worker), tuple(other)}
