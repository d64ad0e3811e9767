"""Activation functions of torch.nn.functional with their own derivative rules: the one home
of aiograd's activations.

silu, mish, leaky_relu, elu (selu, celu), hardtanh (relu6), hardsigmoid,
hardswish, logsigmoid, threshold, glu, prelu, hardshrink, softshrink, gelu,
softplus, softmax and log_softmax. Each is one
node with torch's name (``SiluBackward0``, ``EluBackward0``...), its rule
written in numpy terms so that it also serves create_graph passes (NOTE [One
rule for both modes] in _common.py): in such a pass ``x`` is a Tensor and
``np.exp``/``np.where``/``np.tanh`` dispatch to the differentiable ops.

NOTE [Piecewise masks]: the rules of piecewise functions pick their branch with
a mask computed from the saved input's *values* (an ndarray, no gradient), as
torch does; only the branch values are Tensors in a create_graph pass, so a
second derivative flows through the branch that applies, never through a
masked-off one (``exp`` of a large masked-off input is never formed either:
it is replaced by 0 before ``exp``).

torch has ``torch.selu``, ``torch.celu``, ``torch.threshold``, ``torch.prelu``
(also a Tensor method), ``torch.hardshrink`` (also a method): those are public
ops here too (and ``softmax``, ``log_softmax``, ``gelu``, ``softplus`` are public ops and Tensor
methods); the others are functions of ``aiograd.nn.functional`` only. The activations that
torch lists among its pointwise math ops (``relu``, ``sigmoid``, ``tanh``) are pointwise ops
(ops/pointwise/elementwise.py); aiograd.nn.functional gives every activation torch's signature
(``inplace=``) and composes softmin, softsign and tanhshrink; the modules (``nn.ReLU``...) are
in aiograd/nn/activation.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, link_one, record
from ...autograd.saved import Saved, SavedArray, save, save_output, unpack
from ...tensor import Tensor
from .._common import grad_enabled, needs_grad, wrap
from .._table import OpTable
from ..movement.shape import _wrap_dim
from ..pointwise import elementwise as _ew
from ..pointwise._normal_cdf import phi as _phi
from ..pointwise.elementwise import _stable_sigmoid, erf, erf_kernel, sigmoid, where
from ._nn_common import float_data, torch_dtype_name

ACTIVATION = OpTable("nn.activation")

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _values(x: Any) -> np.ndarray:
    """The array of a saved value (a Tensor in a create_graph pass): masks are computed from it."""
    return x._data if x.__class__ is Tensor else x


def _sigmoid(x: Any) -> Any:
    return _ew.sigmoid(x) if x.__class__ is Tensor else _ew._stable_sigmoid(x)


def _softplus(x: Any) -> Any:
    return softplus(x) if x.__class__ is Tensor else np.logaddexp(0, x)


def _const(mask_values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return mask_values.astype(dtype, copy=False)


def _unary(node: Node, input: Tensor, res: np.ndarray) -> Tensor:
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(node, input, out)
    return out


class _SavedInputNode(Node):
    """A unary backward whose rule reads the saved input (``x``)."""

    __slots__ = ("x",)
    x: Saved

    def __init__(self, x: Saved) -> None:
        self._init_node()
        self.x = x

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (self.rule(g, unpack(self, self.x, g.__class__ is Tensor)),)

    def rule(self, g: Any, x: Any) -> Any:  # pragma: no cover - each subclass has its own
        raise NotImplementedError


# ----- smooth activations ---------------------------------------------------------------------


class SiluBackward0(_SavedInputNode):
    """``g * s * (1 + x * (1 - s))`` with ``s = sigmoid(x)``."""

    __slots__ = ()

    def rule(self, g: Any, x: Any) -> Any:
        s = _sigmoid(x)
        return g * (s * (x * (1 - s) + 1))


@ACTIVATION.op(nodes=(SiluBackward0,), method=False, export=False)
def silu(input: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (the swish activation)."""
    xd = float_data(input, "silu_cpu")
    res = xd * _ew._stable_sigmoid(xd)
    return _unary(SiluBackward0(save(input)), input, res)


