"""The loss ops, each one fused node with torch's name: the pointwise losses mse_loss,
smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits
(``MseLossBackward0``...), and nll_loss (``NllLossBackward0``).

NOTE [Pointwise losses]: each loss is ``reduce(l(x, t))`` for an elementwise
``l`` of the (broadcast) input and target. One node holds both operands and the
reduction; its backward spreads the output gradient back over the elements
(divided by their number for ``'mean'``) and multiplies by ``dl/dx`` and
``dl/dt``, written in numpy terms so that they also serve create_graph passes
(NOTE [One rule for both modes] in _common.py); branch masks come from the
values (NOTE [Piecewise masks] in activation.py). Gradients are summed back to
each operand's shape. ``weight`` and ``pos_weight`` take no gradient, as in torch.

These are the table's ops; ``aiograd.nn.functional`` puts torch's signatures in
front of them (aiograd/nn/_losses.py: the legacy ``size_average``/``reduce`` keywords,
size warnings, cross_entropy and the losses torch composes from other ops).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one, record, sum_to
from ...autograd.saved import Saved, save, unpack
from ...tensor import Tensor
from .._common import broadcast_shapes, grad_enabled, needs_grad, wrap
from .._pointwise import result_type
from .._table import OpTable
from ..pointwise import elementwise as _ew
from ._nn_common import check_reduction, torch_dtype_name
from .activation import softplus

LOSS = OpTable("nn.loss")


def _values(x: Any) -> np.ndarray:
    return x._data if x.__class__ is Tensor else x


class _PointwiseLossBackward(Node):
    """NOTE [Pointwise losses]: ``derivatives`` gives (dl/dx, dl/dt) for the operands that need one."""

    __slots__ = ("x", "t", "w", "pw", "reduction", "count", "x_shape", "t_shape", "param")
    x: Saved
    t: Saved
    w: np.ndarray | None  #: an elementwise weight (no gradient)
    pw: np.ndarray | None  #: bce_with_logits' pos_weight (no gradient)
    reduction: str
    count: int  #: elements reduced over
    x_shape: Shape
    t_shape: Shape
    param: float  #: beta / delta

    def __init__(
        self,
        x: Saved,
        t: Saved,
        w: np.ndarray | None,
        pw: np.ndarray | None,
        reduction: str,
        count: int,
        x_shape: Shape,
        t_shape: Shape,
        param: float,
    ) -> None:
        self._init_node()
        self.x = x
        self.t = t
        self.w = w
        self.pw = pw
        self.reduction = reduction
        self.count = count
        self.x_shape = x_shape
        self.t_shape = t_shape
        self.param = param

    def release_variables(self) -> None:
        self.x = None
        self.t = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        t = unpack(self, self.t, graph)
        if self.reduction == "mean":
            g = g / self.count
        want_x, want_t = self.should_compute_output(0), self.should_compute_output(1)
        dx, dt = self.derivatives(x, t, want_x, want_t)
        if self.w is not None:
            g = g * self.w
        gx = sum_to(g * dx, self.x_shape) if want_x else None
        gt = sum_to(g * dt, self.t_shape) if want_t else None
        return gx, gt

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:  # pragma: no cover
        raise NotImplementedError


class MseLossBackward0(_PointwiseLossBackward):
    __slots__ = ()

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:
        d = (x - t) * 2
        return d, -d


class SmoothL1LossBackward0(_PointwiseLossBackward):
    """``d / beta`` where ``|d| < beta``, else ``sign(d)``."""

    __slots__ = ()

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:
        d = x - t
        dv = _values(d)
        dx = np.where(np.abs(dv) < self.param, d / self.param, np.sign(dv).astype(dv.dtype))
        return dx, -dx


class HuberLossBackward0(_PointwiseLossBackward):
    """``d`` where ``|d| < delta``, else ``delta * sign(d)``."""

    __slots__ = ()

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:
        d = x - t
        dv = _values(d)
        dx = np.where(np.abs(dv) < self.param, d, (np.sign(dv) * self.param).astype(dv.dtype))
        return dx, -dx


class BinaryCrossEntropyBackward0(_PointwiseLossBackward):
    """``dl/dx = (x - t) / max(x (1 - x), 1e-12)``, ``dl/dt = log(1 - x) - log(x)`` (logs clamped at -100)."""

    __slots__ = ()

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:
        dx = dt = None
        if want_x:
            dx = (x - t) / np.maximum((1 - x) * x, 1e-12)
        if want_t:
            dt = np.maximum(np.log1p(-x), -100.0) - np.maximum(np.log(x), -100.0)
        return dx, dt


class BinaryCrossEntropyWithLogitsBackward0(_PointwiseLossBackward):
    """``dl/dx = sigmoid(x) * (1 + (pw - 1) t) - pw t``, ``dl/dt = pw * softplus(-x) - softplus(x)``."""

    __slots__ = ()

    def derivatives(self, x: Any, t: Any, want_x: bool, want_t: bool) -> tuple[Any, Any]:
        graph = x.__class__ is Tensor
        sig = _ew.sigmoid(x) if graph else _ew._stable_sigmoid(x)
        pw = self.pw
        dx = dt = None
        if want_x:
            dx = sig - t if pw is None else sig * ((pw - 1) * t + 1) - pw * t
        if want_t:
            sp_pos = softplus(x) if graph else np.logaddexp(0, x)
            dt = -x if pw is None else pw * (sp_pos - x) - sp_pos  # softplus(-x) = softplus(x) - x
        return dx, dt


def _operands(input: Tensor, target: Tensor, dtype: np.dtype | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The two operands' arrays in their common (or the given) dtype, broadcast together."""
    dt = dtype if dtype is not None else result_type(input, target)
    if dt.kind != "f":
        dt = np.dtype(np.float32) if dt.kind in "biu" else dt
    xd, td = input._data.astype(dt, copy=False), target._data.astype(dt, copy=False)
    shape = broadcast_shapes(xd.shape, td.shape)
    return np.broadcast_to(xd, shape), np.broadcast_to(td, shape)


