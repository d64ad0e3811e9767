"""Forward (graph building) of a long chain of tiny ops: µs per op, aiograd vs HIPS autograd vs torch CPU.

Cases, each on a float64 array of shape (4,) that requires grad: ``x * 1.0001``
repeated, ``x + 0.5`` repeated, ``sin(x)`` repeated, and ``x * w`` with ``w``
another (4,) tensor that requires grad. Only the forward is timed (the graph
is kept alive until the clock stops, so freeing it is not charged):

- aiograd: the chain of ops under grad mode;
- HIPS autograd: ``make_vjp(f)(x)`` (the traced forward; the vjp is not called);
- torch: ``torch.set_num_threads(1)``, the chain of ops.

µs/op = median time / ops. Target (issue 22): aiograd ≤ 1.2× torch (stretch ≤ 1.0×).

A diagnostic row, "aiograd, gc paused", times the same forward with the garbage
collector disabled: the difference is what Python's collections cost the forward in
this process (a long forward leaves objects that trigger full collections, each of
which walks every object of the process: torch's and HIPS's too).

A deterministic column, ``tracked/op`` (aiograd rows), counts the gc-tracked objects
the recorded graph keeps alive per op: ``len(gc.get_objects())`` after a collection,
before and after a further chain of ``TRACKED_OPS`` ops, divided by the ops. These are
the objects every young and full collection walks (graph.py NOTE [Cheap recording]);
torch's graph is C++ and keeps none. tests/test_pointwise_nodes.py pins the same counts.

Standalone: ``python benchmarks/forward.py [--ops 20000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from types import SimpleNamespace
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from benchmarks import _harness as H  # noqa: E402
from benchmarks import _tiny  # noqa: E402

BENCH = "forward"
OPS = 20_000
QUICK_OPS = 2_000
TARGET_RATIO = 1.2
STRETCH_RATIO = 1.0
UNIT = "us/op"
GC_PAUSED = "aiograd, gc paused"
ENGINES = ("aiograd", GC_PAUSED, "HIPS autograd", "torch (1 thread)")

TRACKED_OPS = 2_000  # ops of the chain whose kept objects are counted (the tracked/op column)

#: build(x, w, ops) -> y: ``ops.sin`` is the engine's sin; * and + are operators
Builder = Callable[[Any, Any, SimpleNamespace], Any]


def _repeated(step: Callable[[Any, Any, SimpleNamespace], Any], n: int) -> Builder:
    def build(x: Any, w: Any, ops: SimpleNamespace) -> Any:
        for _ in range(n):
            x = step(x, w, ops)
        return x
    return build


_STEPS: list[tuple[str, Callable[[Any, Any, SimpleNamespace], Any]]] = [
    ("mul", lambda x, w, ops: x * 1.0001),
    ("add", lambda x, w, ops: x + 0.5),
    ("sin", lambda x, w, ops: ops.sin(x)),
    ("mul tensor", lambda x, w, ops: x * w),
]


def cases(n: int) -> list[tuple[str, Builder]]:
    """(case name, builder) for each chain of ``n`` ops."""
    return [(f"{name} x{n}", _repeated(step, n)) for name, step in _STEPS]


def tracked_per_op(build: Builder, ops: int) -> float | None:
    """gc-tracked objects that aiograd's graph keeps alive per op of ``build`` (a chain of ``ops`` ops)."""
    ag = H.import_aiograd()
    if ag is None:
        return None
    x, w = _arrays()
    x, w = ag.tensor(x, requires_grad=True), ag.tensor(w, requires_grad=True)
    sin = SimpleNamespace(sin=ag.sin)
    warm = build(x, w, sin)  # the chain's first op makes the leaves' AccumulateGrad nodes
    gc.collect()
    before = len(gc.get_objects())
    y = build(warm, w, sin)
    gc.collect()
    kept = len(gc.get_objects()) - before
    del y, warm
    return round(kept / ops, 3)


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.full(_tiny.SHAPE, 0.5), np.full(_tiny.SHAPE, 0.9999)


# ---------------------------------------------------------------- per-engine samplers
# The timed function stores the chain's end in ``state`` so that the graph dies
# after the clock stops (when the sampler drops its state).


