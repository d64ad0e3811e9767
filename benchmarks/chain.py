"""Backward of a long chain of tiny ops: µs per node, aiograd vs HIPS autograd vs torch CPU.

Cases: alternating ``x * 1.0001`` / ``x + 0.5`` and repeated ``sin``, on a
float64 array of shape (4,), followed by ``.sum()``. Only the backward is timed
(including the sum's node); µs/node = median backward time / (ops + 1).
Target (a): aiograd ≤ 0.7× HIPS autograd in every case.

Standalone: ``python benchmarks/chain.py [--nodes 10000] [--repeat 5] [--profiled]``
(``--profiled``: one more row, aiograd inside ``ag.profiler.profile()``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import _harness as H  # noqa: E402
from benchmarks import _tiny  # noqa: E402

BENCH = "chain"
NODES = 20_000
QUICK_NODES = 2_000
TARGET_RATIO = 0.7


def run(repeat: int = 5, quick: bool = False, nodes: int | None = None, profiled: bool = False) -> list[dict[str, Any]]:
    """Time both chain cases on every engine, print the table, return the rows.

    ``profiled`` adds a row: aiograd's backward inside ``ag.profiler.profile()``,
    sampled in the same rounds (the cost of recording every node).
    """
    n = nodes or (QUICK_NODES if quick else NODES)
    engines = _tiny.ENGINES + ((_tiny.PROFILED,) if profiled else ())
    rows: list[dict[str, Any]] = []
    for case, build in ((f"mul/add x{n}", _tiny.muladd_chain(n)), (f"sin x{n}", _tiny.sin_chain(n))):
        rows += _tiny.measure_case(BENCH, case, build, n + 1, repeat, engines)
    H.print_table(f"chain: backward of {n} tiny nodes (+ sum), float64 (4,)", rows,
                  baselines=("HIPS autograd", "torch (1 thread)"), extra_cols=("median_ms",))
    H.print_targets(_targets(rows))
    return rows


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["engine"] == "aiograd":
            ratio = r.get("ratio_vs", {}).get("HIPS autograd")
            out.append(H.target_line(f"(a) {r['case']}: aiograd/HIPS", ratio, "<=", TARGET_RATIO))
    return out


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point: µs/node (median of --repeat) and the aiograd/HIPS ratio."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=10_000, help="ops per chain (default 10,000)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs, median reported (min 5)")
    p.add_argument("--profiled", action="store_true", help="add a row: aiograd with a profile active")
    args = p.parse_args(argv)
    run(repeat=args.repeat, nodes=args.nodes, profiled=args.profiled)


if __name__ == "__main__":
    main()