def _finish(
    node_cls: type[_PointwiseLossBackward], input: Tensor, target: Tensor, loss: np.ndarray, reduction: str,
    w: np.ndarray | None = None, pw: np.ndarray | None = None, param: float = 0.0,
) -> Tensor:
    """Reduce the elementwise ``loss`` and record the node (NOTE [Pointwise losses])."""
    if w is not None:
        loss = loss * w
    n = loss.size
    if reduction == "none":
        res = loss
    elif reduction == "sum":
        res = loss.sum()
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            res = loss.sum() / loss.dtype.type(n) if n else np.asarray(np.nan, dtype=loss.dtype)
    out = wrap(np.asarray(res, dtype=loss.dtype), input._device)
    if needs_grad(input, target):
        node = node_cls(save(input), save(target), w, pw, reduction, n, input._data.shape, target._data.shape,
                        float(param))
        record(node, (input, target), (out,))
    return out


@LOSS.op(nodes=(MseLossBackward0,), method=False, export=False)
def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``reduce((x - t)^2)``."""
    check_reduction(reduction)
    x, t = _operands(input, target)
    d = x - t
    return _finish(MseLossBackward0, input, target, d * d, reduction)


@LOSS.op(nodes=(SmoothL1LossBackward0,), method=False, export=False)
def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``reduce(0.5 d^2 / beta if |d| < beta else |d| - 0.5 beta)`` with ``d = x - t`` (``beta > 0``)."""
    check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, t = _operands(input, target)
    ad = np.abs(x - t)
    loss = np.where(ad < beta, 0.5 * ad * ad / beta, ad - 0.5 * beta)
    return _finish(SmoothL1LossBackward0, input, target, loss.astype(x.dtype, copy=False), reduction, param=beta)


