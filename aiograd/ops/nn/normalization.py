"""Normalization layers: layer_norm, batch_norm (training and evaluation, running statistics)
and group_norm, each one fused node with torch's name.

NOTE [Normalization gradient]: the three normalize ``x`` over some axes of a view
of it (layer norm: the trailing dims; group norm: (N, G, rest) over ``rest``;
batch norm: every dim but the channels), then scale and shift by a weight and
bias that broadcast against ``x``. With ``xhat`` the normalized input and
``gh = g * weight`` (in the view), one formula gives the input's gradient:

    gx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))      (means over the axes)

and ``gw = sum(g * xhat)``, ``gb = sum(g)`` over the dims the weight broadcasts
along. An ordinary pass reuses the forward's ``xhat`` and ``rstd``; a
create_graph pass recomputes the statistics from the saved input with
differentiable ops, so the same lines give second derivatives. Batch norm in
evaluation mode normalizes by constants: ``gx = g * weight * rstd``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.graph import Node, Shape, record
from ...autograd.saved import Saved, SavedArray, save, unpack
from ...tensor import Tensor
from .._common import needs_grad, wrap
from ._nn_common import float_data
from .._table import OpTable
from ..movement.shape import int_tuple

NORM = OpTable("nn.normalization")


class _NormBackward(Node):
    """NOTE [Normalization gradient]."""

    __slots__ = ("x", "w", "xhat", "rstd", "v_shape", "axes", "w_view", "w_shape", "sum_axes", "eps", "batch_stats")
    x: Saved
    w: Saved
    xhat: SavedArray  #: the normalized input (ordinary passes)
    rstd: SavedArray  #: 1 / sqrt(var + eps), shaped to broadcast in the view
    v_shape: Shape  #: the view the statistics are taken in
    axes: tuple[int, ...]  #: the normalized axes of the view
    w_view: Shape  #: the weight's shape broadcast against x
    w_shape: Shape  #: the weight's (and bias's) own shape
    sum_axes: tuple[int, ...]  #: the axes of x the weight's and bias's gradients sum over
    eps: float
    batch_stats: bool  #: the statistics come from the input (else: constants, batch norm in evaluation)

    def __init__(
        self,
        x: Saved,
        w: Saved,
        xhat: SavedArray,
        rstd: SavedArray,
        v_shape: Shape,
        axes: tuple[int, ...],
        w_view: Shape,
        w_shape: Shape,
        sum_axes: tuple[int, ...],
        eps: float,
        batch_stats: bool,
    ) -> None:
        self._init_node()
        self.x = x
        self.w = w
        self.xhat = xhat
        self.rstd = rstd
        self.v_shape = v_shape
        self.axes = axes
        self.w_view = w_view
        self.w_shape = w_shape
        self.sum_axes = sum_axes
        self.eps = eps
        self.batch_stats = batch_stats

    def release_variables(self) -> None:
        self.x = None
        self.w = None
        self.xhat = None
        self.rstd = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        axes = self.axes
        x_shape = g.shape
        rstd: Any = self.rstd
        if graph:
            x = unpack(self, self.x, True)
            xv = x.reshape(self.v_shape)
            if self.batch_stats:  # recompute the statistics differentiably
                xc = xv - np.mean(xv, axis=axes, keepdims=True)
                rstd = 1.0 / np.sqrt(np.mean(xc * xc, axis=axes, keepdims=True) + self.eps)
                xhat = (xc * rstd).reshape(x_shape)
            else:
                xhat = (xv - self.xhat) * rstd  # xhat holds the running mean here
                xhat = xhat.reshape(x_shape)
        else:
            if self.xhat is None:
                unpack(self, None, False)  # released: the "backward through the graph a second time" error
            unpack(self, self.x, False)  # the in-place check
            xhat = self.xhat if self.batch_stats else None
        w = unpack(self, self.w, graph).reshape(self.w_view) if self.w is not None else None
        gx = gw = gb = None
        if self.should_compute_output(0):
            gh = g * w if w is not None else g
            if self.batch_stats and not graph and _trailing(self.v_shape, axes):
                gx = _input_grad_rows(gh, xhat, rstd, self.v_shape, axes)
            elif self.batch_stats:
                ghv = gh.reshape(self.v_shape)
                xhv = xhat.reshape(self.v_shape)
                gx = (rstd * (ghv - np.mean(ghv, axis=axes, keepdims=True)
                              - xhv * np.mean(ghv * xhv, axis=axes, keepdims=True))).reshape(x_shape)
            else:
                gx = (gh.reshape(self.v_shape) * rstd).reshape(x_shape)
        if self.should_compute_output(1):
            if xhat is None:  # evaluation mode, ordinary pass: xhat from the saved input and constants
                x = unpack(self, self.x, False)
                xhat = ((x.reshape(self.v_shape) - self.xhat) * rstd).reshape(x_shape)
            if not graph and _leading(self.sum_axes, len(x_shape)):  # layer norm: one pass, no product array
                wsize = int(np.prod(self.w_shape))
                gw = np.einsum("ij,ij->j", g.reshape(-1, wsize), xhat.reshape(-1, wsize)).reshape(self.w_shape)
            else:
                gw = _sum_to_weight(g * xhat, self.sum_axes, self.w_shape)
        if self.should_compute_output(2):
            gb = _sum_to_weight(g, self.sum_axes, self.w_shape)
        return gx, gw, gb


def _trailing(shape: Shape, axes: tuple[int, ...]) -> bool:
    """Whether ``axes`` are the last dims of ``shape`` (the statistics are per row of a 2-D view)."""
    return axes == tuple(range(len(shape) - len(axes), len(shape)))


def _leading(axes: tuple[int, ...], ndim: int) -> bool:
    return bool(axes) and axes == tuple(range(len(axes))) and len(axes) < ndim


def _input_grad_rows(gh: np.ndarray, xhat: np.ndarray, rstd: np.ndarray, v_shape: Shape, axes: tuple[int, ...]) -> np.ndarray:
    """NOTE [Normalization gradient]'s ``gx`` with the statistics per row of a 2-D view: the two row means
    by a sum and an einsum, the rest in place (fewer passes and temporaries than the general form)."""
    n = int(np.prod([v_shape[a] for a in axes]))
    gh2 = gh.reshape(-1, n)
    xh2 = xhat.reshape(-1, n)
    m1 = gh2.sum(axis=1, keepdims=True)
    m1 *= 1.0 / n
    m2 = np.einsum("ij,ij->i", gh2, xh2)[:, None]
    m2 *= 1.0 / n
    gx = xh2 * m2
    np.subtract(gh2, gx, out=gx)
    gx -= m1
    gx *= rstd.reshape(-1, 1)
    return gx.reshape(gh.shape)


def _sum_to_weight(v: Any, axes: tuple[int, ...], shape: Shape) -> Any:
    s = np.sum(v, axis=axes) if axes else v
    return s.reshape(shape) if s.shape != shape else s


class NativeLayerNormBackward0(_NormBackward):
    __slots__ = ()


class NativeBatchNormBackward0(_NormBackward):
    __slots__ = ()


class NativeGroupNormBackward0(_NormBackward):
    __slots__ = ()


def _normalize(xv: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(xhat, mean, biased var, rstd) of ``xv`` over ``axes`` (statistics with kept dims). Over trailing
    axes the variance is one einsum per row (no squared copy)."""
    mu = xv.mean(axis=axes, keepdims=True)
    xc = xv - mu
    if _trailing(xv.shape, axes):
        n = int(np.prod([xv.shape[a] for a in axes]))
        xc2 = xc.reshape(-1, n)
        var = np.einsum("ij,ij->i", xc2, xc2).reshape(mu.shape)
        var *= 1.0 / n
    else:
        var = np.mean(np.square(xc), axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xc *= rstd
    return xc, mu, var, rstd.astype(xv.dtype, copy=False)


def _affine(y: np.ndarray, weight: Tensor | None, bias: Tensor | None, view: Shape) -> np.ndarray:
    if weight is not None:
        y = y * weight._data.reshape(view)
    if bias is not None:
        if weight is None:
            y = y + bias._data.reshape(view)
        else:
            y += bias._data.reshape(view)
    return y


def _record(
    node_cls: type[_NormBackward], input: Tensor, weight: Tensor | None, bias: Tensor | None, y: np.ndarray,
    xhat: np.ndarray, rstd: np.ndarray, v_shape: Shape, axes: tuple[int, ...], w_view: Shape,
    sum_axes: tuple[int, ...], eps: float, batch_stats: bool = True,
) -> Tensor:
    xd = input._data
    out = wrap(y.astype(xd.dtype, copy=False), input._device)
    if needs_grad(input, weight, bias):
        affine = weight if weight is not None else bias
        node = node_cls(
            save(input), save(weight) if weight is not None else None, xhat, rstd, v_shape, axes, w_view,
            affine._data.shape if affine is not None else (), sum_axes, float(eps), batch_stats,
        )
        record(node, (input, weight, bias), (out,))
    return out


# ----- layer_norm ---------------------------------------------------------------------------------


@NORM.op(nodes=(NativeLayerNormBackward0,), method=False)
def layer_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    ns = int_tuple((normalized_shape,), "layer_norm", "normalized_shape")
    xd = float_data(input, "LayerNormKernelImpl")
    k = len(ns)
    if k == 0 or xd.ndim < k or xd.shape[xd.ndim - k:] != ns:
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*, {', '.join(map(str, ns))}], "
            f"but got input of size{list(xd.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != ns:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t._data.shape)} and normalized_shape = {list(ns)}"
            )
    axes = tuple(range(xd.ndim - k, xd.ndim))
    xhat, _, _, rstd = _normalize(xd, axes, eps)
    y = _affine(xhat, weight, bias, ns)
    return _record(NativeLayerNormBackward0, input, weight, bias, y, xhat, rstd, xd.shape, axes, ns,
                   tuple(range(xd.ndim - k)), eps)


