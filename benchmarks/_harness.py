"""Timing helpers, optional-peer imports and result tables shared by every benchmark.

Rules (see README.md): one untimed warm-up run, then ``repeat`` (>= 5) timed runs;
the reported value is the median. Runs are timed with ``time.perf_counter`` and
with the garbage collector enabled (as users run), after a ``gc.collect()`` so
that garbage left by the previous run is not charged to the next one.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import math
import statistics
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Coroutine, Iterable, Sequence

MIN_REPEAT = 5

#: engines that are reported as "not installed" instead of failing
PEERS = {"autograd": "HIPS autograd", "torch": "torch", "uvloop": "uvloop"}

_NOT_INSTALLED: dict[str, str] = {}


# ---------------------------------------------------------------- imports


def optional_import(name: str) -> Any | None:
    """Import ``name`` lazily; return None (and remember why) if it is absent."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        _NOT_INSTALLED[name] = str(exc)
        return None


def import_aiograd() -> Any | None:
    """Import aiograd; None when it does not import yet (the package is optional here)."""
    try:
        mod = importlib.import_module("aiograd")
    except Exception as exc:  # an import-time bug in aiograd must not stop the peers
        _NOT_INSTALLED["aiograd"] = f"{type(exc).__name__}: {exc}"
        return None
    if getattr(mod, "__file__", None) is None:  # a folder without __init__.py yet
        _NOT_INSTALLED["aiograd"] = "aiograd/__init__.py missing (namespace package)"
        return None
    return mod


_TORCH_DEFAULT_THREADS: list[int] = []


def import_torch(threads: int | None = 1) -> Any | None:
    """Import torch and set its intra-op threads: ``threads`` or, if None, torch's own default."""
    torch = optional_import("torch")
    if torch is None:
        return None
    if not _TORCH_DEFAULT_THREADS:
        _TORCH_DEFAULT_THREADS.append(torch.get_num_threads())
    torch.set_num_threads(threads if threads is not None else _TORCH_DEFAULT_THREADS[0])
    return torch


def import_torch_1thread() -> Any | None:
    """Import torch limited to one intra-op thread."""
    return import_torch(1)


def torch_default_threads() -> int:
    """torch's default intra-op thread count in this process (0 if torch is absent)."""
    return _TORCH_DEFAULT_THREADS[0] if import_torch(None) is not None else 0


# ---------------------------------------------------------------- timing


@dataclass
class Timing:
    """Samples of one measurement, in seconds."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median of the samples."""
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        """Fastest sample."""
        return min(self.samples)

    @property
    def spread(self) -> float:
        """(max - min) / median: a rough noise indicator."""
        return (max(self.samples) - min(self.samples)) / self.median if self.median else 0.0


def _repeat(repeat: int) -> int:
    return max(MIN_REPEAT, int(repeat))


def measure(
    timed: Callable[[Any], Any],
    setup: Callable[[], Any] | None = None,
    repeat: int = MIN_REPEAT,
    warmup: int = 1,
) -> Timing:
    """Time ``timed(setup())``: setup is untimed, gc.collect() runs before each timed call."""
    out = Timing()
    for i in range(warmup + _repeat(repeat)):
        state = setup() if setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        timed(state)
        t1 = time.perf_counter()
        del state
        if i >= warmup:
            out.samples.append(t1 - t0)
    return out


async def ameasure(
    timed: Callable[[Any], Awaitable[Any]],
    setup: Callable[[], Any] | None = None,
    repeat: int = MIN_REPEAT,
    warmup: int = 1,
) -> Timing:
    """Async twin of :func:`measure`: awaits ``timed(setup())`` on the running loop."""
    out = Timing()
    for i in range(warmup + _repeat(repeat)):
        state = setup() if setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        await timed(state)
        t1 = time.perf_counter()
        del state
        if i >= warmup:
            out.samples.append(t1 - t0)
    return out