@LOSS.op(nodes=(HuberLossBackward0,), method=False, export=False)
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``reduce(0.5 d^2 if |d| < delta else delta (|d| - 0.5 delta))`` with ``d = x - t``."""
    check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    dt = input._data.dtype if input._data.dtype.kind == "f" else None  # torch keeps the input's dtype here
    x, t = _operands(input, target, dt)
    ad = np.abs(x - t)
    loss = np.where(ad < delta, 0.5 * ad * ad, delta * (ad - 0.5 * delta))
    return _finish(HuberLossBackward0, input, target, loss.astype(x.dtype, copy=False), reduction, param=delta)


def _no_grad_argument(name: str, op: str, t: Tensor | None) -> np.ndarray | None:
    if t is None:
        return None
    if t._requires_grad and needs_grad(t):
        raise RuntimeError(
            f"The function '{op}' is not differentiable with respect to argument '{name}'. This input cannot have "
            "requires_grad True."
        )
    return t._data


@LOSS.op(nodes=(BinaryCrossEntropyBackward0,), method=False, export=False)
def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean",
) -> Tensor:
    """``reduce(-w (t log x + (1 - t) log(1 - x)))`` on probabilities ``x`` (logs clamped at -100, as torch)."""
    check_reduction(reduction)
    xd, td = input._data, target._data
    if xd.dtype != td.dtype:
        raise RuntimeError(f"Found dtype {torch_dtype_name(td.dtype)} but expected {torch_dtype_name(xd.dtype)}")
    if xd.dtype.kind != "f":
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{torch_dtype_name(xd.dtype)}'")
    if xd.size and (np.min(xd) < 0 or np.max(xd) > 1):  # NaN passes, as in torch
        raise RuntimeError("all elements of input should be between 0 and 1")
    if td.size and (np.min(td) < 0 or np.max(td) > 1):
        raise RuntimeError("all elements of target should be between 0 and 1")
    w = _no_grad_argument("weight", "binary_cross_entropy", weight)
    if w is not None:
        w = np.broadcast_to(w, broadcast_shapes(td.shape, w.shape)).astype(xd.dtype, copy=False)
    with np.errstate(divide="ignore"):
        loss = -(td * np.maximum(np.log(xd), -100.0) + (1 - td) * np.maximum(np.log1p(-xd), -100.0))
    return _finish(BinaryCrossEntropyBackward0, input, target, loss.astype(xd.dtype, copy=False), reduction, w)


@LOSS.op(nodes=(BinaryCrossEntropyWithLogitsBackward0,), method=False, export=False)
def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight: Tensor | None = None, pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``reduce(-w (pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))))`` on logits ``x``, computed stably."""
    check_reduction(reduction)
    op = "binary_cross_entropy_with_logits"
    w = _no_grad_argument("weight", op, weight)
    pw = _no_grad_argument("pos_weight", op, pos_weight)
    x, t = _operands(input, target)
    if x.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {torch_dtype_name(x.dtype)}")
    softplus_neg = np.logaddexp(0, -x)  # -log sigmoid(x)
    if pw is not None:
        broadcast_shapes(pw.shape, t.shape)
        pw = pw.astype(x.dtype, copy=False)
        loss = (1 - t) * x + ((pw - 1) * t + 1) * softplus_neg
    else:
        loss = (1 - t) * x + softplus_neg
    if w is not None:
        w = w.astype(x.dtype, copy=False)
    return _finish(BinaryCrossEntropyWithLogitsBackward0, input, target, loss.astype(x.dtype, copy=False),
                   reduction, w, pw)


# ----- nll_loss ----------------------------------------------------------------------------

class NllLossBackward0(Node):
    """The gradient is ``g`` (broadcast) times a constant: -weight[target] at each target
    position (scaled by 1/total_weight for 'mean'), zero elsewhere; linear in ``g``."""

    __slots__ = ("coef", "g_shape")
    coef: np.ndarray
    g_shape: Shape | None

    def __init__(self, coef: np.ndarray, g_shape: Shape | None) -> None:
        self._init_node()
        self.coef = coef
        self.g_shape = g_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if self.g_shape is not None:
            g = g.reshape(self.g_shape)
        return (g * self.coef,)


