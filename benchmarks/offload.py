"""Does offloading pay for itself? Training steps with ``set_offload("auto")`` vs ``"never"``.

Each step is timed with the default policy (``auto``: a kernel goes to its device's
executor thread when that buys responsiveness or parallelism, NOTE [Offload policy] in
aiograd/autograd/executors.py) and with every kernel inline on the loop (``never``),
sampled round-robin on one event loop. Reported per case: wall-time median (ms), the
process CPU time median (all threads: a hand-off to a device thread costs CPU on both
sides), the mean number of nodes sent to a device thread per step (``handoffs``) and
the ratio to ``never``. The loop runs nothing but the step, so ``auto`` hands off only
for parallelism (NOTE [Nobody waiting] in aiograd/_aio.py). Cases:

- mlp: the training step of benchmarks/mlp.py (784-512-512-10, batch 256, Adam);
- cnn: the training step of benchmarks/cnn.py (LeNet-like on digits, batch 128, Adam);
- conv: the conv2d forward + backward of benchmarks/conv.py (32x3x32x32, 16 3x3 filters;
  one 2.6 ms kernel, over the slice, so ``auto`` pays one hand-off for responsiveness);
- transformer: a 2-layer character transformer step built from today's ops (d_model 64,
  4 heads, context 64, batch 16, vocabulary 65, causal attention through an additive
  mask, GELU MLP, pre-layer-norm, AdamW), forward + backward + update.

``--stretch X`` samples a third row, ``auto`` with the policy's ``stretch`` at X (a kernel
predicted up to X time slices runs inline instead of paying a hand-off; NOTE [Offload
policy] (a)), interleaved with the other two.

Target (issue 12): ``auto`` no slower than ``never`` on these steps (ratio <= 1.05).
The loop-lag side of the policy (responsiveness) is benchmarks/loop_lag.py.
"""

from __future__ import annotations

import math
import time
from typing import Any, Awaitable, Callable

import numpy as np

from benchmarks import _harness as H

BENCH = "offload"
UNIT = "ms"
TARGET_RATIO = 1.05
MODES = ("auto", "never")

# the transformer-like model
VOCAB, D_MODEL, HEADS, CONTEXT, BATCH, LAYERS = 65, 64, 4, 64, 16, 2
QUICK_CONTEXT, QUICK_BATCH = 32, 8


class ModeSampler(H.AsyncSampler):
    """Times ``step()`` under one offload mode; keeps the process CPU time of each run too."""

    def __init__(self, step: Callable[[], Awaitable[Any]], mode: str, loop: Any, stretch: float = 1.0) -> None:
        super().__init__(self._timed, self._setup, loop=loop)
        self.step = step
        self.mode = mode
        self.stretch = stretch
        self.cpu: list[float] = []
        self.handoffs: list[int] = []  # nodes sent to a device thread, per step

    def _setup(self) -> None:
        ag = H.import_aiograd()
        assert ag is not None
        ag.set_offload(self.mode)
        from aiograd.autograd import executors

        executors.policy.stretch = self.stretch  # NOTE [Offload policy] (a); 1.0 is the default

    async def _timed(self, _: Any) -> None:
        from aiograd.autograd import executors

        sent = sum(rt.handoffs for rt in list(executors._RUNTIMES.values()))
        c0 = time.process_time()
        await self.step()
        self.cpu.append(time.process_time() - c0)
        self.handoffs.append(sum(rt.handoffs for rt in list(executors._RUNTIMES.values())) - sent)


# ---------------------------------------------------------------- steps


def mlp_step(quick: bool) -> Callable[[], Awaitable[Any]]:
    """The mlp benchmark's aiograd training step."""
    from benchmarks import mlp

    x, y = mlp.make_data(mlp.QUICK_BATCH if quick else mlp.BATCH)
    return mlp.aiograd_engine(x, y)[0]  # type: ignore[no-any-return]


def conv_step(quick: bool) -> Callable[[], Awaitable[Any]]:
    """The conv benchmark's aiograd conv2d forward + backward."""
    from benchmarks import conv

    return conv.aiograd_engine(*conv.make_data(conv.QUICK_N if quick else conv.N))  # type: ignore[no-any-return]


