"""One training step of a 2-layer LSTM word-level language model, aiograd beside torch (one thread).

The model of pytorch/examples' word_language_model (medium-small): an embedding (vocabulary
10,000, 200), ``nn.LSTM(200, 200, num_layers=2)`` over a sequence of 35 steps and batch 20,
a linear decoder 200 -> 10,000 and ``cross_entropy``; plain SGD (lr 1.0). float32, no dropout.
The tokens are random (fixed seed): the cost of a step does not depend on them.

Both engines run :func:`loss` (benchmarks/_training.py): the same weights and batches, the
LSTM as each library's ``nn.LSTM`` module holding the trainer's tensors as its parameters (torch:
``torch.func.functional_call``; aiograd: the tensors placed in the module's parameter table), so
what is timed is the module users call: in aiograd one fused node per layer whose backward runs
through time in numpy (NOTE [Backward through time] in aiograd/ops/nn/recurrent.py). The first
steps' losses must agree to 1e-5 (relative). Target (issue 21): the aiograd step <= 1.5x torch's
with one thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks import _training as T

BENCH = "lstm"
VOCAB, EMBED, HIDDEN, LAYERS, SEQ, BATCH = 10_000, 200, 200, 2, 35, 20
QUICK_BATCH = 4
N_BATCHES = 4
LR = 1.0
TARGET = 1.5

_LSTM_NAMES = [f"{kind}_l{layer}" for layer in range(LAYERS)
               for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def make_model(batch: int) -> T.Model:
    """Initial weights (torch's defaults: embedding and decoder uniform +-0.1, LSTM +-1/sqrt(hidden))
    and ``N_BATCHES`` batches of (input tokens (35, batch), next tokens)."""
    rng = np.random.default_rng(0)

    def uniform(bound: float, *shape: int) -> np.ndarray:
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    k = 1.0 / np.sqrt(HIDDEN)
    w: dict[str, np.ndarray] = {"encoder": uniform(0.1, VOCAB, EMBED)}
    for layer in range(LAYERS):
        size_in = EMBED if layer == 0 else HIDDEN
        w |= {f"weight_ih_l{layer}": uniform(k, 4 * HIDDEN, size_in),
              f"weight_hh_l{layer}": uniform(k, 4 * HIDDEN, HIDDEN), f"bias_ih_l{layer}": uniform(k, 4 * HIDDEN),
              f"bias_hh_l{layer}": uniform(k, 4 * HIDDEN)}
    w |= {"decoder.w": uniform(0.1, VOCAB, HIDDEN), "decoder.b": np.zeros(VOCAB, np.float32)}
    batches = []
    for _ in range(N_BATCHES):
        tokens = rng.integers(0, VOCAB, (SEQ + 1, batch))
        batches.append((tokens[:-1], tokens[1:]))
    return T.Model(w, batches, loss, make_optimizer)


_modules: dict[tuple[str, int], Any] = {}


def _lstm(e: T.Engine, p: dict[str, Any]) -> Any:
    """The engine's ``nn.LSTM`` for this trainer's parameters (made once per trainer)."""
    key = (e.name, id(p))
    m = _modules.get(key)
    if m is None:
        m = e.lib.nn.LSTM(EMBED, HIDDEN, num_layers=LAYERS)
        if e.name == T.AIOGRAD:
            for name in _LSTM_NAMES:
                m._parameters[name] = p[name]
        _modules[key] = m
    return m


def loss(e: T.Engine, p: dict[str, Any], batch: tuple[Any, ...]) -> Any:
    """Mean cross-entropy of the next word, the model written once for both engines."""
    tokens, targets = batch
    F = e.F
    emb = F.embedding(tokens, p["encoder"])
    lstm = _lstm(e, p)
    if e.name == T.AIOGRAD:
        out, _ = lstm(emb)
    else:
        from torch.func import functional_call

        out, _ = functional_call(lstm, {name: p[name] for name in _LSTM_NAMES}, (emb,))
    logits = F.linear(out, p["decoder.w"], p["decoder.b"])
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def make_optimizer(e: T.Engine, params: list[Any]) -> Any:
    """Plain SGD, as the example's training loop."""
    return e.optim.SGD(params, lr=LR)


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time training steps in aiograd and torch; print and return the rows."""
    batch = QUICK_BATCH if quick else BATCH
    case = f"batch {batch}"
    rows = T.phase_rows(BENCH, case, make_model(batch), repeat)
    T.report(f"lstm language model, {LAYERS} layers, hidden {HIDDEN}, sequence {SEQ}, vocabulary {VOCAB}, {case}, "
             "SGD (ms)", rows, TARGET, case)
    return rows


if __name__ == "__main__":
    run()