def aiograd_sampler(build: Builder, gc_paused: bool = False) -> H.Sampler:
    """Timed: the chain of aiograd ops (grad mode on); with ``gc_paused``, the collector disabled meanwhile."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    ops = SimpleNamespace(sin=ag.sin)

    def setup() -> list[Any]:
        x, w = _arrays()
        return [ag.tensor(x, requires_grad=True), ag.tensor(w, requires_grad=True)]

    def timed(state: list[Any]) -> None:
        state.append(build(state[0], state[1], ops))

    def timed_gc_paused(state: list[Any]) -> None:
        gc.disable()
        try:
            state.append(build(state[0], state[1], ops))
        finally:
            gc.enable()

    return H.Sampler(timed_gc_paused if gc_paused else timed, setup)


def hips_sampler(build: Builder) -> H.Sampler:
    """Timed: ``make_vjp(f)(x, w)``, the traced forward (the vjp is not called)."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")
    ops = SimpleNamespace(sin=anp.sin)

    def f(xw: Any) -> Any:
        return build(xw[0], xw[1], ops)

    def setup() -> list[Any]:
        return [list(_arrays())]

    def timed(state: list[Any]) -> None:
        state.append(autograd.make_vjp(f)(state[0]))

    return H.Sampler(timed, setup)


def torch_sampler(build: Builder) -> H.Sampler:
    """Timed: the chain of torch ops on one thread (grad mode on)."""
    torch = H.import_torch_1thread()
    if torch is None:
        raise ModuleNotFoundError("torch")
    ops = SimpleNamespace(sin=torch.sin)

    def setup() -> list[Any]:
        H.import_torch(1)
        x, w = _arrays()
        return [torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)]

    def timed(state: list[Any]) -> None:
        state.append(build(state[0], state[1], ops))

    return H.Sampler(timed, setup)


_FACTORIES: dict[str, tuple[Callable[[Builder], H.Sampler], str]] = {
    "aiograd": (aiograd_sampler, "aiograd"),
    GC_PAUSED: (lambda build: aiograd_sampler(build, gc_paused=True), "aiograd"),
    "HIPS autograd": (hips_sampler, "autograd"),
    "torch (1 thread)": (torch_sampler, "torch"),
}


def measure_case(case: str, build: Builder, ops: int, repeat: int) -> list[dict[str, Any]]:
    """Rows (µs/op, one per engine, sampled round-robin)."""
    rows: dict[str, dict[str, Any]] = {}
    samplers: dict[str, H.Sampler] = {}
    for engine in ENGINES:
        factory, module = _FACTORIES[engine]
        try:
            samplers[engine] = factory(build)
        except ModuleNotFoundError as exc:
            rows[engine] = H.missing(BENCH, case, engine, UNIT, module, exc)
        except Exception as exc:
            rows[engine] = H.failed(BENCH, case, engine, UNIT, exc)
    for engine, result in H.interleaved(samplers, repeat).items():
        if isinstance(result, H.Failure):
            rows[engine] = H.failure_row(BENCH, case, engine, UNIT, result)
        else:
            rows[engine] = H.row(BENCH, case, engine, result.median / ops * 1e6, UNIT, ops=ops,
                                 median_ms=result.median * 1e3, spread=round(result.spread, 3))
    return [rows[e] for e in ENGINES]


def run(repeat: int = 5, quick: bool = False, ops: int | None = None) -> list[dict[str, Any]]:
    """Time every case on every engine, print the table, return the rows."""
    n = ops or (QUICK_OPS if quick else OPS)
    rows: list[dict[str, Any]] = []
    for (case, build), (_, small) in zip(cases(n), cases(TRACKED_OPS)):
        case_rows = measure_case(case, build, n, repeat)
        for r in case_rows:
            if r["engine"] == "aiograd":
                r["tracked/op"] = tracked_per_op(small, TRACKED_OPS)
        rows += case_rows
    H.print_table(f"forward: {n} tiny ops (graph recorded), float64 (4,)", rows,
                  baselines=("torch (1 thread)", "HIPS autograd"), extra_cols=("median_ms", "tracked/op"))
    H.print_targets(_targets(rows))
    return rows


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["engine"] == "aiograd":
            ratio = r.get("ratio_vs", {}).get("torch (1 thread)")
            out.append(H.target_line(f"{r['case']}: aiograd/torch", ratio, "<=", TARGET_RATIO)
                       + f" (stretch <= {STRETCH_RATIO}x)")
    return out


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point: µs/op (median of --repeat) and the aiograd/torch ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=OPS, help=f"ops per chain (default {OPS:,})")
    p.add_argument("--repeat", type=int, default=5, help="timed runs, median reported (min 5)")
    args = p.parse_args(argv)
    run(repeat=args.repeat, ops=args.ops)


if __name__ == "__main__":
    main()
