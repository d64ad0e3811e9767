"""Backward of a wide graph: 1,000 branches of depth 10 from one input, summed (µs per node).

Each branch is 10 alternating mul/add nodes on the shared float64 (4,) input;
the branches are added together (999 add nodes) and reduced by ``.sum()``.
Only the backward is timed. Target (a): aiograd ≤ 0.7× HIPS autograd.
"""

from __future__ import annotations

from typing import Any

from benchmarks import _harness as H
from benchmarks import _tiny

BENCH = "fanout"
BRANCHES, DEPTH = 1_000, 10
QUICK_BRANCHES = 100
TARGET_RATIO = 0.7


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time the fan-out graph on every engine, print the table, return the rows."""
    branches = QUICK_BRANCHES if quick else BRANCHES
    nodes = branches * DEPTH + (branches - 1) + 1
    case = f"{branches}x{DEPTH}"
    rows = _tiny.measure_case(BENCH, case, _tiny.fanout(branches, DEPTH), nodes, repeat)
    H.print_table(f"fanout: {branches} branches x depth {DEPTH} from one input, summed ({nodes} nodes)",
                  rows, baselines=("HIPS autograd", "torch (1 thread)"), extra_cols=("median_ms",))
    ratio = H.value_of(rows, case, "aiograd")
    hips = H.value_of(rows, case, "HIPS autograd")
    r = ratio / hips if ratio is not None and hips else None
    H.print_targets([H.target_line("(a) fanout: aiograd/HIPS", r, "<=", TARGET_RATIO)])
    return rows
