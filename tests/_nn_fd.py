"""Gradient checks for the nn tests: ``ag.gradcheck`` when the library ships it,
else a small central-difference checker (float64, every input element)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import aiograd as ag


def _outputs(fn: Callable[..., Any], inputs: Sequence[Any]) -> list[Any]:
    out = fn(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


async def _fd_gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], eps: float, atol: float, rtol: float) -> bool:
    diff = [x for x in inputs if isinstance(x, ag.Tensor) and x.requires_grad]
    outs = _outputs(fn, inputs)
    rng = np.random.default_rng(0)
    # one random projection per output: checks v^T J against finite differences of v^T f
    vs = [rng.standard_normal(o.shape) for o in outs]

    def scalar() -> float:
        with ag.no_grad():
            os_ = _outputs(fn, inputs)
        return float(sum((o.detach().numpy() * v).sum() for o, v in zip(os_, vs)))

    roots = [o for o in outs if o.requires_grad]
    grads_out = [ag.tensor(v, dtype=o.dtype) for o, v in zip(outs, vs) if o.requires_grad]
    analytic = await ag.grad(roots, diff, grads_out, allow_unused=True)
    for x, a in zip(diff, analytic):
        data = x._data
        num = np.zeros(data.shape)
        for i in np.ndindex(data.shape):
            old = data[i]
            data[i] = old + eps
            fp = scalar()
            data[i] = old - eps
            fm = scalar()
            data[i] = old
            num[i] = (fp - fm) / (2 * eps)
        an = np.zeros(data.shape) if a is None else a.detach().numpy()
        if not np.allclose(an, num, atol=atol, rtol=rtol):
            raise AssertionError(
                f"gradient mismatch for input of shape {data.shape}:\nanalytic={an}\nnumeric={num}"
            )
    return True


async def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> bool:
    """Numeric vs analytic first derivatives (float64 inputs)."""
    lib = getattr(ag, "gradcheck", None)
    if lib is not None:
        return bool(await lib(fn, tuple(inputs), eps=eps, atol=atol, rtol=rtol))
    return await _fd_gradcheck(fn, inputs, eps, atol, rtol)


async def gradgradcheck(fn: Callable[..., Any], inputs: Sequence[Any], eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> bool:
    """Numeric vs analytic second derivatives: gradcheck of ``x -> grad(v . fn(x), x, create_graph=True)``."""
    lib = getattr(ag, "gradgradcheck", None)
    if lib is not None:
        return bool(await lib(fn, tuple(inputs), eps=eps, atol=atol, rtol=rtol))
    diff = [x for x in inputs if isinstance(x, ag.Tensor) and x.requires_grad]
    outs = _outputs(fn, inputs)
    rng = np.random.default_rng(1)
    vs = [ag.tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]

    async def first(*xs: Any) -> Any:
        os_ = _outputs(fn, xs)
        return await ag.grad(os_, [x for x in xs if isinstance(x, ag.Tensor) and x.requires_grad], vs,
                             create_graph=True, allow_unused=True, materialize_grads=True)

    # the checker needs a sync function: evaluate ``first`` once per call via a cached await
    g1 = await first(*inputs)
    ok_roots = [g for g in g1 if g is not None and g.requires_grad]
    if not ok_roots:
        raise AssertionError("first derivative does not require grad: double backward is not recorded")
    ws = [rng.standard_normal(g.shape) for g in g1]
    analytic = await ag.grad(
        [g for g in g1 if g.requires_grad],
        diff,
        [ag.tensor(w, dtype=g.dtype) for g, w in zip(g1, ws) if g.requires_grad],
        allow_unused=True,
    )

    async def scalar() -> float:
        gs = await first(*inputs)
        return float(sum((g.detach().numpy() * w).sum() for g, w in zip(gs, ws)))

    for x, a in zip(diff, analytic):
        data = x._data
        num = np.zeros(data.shape)
        for i in np.ndindex(data.shape):
            old = data[i]
            data[i] = old + eps
            fp = await scalar()
            data[i] = old - eps
            fm = await scalar()
            data[i] = old
            num[i] = (fp - fm) / (2 * eps)
        an = np.zeros(data.shape) if a is None else a.detach().numpy()
        if not np.allclose(an, num, atol=atol, rtol=rtol):
            raise AssertionError(f"second derivative mismatch:\nanalytic={an}\nnumeric={num}")
    return True