class MishBackward0(_SavedInputNode):
    """``g * (t + x * sigmoid(x) * (1 - t^2))`` with ``t = tanh(softplus(x))``."""

    __slots__ = ()

    def rule(self, g: Any, x: Any) -> Any:
        t = np.tanh(_softplus(x))
        return g * (t + x * _sigmoid(x) * (1 - t * t))


@ACTIVATION.op(nodes=(MishBackward0,), method=False, export=False)
def mish(input: Tensor) -> Tensor:
    """``x * tanh(softplus(x))``."""
    xd = float_data(input, "mish_cpu")
    res = xd * np.tanh(np.logaddexp(0, xd))
    return _unary(MishBackward0(save(input)), input, res.astype(xd.dtype, copy=False))


class LogSigmoidBackward0(_SavedInputNode):
    """``g * sigmoid(-x)``."""

    __slots__ = ()

    def rule(self, g: Any, x: Any) -> Any:
        return g * _sigmoid(-x)


@ACTIVATION.op(nodes=(LogSigmoidBackward0,), method=False, export=False)
def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably."""
    xd = float_data(input, "log_sigmoid_cpu")
    res = -np.logaddexp(0, -xd)
    return _unary(LogSigmoidBackward0(save(input)), input, res.astype(xd.dtype, copy=False))


# ----- the ELU family -------------------------------------------------------------------------


class EluBackward0(Node):
    """``g * scale * alpha * input_scale * exp(x * input_scale)`` where ``x <= 0``, else ``g * scale``:
    torch's condition, so a NaN input passes ``g * scale`` through (NOTE [NaN in piecewise rules])."""

    __slots__ = ("x", "alpha", "scale", "input_scale")
    x: Saved
    alpha: float
    scale: float
    input_scale: float

    def __init__(self, x: Saved, alpha: float, scale: float, input_scale: float) -> None:
        self._init_node()
        self.x = x
        self.alpha = alpha
        self.scale = scale
        self.input_scale = input_scale

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        x = unpack(self, self.x, g.__class__ is Tensor)
        neg_side = _values(x) <= 0
        neg = np.exp(np.where(neg_side, x, 0.0) * self.input_scale) * (self.scale * self.alpha * self.input_scale)
        return (g * np.where(neg_side, neg, self.scale),)


class CeluBackward0(EluBackward0):
    __slots__ = ()


def _elu(input: Tensor, alpha: float, scale: float, input_scale: float, op: str, node_cls: type[EluBackward0]) -> Tensor:
    xd = float_data(input, op)
    pos = xd > 0
    with np.errstate(over="ignore"):
        neg = np.expm1(np.where(pos, 0, xd) * input_scale) * (alpha * scale)
    res = np.where(pos, xd * scale, neg).astype(xd.dtype, copy=False)
    return _unary(node_cls(save(input), float(alpha), float(scale), float(input_scale)), input, res)


@ACTIVATION.op(nodes=(EluBackward0,), method=False, export=False)
def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _elu(input, alpha, 1.0, 1.0, "elu_cpu", EluBackward0)


@ACTIVATION.op(nodes=(EluBackward0,))
def selu(input: Tensor) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants (alpha 1.6733, scale 1.0507)."""
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, "elu_cpu", EluBackward0)


@ACTIVATION.op(nodes=(CeluBackward0,))
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(input, alpha, 1.0, 1.0 / alpha, "elu_cpu", CeluBackward0)


# ----- piecewise linear -----------------------------------------------------------------------


class _MaskNode(Node):
    """``g * coef``: the derivative is a constant per element, known at forward (NOTE [Piecewise masks]);
    the saved input is only checked for in-place changes, as torch's rule reads it."""

    __slots__ = ("x", "coef")
    x: Saved
    coef: np.ndarray

    def __init__(self, x: Saved, coef: np.ndarray) -> None:
        self._init_node()
        self.x = x
        self.coef = coef

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        unpack(self, self.x, False)
        return (g * self.coef,)


