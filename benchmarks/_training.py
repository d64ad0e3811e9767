"""Training steps of one model timed phase by phase in aiograd and torch: shared by ``transformer`` and ``cnn``.

A benchmark module describes its model once, as a function of an engine's namespace
(:class:`Engine`: the tensor constructor, ``nn.functional`` and ``optim`` of aiograd or
torch), so both engines run the same composition of ops from the same initial weights
on the same batches. This module runs the steps:

- one step = forward (the model and its loss), backward (``await loss.backward()`` /
  ``loss.backward()``) and optimizer (``opt.step()`` then ``opt.zero_grad()``), each
  phase timed with ``time.perf_counter``; the step's time is the sum of its phases, and
  its ``cpu_ms`` the CPU time of the whole process over the step (``time.process_time``:
  device threads included), a figure that load from other processes disturbs less;
- the engines are sampled round-robin (one step of each per round, ``gc.collect()``
  before each, untimed), first rounds dropped as warm-up, medians of the rest;
- torch runs with one intra-op thread and numpy's BLAS is limited to one thread
  (threadpoolctl) for the whole run, so both engines have one core's worth of kernels;
- before timing, a few steps of fresh copies of both engines must give the same
  losses (relative ``LOSS_RTOL``): a faster step that trains another model is no result.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from benchmarks import _harness as H

AIOGRAD, TORCH = "aiograd", "torch (1 thread)"
PHASES = ("forward", "backward", "optimizer", "step")
WARMUP_ROUNDS = 2
CHECK_STEPS = 4
LOSS_RTOL = 1e-5


@dataclass
class Engine:
    """What a model description needs of a library: building tensors, its functional API and optimizers."""

    name: str
    lib: Any  # aiograd or torch
    F: Any  # its nn.functional
    optim: Any  # its optim

    def param(self, array: np.ndarray) -> Any:
        """A leaf that requires grad, holding a copy of ``array``."""
        return self.lib.tensor(array, requires_grad=True)

    def const(self, array: np.ndarray) -> Any:
        """A tensor holding ``array`` (inputs, targets, masks)."""
        return self.lib.tensor(array)


def aiograd_engine() -> Engine:
    """aiograd's namespace (ModuleNotFoundError when aiograd does not import)."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    import aiograd.nn.functional as F
    import aiograd.optim as optim

    return Engine(AIOGRAD, ag, F, optim)


def torch_engine() -> Engine:
    """torch's namespace at one intra-op thread (ModuleNotFoundError when torch is absent)."""
    torch = H.import_torch(1)
    if torch is None:
        raise ModuleNotFoundError("torch")
    return Engine(TORCH, torch, torch.nn.functional, torch.optim)


ENGINES: tuple[tuple[str, str, Callable[[], Engine]], ...] = (
    (AIOGRAD, "aiograd", aiograd_engine),
    (TORCH, "torch", torch_engine),
)

#: loss(engine, params, batch) -> a scalar loss tensor; ``batch`` holds the engine's tensors
LossFn = Callable[[Engine, dict[str, Any], tuple[Any, ...]], Any]
#: make_optimizer(engine, list of params) -> an optimizer
OptFn = Callable[[Engine, list[Any]], Any]


@dataclass
class Model:
    """A model as the benchmarks describe it: numpy initial weights, batches, loss and optimizer."""

    weights: dict[str, np.ndarray]
    batches: list[tuple[np.ndarray, ...]]
    loss: LossFn
    make_optimizer: OptFn


@dataclass
class Trainer:
    """One engine training one copy of a model."""

    engine: Engine
    model: Model
    loop: asyncio.AbstractEventLoop | None = None
    params: dict[str, Any] = field(init=False)
    batches: list[tuple[Any, ...]] = field(init=False)
    opt: Any = field(init=False)

    def __post_init__(self) -> None:
        self.params = {k: self.engine.param(v) for k, v in self.model.weights.items()}
        self.batches = [tuple(self.engine.const(a) for a in b) for b in self.model.batches]
        self.opt = self.model.make_optimizer(self.engine, list(self.params.values()))

    def step(self, i: int) -> tuple[float, tuple[float, ...]]:
        """Train on batch ``i`` (modulo the number of batches): the loss and the seconds of
        (forward, backward, optimizer, the step's CPU time in all the process's threads)."""
        batch = self.batches[i % len(self.batches)]
        if self.loop is not None:
            return self.loop.run_until_complete(self._astep(batch))
        if self.engine.name == TORCH:
            H.import_torch(1)
        c0, t0 = time.process_time(), time.perf_counter()
        loss = self.model.loss(self.engine, self.params, batch)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        self._update()
        t3, c3 = time.perf_counter(), time.process_time()
        return float(loss.item()), (t1 - t0, t2 - t1, t3 - t2, c3 - c0)

    async def _astep(self, batch: tuple[Any, ...]) -> tuple[float, tuple[float, ...]]:
        c0, t0 = time.process_time(), time.perf_counter()
        loss = self.model.loss(self.engine, self.params, batch)
        t1 = time.perf_counter()
        await loss.backward()
        t2 = time.perf_counter()
        self._update()
        t3, c3 = time.perf_counter(), time.process_time()
        return float(loss.item()), (t1 - t0, t2 - t1, t3 - t2, c3 - c0)

    def _update(self) -> None:
        self.opt.step()
        self.opt.zero_grad()


