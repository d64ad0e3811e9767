"""aiograd's showcase: train on digits while other backward passes share the event loop.

    python -m aiograd.demo [--epochs 15] [--side-passes 3] [--out demo-output] [--seed 0]

An MLP (64-128-10) learns scikit-learn's bundled 8x8 digits (1797 images,
no download; split 75/25 by a seeded permutation) with ``await
loss.backward()``, under a progress bar. On the same event loop, at the same
time:

* ``--side-passes`` other tasks run backward passes of their own, one after
  another, over a deeper graph (a chain of matrix products), as other
  requests of a server would;
* a ticker sleeps 1 ms at a time and records how late it wakes up: the
  loop's lag, which every other coroutine would suffer. Its p50, p99 and
  max are printed at the end.

Then one training step on the whole training set, while each side task runs
one more pass, is recorded by the profiler: a Chrome trace (open it in
Perfetto) and a timeline picture (one row a thread, one color a task, the
window of the training step) are written into ``--out``. The step's matrix
products, and the side passes', take longer than a time slice, so the offload
policy runs them on the device thread; the small nodes take turns on the
loop's thread. For comparison with the lag, one side pass is run as a
blocking backward (inline, never yielding) and the time it held the loop is
printed. The final test accuracy is printed (above 95%). Without a terminal
(a log), the progress bar is left out and the epoch lines are plain lines.
Needs the ``demo`` extra (scikit-learn, and ``viz`` for the bar and the
picture): ``pip install 'aiograd[demo]'``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

import aiograd as ag
from aiograd import nn, optim
from aiograd._optional import require
from aiograd.nn import functional as F

TICK = 0.001  # the ticker's sleep, seconds


def load_digits_split(seed: int = 0, test_fraction: float = 0.25) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits scaled to [0, 1] as float32 (N, 64), labels int64, split by a seeded permutation."""
    load_digits = require("sklearn.datasets", "the digits demo", extra="demo").load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = perm[:n_test], perm[n_test:]
    return x[train], y[train], x[test], y[test]


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with ag.no_grad():
        logits = model(ag.from_numpy(x))
    model.train()
    return float((logits.numpy().argmax(axis=1) == y).mean())


async def train_step(model: nn.Module, opt: optim.Optimizer, x: np.ndarray, y: np.ndarray) -> float:
    """One step on one mini-batch; returns its loss."""
    loss = F.cross_entropy(model(ag.from_numpy(x)), ag.from_numpy(y))
    opt.zero_grad()
    await loss.backward()
    opt.step()
    return loss.item()


async def train(
    model: nn.Module, opt: optim.Optimizer, data: tuple[np.ndarray, ...], epochs: int, batch_size: int = 32,
    seed: int = 0, log: Any = print, on_step: Callable[[], None] | None = None,
) -> list[float]:
    """Mini-batch training; returns the test accuracy after each epoch.

    ``log`` gets one line per epoch (None: silent); ``on_step`` is called
    after every step (a progress bar's update). Each step ends with
    ``await asyncio.sleep(0)``: a small model's backward finishes inside one
    time slice without yielding, so without it a training loop would hold
    the event loop from the first step to the last.
    """
    xtr, ytr, xte, yte = data
    rng = np.random.default_rng(seed)
    accs = []
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        order = rng.permutation(len(ytr))
        total = 0.0
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            total += await train_step(model, opt, xtr[idx], ytr[idx]) * len(idx)
            if on_step is not None:
                on_step()
            await asyncio.sleep(0)  # let the loop's other tasks run between steps
        acc = accuracy(model, xte, yte)
        accs.append(acc)
        if log is not None:
            log(f"epoch {epoch:2d}  loss {total / len(ytr):.4f}  test accuracy {acc:.2%}  "
                f"({time.perf_counter() - t0:.2f} s)")
    return accs


# ----- what else runs on the loop ----------------------------------------------------


SIDE_DEPTH, SIDE_SIZE = 8, 320  # the side graph: its matrix products take a few ms, over a time slice


def side_graph(seed: int, depth: int = SIDE_DEPTH, size: int = SIDE_SIZE) -> tuple[ag.Tensor, list[ag.Tensor]]:
    """A chain of ``depth`` matrix products (``size`` x ``size``) with tanh, heavier than a training step's
    graph: its output and its weights. Built once; the side tasks differentiate it again and again.
    Each matrix product's backward takes longer than a time slice (1 ms), so the offload policy
    sends it to the device thread; the tanh nodes run on the loop's thread."""
    rng = np.random.default_rng(seed)
    h = ag.tensor(rng.standard_normal((size, size), dtype=np.float32))
    weights = []
    for _ in range(depth):
        w = rng.standard_normal((size, size), dtype=np.float32) / np.float32(np.sqrt(size))
        weights.append(ag.tensor(w, requires_grad=True))
        h = (h @ weights[-1]).tanh()
    return h.sum(), weights