# ----- batch_norm -----------------------------------------------------------------------------------


def _check_channels(name: str, t: Tensor | None, C: int) -> None:
    if t is not None and t._data.size != C:
        raise RuntimeError(f"{name} should contain {C} elements not {t._data.size}")


@NORM.op(nodes=(NativeBatchNormBackward0,), method=False, export=False)
def batch_norm(
    input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
    bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dim 1) of (N, C, ...) input: by the batch's statistics when ``training``
    (updating ``running_mean``/``running_var`` in place with ``momentum``, the variance unbiased, as
    torch), else by the running statistics."""
    xd = input._data
    if xd.ndim < 2 and xd.size:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    float_data(input, "batch_norm")
    if xd.size == 0:  # nothing to normalize (torch returns the empty input's shape)
        return input * 1.0
    C = xd.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_channels(name, t, C)
    view = (1, C) + (1,) * (xd.ndim - 2)
    axes = (0,) + tuple(range(2, xd.ndim))
    if training:
        n = xd.size // C if C else 0
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"torch.Size({list(xd.shape)})")
        xhat, mu, var, rstd = _normalize(xd, axes, eps)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    _blend(running_mean, mu.reshape(C), momentum)
                if running_var is not None:
                    _blend(running_var, var.reshape(C) * (n / (n - 1)), momentum)
        y = _affine(xhat, weight, bias, view)
        return _record(NativeBatchNormBackward0, input, weight, bias, y, xhat, rstd, xd.shape, axes, view, axes, eps)
    if running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")
    rm = running_mean._data.reshape(view).astype(xd.dtype, copy=False)
    rstd = (1.0 / np.sqrt(running_var._data.reshape(view) + eps)).astype(xd.dtype, copy=False)
    y = _affine((xd - rm) * rstd, weight, bias, view)
    # NOTE [Normalization gradient]: in evaluation mode the node's ``xhat`` field holds the running mean
    return _record(NativeBatchNormBackward0, input, weight, bias, y, rm, rstd, xd.shape, axes, view, axes, eps,
                   batch_stats=False)


def _blend(stat: Tensor, value: np.ndarray, momentum: float) -> None:
    """``stat = (1 - momentum) * stat + momentum * value`` in place (a running statistic)."""
    d = stat._data
    np.copyto(d, (1.0 - momentum) * d + momentum * value, casting="unsafe")
    stat._bump_version()


# ----- group_norm -----------------------------------------------------------------------------------


@NORM.op(nodes=(NativeGroupNormBackward0,), method=False)
def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5,
) -> Tensor:
    """Normalize each of ``num_groups`` groups of channels of (N, C, ...) input, then scale and shift per channel."""
    xd = input._data
    if xd.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {xd.ndim}")
    float_data(input, "GroupNormKernelImpl")
    N, C = xd.shape[:2]
    G = int(num_groups)
    if G <= 0 or C % G:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(xd.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != C):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got {name} "
                f"of shape {list(t._data.shape)} and input of shape {list(xd.shape)}"
            )
    if xd.size == 0:  # an empty batch: nothing to normalize
        return input * 1.0
    v_shape = (N, G, xd.size // (N * G))
    xv = xd.reshape(v_shape)
    xhat, _, _, rstd = _normalize(xv, (2,), eps)
    view = (1, C) + (1,) * (xd.ndim - 2)
    xhat = xhat.reshape(xd.shape)
    y = _affine(xhat, weight, bias, view)
    return _record(NativeGroupNormBackward0, input, weight, bias, y, xhat, rstd, v_shape, (2,), view,
                   (0,) + tuple(range(2, xd.ndim)), eps)


__all__ = NORM.exports(__name__)
