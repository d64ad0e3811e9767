"""Throughput of many small backward passes: 1,000 concurrent (asyncio.gather) vs sequential.

Each pass runs the forward of a small MLP-ish graph on its own input
(``tanh(x @ W1 + b1) @ W2 + b2``, squared mean; x is 8x32 float32, weights
shared and requiring grad) and ``await loss.backward()``. The timed region
covers all 1,000 passes, forward included. Peers run the same passes
sequentially for reference. Target (d): concurrent >= 0.9x sequential.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from benchmarks import _harness as H

BENCH = "concurrency"
PASSES, QUICK_PASSES = 1_000, 200
BATCH, D_IN, D_HID, D_OUT = 8, 32, 64, 8
TARGET_RATIO = 0.9
UNIT = "passes/s"


def make_data(passes: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(inputs, [W1, b1, W2, b2]) as float32 numpy arrays."""
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((BATCH, D_IN), dtype=np.float32) for _ in range(passes)]
    params = [rng.standard_normal((D_IN, D_HID), dtype=np.float32) / np.float32(np.sqrt(D_IN)),
              np.zeros(D_HID, np.float32),
              rng.standard_normal((D_HID, D_OUT), dtype=np.float32) / np.float32(np.sqrt(D_HID)),
              np.zeros(D_OUT, np.float32)]
    return xs, params


# ---------------------------------------------------------------- aiograd


async def aiograd_pass(x: Any, params: list[Any]) -> None:
    """Forward of the small graph on ``x`` and its awaited backward."""
    w1, b1, w2, b2 = params
    out = (x @ w1 + b1).tanh() @ w2 + b2
    loss = (out * out).mean()
    await loss.backward()


def aiograd_sampler(xs_np: list[np.ndarray], params_np: list[np.ndarray], concurrent: bool,
                    loop: Any) -> H.Sampler:
    """All passes, gathered or one after another, on the shared event loop ``loop``."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    params = [ag.tensor(p, requires_grad=True) for p in params_np]

    def setup() -> list[Any]:
        for p in params:
            p.grad = None
        return [ag.tensor(x, requires_grad=True) for x in xs_np]

    async def timed(xs: list[Any]) -> None:
        if concurrent:
            await asyncio.gather(*(aiograd_pass(x, params) for x in xs))
        else:
            for x in xs:
                await aiograd_pass(x, params)

    return H.AsyncSampler(timed, setup, loop=loop)


def check_aiograd(xs_np: list[np.ndarray], params_np: list[np.ndarray]) -> str:
    """Weight gradients after all passes gathered must equal those after the passes in sequence."""
    ag = H.import_aiograd()
    if ag is None:
        return "aiograd not available"

    async def grads(concurrent: bool) -> list[np.ndarray]:
        params = [ag.tensor(p, requires_grad=True) for p in params_np]
        xs = [ag.tensor(x, requires_grad=True) for x in xs_np]
        if concurrent:
            await asyncio.gather(*(aiograd_pass(x, params) for x in xs))
        else:
            for x in xs:
                await aiograd_pass(x, params)
        return [p.grad.numpy() for p in params] + [x.grad.numpy() for x in xs[:3]]

    try:
        seq = H.run_async(lambda: grads(False))
        conc = H.run_async(lambda: grads(True))
    except Exception as exc:
        return f"cross-check failed: {type(exc).__name__}: {exc}"
    ok = all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(seq, conc))
    return "concurrent gradients equal sequential ones" if ok else "MISMATCH: concurrent != sequential gradients"


# ---------------------------------------------------------------- peers (sequential)


def torch_sampler(xs_np: list[np.ndarray], params_np: list[np.ndarray]) -> H.Sampler:
    """torch (1 thread): the same passes sequentially."""
    torch = H.import_torch_1thread()
    if torch is None:
        raise ModuleNotFoundError("torch")
    w1, b1, w2, b2 = [torch.tensor(p, requires_grad=True) for p in params_np]

    def timed(xs: list[Any]) -> None:
        H.import_torch(1)
        for x in xs:
            out = torch.tanh(x @ w1 + b1) @ w2 + b2
            (out * out).mean().backward()

    return H.Sampler(timed, lambda: [torch.tensor(x, requires_grad=True) for x in xs_np])


def hips_sampler(xs_np: list[np.ndarray], params_np: list[np.ndarray]) -> H.Sampler:
    """HIPS autograd: grad w.r.t. (x, params) of each pass, sequentially."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")

    def loss(args: list[Any]) -> Any:
        x, w1, b1, w2, b2 = args
        out = anp.matmul(anp.tanh(anp.matmul(x, w1) + b1), w2) + b2
        return anp.mean(out * out)

    grad = autograd.grad(loss)

    def timed(_: Any) -> None:
        for x in xs_np:
            grad([x, *params_np])

    return H.Sampler(timed)


# ---------------------------------------------------------------- driver


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Measure concurrent vs sequential throughput; print and return rows."""
    passes = QUICK_PASSES if quick else PASSES
    xs, params = make_data(passes)
    case = f"{passes} passes"
    loop = H.new_loop()
    try:
        rows = H.sampled_rows(BENCH, case, UNIT, [
            ("aiograd, sequential (await each)", "aiograd", lambda: aiograd_sampler(xs, params, False, loop)),
            ("aiograd, concurrent (gather)", "aiograd", lambda: aiograd_sampler(xs, params, True, loop)),
            ("torch (1 thread), sequential", "torch", lambda: torch_sampler(xs, params)),
            ("HIPS autograd, sequential", "autograd", lambda: hips_sampler(xs, params)),
        ], repeat, value=lambda t: passes / t.median)
    finally:
        H.close_loop(loop)
    H.print_table(f"concurrency: {passes} small backward passes (forward included)", rows,
                  baselines=("aiograd, sequential (await each)",), extra_cols=("median_ms", "spread"))
    check = check_aiograd(xs, params)
    print(f"   aiograd correctness: {check}")
    rows.append(H.row(BENCH, "check", "aiograd", None, "", check))
    conc = H.value_of(rows, case, "aiograd, concurrent (gather)")
    seq = H.value_of(rows, case, "aiograd, sequential (await each)")
    r = conc / seq if conc and seq else None
    H.print_targets([H.target_line("(d) concurrent/sequential throughput", r, ">=", TARGET_RATIO)])
    return rows
