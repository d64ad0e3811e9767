"""Cost of one blocking ``backward_sync()`` against one ``await loss.backward()`` on a tiny graph.

The graph is ``((x * 2).sin() + x).sum()`` on a float64 (4,) leaf (4 nodes): the
fixed cost of a call dominates. Each timed run makes ``CALLS`` calls on as many
fresh graphs (built untimed); µs per call = run time / CALLS. The two ways are
sampled round-robin in one process; the awaited calls run on one event loop
kept for all runs (no loop started per call). torch's ``loss.backward()``
(1 thread) on the same graph is shown for reference.
Target (f): ``backward_sync`` ≤ 1.2× ``await backward()``.

Standalone: ``python benchmarks/sync_call.py [--repeat 30]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from benchmarks import _harness as H  # noqa: E402

BENCH = "sync_call"
UNIT = "us/call"
CALLS = 100
QUICK_CALLS = 50
MIN_RUNS = 30  # many short runs: a median that bursts of load on a shared machine barely move
TARGET_RATIO = 1.2
SYNC, AWAITED, TORCH = "aiograd backward_sync()", "aiograd await backward()", "torch (1 thread)"


def _graphs(lib: Any, n: int) -> list[Any]:
    out = []
    for _ in range(n):
        x = lib.tensor(np.array([0.5, 1.0, 1.5, 2.0]), requires_grad=True)
        out.append(((x * 2).sin() + x).sum())
    return out


def _sampler(way: str, calls: int) -> H.Sampler:
    """Time ``calls`` backward calls, made ``way``, on as many fresh graphs (built untimed)."""
    lib = H.import_torch_1thread() if way == TORCH else H.import_aiograd()
    if lib is None:
        raise ModuleNotFoundError("torch" if way == TORCH else "aiograd")

    def setup() -> list[Any]:
        return _graphs(lib, calls)

    if way == AWAITED:
        async def awaited(losses: list[Any]) -> None:
            for loss in losses:
                await loss.backward()

        return H.AsyncSampler(awaited, setup)
    if way == SYNC:
        def blocking(losses: list[Any]) -> None:
            for loss in losses:
                loss.backward_sync()
    else:
        def blocking(losses: list[Any]) -> None:
            for loss in losses:
                loss.backward()

    return H.Sampler(blocking, setup)


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time both ways of calling backward (and torch's), print the table, return the rows."""
    calls = QUICK_CALLS if quick else CALLS
    case = f"4-node graph x{calls}"
    rows = H.sampled_rows(
        BENCH, case, UNIT,
        [(way, "torch" if way == TORCH else "aiograd", lambda way=way: _sampler(way, calls))  # type: ignore[misc]
         for way in (SYNC, AWAITED, TORCH)],
        max(repeat, MIN_RUNS), value=lambda t: t.median / calls * 1e6,
    )
    H.print_table(f"sync_call: one backward call on a tiny graph ({calls} calls per run)", rows,
                  baselines=(AWAITED,), extra_cols=("median_ms",))
    sync, awaited = H.value_of(rows, case, SYNC), H.value_of(rows, case, AWAITED)
    ratio = sync / awaited if sync is not None and awaited else None
    H.print_targets([H.target_line("(f) backward_sync / await backward()", ratio, "<=", TARGET_RATIO)])
    return rows


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=MIN_RUNS, help=f"timed runs, median reported (min {MIN_RUNS})")
    args = p.parse_args(argv)
    run(repeat=args.repeat)


if __name__ == "__main__":
    main()