class LeakyReluBackward0(_MaskNode):
    __slots__ = ()


class HardtanhBackward0(_MaskNode):
    __slots__ = ()


class HardsigmoidBackward0(_MaskNode):
    __slots__ = ()


class ThresholdBackward0(_MaskNode):
    __slots__ = ()


class HardshrinkBackward0(_MaskNode):
    __slots__ = ()


class SoftshrinkBackward0(_MaskNode):
    __slots__ = ()


def _masked(input: Tensor, res: np.ndarray, coef: np.ndarray, node_cls: type[_MaskNode]) -> Tensor:
    dt = input._data.dtype
    out = wrap(res.astype(dt, copy=False), input._device)
    if input._requires_grad and grad_enabled():
        link_one(node_cls(save(input), coef.astype(dt, copy=False)), input, out)
    return out


@ACTIVATION.op(nodes=(LeakyReluBackward0,), method=False, export=False)
def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where positive, else ``negative_slope * x``."""
    xd = float_data(input, "leaky_relu_cpu")
    pos = xd > 0
    coef = np.where(pos, 1.0, negative_slope)
    return _masked(input, xd * coef.astype(xd.dtype), coef, LeakyReluBackward0)


@ACTIVATION.op(nodes=(HardtanhBackward0,), method=False, export=False)
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``; the gradient passes strictly inside."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    xd = input._data
    if xd.dtype.kind not in "fiu":
        float_data(input, "hardtanh")
    res = np.clip(xd, min_val, max_val)
    if xd.dtype.kind != "f":  # torch keeps an integer input's dtype (no gradient there)
        return wrap(res.astype(xd.dtype), input._device)
    # NOTE [NaN in piecewise rules]: torch's rules test the side where the gradient is cut
    # (x <= min_val or x >= max_val, x <= threshold, elu's x <= 0); a comparison with NaN is
    # false, so at a NaN input the incoming gradient passes through. The masks here are
    # written as the negation of that test, never as the test for the other side.
    return _masked(input, res, ~((xd <= min_val) | (xd >= max_val)), HardtanhBackward0)


@ACTIVATION.op(nodes=(HardsigmoidBackward0,), method=False, export=False)
def hardsigmoid(input: Tensor) -> Tensor:
    """``relu6(x + 3) / 6``; the gradient is 1/6 strictly between -3 and 3."""
    xd = float_data(input, "hardsigmoid_cpu")
    res = np.clip(xd / 6 + 0.5, 0, 1)
    return _masked(input, res, ((xd > -3) & (xd < 3)) / 6.0, HardsigmoidBackward0)


@ACTIVATION.op(nodes=(ThresholdBackward0,))
def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``value`` where ``x <= threshold``, else ``x`` (a NaN stays NaN, as in torch)."""
    xd = input._data
    replaced = xd <= threshold  # NOTE [NaN in piecewise rules]
    res = np.where(replaced, value, xd)
    if xd.dtype.kind != "f":
        return wrap(res.astype(xd.dtype), input._device)
    return _masked(input, res, ~replaced, ThresholdBackward0)


@ACTIVATION.op(nodes=(HardshrinkBackward0,))
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    xd = float_data(input, "hardshrink_cpu")
    keep = (xd > lambd) | (xd < -lambd)
    return _masked(input, np.where(keep, xd, 0), keep, HardshrinkBackward0)


@ACTIVATION.op(nodes=(SoftshrinkBackward0,), method=False, export=False)
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, inf) for input dtype {torch_dtype_name(input.dtype)}, but found {lambd}")
    xd = float_data(input, "softshrink_cpu")
    hi, lo = xd > lambd, xd < -lambd
    res = np.where(hi, xd - lambd, np.where(lo, xd + lambd, 0))
    return _masked(input, res, hi | lo, SoftshrinkBackward0)