def transformer_step(quick: bool) -> Callable[[], Awaitable[Any]]:
    """One AdamW step of a small pre-norm character transformer (see the module docstring)."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    import aiograd.nn as nn
    import aiograd.nn.functional as F
    import aiograd.optim as optim

    ctx, batch = (QUICK_CONTEXT, QUICK_BATCH) if quick else (CONTEXT, BATCH)
    head = D_MODEL // HEADS
    ag.manual_seed(0)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
            self.qkv, self.proj = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
            self.fc, self.out = nn.Linear(D_MODEL, 4 * D_MODEL), nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x: Any, mask: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, HEADS, head).permute(2, 0, 3, 1, 4).unbind(0)
            att = F.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(head)) + mask, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, D_MODEL))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D_MODEL), nn.Embedding(ctx, D_MODEL)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln, self.head = nn.LayerNorm(D_MODEL), nn.Linear(D_MODEL, VOCAB)

        def forward(self, idx: Any, mask: Any) -> Any:
            x = self.tok(idx) + self.pos(ag.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln(x))

    model = Model()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    idx = ag.tensor(rng.integers(0, VOCAB, (batch, ctx)))
    target = ag.tensor(rng.integers(0, VOCAB, (batch * ctx,)))
    mask = ag.tensor(np.triu(np.full((ctx, ctx), -np.inf, np.float32), k=1))

    async def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(idx, mask).reshape(batch * ctx, VOCAB), target)
        await loss.backward()
        opt.step()

    return step


def cnn_step(quick: bool) -> Callable[[], Awaitable[Any]]:
    """The cnn benchmark's training step (LeNet-like on digits, Adam), aiograd's copy."""
    from benchmarks import _training as T
    from benchmarks import cnn

    trainer = T.Trainer(T.aiograd_engine(), cnn.make_model(cnn.QUICK_BATCH if quick else cnn.BATCH))
    batches = iter(range(1 << 30))

    async def step() -> None:
        await trainer._astep(trainer.batches[next(batches) % len(trainer.batches)])

    return step


CASES: list[tuple[str, Callable[[bool], Callable[[], Awaitable[Any]]]]] = [
    ("mlp step", mlp_step),
    ("cnn step", cnn_step),
    ("conv forward+backward", conv_step),
    ("transformer step", transformer_step),
]


# ---------------------------------------------------------------- driver


def _case_rows(case: str, make: Callable[[bool], Callable[[], Awaitable[Any]]], repeat: int,
               quick: bool, stretch: float | None = None) -> list[dict[str, Any]]:
    loop = H.new_loop()
    ag = H.import_aiograd()
    before = ag.get_offload() if ag is not None else "auto"
    try:
        step = make(quick)
        samplers = {f"aiograd (offload {m})": ModeSampler(step, m, loop) for m in MODES}
        if stretch is not None:  # the policy's stretch knob, sampled beside the default
            samplers[f"aiograd (offload auto, stretch {stretch:g})"] = ModeSampler(step, "auto", loop, stretch)
        results = H.interleaved(samplers, repeat)  # type: ignore[arg-type]
    finally:
        if ag is not None:
            ag.set_offload(before)
            from aiograd.autograd import executors

            executors.policy.stretch = 1.0
        H.close_loop(loop)
    rows = []
    for name, result in results.items():
        if isinstance(result, H.Failure):
            rows.append(H.failure_row(BENCH, case, name, UNIT, result))
            continue
        cpu = samplers[name].cpu[1:]  # the first run is the untimed warm-up
        handoffs = samplers[name].handoffs[1:]
        rows.append(H.row(BENCH, case, name, result.median * 1e3, UNIT, cpu_ms=float(np.median(cpu)) * 1e3,
                          spread=round(result.spread, 3),
                          handoffs=round(float(np.mean(handoffs)), 2) if handoffs else 0.0))
    return rows


def run(repeat: int = 5, quick: bool = False, stretch: float | None = None) -> list[dict[str, Any]]:
    """Time every case under both modes (and ``auto`` with ``stretch``, if given); print the table and targets."""
    rows: list[dict[str, Any]] = []
    for case, make in CASES:
        rows += H.guarded(BENCH, case, "aiograd", UNIT, lambda: _case_rows(case, make, repeat, quick, stretch))
    H.print_table("offload: training steps, auto vs never (wall ms; cpu_ms: process CPU, all threads)", rows,
                  baselines=("aiograd (offload never)",), extra_cols=("cpu_ms", "spread", "handoffs"))
    H.print_targets(_targets(rows))
    return rows


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["engine"] == "aiograd (offload auto)":
            ratio = r.get("ratio_vs", {}).get("aiograd (offload never)")
            out.append(H.target_line(f"{r['case']}: auto/never", ratio, "<=", TARGET_RATIO))
    return out


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="timed runs per mode, median reported (min 5)")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--stretch", type=float, default=None,
                   help="also sample auto with the policy's stretch at this value (NOTE [Offload policy] (a))")
    args = p.parse_args()
    run(repeat=args.repeat, quick=args.quick, stretch=args.stretch)
