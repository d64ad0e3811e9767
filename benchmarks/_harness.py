"""Timing helpers, optional-peer imports and result tables shared by every benchmark.

Rules (see README.md): one untimed warm-up run, then ``repeat`` (>= 5) timed runs;
the reported value is the median. Runs are timed with ``time.perf_counter`` and
with the garbage collector enabled (as users run), after a ``gc.collect()`` so
that garbage left by the previous run is not charged to the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence

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


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Limit BLAS to ``n`` threads (threadpoolctl) for the block, aiograd included.

    aiograd sizes the BLAS pools itself when it starts an executor; it honours
    AIOGRAD_NUM_THREADS, set here for the block so it keeps ``n``.
    """
    tpc = optional_import("threadpoolctl")
    if tpc is None:
        raise ImportError("limiting BLAS threads needs threadpoolctl (pip install threadpoolctl)")
    before = os.environ.get("AIOGRAD_NUM_THREADS")
    os.environ["AIOGRAD_NUM_THREADS"] = str(n)
    try:
        with tpc.threadpool_limits(limits=n, user_api="blas"):
            yield
    finally:
        if before is None:
            del os.environ["AIOGRAD_NUM_THREADS"]
        else:
            os.environ["AIOGRAD_NUM_THREADS"] = before


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