class HardswishBackward0(_SavedInputNode):
    """``g * 0`` below -3, ``g * (x / 3 + 1/2)`` up to 3, ``g`` above (NOTE [Piecewise masks])."""

    __slots__ = ()

    def rule(self, g: Any, x: Any) -> Any:
        xv = _values(x)
        mid = x / 3 + 0.5
        return g * np.where(xv < -3, 0.0, np.where(xv <= 3, mid, 1.0))


@ACTIVATION.op(nodes=(HardswishBackward0,), method=False, export=False)
def hardswish(input: Tensor) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    xd = float_data(input, "hardswish_cpu")
    res = xd * np.clip(xd + 3, 0, 6) / 6
    return _unary(HardswishBackward0(save(input)), input, res.astype(xd.dtype, copy=False))


# ----- glu, prelu ---------------------------------------------------------------------------


class GluBackward0(Node):
    """With ``a, b`` the halves of ``x``: ``ga = g * sigmoid(b)``, ``gb = g * a * s * (1 - s)``."""

    __slots__ = ("x", "dim")
    x: Saved
    dim: int

    def __init__(self, x: Saved, dim: int) -> None:
        self._init_node()
        self.x = x
        self.dim = dim

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        x = unpack(self, self.x, g.__class__ is Tensor)
        a, b = np.split(x, 2, axis=self.dim) if x.__class__ is not Tensor else x.chunk(2, self.dim)
        s = _sigmoid(b)
        ga = g * s
        return (np.concatenate([ga, ga * a * (1 - s)], axis=self.dim),)


@ACTIVATION.op(nodes=(GluBackward0,), method=False, export=False)
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the two halves of ``input`` along ``dim``."""
    xd = input._data
    if xd.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, xd.ndim)
    if xd.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {xd.shape[d]}")
    float_data(input, "glu_cpu")
    a, b = np.split(xd, 2, axis=d)
    return _unary(GluBackward0(save(input), d), input, a * _ew._stable_sigmoid(b))


class PreluKernelBackward0(Node):
    """``gx = g * (x > 0 ? 1 : w)``, ``gw = sum(g * (x > 0 ? 0 : x))`` over all but the channel dim."""

    __slots__ = ("x", "w", "w_shape", "axes")
    x: Saved
    w: Saved
    w_shape: tuple[int, ...]
    axes: tuple[int, ...]

    def __init__(self, x: Saved, w: Saved, w_shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
        self._init_node()
        self.x = x
        self.w = w
        self.w_shape = w_shape
        self.axes = axes

    def release_variables(self) -> None:
        self.x = None
        self.w = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        w = unpack(self, self.w, graph)
        pos = _values(x) > 0
        view = _channel_view(w, _values(x).ndim)
        gx = gw = None
        if self.should_compute_output(0):
            gx = g * np.where(pos, 1.0, view)
        if self.should_compute_output(1):
            gw = np.sum(g * np.where(pos, 0.0, x), axis=self.axes).reshape(self.w_shape)
        return gx, gw


def _channel_view(w: Any, ndim: int) -> Any:
    """``w`` (one slope, or one per channel of dim 1) shaped to broadcast against an ``ndim``-d input."""
    if w.size == 1:
        return w.reshape(())
    return w.reshape((1, -1) + (1,) * (ndim - 2))


@ACTIVATION.op(nodes=(PreluKernelBackward0,))
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, else ``weight * x``; ``weight`` holds one slope, or one per channel (dim 1)."""
    xd = float_data(input, "prelu_cpu")
    wd = weight._data
    if wd.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {wd.ndim}")
    channels = xd.shape[1] if xd.ndim >= 2 else 1
    if wd.size != 1 and wd.size != channels:
        raise RuntimeError(
            f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {wd.size} "
            f"and channel size = {channels}."
        )
    if wd.dtype != xd.dtype:
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {torch_dtype_name(xd.dtype)} and {torch_dtype_name(wd.dtype)}"
        )
    view = _channel_view(wd, xd.ndim)
    res = np.where(xd > 0, xd, view * xd)
    out = wrap(np.asarray(res, dtype=xd.dtype), input._device)
    if needs_grad(input, weight):
        axes = tuple(i for i in range(xd.ndim) if not (i == 1 and wd.size > 1))
        record(PreluKernelBackward0(save(input), save(weight), wd.shape, axes), (input, weight), (out,))
    return out


