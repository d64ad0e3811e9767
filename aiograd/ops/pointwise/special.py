"""Special functions, elementwise and differentiable: erfc, erfinv, lgamma, digamma, polygamma,
sinc, xlogy, logit (the ``torch.special`` family that torch also exposes at top level).

The kernels are scipy.special's ufuncs, imported on first use (NOTE [erf] in
_scipy.py). Each derivative is torch's (derivatives.yaml), written in numpy terms
so that it also serves create_graph passes (NOTE [One rule for both modes] in
_common.py): where a rule needs another special function (lgamma's needs digamma,
digamma's polygamma(1, x)), it calls the differentiable op on Tensors and the scipy
kernel on arrays, so derivatives of every order exist.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.graph import Node, link_one
from ...autograd.saved import Saved, save, unpack
from ...tensor import Tensor, get_default_dtype
from .._common import grad_enabled, wrap
from .._pointwise import PointwiseTable, make_binary
from ._scipy import scipy_special as _scipy_special

SPECIAL = PointwiseTable("pointwise.special")

_SQRT_PI_2 = 0.88622692545275801365  # sqrt(pi) / 2
_TWO_SQRT_PI = 1.12837916709551257390  # 2 / sqrt(pi)


def _floating(x: np.ndarray) -> np.ndarray:
    """An integer or bool input as the default float dtype (as torch's float-valued ops)."""
    return x if x.dtype.kind in "fc" else x.astype(get_default_dtype())


def _in_dtype_of(res: Any, x: np.ndarray) -> np.ndarray:
    """A kernel's result in the input's float dtype (scipy computes float16 in float32)."""
    res = np.asarray(res)
    return res if res.dtype == x.dtype else res.astype(x.dtype)


# ----- erfc, erfinv -----------------------------------------------------------------------------


def _erfc_kernel(x: np.ndarray) -> np.ndarray:
    return _scipy_special().erfc(x)


def _erfinv_kernel(x: np.ndarray) -> np.ndarray:
    return _scipy_special().erfinv(x)


erfc = SPECIAL.unary("erfc", _erfc_kernel, f"g * (-{_TWO_SQRT_PI} * np.exp(-(v * v)))", saves="input",
                     node="ErfcBackward0", inplace=True, doc="``1 - erf(x)``, accurate where erf is near 1.")
# erfinv's derivative sqrt(pi)/2 * exp(erfinv(x)**2) reads the output (torch recomputes it from x)
erfinv = SPECIAL.unary("erfinv", _erfinv_kernel, f"g * ({_SQRT_PI_2} * np.exp(v * v))", saves="output",
                       node="ErfinvBackward0", inplace=True,
                       doc="The inverse of erf on (-1, 1): +-inf at +-1, NaN outside.")


# ----- lgamma, digamma, polygamma ------------------------------------------------------------------


def _lgamma_kernel(x: np.ndarray) -> np.ndarray:
    res = _scipy_special().gammaln(x)
    return np.where(x == -np.inf, np.inf, res).astype(res.dtype, copy=False)  # |gamma(-inf)| = inf, as torch


def _digamma_kernel(x: np.ndarray) -> np.ndarray:
    return _scipy_special().psi(x)


def _trigamma(x: np.ndarray) -> np.ndarray:
    """polygamma(1, x) as torch computes it (so also its finite values at the poles x = 0, -1, ...):
    below 1/2 the reflection ``pi^2 / sin^2(pi x) - trigamma(1 - x)``, then six steps of the
    recurrence and the asymptotic series, in ``x``'s dtype (float32 for float16)."""
    dt = np.float32 if x.dtype == np.float16 else x.dtype
    x = x.astype(dt)
    low = x < 0.5
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.sin(math.pi * x)
        result = np.where(low, -(math.pi * math.pi) / (s * s), 0).astype(dt)
        x = np.where(low, 1 - x, x).astype(dt)
        for _ in range(6):
            result += 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        result += (1 + 1 / (2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return np.where(low, -result, result)


def polygamma_kernel(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma (digamma itself for n = 0), in ``x``'s dtype."""
    if n == 0:
        return _in_dtype_of(_digamma_kernel(x), x)
    if n == 1:
        return _in_dtype_of(_trigamma(x), x)
    with np.errstate(over="ignore"):
        res = _scipy_special().polygamma(n, x)
    return _in_dtype_of(np.where(x == -np.inf, np.nan, res), x)  # torch: NaN at -inf (scipy: inf)


def _digamma_any(v: Any) -> Any:
    return digamma(v) if isinstance(v, Tensor) else _digamma_kernel(v)


def _polygamma_any(n: int, v: Any) -> Any:
    return polygamma(n, v) if isinstance(v, Tensor) else polygamma_kernel(n, v)


lgamma = SPECIAL.unary("lgamma", _lgamma_kernel, "g * digamma_any(v)", saves="input", node="LgammaBackward0",
                       inplace=True, env={"digamma_any": _digamma_any},
                       doc="``log|gamma(x)|``, elementwise; its derivative is digamma.")
digamma = SPECIAL.unary("digamma", _digamma_kernel, "g * polygamma_any(1, v)", saves="input",
                        node="DigammaBackward0", inplace=True, env={"polygamma_any": _polygamma_any},
                        doc="The logarithmic derivative of gamma (-inf at 0, NaN at negative integers).")


class PolygammaBackward0(Node):
    """``g * polygamma(n + 1, x)``."""

    __slots__ = ("n", "x")
    n: int
    x: Saved

    def __init__(self, n: int, x: Saved) -> None:
        self._init_node()
        self.n = n
        self.x = x

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (g * _polygamma_any(self.n + 1, unpack(self, self.x, g.__class__ is Tensor)),)


class PolygammaBackward1(PolygammaBackward0):
    """The node of ``polygamma_`` (torch names the in-place op's node apart)."""

    __slots__ = ()


@SPECIAL.op(nodes=(PolygammaBackward0, PolygammaBackward1))
def polygamma(n: int, input: Any) -> Tensor:
    """The ``n``-th derivative of digamma at ``input``, elementwise (``n >= 0``).

    ``x.polygamma(n)`` is the method form (the tensor first, as torch's); ``polygamma(x, n)``
    is taken as the same call."""
    if isinstance(n, Tensor) and not isinstance(input, Tensor):
        n, input = input, n  # the method form: x.polygamma(n)
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not {type(input).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _polygamma(int(n), input, PolygammaBackward0)


def _polygamma(n: int, input: Tensor, node_cls: type[PolygammaBackward0]) -> Tensor:
    xd = _floating(input._data)
    out = wrap(polygamma_kernel(n, xd), input._device)
    if input._requires_grad and grad_enabled():
        link_one(node_cls(n, save(input)), input, out)
    return out


def polygamma_inplace_op(n: int) -> Any:
    """The out-of-place op behind ``polygamma_(n)``: its node is PolygammaBackward1, as torch's."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        polygamma(n, Tensor._wrap(np.zeros(0)))  # torch's error for this n
    return lambda a: _polygamma(int(n), a, PolygammaBackward1)


# ----- sinc ----------------------------------------------------------------------------------------


def _sinc_kernel(x: np.ndarray) -> np.ndarray:
    return _in_dtype_of(np.sinc(x), x)


def _sinc_derivative(v: Any) -> Any:
    """``(cos(pi x) pi x - sin(pi x)) / (pi x**2)``, 0 at x = 0 (torch's sinc backward). At 0 the
    formula runs on 1 instead, so a create_graph pass meets no 0/0 there."""
    safe: Any
    if isinstance(v, Tensor):
        zero = Tensor._wrap(v._data == 0, v._device)
        safe = v.masked_fill(zero, 1.0)
    else:
        zero = v == 0
        safe = np.where(zero, 1, v).astype(v.dtype, copy=False)
    pv = safe * math.pi
    d = (np.cos(pv) * pv - np.sin(pv)) / (pv * safe)
    return d.masked_fill(zero, 0.0) if isinstance(d, Tensor) else np.where(zero, 0, d).astype(d.dtype, copy=False)


sinc = SPECIAL.unary("sinc", _sinc_kernel, "g * sinc_derivative(v)", saves="input", node="SincBackward0",
                     inplace=True, env={"sinc_derivative": _sinc_derivative},
                     doc="The normalized sinc, ``sin(pi x) / (pi x)``, and 1 at 0.")


# ----- xlogy ---------------------------------------------------------------------------------------


def _xlogy_kernel(a: Any, b: Any) -> np.ndarray:
    """``a * log(b)``, 0 where ``a == 0`` unless ``b`` is NaN (as torch). A Python number operand keeps
    the array's dtype."""
    like = a if isinstance(a, np.ndarray) else b
    dt = like.dtype if isinstance(like, np.ndarray) and like.dtype.kind in "fc" else np.dtype(np.float64)
    ad = np.asarray(a, dtype=dt) if not isinstance(a, np.ndarray) else a
    bd = np.asarray(b, dtype=dt) if not isinstance(b, np.ndarray) else b
    with np.errstate(divide="ignore", invalid="ignore"):
        res = ad * np.log(bd)
    return np.where((ad == 0) & ~np.isnan(bd), 0, res)


def _xlogy_any(a: Any, b: Any) -> Any:
    return xlogy(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) else _xlogy_kernel(a, b)


def _xlogy_number_grad(g: Any, a: Any, b: float) -> Any:
    """torch's gradient of ``xlogy(x, c)`` for a number c: ``xlogy(g, c)``, 0 where x is 0 and c <= 0."""
    d = _xlogy_any(g, b)
    if b > 0:
        return d
    zero = (a._data if isinstance(a, Tensor) else a) == 0
    return d.masked_fill(Tensor._wrap(zero, g._device), 0.0) if isinstance(d, Tensor) else np.where(zero, 0, d)


_XLOGY = {"xlogy_any": _xlogy_any, "number_grad": _xlogy_number_grad}
# d/dx xlogy(x, y) is log(y), except 0 where x == 0 and y <= 0 (torch's rule, where x log y is 0
# whatever y): so at x == 0 with y > 0 it is g * log(y), not 0.
_xlogy_tensors, XlogyBackward0 = make_binary(
    "xlogy", _xlogy_kernel, da="g * xlogy_any((a != 0) | (b > 0), b)", db="g * a / b", node="XlogyBackward0",
    integers="float", env=_XLOGY, module=SPECIAL.module,
)
_xlogy_number_self, XlogyBackward1 = make_binary(
    "xlogy", _xlogy_kernel, da="g", db="g * a / b", node="XlogyBackward1", integers="float", env=_XLOGY,
    module=SPECIAL.module,
)
_xlogy_number_other, XlogyBackward2 = make_binary(
    "xlogy", _xlogy_kernel, da="number_grad(g, a, b)", db="g", node="XlogyBackward2", integers="float",
    env=_XLOGY, module=SPECIAL.module,
)


@SPECIAL.op(nodes=(XlogyBackward0, XlogyBackward1, XlogyBackward2))
def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a number."""
    if isinstance(other, (bool, int, float)):
        return _xlogy_number_other(input, other)
    if isinstance(input, (bool, int, float)):
        return _xlogy_number_self(input, other)
    return _xlogy_tensors(input, other)


# ----- logit ---------------------------------------------------------------------------------------


class LogitBackward0(Node):
    """``g / (x (1 - x))``; outside [0, 1] NaN, or with ``eps`` 0 outside [eps, 1 - eps] (as torch)."""

    __slots__ = ("x", "eps")
    x: Saved
    eps: Any

    def __init__(self, x: Saved, eps: Any) -> None:
        self._init_node()
        self.x = x
        self.eps = eps

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        xd = x._data if graph else x
        eps = self.eps
        if eps is None:
            outside, fill = (xd < 0) | (xd > 1), math.nan
        else:
            outside, fill = (xd < eps) | (xd > 1 - eps), 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            d = g / (x * (1 - x) + 0.0)  # + 0.0: at x = -0.0 the sign of g's infinity, as torch
        if not outside.any():
            return (d,)
        if graph:
            return (d.masked_fill(Tensor._wrap(outside, g._device), fill),)
        return (np.where(outside, fill, d).astype(d.dtype, copy=False),)


@SPECIAL.op(nodes=(LogitBackward0,))
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(x / (1 - x))``; with ``eps``, x is first clamped to ``[eps, 1 - eps]``."""
    xd = _floating(input._data)
    z = xd if eps is None else np.clip(xd, eps, 1 - eps).astype(xd.dtype, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.log(z / (1 - z))
    out = wrap(_in_dtype_of(res, xd), input._device)
    if input._requires_grad and grad_enabled():
        link_one(LogitBackward0(save(input), None if eps is None else float(eps)), input, out)
    return out


__all__ = SPECIAL.exports(__name__)