# Every variable that sizes BLAS or aiograd threads: removed from the environment of a process
# that measures the defaults (the server and neighbour benchmarks).
THREAD_ENV = ("AIOGRAD_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS",
              "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _repo_importable(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this repository first on PYTHONPATH (a child process imports ``benchmarks`` and this aiograd)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return env


def default_environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without ``THREAD_ENV``, with the repository importable and ``extra`` set."""
    env = _repo_importable({k: v for k, v in os.environ.items() if k not in THREAD_ENV})
    env.update(extra)
    return env


def run_isolated(target: str, *args: Any, timeout: float = 300) -> Any:
    """Call ``module:function(*args)`` in a fresh interpreter and return its JSON result.

    Used for torch with its default thread pool: libgomp's threads and numpy's
    OpenBLAS threads in one process compete for the 2 cores; under load, numpy rows
    measured after a default-threads torch run were seen tens of times slower.
    """
    env = _repo_importable(dict(os.environ))
    code = ("import json, sys; from importlib import import_module; m, f = sys.argv[1].split(':'); "
            "r = getattr(import_module(m), f)(*json.loads(sys.argv[2])); print('\\x1e' + json.dumps(r))")
    proc = subprocess.run([sys.executable, "-c", code, target, json.dumps(args)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    if proc.returncode != 0 or "\x1e" not in proc.stdout:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"isolated run of {target} failed: {last}")
    return json.loads(proc.stdout.rsplit("\x1e", 1)[1])


def isolated_row(bench: str, case: str, engine: str, unit: str, module: str, target: str, *args: Any,
                 value: Callable[[Timing], float] = lambda t: t.median * 1e3) -> dict[str, Any]:
    """Row from ``target(*args)`` -> list of sample seconds, run in its own process."""
    if optional_import(module) is None:
        return missing(bench, case, engine, unit, module)
    try:
        t = Timing(list(run_isolated(target, *args)))
    except Exception as exc:
        return failed(bench, case, engine, unit, exc)
    return row(bench, case, engine, value(t), unit, "own process", median_ms=t.median * 1e3,
               spread=round(t.spread, 3))


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


# ---------------------------------------------------------------- interleaved sampling
# On a shared machine, load comes in bursts; timing engine A's runs, then engine B's,
# lets one burst bias a ratio. interleaved() takes one sample of every engine per round.


class Sampler:
    """One timed run per call: ``setup()`` untimed, gc.collect(), then ``timed(state)`` timed."""

    def __init__(self, timed: Callable[[Any], Any], setup: Callable[[], Any] | None = None,
                 on_close: Callable[[], Any] | None = None) -> None:
        self.timed, self.setup, self.on_close = timed, setup, on_close

    def __call__(self) -> float:
        """Seconds taken by one timed run."""
        state = self.setup() if self.setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        self.timed(state)
        return time.perf_counter() - t0

    def close(self) -> None:
        """Release resources (runs ``on_close`` if given)."""
        if self.on_close is not None:
            self.on_close()


class AsyncSampler(Sampler):
    """Like :class:`Sampler` for ``async`` timed functions, on one event loop kept for all runs.

    ``loop`` is "asyncio"/"uvloop" (a loop owned and closed by the sampler) or a loop
    object shared with other samplers (closed by its creator).
    """

    def __init__(self, timed: Callable[[Any], Awaitable[Any]], setup: Callable[[], Any] | None = None,
                 loop: str | asyncio.AbstractEventLoop = "asyncio") -> None:
        super().__init__(timed, setup)
        self.owns_loop = isinstance(loop, str)
        self.loop = new_loop(loop) if isinstance(loop, str) else loop

    def __call__(self) -> float:
        """Seconds taken by one awaited run."""
        return self.loop.run_until_complete(self._once())

    async def _once(self) -> float:
        state = self.setup() if self.setup is not None else None
        gc.collect()
        t0 = time.perf_counter()
        await self.timed(state)
        return time.perf_counter() - t0

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run another coroutine on this sampler's loop (e.g. a correctness check)."""
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        """Close the event loop if this sampler owns it."""
        if self.owns_loop and not self.loop.is_closed():
            close_loop(self.loop)


@dataclass
class Failure:
    """An engine that raised while being sampled."""

    exc: BaseException
    traceback: str


def interleaved(samplers: dict[str, Sampler], repeat: int = MIN_REPEAT,
                warmup: int = 1) -> dict[str, Timing | Failure]:
    """Round-robin sampling: each round times every engine once; first ``warmup`` rounds dropped."""
    out: dict[str, Timing | Failure] = {name: Timing() for name in samplers}
    live = dict(samplers)
    try:
        for i in range(warmup + _repeat(repeat)):
            for name, sampler in list(live.items()):
                try:
                    elapsed = sampler()
                except Exception as exc:  # reported as that engine's row, the others go on
                    out[name] = Failure(exc, traceback.format_exc(limit=6))
                    del live[name]
                    continue
                if i >= warmup:
                    out[name].samples.append(elapsed)  # type: ignore[union-attr]
    finally:
        for sampler in samplers.values():
            sampler.close()
    return out


def sampled_rows(bench: str, case: str, unit: str, engines: Sequence[tuple[str, str, Callable[[], Sampler]]],
                 repeat: int, value: Callable[[Timing], float] = lambda t: t.median * 1e3) -> list[dict[str, Any]]:
    """Build each engine's sampler, sample them round-robin, return one row per engine (in order).

    A missing package or a failing factory/sample becomes that engine's row; ``value``
    turns a Timing into the reported number (default: median in ms).
    """
    rows: dict[str, dict[str, Any]] = {}
    samplers: dict[str, Sampler] = {}
    for name, module, factory in engines:
        try:
            samplers[name] = factory()
        except ModuleNotFoundError as exc:
            rows[name] = missing(bench, case, name, unit, module, exc)
        except Exception as exc:
            rows[name] = failed(bench, case, name, unit, exc)
    for name, result in interleaved(samplers, repeat).items():
        if isinstance(result, Failure):
            rows[name] = failure_row(bench, case, name, unit, result)
        else:
            rows[name] = row(bench, case, name, value(result), unit, median_ms=result.median * 1e3,
                             spread=round(result.spread, 3))
    return [rows[name] for name, _, _ in engines]


def new_loop(loop: str = "asyncio") -> asyncio.AbstractEventLoop:
    """A new event loop: asyncio's default or uvloop's."""
    if loop == "uvloop":
        uvloop = optional_import("uvloop")
        if uvloop is None:
            raise ImportError("uvloop is not installed")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Shut down async generators and the default executor, then close ``loop``."""
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


def run_async(coro_fn: Callable[[], Coroutine[Any, Any, Any]], loop: str = "asyncio") -> Any:
    """Run ``coro_fn()`` to completion on a fresh loop ("asyncio" or "uvloop")."""
    loop_obj = new_loop(loop)
    try:
        return loop_obj.run_until_complete(coro_fn())
    finally:
        close_loop(loop_obj)


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


def failure_row(bench: str, case: str, engine: str, unit: str, f: Failure) -> dict[str, Any]:
    """Row for an engine that raised inside :func:`interleaved`."""
    return row(bench, case, engine, None, unit, f"error: {type(f.exc).__name__}: {_short(str(f.exc))}",
               traceback=f.traceback)


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
