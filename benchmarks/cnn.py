"""One training step of a LeNet-like CNN on scikit-learn's digits (8x8), aiograd beside torch (one thread).

The model: ``conv2d`` 1 -> 6 channels (5x5, padding 2), ReLU, ``max_pool2d`` 2; ``conv2d``
6 -> 16 (5x5, padding 2), ReLU, ``max_pool2d`` 2; flattened (16 x 2 x 2) through ``linear``
64 -> 120 -> 84 -> 10 with ReLU between; ``cross_entropy`` on the digit. Batch 128 of the
1,797 images (pixels / 16), Adam (lr 1e-3), float32; the batches are fixed random draws.

Both engines run :func:`loss` on their own tensors (benchmarks/_training.py): the same ops,
weights and batches, and the first steps' losses must agree to 1e-5 (relative). Rows:
forward, backward, optimizer (step + zero_grad) and the whole step, median ms.
Target (issue 12): the aiograd step <= 1.3x torch's with one thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks import _harness as H
from benchmarks import _training as T

BENCH = "cnn"
BATCH, QUICK_BATCH = 128, 32
N_BATCHES = 8
LR = 1e-3
TARGET = 1.3
#: (name, shape) of each weight, in the order of the layers
SHAPES = (("c1.w", (6, 1, 5, 5)), ("c1.b", (6,)), ("c2.w", (16, 6, 5, 5)), ("c2.b", (16,)),
          ("f1.w", (120, 64)), ("f1.b", (120,)), ("f2.w", (84, 120)), ("f2.b", (84,)),
          ("f3.w", (10, 84)), ("f3.b", (10,)))


def make_model(batch: int) -> T.Model:
    """Initial weights (uniform in +-1/sqrt(fan_in), as torch's layers start) and the batches."""
    datasets = H.optional_import("sklearn.datasets")
    if datasets is None:
        raise ModuleNotFoundError("scikit-learn (pip install scikit-learn) for its digits data set")
    digits = datasets.load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    rng = np.random.default_rng(0)
    weights = {}
    for name, shape in SHAPES:
        fan_in = int(np.prod(shape[1:])) if name.endswith(".w") else int(np.prod(dict(SHAPES)[name[:-1] + "w"][1:]))
        bound = 1.0 / np.sqrt(fan_in)
        weights[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    picks = [rng.choice(len(labels), batch, replace=False) for _ in range(N_BATCHES)]
    return T.Model(weights, [(images[i], labels[i]) for i in picks], loss, make_optimizer)


def loss(e: T.Engine, p: dict[str, Any], batch: tuple[Any, ...]) -> Any:
    """Mean cross-entropy of the digit, the model written once for both engines."""
    x, y = batch
    F = e.F
    h = F.max_pool2d(F.relu(F.conv2d(x, p["c1.w"], p["c1.b"], padding=2)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["c2.w"], p["c2.b"], padding=2)), 2)
    h = h.reshape(h.shape[0], -1)
    h = F.relu(F.linear(h, p["f1.w"], p["f1.b"]))
    h = F.relu(F.linear(h, p["f2.w"], p["f2.b"]))
    return F.cross_entropy(F.linear(h, p["f3.w"], p["f3.b"]), y)


def make_optimizer(e: T.Engine, params: list[Any]) -> Any:
    """Adam, the same settings in both engines."""
    return e.optim.Adam(params, lr=LR)


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time training steps in aiograd and torch; print and return the rows."""
    batch = QUICK_BATCH if quick else BATCH
    case = f"batch {batch}"
    try:
        model = make_model(batch)
    except ModuleNotFoundError as exc:
        print(f"\n== cnn: skipped: {exc}")
        return [H.row(BENCH, case, T.AIOGRAD, None, "ms", f"skipped: {exc}")]
    rows = T.phase_rows(BENCH, case, model, repeat)
    T.report(f"cnn (LeNet-like) on digits 8x8, {case}, Adam (ms)", rows, TARGET, case)
    return rows


if __name__ == "__main__":
    run()
