"""Instructions per op of recording or backward of a tiny-op chain, for callgrind.

Wall-clock runs of ``chain`` and ``forward`` move by 30% on a shared machine; the
instruction counts of one phase do not. Run under callgrind with collection only
inside ``itertools.starmap`` (which wraps the measured phase and nothing else)::

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind \\
        --collect-atstart=no --toggle-collect=starmap_next \\
        --callgrind-out-file=cg.out python benchmarks/callgrind_chain.py sin 3000 back

and divide the ``totals`` line of ``cg.out`` by the number of ops. ``kind`` is ``sin``,
``muladd`` (``h * 1.0001 + 0.5``: two ops per step) or ``hw`` (``h * w``, ``w`` a leaf
that requires grad); ``phase`` is ``record`` or ``back``. A first pass runs before the
measured one, so lazy imports and caches are not counted, and a full collection right
before it, so the collector's counts start at zero: otherwise where its collections fall
in the measured phase depends on what the import left, and moves a count by a few per
cent between two trees. benchmarks/README.md has the figures.
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools

import numpy as np

import aiograd as ag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("sin", "muladd", "hw"))
    parser.add_argument("steps", type=int)
    parser.add_argument("phase", choices=("record", "back"))
    args = parser.parse_args()
    x = ag.tensor(np.linspace(0.1, 0.9, 4), requires_grad=True)
    w = ag.tensor(np.full(4, 1.0001), requires_grad=True)

    def chain() -> ag.Tensor:
        h = x
        for _ in range(args.steps):
            h = h.sin() if args.kind == "sin" else (h * 1.0001 + 0.5 if args.kind == "muladd" else h * w)
        return h.sum()

    chain().backward()  # warm-up
    gc.collect()
    if args.phase == "record":
        collections.deque(itertools.starmap(chain, [()]), 1)  # keeps the graph: its release is not recording
    else:
        loss = chain()
        collections.deque(itertools.starmap(loss.backward, [()]), 0)


if __name__ == "__main__":
    main()
