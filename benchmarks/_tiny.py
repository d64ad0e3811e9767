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
PROFILED = "aiograd (profiling on)"  # opt-in row: the same backward inside ag.profiler.profile()

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


# ---------------------------------------------------------------- per-engine samplers
# Each engine factory returns (sampler, grad): the sampler times one backward per
# call; grad() runs one more pass and returns d(sum)/dx, for the cross-check.


def aiograd_engine(build: Builder, profiled: bool = False) -> tuple[H.Sampler, Callable[[], np.ndarray]]:
    """Timed: ``await loss.backward()`` (graph and sum built untimed), on one event loop;
    ``profiled``: inside ``with ag.profiler.profile()``."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    ops = SimpleNamespace(sin=lambda t: ag.sin(t))

    def setup() -> tuple[Any, Any]:
        x = ag.tensor(_x0(), requires_grad=True)
        return x, build(x, ops).sum()

    async def timed(state: tuple[Any, Any]) -> None:
        if profiled:
            with ag.profiler.profile():
                await state[1].backward()
        else:
            await state[1].backward()

    sampler = H.AsyncSampler(timed, setup)

    def grad() -> np.ndarray:
        x, loss = setup()
        H.run_async(lambda: loss.backward())
        return np.asarray(x.grad.numpy())

    return sampler, grad


def hips_engine(build: Builder) -> tuple[H.Sampler, Callable[[], np.ndarray]]:
    """Timed: the vjp call of ``make_vjp(f)`` (tracing untimed)."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")
    ops = SimpleNamespace(sin=anp.sin)

    def f(x: Any) -> Any:
        return anp.sum(build(x, ops))

    def setup() -> Any:
        return autograd.make_vjp(f)(_x0())[0]

    return H.Sampler(lambda vjp: vjp(1.0), setup), (lambda: np.asarray(setup()(1.0)))


def torch_engine(build: Builder) -> tuple[H.Sampler, Callable[[], np.ndarray]]:
    """Timed: ``loss.backward()`` on one thread (graph built untimed)."""
    torch = H.import_torch_1thread()
    if torch is None:
        raise ModuleNotFoundError("torch")
    ops = SimpleNamespace(sin=torch.sin)

    def setup() -> tuple[Any, Any]:
        H.import_torch(1)
        x = torch.tensor(_x0(), requires_grad=True)
        return x, build(x, ops).sum()

    def grad() -> np.ndarray:
        x, loss = setup()
        loss.backward()
        return x.grad.numpy().copy()

    return H.Sampler(lambda st: st[1].backward(), setup), grad


_ENGINES = {
    "aiograd": (aiograd_engine, "aiograd"),
    PROFILED: (lambda build: aiograd_engine(build, profiled=True), "aiograd"),
    "HIPS autograd": (hips_engine, "autograd"),
    "torch (1 thread)": (torch_engine, "torch"),
}


def measure_case(bench: str, case: str, build: Builder, nodes: int, repeat: int,
                 engines: tuple[str, ...] = ENGINES) -> list[dict[str, Any]]:
    """Rows (µs/node, one per engine, sampled round-robin); gradients cross-checked against a peer."""
    rows: dict[str, dict[str, Any]] = {}
    samplers: dict[str, H.Sampler] = {}
    grads: dict[str, Callable[[], np.ndarray]] = {}
    for engine in engines:
        factory, module = _ENGINES[engine]
        try:
            samplers[engine], grads[engine] = factory(build)
        except ModuleNotFoundError as exc:
            rows[engine] = H.missing(bench, case, engine, UNIT, module, exc)
        except Exception as exc:
            rows[engine] = H.failed(bench, case, engine, UNIT, exc)
    for engine, result in H.interleaved(samplers, repeat).items():
        if isinstance(result, H.Failure):
            rows[engine] = H.failure_row(bench, case, engine, UNIT, result)
        else:
            rows[engine] = H.row(bench, case, engine, result.median / nodes * 1e6, UNIT, nodes=nodes,
                                 median_ms=result.median * 1e3, spread=round(result.spread, 3))
    out = [rows[e] for e in engines]
    _check_grads(out, grads)
    return out


def _check_grads(rows: list[dict[str, Any]], grads: dict[str, Callable[[], np.ndarray]]) -> None:
    """Note (never hide) an aiograd gradient that disagrees with a peer's."""
    row = next(r for r in rows if r["engine"] == "aiograd")
    peer = next((e for e in ("HIPS autograd", "torch (1 thread)") if e in grads), None)
    if row["value"] is None or "aiograd" not in grads or peer is None:
        return
    try:
        got, ref = grads["aiograd"](), grads[peer]()
    except Exception as exc:
        row["note"] = f"gradient check failed: {type(exc).__name__}: {exc}"
        return
    if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-6, atol=1e-9):
        row["note"] = (row["note"] + f" GRADIENT MISMATCH vs {peer}").strip()
        row["grad_mismatch"] = {"aiograd": got.tolist(), "peer": ref.tolist()}