def run_async(coro_fn: Callable[[], Coroutine[Any, Any, Any]], loop: str = "asyncio") -> Any:
    """Run ``coro_fn()`` to completion on a fresh loop ("asyncio" or "uvloop")."""
    if loop == "uvloop":
        uvloop = optional_import("uvloop")
        if uvloop is None:
            raise ImportError("uvloop is not installed")
        if hasattr(asyncio, "Runner"):  # Python >= 3.11
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(coro_fn())
        loop_obj = uvloop.new_event_loop()
        try:
            return loop_obj.run_until_complete(coro_fn())
        finally:
            loop_obj.close()
    return asyncio.run(coro_fn())


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of ``values``."""
    if not values:
        return math.nan
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100.0 * len(ordered)) - 1))
    return ordered[k]


# ---------------------------------------------------------------- results


def row(
    bench: str,
    case: str,
    engine: str,
    value: float | None,
    unit: str,
    note: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """One result row; ``value`` None means the engine did not run (see ``note``)."""
    return {"bench": bench, "case": case, "engine": engine, "value": value, "unit": unit, "note": note, **extra}


def missing(bench: str, case: str, engine: str, unit: str, module: str,
            exc: BaseException | None = None) -> dict[str, Any]:
    """Row for an engine whose package (or, for aiograd, a part of it) is absent."""
    why = _NOT_INSTALLED.get(module, "") or (str(exc) if exc is not None else "")
    note = "not installed" if module != "aiograd" else f"not available ({_short(why)})"
    return row(bench, case, engine, None, unit, note)


def failed(bench: str, case: str, engine: str, unit: str, exc: BaseException) -> dict[str, Any]:
    """Row for an engine that raised: the error is reported, never hidden."""
    return row(bench, case, engine, None, unit, f"error: {type(exc).__name__}: {_short(str(exc))}",
               traceback=traceback.format_exc(limit=6))


def guarded(bench: str, case: str, engine: str, unit: str, fn: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run ``fn`` (which returns rows) and turn an exception into one error row."""
    try:
        return fn()
    except Exception as exc:  # report, keep the other engines running
        return [failed(bench, case, engine, unit, exc)]


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == 0:
        return "0"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.2f}"
    return f"{value:.3g}"


def add_ratios(rows: list[dict[str, Any]], baselines: Iterable[str]) -> None:
    """Add ``ratio_vs`` {baseline: value/baseline_value} per row, same case, same run."""
    baselines = list(baselines)
    by_case: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["value"] is not None:
            by_case.setdefault(r["case"], {})[r["engine"]] = r["value"]
    for r in rows:
        ref = by_case.get(r["case"], {})
        r["ratio_vs"] = {
            b: (r["value"] / ref[b] if r["value"] is not None and ref.get(b) else None) for b in baselines
        }


def print_table(title: str, rows: list[dict[str, Any]], baselines: Sequence[str] = (),
                extra_cols: Sequence[str] = ()) -> None:
    """Print ``rows`` as a text table, with ratio columns against ``baselines``."""
    add_ratios(rows, baselines)
    header = ["case", "engine", "value", "unit", *extra_cols, *[f"vs {b}" for b in baselines], "note"]
    body = []
    for r in rows:
        ratios = r.get("ratio_vs", {})
        body.append([
            r["case"], r["engine"], _fmt(r["value"]), r["unit"],
            *[_fmt(r.get(c)) if not isinstance(r.get(c), str) else r.get(c) for c in extra_cols],
            *[(f"{ratios[b]:.2f}x" if ratios.get(b) is not None else "-") for b in baselines],
            r["note"],
        ])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = "  ".join("-" * w for w in widths)
    print(f"\n== {title}")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip())
    print(line)
    for b in body:
        print("  ".join(str(x).ljust(w) for x, w in zip(b, widths)).rstrip())
    for r in rows:
        if r.get("traceback"):
            print(f"   [{r['engine']} / {r['case']}] {r['traceback'].strip().splitlines()[-1]}")


def print_targets(lines: Iterable[str]) -> None:
    """Print the project targets with the measured verdicts (informational, never asserted)."""
    for text in lines:
        print(f"   target: {text}")


def target_line(label: str, value: float | None, op: str, limit: float, unit: str = "x") -> str:
    """'label = value (op limit) met|MISSED|n/a', with enough digits that the verdict is visible."""
    if value is None:
        return f"{label} = - ({op} {limit}{unit}) n/a"
    ok = value <= limit if op == "<=" else value >= limit
    return f"{label} = {value:.3f}{unit} ({op} {limit}{unit}) {verdict(ok)}"


def verdict(ok: bool | None) -> str:
    """'met', 'MISSED' or 'n/a' for a target check."""
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def value_of(rows: list[dict[str, Any]], case: str, engine: str) -> float | None:
    """The value of (case, engine) in ``rows``, or None."""
    for r in rows:
        if r["case"] == case and r["engine"] == engine:
            return r["value"]
    return None
