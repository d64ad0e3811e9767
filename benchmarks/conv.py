"""conv2d forward + backward: input 32x3x32x32, 16 filters 3x3, padding 1, float32.

Engines: aiograd (``aiograd.nn.functional.conv2d``), HIPS autograd (im2col
written with ``autograd.numpy`` ops), torch CPU (1 thread and default
threads) and a hand-written numpy im2col forward+backward (the floor).
Loss = ``out.sum()``; gradients for input, weight and bias. The timed region
is forward + backward; aiograd's gradients are checked against the floor's.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from benchmarks import _harness as H

BENCH = "conv"
N, C, HW, F, K = 32, 3, 32, 16, 3
QUICK_N = 8
FLOOR = "numpy im2col floor"
UNIT = "ms"


def make_data(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, weight, bias) as float32 arrays."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, C, HW, HW), dtype=np.float32)
    w = rng.standard_normal((F, C, K, K), dtype=np.float32) / np.float32(np.sqrt(C * K * K))
    return x, w, rng.standard_normal(F, dtype=np.float32)


# ---------------------------------------------------------------- numpy floor


def im2col(xp: np.ndarray, h: int, w: int) -> np.ndarray:
    """Patches of a padded input: (N, C*K*K, h*w), rows ordered (c, ki, kj) like weight.reshape."""
    n, c = xp.shape[:2]
    cols = np.empty((n, c, K * K, h, w), xp.dtype)
    for i in range(K):
        for j in range(K):
            cols[:, :, i * K + j] = xp[:, :, i:i + h, j:j + w]
    return cols.reshape(n, c * K * K, h * w)


def np_conv_forward_backward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """out = conv2d(x, w, b, padding=1); grads of out.sum() for x, w, b."""
    n, _, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = im2col(xp, h, wd)
    w2 = w.reshape(F, -1)
    out = w2 @ cols
    out += b[:, None]
    dout = np.ones_like(out)
    gb = dout.sum(axis=(0, 2))
    gw = np.einsum("nfp,nkp->fk", dout, cols).reshape(w.shape)
    dcols = (w2.T @ dout).reshape(n, C, K * K, h, wd)
    dxp = np.zeros_like(xp)
    for i in range(K):
        for j in range(K):
            dxp[:, :, i:i + h, j:j + wd] += dcols[:, :, i * K + j]
    return out.reshape(n, F, h, wd), dxp[:, :, 1:-1, 1:-1], gw, gb


# ---------------------------------------------------------------- engines (each returns a step callable)


def numpy_engine(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> Callable[[], Any]:
    """The floor: im2col forward and backward by hand."""
    return lambda: np_conv_forward_backward(x, w, b)


def hips_engine(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> Callable[[], Any]:
    """HIPS autograd: im2col from slices + stack + matmul, grad w.r.t. (x, w, b)."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")
    n, _, h, wd = x.shape

    def loss(args: list[Any]) -> Any:
        xx, ww, bb = args
        xp = anp.pad(xx, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="constant")
        cols = anp.stack([xp[:, :, i:i + h, j:j + wd] for i in range(K) for j in range(K)], axis=2)
        out = anp.matmul(anp.reshape(ww, (F, -1)), anp.reshape(cols, (n, -1, h * wd)))
        return anp.sum(out + anp.reshape(bb, (F, 1)))

    grad = autograd.grad(loss)
    return lambda: grad([x, w, b])


def torch_engine(x: np.ndarray, w: np.ndarray, b: np.ndarray, threads: int | None) -> Callable[[], Any]:
    """torch.nn.functional.conv2d with ``threads`` intra-op threads (None: default)."""
    torch = H.import_torch(threads)
    if torch is None:
        raise ModuleNotFoundError("torch")

    def step() -> None:
        H.import_torch(threads)
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        torch.nn.functional.conv2d(tx, tw, tb, padding=1).sum().backward()

    return step


def aiograd_engine(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> Callable[[], Any]:
    """aiograd.nn.functional.conv2d forward and ``await out.sum().backward()``."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    import aiograd.nn.functional as AF

    async def step() -> tuple[Any, Any, Any]:
        tx, tw, tb = (ag.tensor(a, requires_grad=True) for a in (x, w, b))
        await AF.conv2d(tx, tw, tb, padding=1).sum().backward()
        return tx, tw, tb

    return step


ENGINES: list[tuple[str, str, Callable]] = [  # sampled round-robin in this process
    (FLOOR, "numpy", numpy_engine),
    ("aiograd", "aiograd", aiograd_engine),
    ("HIPS autograd", "autograd", hips_engine),
    ("torch (1 thread)", "torch", lambda x, w, b: torch_engine(x, w, b, 1)),
]
TORCH_DEFAULT = "torch (default threads)"  # measured in its own process (see H.run_isolated)


def torch_default_samples(n: int, repeat: int) -> list[float]:
    """Samples (s) of torch conv2d forward+backward with default threads, for H.run_isolated."""
    step = torch_engine(*make_data(n), None)
    return H.measure(lambda _: step(), None, repeat).samples


# ---------------------------------------------------------------- driver


def sampler(step: Callable[[], Any], loop: Any) -> H.Sampler:
    """A sampler timing ``step()`` (awaited on ``loop`` when it is a coroutine function)."""
    if inspect.iscoroutinefunction(step):
        async def timed(_: Any) -> None:
            await step()
        return H.AsyncSampler(timed, loop=loop)
    return H.Sampler(lambda _: step())


def _engine_sampler(factory: Callable, x: np.ndarray, w: np.ndarray, b: np.ndarray, loop: Any) -> H.Sampler:
    return sampler(factory(x, w, b), loop)


def check_aiograd(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> str:
    """Compare aiograd's conv2d output sum and gradients with the floor's."""
    ag = H.import_aiograd()
    if ag is None:
        return "aiograd not available"
    try:
        tx, tw, tb = H.run_async(aiograd_engine(x, w, b))
        _, gx, gw, gb = np_conv_forward_backward(x, w, b)
        ok = all(np.allclose(t.grad.numpy(), r, rtol=1e-4, atol=1e-4) for t, r in ((tx, gx), (tw, gw), (tb, gb)))
        return "gradients match the numpy floor" if ok else "GRADIENT MISMATCH vs the numpy floor"
    except Exception as exc:
        return f"cross-check failed: {type(exc).__name__}: {exc}"


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time conv2d forward+backward on every engine; print and return rows."""
    n = QUICK_N if quick else N
    x, w, b = make_data(n)
    case = f"{n}x{C}x{HW}x{HW} * {F}x{C}x{K}x{K}"
    loop = H.new_loop()
    try:
        rows = H.sampled_rows(BENCH, case, UNIT, [
            (name, module, functools.partial(_engine_sampler, factory, x, w, b, loop))
            for name, module, factory in ENGINES], repeat)
    finally:
        H.close_loop(loop)
    rows.append(H.isolated_row(BENCH, case, TORCH_DEFAULT, UNIT, "torch", "benchmarks.conv:torch_default_samples",
                               n, repeat))
    H.print_table("conv2d forward + backward (padding 1, float32)", rows,
                  baselines=(FLOOR, "torch (1 thread)"), extra_cols=("spread",))
    check = check_aiograd(x, w, b)
    print(f"   aiograd correctness: {check}")
    return rows + [H.row(BENCH, "check", "aiograd", None, "", check)]