@LOSS.op(nodes=(NllLossBackward0,), method=False)
def nll_loss(
    input: Tensor, target: Any, weight: Tensor | None = None, ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class-index ``target`` under log-probabilities ``input``.

    ``input`` is (C,), (N, C) or (N, C, d1, ...); ``target`` holds class indices of
    shape (), (N,) or (N, d1, ...). ``weight`` rescales each class; targets equal
    to ``ignore_index`` contribute nothing. ``reduction='mean'`` divides by the
    sum of the weights of the non-ignored targets (as torch).
    """
    check_reduction(reduction)
    xd = input._data
    td = target._data if isinstance(target, Tensor) else np.asarray(target)
    if td.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected scalar type Long but found {torch_dtype_name(td.dtype)}"
        )
    if xd.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {xd.ndim})")
    if xd.ndim == 1:
        if td.ndim != 0:
            if td.ndim == 1 and td.shape[0] != 1:
                raise ValueError(
                    f"Expected input batch_size (1) to match target batch_size ({td.shape[0]})."
                )
        x2 = xd.reshape(1, -1)
        t2 = td.reshape(1)
    else:
        if td.ndim == 0 or xd.shape[0] != td.shape[0]:
            raise ValueError(
                f"Expected input batch_size ({xd.shape[0]}) to match target batch_size "
                f"({td.shape[0] if td.ndim else 0})."
            )
        if td.shape[1:] != xd.shape[2:]:
            raise RuntimeError(
                f"Expected target size {[xd.shape[0]] + list(xd.shape[2:])}, got {list(td.shape)}"
            )
        x2, t2 = xd, td
    C = x2.shape[1]
    valid = t2 != ignore_index
    safe = np.where(valid, t2, 0)
    bad = valid & ((t2 < 0) | (t2 >= C))
    if bad.any():
        raise IndexError(f"Target {int(t2[bad].flat[0])} is out of bounds.")
    if weight is not None:
        wd = weight._data if isinstance(weight, Tensor) else np.asarray(weight)
        if wd.shape != (C,):
            raise RuntimeError(
                f"weight tensor should be defined either for all {C} classes or no classes but got "
                f"weight tensor of shape: {list(wd.shape)}"
            )
        w = wd[safe].astype(x2.dtype, copy=False) * valid
    else:
        w = valid.astype(x2.dtype)
    picked = np.take_along_axis(x2, safe[:, None], axis=1)[:, 0]
    losses = -picked * w
    scale: Any = 1.0
    if reduction == "none":
        res = losses if xd.ndim > 1 else losses.reshape(())
    elif reduction == "sum":
        res = losses.sum()
    else:
        total = w.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            res = losses.sum() / total  # 0/0 = nan when every target is ignored, as torch
            scale = np.reciprocal(total)
    out = wrap(np.asarray(res, dtype=xd.dtype), input._device)
    if input._requires_grad and grad_enabled():
        # Only the targets that count get a coefficient (as torch writes only those): with every
        # target ignored the gradient is 0, not 0 * (1 / 0); a counted target of weight 0 with a
        # total weight of 0 gets 0 * inf = NaN, as torch's.
        with np.errstate(invalid="ignore"):
            picked_coef = np.where(valid, -w * scale, 0).astype(xd.dtype, copy=False)
        coef = np.zeros(x2.shape, dtype=xd.dtype)
        np.put_along_axis(coef, safe[:, None], picked_coef[:, None], axis=1)
        g_shape = (x2.shape[0], 1) + x2.shape[2:] if reduction == "none" and xd.ndim > 1 else None
        link_one(NllLossBackward0(coef.reshape(xd.shape), g_shape), input, out)
    return out


__all__ = LOSS.exports(__name__)