class SidePasses:
    """``n`` tasks running backward passes over one graph (kept with ``retain_graph``), one pass after another.

    Every task walks the same retained graph: concurrent passes over one
    graph each keep their own state, so they never disturb one another (nor
    the training). ``done[i]`` counts the passes task ``i`` completed. They
    can be paused between passes, so that a profile can start when they do.
    """

    def __init__(self, n: int, seed: int) -> None:
        self.out, self.weights = side_graph(seed)  # its forward runs here, once: a forward pass does not yield
        self.done = [0] * n
        self._go = [asyncio.Event() for _ in range(n)]  # one gate a task
        for go in self._go:
            go.set()
        self._once = False  # each task closes its gate after its next pass
        self._paused = 0
        self._stopped = False
        self._tasks = [asyncio.create_task(self._run(i)) for i in range(n)]

    async def _run(self, i: int) -> None:
        go = self._go[i]
        while not self._stopped:
            if not go.is_set():
                self._paused += 1
                await go.wait()
                self._paused -= 1
                continue
            await ag.grad(self.out, self.weights, retain_graph=True)
            self.done[i] += 1
            if self._once:
                go.clear()
            await asyncio.sleep(0)

    async def pause(self) -> None:
        """Return once every task has finished its pass and waits."""
        for go in self._go:
            go.clear()
        while self._paused < len(self._tasks):
            await asyncio.sleep(TICK)

    def resume(self) -> None:
        self._once = False
        for go in self._go:
            go.set()

    def one_pass_each(self) -> None:
        """Let each paused task run one more pass, then wait again (a profile's passes: one a task)."""
        self._once = True
        for go in self._go:
            go.set()

    async def until_each_completes(self, passes: int) -> None:
        """Return once every task has completed ``passes`` more passes."""
        target = [d + passes for d in self.done]
        while any(d < t for d, t in zip(self.done, target)):
            await asyncio.sleep(TICK)

    async def stop(self) -> None:
        self._stopped = True
        for go in self._go:
            go.set()
        await asyncio.gather(*self._tasks)


