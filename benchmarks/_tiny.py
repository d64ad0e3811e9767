"""Tiny-op graphs timed on three engines (aiograd, HIPS autograd, torch CPU): µs/node of backward.

Shared by ``chain`` and ``fanout``. Every engine builds the same graph on a
float64 array of shape ``SHAPE`` (untimed), adds the final ``sum`` reduction
(untimed), and only the backward call is timed:

- aiograd: ``await loss.backward()``
- HIPS autograd: ``vjp, _ = make_vjp(f)(x)`` untimed, then ``vjp(1.0)`` timed
- torch: ``torch.set_num_threads(1)``, ``loss.backward()`` timed
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from benchmarks import _harness as H

SHAPE = (4,)
UNIT = "us/node"
ENGINES = ("aiograd", "HIPS autograd", "torch (1 thread)")

#: build(x, ops) -> y; ``ops`` gives the engine's ``sin``; * and + are operators
Builder = Callable[[Any, SimpleNamespace], Any]


def muladd_chain(n: int) -> Builder:
    """x = x * 1.0001; x = x + 0.5; ... for n nodes in all."""
    def build(x: Any, ops: SimpleNamespace) -> Any:
        for i in range(n):
            x = x * 1.0001 if i % 2 == 0 else x + 0.5
        return x
    return build


def sin_chain(n: int) -> Builder:
    """x = sin(x) n times."""
    def build(x: Any, ops: SimpleNamespace) -> Any:
        for _ in range(n):
            x = ops.sin(x)
        return x
    return build


def fanout(branches: int, depth: int) -> Builder:
    """``branches`` mul/add chains of ``depth`` nodes from one input, summed with + (branches-1 nodes)."""
    def build(x: Any, ops: SimpleNamespace) -> Any:
        total = None
        for b in range(branches):
            y = x
            for d in range(depth):
                y = y * (1.0 + 1e-4 * (b % 7)) if d % 2 == 0 else y + 0.5
            total = y if total is None else total + y
        return total
    return build


def _x0() -> np.ndarray:
    return np.full(SHAPE, 0.5, dtype=np.float64)


# ---------------------------------------------------------------- per-engine timing


def time_aiograd(build: Builder, repeat: int) -> tuple[H.Timing, np.ndarray]:
    """Median-able timings of ``await loss.backward()`` and the gradient of x."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    ops = SimpleNamespace(sin=lambda t: ag.sin(t))

    def setup() -> tuple[Any, Any]:
        x = ag.tensor(_x0(), requires_grad=True)
        return x, build(x, ops).sum()

    async def timed(state: tuple[Any, Any]) -> None:
        await state[1].backward()

    async def main() -> tuple[H.Timing, np.ndarray]:
        timing = await H.ameasure(timed, setup, repeat)
        x, loss = setup()
        await loss.backward()
        return timing, np.asarray(x.grad.numpy())

    return H.run_async(main)


def time_hips(build: Builder, repeat: int) -> tuple[H.Timing, np.ndarray]:
    """Timings of the vjp call of ``make_vjp(f)`` (tracing untimed) and the gradient."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")
    ops = SimpleNamespace(sin=anp.sin)

    def f(x: Any) -> Any:
        return anp.sum(build(x, ops))

    def setup() -> Any:
        vjp, _ = autograd.make_vjp(f)(_x0())
        return vjp

    timing = H.measure(lambda vjp: vjp(1.0), setup, repeat)
    return timing, np.asarray(setup()(1.0))


def time_torch(build: Builder, repeat: int) -> tuple[H.Timing, np.ndarray]:
    """Timings of ``loss.backward()`` on one thread (graph built untimed) and the gradient."""
    torch = H.import_torch_1thread()
    if torch is None:
        raise ModuleNotFoundError("torch")
    ops = SimpleNamespace(sin=torch.sin)

    def setup() -> tuple[Any, Any]:
        x = torch.tensor(_x0(), requires_grad=True)
        return x, build(x, ops).sum()

    timing = H.measure(lambda st: st[1].backward(), setup, repeat)
    x, loss = setup()
    loss.backward()
    return timing, x.grad.numpy().copy()


_TIMERS = {
    "aiograd": (time_aiograd, "aiograd"),
    "HIPS autograd": (time_hips, "autograd"),
    "torch (1 thread)": (time_torch, "torch"),
}


def _available(module: str) -> bool:
    if module == "aiograd":
        return H.import_aiograd() is not None
    return H.optional_import(module) is not None


def measure_case(bench: str, case: str, build: Builder, nodes: int, repeat: int) -> list[dict[str, Any]]:
    """Rows (µs/node, one per engine) for one graph; gradients cross-checked against a peer."""
    rows: list[dict[str, Any]] = []
    grads: dict[str, np.ndarray] = {}
    for engine in ENGINES:
        timer, module = _TIMERS[engine]
        if not _available(module):
            rows.append(H.missing(bench, case, engine, UNIT, module))
            continue
        try:
            timing, grad = timer(build, repeat)
        except Exception as exc:
            rows.append(H.failed(bench, case, engine, UNIT, exc))
            continue
        grads[engine] = grad
        rows.append(H.row(bench, case, engine, timing.median / nodes * 1e6, UNIT,
                          nodes=nodes, median_ms=timing.median * 1e3, spread=round(timing.spread, 3)))
    _check_grads(rows, grads)
    return rows


def _check_grads(rows: list[dict[str, Any]], grads: dict[str, np.ndarray]) -> None:
    """Note (never hide) an aiograd gradient that disagrees with a peer's."""
    ref = grads.get("HIPS autograd", grads.get("torch (1 thread)"))
    got = grads.get("aiograd")
    if ref is None or got is None:
        return
    if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-6, atol=1e-9):
        for r in rows:
            if r["engine"] == "aiograd":
                r["note"] = (r["note"] + " GRADIENT MISMATCH vs peer").strip()
                r["grad_mismatch"] = {"aiograd": got.tolist(), "peer": ref.tolist()}