# ----- softmax / log_softmax ------------------------------------------------------------


class SoftmaxBackward0(Node):
    """grad_input = y * (g - sum(g * y, dim)) with y the saved output."""

    __slots__ = ("out", "dim")
    out: Saved
    dim: int | None

    def __init__(self, out: Saved, dim: int | None) -> None:
        self._init_node()
        self.out = out
        self.dim = dim

    def release_variables(self) -> None:
        self.out = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        y = unpack(self, self.out, graph)
        gy = g * y
        if graph or self.dim is None:  # a 0-d input: numpy scalars, nothing to write in place
            return (gy - y * np.sum(gy, axis=self.dim, keepdims=True),)
        t = y * np.sum(gy, axis=self.dim, keepdims=True)  # two temporaries, the second the result
        return (np.subtract(gy, t, out=gy),)


class LogSoftmaxBackward0(Node):
    """grad_input = g - exp(y) * sum(g, dim) with y the saved output."""

    __slots__ = ("out", "dim")
    out: Saved
    dim: int | None

    def __init__(self, out: Saved, dim: int | None) -> None:
        self._init_node()
        self.out = out
        self.dim = dim

    def release_variables(self) -> None:
        self.out = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        y = unpack(self, self.out, graph)
        if graph or self.dim is None:
            return (g - np.exp(y) * np.sum(g, axis=self.dim, keepdims=True),)
        t = np.exp(y)  # one temporary, which becomes the result
        t *= np.sum(g, axis=self.dim, keepdims=True)
        return (np.subtract(g, t, out=t),)


def _softmax_prep(input: Tensor, dim: int, dtype: Any, op: str) -> tuple[Tensor, np.ndarray, int]:
    if dtype is not None:
        input = input.to(dtype)
    xd = float_data(input, op)
    return input, xd, _wrap_dim(dim, xd.ndim)


@ACTIVATION.op(nodes=(SoftmaxBackward0,))
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed after subtracting the max (stable)."""
    input, xd, d = _softmax_prep(input, dim, dtype, "softmax")
    if xd.ndim == 0:
        res = np.ones_like(xd)
    elif xd.size == 0:  # nothing to normalize (the max of an empty dim would raise)
        res = np.empty_like(xd)
    else:
        e = xd - xd.max(axis=d, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=d, keepdims=True)
        res = e
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(SoftmaxBackward0(save_output(out), d if xd.ndim else None), input, out)
    return out


@ACTIVATION.op(nodes=(LogSoftmaxBackward0,))
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed after subtracting the max (stable)."""
    input, xd, d = _softmax_prep(input, dim, dtype, "log_softmax")
    if xd.ndim == 0:
        res = np.zeros_like(xd)
    elif xd.size == 0:
        res = np.empty_like(xd)
    else:
        res = xd - xd.max(axis=d, keepdims=True)
        res -= np.log(np.exp(res).sum(axis=d, keepdims=True))
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(LogSoftmaxBackward0(save_output(out), d if xd.ndim else None), input, out)
    return out


# ----- gelu, softplus --------------------------------------------------------------------------

_SQRT1_2 = 0.70710678118654752440
_INV_SQRT_2PI = 0.39894228040143267794
_GELU_K = 0.79788456080286535588  # sqrt(2 / pi)