async def ticker(stop: asyncio.Event, lags: list[float]) -> None:
    """Sleep TICK in a loop and record how late each wake-up is (seconds)."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(TICK)
        lags.append(time.perf_counter() - t0 - TICK)


async def idle_lags(seconds: float) -> list[float]:
    """The ticker's lags on a loop with nothing else to do: the machine's own noise."""
    stop = asyncio.Event()
    lags: list[float] = []
    task = asyncio.create_task(ticker(stop, lags))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    return lags


async def blocking_lag(loss: ag.Tensor, inputs: list[ag.Tensor], repeat: int = 3) -> float:
    """How long a blocking backward of ``loss`` holds the loop (seconds, median of ``repeat``):
    the same engine made to run as a synchronous backward does (``loss.backward()`` in a torch
    script): every node inline on the loop's thread (``ag.set_offload("never")``) and a time
    slice longer than the pass, so it never yields. A 1 ms ticker beside it wakes up once, at
    the end: its largest lag is the figure."""
    before = ag.get_offload(), ag.get_time_slice()
    ag.set_offload("never")
    ag.set_time_slice(60.0)
    held = []
    try:
        for _ in range(repeat):
            stop = asyncio.Event()
            lags: list[float] = []
            tick = asyncio.create_task(ticker(stop, lags))
            await asyncio.sleep(2 * TICK)  # the ticker is asleep, waiting for its next tick
            await ag.grad(loss, inputs, retain_graph=True)
            stop.set()
            await tick
            held.append(max(lags))
    finally:
        ag.set_offload(before[0])
        ag.set_time_slice(before[1])
    return float(np.median(held))


class LagStats(NamedTuple):
    ticks: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def lag_stats(lags: list[float]) -> LagStats:
    ms = np.asarray(lags) * 1e3
    return LagStats(len(ms), float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), float(ms.max()))


# ----- the showcase ----------------------------------------------------------------------


def task_labels(prof: ag.profiler.profile) -> dict[int, str]:
    """Legend names of the profile's passes: the training step (the pass with the loss's node)
    and the side tasks, numbered in the order their passes started (one pass a task)."""
    labels: dict[int, str] = {}
    step = {ev.graph_task for ev in prof.events if ev.name == "NllLossBackward0"}
    for ev in prof.events:  # in order of start
        if ev.graph_task not in labels:
            n = sum(1 for v in labels.values() if v.startswith("side"))
            labels[ev.graph_task] = "training step" if ev.graph_task in step else f"side task {n + 1}"
    return dict(sorted(labels.items(), key=lambda kv: (kv[1] != "training step", kv[1])))


def write_profile(prof: ag.profiler.profile, out_dir: Path) -> tuple[Path, Path]:
    """The profile as ``trace.json`` (Chrome trace) and ``timeline.png`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    trace, picture = out_dir / "trace.json", out_dir / "timeline.png"
    prof.export_chrome_trace(trace)
    labels = task_labels(prof)
    fig = prof.timeline(labels=labels)
    ax = fig.axes[0]
    # The window of the training step, with as much again on either side.
    t0 = prof.start if prof.start is not None else 0.0
    step = [ev for ev in prof.events if labels.get(ev.graph_task) == "training step"]
    first, last = (min(ev.start for ev in step) - t0) * 1e3, (max(ev.end for ev in step) - t0) * 1e3
    lo, hi = ax.get_xlim()
    ax.set_xlim(max(lo, 2 * first - last), min(hi, 2 * last - first))
    ax.set_title(f"one training step beside {len(labels) - 1} side tasks' backward passes, on one event loop",
                 fontsize=10)
    fig.savefig(picture, dpi=80)
    return trace, picture


async def main(epochs: int = 15, seed: int = 0, side: int = 3, out_dir: str | Path = "demo-output") -> float:
    """Run the showcase; returns the final test accuracy."""
    tqdm = require("tqdm", "the demo's progress bar", extra="demo").tqdm
    require("matplotlib", "the demo's timeline picture", extra="demo")
    ag.manual_seed(seed)
    data = load_digits_split(seed)
    xtr, ytr, xte, yte = data
    print(f"digits: {len(ytr)} train / {len(yte)} test images, 8x8, 10 classes")
    model = mlp()
    print(model)
    opt = optim.Adam(model.parameters(), lr=3e-3)

    idle = lag_stats(await idle_lags(0.5))
    print(f"event-loop lag of the idle loop, for reference: p50 {idle.p50_ms:.2f} ms, p99 {idle.p99_ms:.2f} ms")
    stop = asyncio.Event()
    lags: list[float] = []
    tick = asyncio.create_task(ticker(stop, lags))
    others = SidePasses(side, seed + 1)
    print(f"on the same event loop: {side} tasks running backward passes of their own "
          f"({SIDE_DEPTH} matmul+tanh layers, {SIDE_SIZE}x{SIDE_SIZE}), and a {TICK * 1e3:.0f} ms ticker measuring the loop's lag")
    try:
        t0 = time.perf_counter()
        steps_per_epoch = -(-len(ytr) // 32)
        # The bar redraws its line with carriage returns: in a log (stderr not a terminal) it is
        # left out, and the epoch lines are plain lines.
        with tqdm(total=epochs * steps_per_epoch, desc="training", unit="step", disable=not sys.stderr.isatty()) as bar:
            accs = await train(model, opt, data, epochs, seed=seed, log=bar.write, on_step=bar.update)
        seconds = time.perf_counter() - t0
        stats = lag_stats(lags)
        side_count = sum(others.done)

        # One more step, profiled, among the side passes. A profile records the passes started
        # while it is active: the side tasks pause between two passes, each starts one pass
        # inside the profile, and it stays open until each has completed it. The profiled step
        # is a step on the whole training set: its matrix products take longer than a time
        # slice, so the offload policy sends them to the device thread (those of a 32-image
        # step take microseconds and rightly stay on the loop's thread).
        await others.pause()
        with ag.profiler.profile() as prof:
            others.one_pass_each()
            await asyncio.sleep(0)  # the side tasks begin their passes
            await train_step(model, opt, xtr, ytr)
            await others.until_each_completes(1)
        stop.set()
        await tick
        held = await blocking_lag(others.out, others.weights)
    finally:
        stop.set()
        await others.stop()
        await tick

    final = accuracy(model, xte, yte)
    print(f"final test accuracy {final:.2%} after {epochs} epochs in {seconds:.1f} s "
          f"(best epoch {max(accs):.2%}), while {side_count} side backward passes ran on the same loop")
    print(f"event-loop lag during training and side passes ({stats.ticks} ticks of {TICK * 1e3:.0f} ms): "
          f"p50 {stats.p50_ms:.2f} ms, p99 {stats.p99_ms:.2f} ms, max {stats.max_ms:.2f} ms")
    step_ms = seconds * 1e3 / (epochs * steps_per_epoch)
    print(f"  ({side + 1} busy tasks take turns on one thread: each side pass yields every "
          f"{ag.get_time_slice() * 1e3:.0f} ms time slice, the training loop after each {step_ms:.1f} ms step, "
          f"so the ticker waits for about one turn of each)")
    print(f"  for comparison, one side pass run as a blocking backward (inline, never yielding, as "
          f"loss.backward() in a torch script) held the loop {held * 1e3:.1f} ms: the ticker's lag "
          f"for each such pass, every other task waiting as long")
    trace, picture = write_profile(prof, Path(out_dir))
    print(f"one training step on the whole training set, profiled beside the side passes "
          f"({len(prof.events)} node runs):")
    print(f"  Chrome trace:     {trace}  (open it in https://ui.perfetto.dev or chrome://tracing)")
    print(f"  timeline picture: {picture}")
    return final


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--side-passes", type=int, default=3, help="concurrent backward tasks beside training")
    parser.add_argument("--out", default="demo-output", help="where trace.json and timeline.png go")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(main(args.epochs, args.seed, args.side_passes, args.out))
