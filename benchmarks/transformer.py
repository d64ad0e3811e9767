"""One training step of a 2-layer character-level transformer, aiograd beside torch (one thread).

The model (GPT-style, pre-norm): token and position embeddings (d_model 64), two blocks of
causal self-attention (4 heads, context 64: ``linear`` to q, k, v; ``q @ k^T`` scaled,
``masked_fill`` of the future, ``softmax``, ``@ v``, ``linear``) and an MLP (``linear``
64 -> 256, exact ``gelu``, ``linear`` 256 -> 64), each after a ``layer_norm`` and added to
the residual stream; a final ``layer_norm``, a linear head and ``cross_entropy`` over the
characters. Batch 16, AdamW (lr 1e-3, weight decay 0.01), float32. The characters are the
source text of a few standard-library modules; the batches are fixed random windows.

Both engines run :func:`loss` on their own tensors (benchmarks/_training.py): the same ops,
weights and batches, and the first steps' losses must agree to 1e-5 (relative). Rows:
forward, backward, optimizer (step + zero_grad) and the whole step, median ms.
Target (issue 12): the aiograd step <= 1.3x torch's with one thread.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from benchmarks import _training as T

BENCH = "transformer"
LAYERS, D_MODEL, HEADS, CONTEXT, BATCH, HIDDEN = 2, 64, 4, 64, 16, 256
QUICK_BATCH = 4
N_BATCHES = 8
LR, WEIGHT_DECAY = 1e-3, 0.01
TARGET = 1.3


def corpus() -> str:
    """Characters to model: the source of a few standard-library modules (always at hand)."""
    import string
    import textwrap

    return inspect.getsource(textwrap) + inspect.getsource(string)


def make_model(batch: int) -> T.Model:
    """Initial weights (normal, std 0.02; layer norms at 1 and 0) and ``N_BATCHES`` batches of (input, target)."""
    text = corpus()
    vocab = sorted(set(text))
    codes = np.array([vocab.index(c) for c in text], np.int64)
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def zeros(n: int) -> np.ndarray:
        return np.zeros(n, np.float32)

    w: dict[str, np.ndarray] = {"wte": normal(len(vocab), D_MODEL), "wpe": normal(CONTEXT, D_MODEL)}
    for i in range(LAYERS):
        w |= {f"{i}.ln1.w": np.ones(D_MODEL, np.float32), f"{i}.ln1.b": zeros(D_MODEL),
              f"{i}.qkv.w": normal(3 * D_MODEL, D_MODEL), f"{i}.qkv.b": zeros(3 * D_MODEL),
              f"{i}.proj.w": normal(D_MODEL, D_MODEL), f"{i}.proj.b": zeros(D_MODEL),
              f"{i}.ln2.w": np.ones(D_MODEL, np.float32), f"{i}.ln2.b": zeros(D_MODEL),
              f"{i}.fc1.w": normal(HIDDEN, D_MODEL), f"{i}.fc1.b": zeros(HIDDEN),
              f"{i}.fc2.w": normal(D_MODEL, HIDDEN), f"{i}.fc2.b": zeros(D_MODEL)}
    w |= {"lnf.w": np.ones(D_MODEL, np.float32), "lnf.b": zeros(D_MODEL),
          "head.w": normal(len(vocab), D_MODEL), "head.b": zeros(len(vocab))}
    mask = np.triu(np.ones((CONTEXT, CONTEXT), bool), 1)
    batches: list[tuple[np.ndarray, ...]] = []
    for _ in range(N_BATCHES):
        starts = rng.integers(0, len(codes) - CONTEXT - 1, batch)
        x = np.stack([codes[s:s + CONTEXT] for s in starts])
        y = np.stack([codes[s + 1:s + CONTEXT + 1] for s in starts])
        batches.append((x, y, mask))
    return T.Model(w, batches, loss, make_optimizer)


def loss(e: T.Engine, p: dict[str, Any], batch: tuple[Any, ...]) -> Any:
    """Mean cross-entropy of the next character, the model written once for both engines."""
    idx, targets, mask = batch
    F = e.F
    b, t = idx.shape
    hd = D_MODEL // HEADS
    x = F.embedding(idx, p["wte"]) + p["wpe"]
    for i in range(LAYERS):
        h = F.layer_norm(x, (D_MODEL,), p[f"{i}.ln1.w"], p[f"{i}.ln1.b"])
        q, k, v = (z.reshape(b, t, HEADS, hd).transpose(1, 2)
                   for z in F.linear(h, p[f"{i}.qkv.w"], p[f"{i}.qkv.b"]).split(D_MODEL, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, D_MODEL)
        x = x + F.linear(y, p[f"{i}.proj.w"], p[f"{i}.proj.b"])
        h = F.layer_norm(x, (D_MODEL,), p[f"{i}.ln2.w"], p[f"{i}.ln2.b"])
        x = x + F.linear(F.gelu(F.linear(h, p[f"{i}.fc1.w"], p[f"{i}.fc1.b"])), p[f"{i}.fc2.w"], p[f"{i}.fc2.b"])
    x = F.layer_norm(x, (D_MODEL,), p["lnf.w"], p["lnf.b"])
    logits = F.linear(x, p["head.w"], p["head.b"])
    return F.cross_entropy(logits.reshape(b * t, -1), targets.reshape(b * t))


def make_optimizer(e: T.Engine, params: list[Any]) -> Any:
    """AdamW, the same settings in both engines."""
    return e.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time training steps in aiograd and torch; print and return the rows."""
    batch = QUICK_BATCH if quick else BATCH
    case = f"batch {batch}"
    rows = T.phase_rows(BENCH, case, make_model(batch), repeat)
    T.report(f"transformer, {LAYERS} layers, d_model {D_MODEL}, {HEADS} heads, context {CONTEXT}, "
             f"{case}, AdamW, exact GELU (ms)", rows, TARGET, case)
    return rows


if __name__ == "__main__":
    run()
