"""A tiny GPT: a character-level language model of Python, trained on Python's own standard library.

Token and position embeddings, a stack of ``nn.TransformerEncoderLayer`` (pre-norm, GELU) run
with a causal mask, a final LayerNorm and a linear head over the characters; AdamW with
``clip_grad_norm_`` and a cosine learning-rate schedule; then it writes Python-looking text by
sampling one character at a time. The code is torch's, with ``await loss.backward()``.

    python examples/gpt.py                   # about a minute: loss from 4.5 to about 2.2
    python examples/gpt.py --steps 40 --tiny  # a few seconds (what the test suite runs)
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import time
from typing import Any

import numpy as np

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd.optim import AdamW
from aiograd.optim.lr_scheduler import LambdaLR

#: standard-library modules whose source is the training text (plain Python, present in every install)
SOURCES = ("textwrap.py", "string.py", "fnmatch.py", "glob.py", "shlex.py", "bisect.py", "heapq.py", "queue.py",
           "calendar.py", "difflib.py")


def stdlib_text(max_chars: int) -> str:
    """The first ``max_chars`` characters of SOURCES, read from this Python's standard library."""
    root = os.path.dirname(os.__file__)
    parts = []
    for name in SOURCES:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)[:max_chars]


class GPT(nn.Module):
    """Embeddings, causal transformer blocks, a final norm and a linear head over the vocabulary."""

    def __init__(self, vocab: int, block: int, d_model: int, nhead: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.block = block
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(block), persistent=False)

    def forward(self, idx: ag.Tensor) -> ag.Tensor:
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(ag.arange(T))
        x = self.blocks(x, mask=self.causal[:T, :T], is_causal=True)
        return self.head(self.ln(x))


def multinomial(probs: ag.Tensor, rng: np.random.Generator) -> ag.Tensor:
    """One draw per row of ``probs`` (torch.multinomial(probs, 1)); a numpy stand-in until
    ``ag.multinomial`` lands (it belongs to the shape/construction ops of issue 13)."""
    if hasattr(ag, "multinomial"):
        return ag.multinomial(probs, 1)
    p = probs.numpy().astype(np.float64)
    p /= p.sum(-1, keepdims=True)
    draws = [rng.choice(p.shape[-1], p=row) for row in p]
    return ag.tensor(np.array(draws, dtype=np.int64)[:, None])


def sample(model: GPT, start: ag.Tensor, n: int, temperature: float, rng: np.random.Generator) -> ag.Tensor:
    """``n`` characters after ``start`` (B, T), each drawn from the model's distribution."""
    model.eval()
    idx = start
    with ag.no_grad():
        for _ in range(n):
            logits = model(idx[:, -model.block:])
            probs = F.softmax(logits[:, -1] / temperature, dim=-1)
            idx = ag.cat([idx, multinomial(probs, rng)], dim=1)
    model.train()
    return idx


def batches(data: np.ndarray, block: int, batch: int, rng: np.random.Generator) -> tuple[ag.Tensor, ag.Tensor]:
    starts = rng.integers(0, len(data) - block - 1, batch)
    x = np.stack([data[s: s + block] for s in starts])
    y = np.stack([data[s + 1: s + block + 1] for s in starts])
    return ag.tensor(x), ag.tensor(y)


async def train(args: argparse.Namespace) -> dict[str, Any]:
    """Train, printing the loss as it goes; return the losses and a sample."""
    ag.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    text = stdlib_text(args.chars)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]
    model = GPT(len(chars), args.block, args.d_model, args.nhead, args.layers, args.dropout)
    opt = AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    sched = LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / args.steps)))
    print(f"{len(text)} characters of the standard library, {len(chars)} distinct; "
          f"{sum(p.numel() for p in model.parameters())} parameters")

    def evaluate() -> float:
        model.eval()
        with ag.no_grad():
            xb, yb = batches(val_data, args.block, args.batch, np.random.default_rng(1))
            loss = F.cross_entropy(model(xb).reshape(-1, len(chars)), yb.reshape(-1)).item()
        model.train()
        return float(loss)

    losses = []
    val = [evaluate()]
    t0 = time.perf_counter()
    for step in range(args.steps):
        xb, yb = batches(train_data, args.block, args.batch, rng)
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), yb.reshape(-1))
        opt.zero_grad()
        await loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            print(f"step {step + 1:4d}  loss {np.mean(losses[-args.log_every:]):.3f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {1e3 * (time.perf_counter() - t0) / (step + 1):.0f} ms/step")
    val.append(evaluate())
    print(f"validation loss {val[0]:.3f} -> {val[1]:.3f}")
    prompt = ag.tensor(data[None, split: split + 8])
    out = sample(model, prompt, args.sample, args.temperature, rng)
    text_out = "".join(chars[i] for i in out.numpy()[0])
    print("sample:\n" + text_out)
    return {"losses": losses, "val": val, "sample": text_out}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--tiny", action="store_true", help="a model and text small enough for the test suite")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample", type=int, default=200, help="characters to write after training")
    p.add_argument("--temperature", type=float, default=0.8)
    args = p.parse_args(argv)
    size = dict(chars=20_000, block=32, batch=16, d_model=32, nhead=2, layers=1, dropout=0.0, lr=1e-2,
                log_every=10) if args.tiny else \
        dict(chars=200_000, block=64, batch=16, d_model=64, nhead=4, layers=2, dropout=0.1, lr=3e-3, log_every=50)
    for k, v in size.items():
        setattr(args, k, v)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(train(parse(argv)))


if __name__ == "__main__":
    main()