def _erf_any(x: Any) -> Any:
    return erf(x) if x.__class__ is Tensor else erf_kernel(x)


class GeluBackward0(Node):
    """``g * (Phi(x) + x * phi(x))`` (exact) or the tanh formula's derivative. The exact form
    reuses the forward's ``Phi(x)`` in an ordinary pass (its erf is the costly part) and
    recomputes it differentiably in a create_graph pass."""

    __slots__ = ("x", "approximate", "cdf")
    x: Saved
    approximate: str
    cdf: SavedArray

    def __init__(self, x: Saved, approximate: str, cdf: SavedArray) -> None:
        self._init_node()
        self.x = x
        self.approximate = approximate
        self.cdf = cdf

    def release_variables(self) -> None:
        self.x = None
        self.cdf = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        if self.approximate == "tanh":
            x2 = x * x
            t = np.tanh((x + 0.044715 * x2 * x) * _GELU_K)
            d = (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * ((x2 * (3 * 0.044715) + 1) * _GELU_K)
        elif not graph and x.ndim:
            # Phi(x) + x phi(x) in one buffer: each fresh temporary of a large array costs page faults
            d = np.multiply(x, x)
            d *= -0.5
            np.exp(d, out=d)
            d *= x
            d *= _INV_SQRT_2PI
            d += self.cdf
            if d.dtype == g.dtype and d.shape == g.shape:
                d *= g
                return (d,)
        else:
            cdf = (_erf_any(x * _SQRT1_2) + 1) * 0.5
            d = cdf + x * (np.exp(x * x * -0.5) * _INV_SQRT_2PI)
        return (g * d,)


@ACTIVATION.op(nodes=(GeluBackward0,))
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)``; ``approximate="tanh"`` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    xd = input._data
    if xd.dtype.kind not in "f":
        raise RuntimeError(f'"GeluKernelImpl" not implemented for {xd.dtype}: gelu needs a floating input')
    cdf = None
    if approximate == "tanh":
        res = 0.5 * xd * (1 + np.tanh(_GELU_K * (xd + 0.044715 * xd * xd * xd)))
    else:
        cdf = _phi(xd)  # Phi(x) = (1 + erf(x / sqrt(2))) / 2, in one pass (NOTE [Fast Phi] in ops/pointwise/_normal_cdf.py)
        res = xd * cdf
    out = wrap(res.astype(xd.dtype, copy=False), input._device)
    if input._requires_grad and grad_enabled():
        link_one(GeluBackward0(save(input), approximate, cdf), input, out)
    return out


class SoftplusBackward0(Node):
    __slots__ = ("x", "beta", "threshold")
    x: Saved
    beta: float
    threshold: float

    def __init__(self, x: Saved, beta: float, threshold: float) -> None:
        self._init_node()
        self.x = x
        self.beta = beta
        self.threshold = threshold

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        bx = x * self.beta
        if graph:
            linear = bx._data > self.threshold
            d = where(linear, 1.0, sigmoid(bx)) if linear.any() else sigmoid(bx)
        else:
            d = _stable_sigmoid(bx)
            d[bx > self.threshold] = 1
        return (g * d,)


@ACTIVATION.op(nodes=(SoftplusBackward0,))
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, computed stably; linear where ``beta * x > threshold`` (as torch)."""
    xd = input._data
    if xd.dtype.kind != "f":
        raise RuntimeError(f'"softplus" not implemented for {xd.dtype}: softplus needs a floating input')
    bx = xd * beta
    with np.errstate(over="ignore"):
        res = (np.log1p(np.exp(-np.abs(bx))) + np.maximum(bx, 0)) / beta
    res = np.where(bx > threshold, xd, res).astype(xd.dtype, copy=False)
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(SoftplusBackward0(save(input), beta, threshold), input, out)
    return out


__all__ = ACTIVATION.exports(__name__)