def _trainers(model: Model, loop: asyncio.AbstractEventLoop) -> tuple[dict[str, Trainer], dict[str, str]]:
    """A fresh trainer per engine that is available; the others' reasons."""
    trainers, absent = {}, {}
    for name, module, factory in ENGINES:
        try:
            engine = factory()
        except ModuleNotFoundError:
            absent[name] = f"{module} not installed"
            continue
        trainers[name] = Trainer(engine, model, loop if name == AIOGRAD else None)
    return trainers, absent


def check_losses(model: Model, loop: asyncio.AbstractEventLoop, steps: int = CHECK_STEPS) -> str:
    """Train fresh copies for ``steps`` steps on the same batches; compare the losses with torch's."""
    trainers, absent = _trainers(model, loop)
    if len(trainers) < 2:
        return "losses not compared: " + "; ".join(absent.values())
    losses = {name: [t.step(i)[0] for i in range(steps)] for name, t in trainers.items()}
    a, t = np.array(losses[AIOGRAD]), np.array(losses[TORCH])
    worst = float(np.max(np.abs(a - t) / np.abs(t)))
    verdict = "agree" if worst <= LOSS_RTOL else "DISAGREE"
    shown = ", ".join(f"{x:.6f}/{y:.6f}" for x, y in zip(a, t))
    return f"losses of {steps} steps {verdict} with torch's (worst relative difference {worst:.1e}): {shown}"


def phase_rows(bench: str, case: str, model: Model, repeat: int) -> list[dict[str, Any]]:
    """Time training steps of every engine round-robin; one row per (phase, engine), value = median ms."""
    loop = H.new_loop()
    try:
        with blas_one_thread():
            check = check_losses(model, loop)
            trainers, absent = _trainers(model, loop)
            samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in trainers}
            failed: dict[str, BaseException] = {}
            for i in range(WARMUP_ROUNDS + max(H.MIN_REPEAT, repeat)):
                for name, trainer in trainers.items():
                    if name in failed:
                        continue
                    gc.collect()
                    try:
                        _, seconds = trainer.step(i)
                    except Exception as exc:  # that engine's rows report it, the other goes on
                        failed[name] = exc
                        continue
                    if i >= WARMUP_ROUNDS:
                        samples[name].append(seconds)
    finally:
        H.close_loop(loop)
    rows = []
    for phase_index, phase in enumerate(PHASES):
        for name, module, _ in ENGINES:
            label = f"{case} {phase}"
            if name in absent:
                rows.append(H.missing(bench, label, name, "ms", module))
            elif name in failed:
                rows.append(H.failed(bench, label, name, "ms", failed[name]))
            else:
                values = [sum(s[:3]) if phase == "step" else s[phase_index] for s in samples[name]]
                med = statistics.median(values)
                spread = (max(values) - min(values)) / med if med else 0.0
                cpu = statistics.median(s[3] for s in samples[name]) * 1e3 if phase == "step" else None
                rows.append(H.row(bench, label, name, med * 1e3, "ms", spread=round(spread, 3), cpu_ms=cpu))
    rows.append(H.row(bench, "check", AIOGRAD, None, "", check))
    return rows


@contextlib.contextmanager
def blas_one_thread() -> Iterator[None]:
    """numpy's BLAS at one thread while the block runs, aiograd's executor jobs included (AIOGRAD_NUM_THREADS:
    no adaptive widening, NOTE [Adaptive BLAS threads]); nothing when threadpoolctl is absent."""
    if H.optional_import("threadpoolctl") is None:
        yield
        return
    with H.blas_threads(1):
        yield


def report(title: str, rows: list[dict[str, Any]], target: float, case: str) -> None:
    """Print the phase table, the loss check and the step target's verdict."""
    timed = [r for r in rows if r["case"] != "check"]
    H.print_table(title, timed, baselines=(TORCH,), extra_cols=("spread", "cpu_ms"))
    for r in rows:
        if r["case"] == "check":
            print(f"   {r['note']}")
    if H.optional_import("threadpoolctl") is None:
        print("   note: threadpoolctl is not installed: numpy's BLAS ran at its own thread count")
    a, t = H.value_of(rows, f"{case} step", AIOGRAD), H.value_of(rows, f"{case} step", TORCH)
    ratio = a / t if a is not None and t else None
    H.print_targets([H.target_line(f"{title.split(',')[0]} step: aiograd/torch (1 thread)", ratio, "<=", target)])
