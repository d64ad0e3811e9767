"""Scans along one dim and their derivative rules: cumsum, cumprod, logcumsumexp, cummax, cummin.

Each rule is written in numpy terms (``np.flip``, ``np.cumsum``, ``np.where``...) so that it
also serves create_graph passes, where numpy hands those calls to the differentiable ops
(NOTE [One rule for both modes] in _common.py); a rule that must tell the two modes apart
says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import return_types
from ...autograd.graph import Node, Shape, link_one
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor, _resolve_dtype
from .._common import grad_enabled, torch_dtype_name, wrap
from .._table import OpTable
from ..pointwise.elementwise import where
from .reduce import accumulation_dtype
from ..movement.shape import _wrap_dim, movedim

SCAN = OpTable("reduction.scan")


def _accumulated(fn: Any, input: Tensor, dim: int, dtype: Any) -> tuple[Tensor, int, bool]:
    """(``fn(input)`` along ``dim``, the dim in range, whether the result can have a gradient), in
    torch's dtype: ``dtype`` if given, int64 for integers and bools; float16 accumulates in float32."""
    xd = input._data
    d = _wrap_dim(dim, xd.ndim)
    if dtype is not None:
        ad = xd.astype(_resolve_dtype(dtype), copy=False)
    else:
        ad = xd.astype(np.int64) if xd.dtype.kind in "biu" else xd
    res = fn(ad, axis=d, dtype=accumulation_dtype(ad.dtype)) if xd.ndim else ad.copy()
    out = wrap(res.astype(ad.dtype, copy=False), input._device)
    return out, d, input._requires_grad and ad.dtype.kind in "fc" and grad_enabled()


def _reverse_cumsum(g: Any, dim: int) -> Any:
    """``sum_{j >= i} g_j`` along ``dim`` (numpy terms: a Tensor in a create_graph pass)."""
    return np.flip(np.cumsum(np.flip(g, dim), axis=dim), dim)


def _as_input_dtype(g: Any, dtype: np.dtype) -> Any:
    """The gradient in the input's dtype (a scan with ``dtype=`` computed in another)."""
    if g.dtype == dtype:
        return g
    return g.to(dtype) if isinstance(g, Tensor) else g.astype(dtype)


# ----- cumsum --------------------------------------------------------------------------------------


class CumsumBackward0(Node):
    """``g`` summed from the end: ``grad_i = sum_{j >= i} g_j``."""

    __slots__ = ("dim", "dtype")
    dim: int
    dtype: np.dtype

    def __init__(self, dim: int, dtype: np.dtype) -> None:
        self._init_node()
        self.dim = dim
        self.dtype = dtype

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = _as_input_dtype(grads[0], self.dtype)
        return (g if g.ndim == 0 else _reverse_cumsum(g, self.dim),)


def _np_cumsum(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
    return cumsum(a.reshape(-1), 0, dtype=dtype) if axis is None else cumsum(a, axis, dtype=dtype)


@SCAN.op(nodes=(CumsumBackward0,), functions=((np.cumsum, _np_cumsum),))
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along ``dim``; bool and integer inputs give int64 unless ``dtype`` says otherwise."""
    out, d, differentiable = _accumulated(np.cumsum, input, dim, dtype)
    if differentiable:
        link_one(CumsumBackward0(d, input._data.dtype), input, out)
    return out


# ----- cumprod -------------------------------------------------------------------------------------


def _cumprod_grad_numpy(g: np.ndarray, x: np.ndarray, out: np.ndarray, dim: int) -> np.ndarray:
    """``grad_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i``, exactly, also with zeros in ``x``.

    Without zeros it is ``reverse_cumsum(g * out) / x``. With a first zero at z in a row:
    elements before z keep that formula (the products past z are 0), element z gets
    ``out_{z-1} * sum_{j >= z} g_j prod_{z < i <= j} x_i``, and elements after z get 0.
    """
    gm, xm, om = (np.moveaxis(a, dim, -1) for a in (g, x, out))
    n = xm.shape[-1]
    pos = np.arange(n)
    zero = xm == 0
    z = np.where(zero.any(-1), zero.argmax(-1), n)[..., None]  # first zero of each row (n: none)
    before = pos < z
    with np.errstate(divide="ignore", invalid="ignore"):
        gi = np.where(before, _reverse_cumsum(gm * om, -1) / np.where(before, xm, 1), 0)
    rows = z[..., 0] < n
    if rows.any():
        tail = np.cumprod(np.where(pos <= z, 1, xm), axis=-1)  # prod_{z < i <= j} x_i
        s = np.sum(np.where(pos >= z, gm * tail, 0), axis=-1)
        prev = np.take_along_axis(om, np.maximum(z - 1, 0), axis=-1)[..., 0]
        at_z = np.where(z[..., 0] > 0, prev, 1) * s
        zc = np.minimum(z, n - 1)  # rows without a zero keep what they have there
        keep = np.take_along_axis(gi, zc, axis=-1)[..., 0]
        np.put_along_axis(gi, zc, np.where(rows, at_z, keep)[..., None], axis=-1)
    return np.moveaxis(gi.astype(g.dtype, copy=False), -1, dim)


def _cumprod_grad_graph(g: Tensor, x: Tensor, dim: int) -> Tensor:
    """``_cumprod_grad_numpy`` with differentiable ops, for a create_graph pass through zeros:
    row k of an (n, n) stack is x with x_k replaced by 1, and its running product at j (j >= k)
    is the product of the others."""
    xm = movedim(x, dim, -1)
    gm = movedim(g, dim, -1)
    n = xm.shape[-1]
    stack = where(np.eye(n, dtype=bool), 1.0, xm.unsqueeze(-2))
    others = cumprod(stack, -1) * np.triu(np.ones((n, n), dtype=bool))
    return movedim((others * gm.unsqueeze(-2)).sum(-1), -1, dim)


class CumprodBackward0(Node):
    """``grad_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i``: ``reverse_cumsum(g * out) / x``
    without zeros, exact with them (as torch)."""

    __slots__ = ("x", "result", "dim", "dtype")
    x: Saved
    result: Saved
    dim: int
    dtype: np.dtype

    def __init__(self, x: Saved, result: Saved, dim: int, dtype: np.dtype) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.dim = dim
        self.dtype = dtype

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = _as_input_dtype(grads[0], self.dtype)
        graph = g.__class__ is Tensor
        if g.ndim == 0 or g.shape[self.dim] <= 1:
            return (g,)
        x = unpack(self, self.x, graph)
        out = unpack(self, self.result, graph)
        if graph:
            out = _as_input_dtype(out, self.dtype)
            if (x._data != 0).all():
                return (_reverse_cumsum(g * out, self.dim) / x,)
            return (_cumprod_grad_graph(g, x, self.dim),)
        return (_cumprod_grad_numpy(g, x, out.astype(self.dtype, copy=False), self.dim),)


def _np_cumprod(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
    return cumprod(a.reshape(-1), 0, dtype=dtype) if axis is None else cumprod(a, axis, dtype=dtype)


@SCAN.op(nodes=(CumprodBackward0,), functions=((np.cumprod, _np_cumprod),))
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along ``dim`` (int64 for bool and integer inputs unless ``dtype``); the
    gradient is exact where the input has zeros."""
    out, d, differentiable = _accumulated(np.cumprod, input, dim, dtype)
    if differentiable:
        link_one(CumprodBackward0(save(input), save_output(out), d, input._data.dtype), input, out)
    return out


# ----- logcumsumexp --------------------------------------------------------------------------------


def _logcumsumexp_any(v: Any, dim: int) -> Any:
    if isinstance(v, Tensor):
        return logcumsumexp(v, dim)
    return np.logaddexp.accumulate(v, axis=dim) if v.ndim else v


def _reverse_logcumsumexp(v: Any, dim: int) -> Any:
    return np.flip(_logcumsumexp_any(np.flip(v, dim), dim), dim)


class LogcumsumexpBackward0(Node):
    """``grad_k = sum_{j >= k} g_j exp(x_k - out_j)``, computed in log space as torch does: the
    positive and negative parts of ``g`` separately, each by a reverse logcumsumexp."""

    __slots__ = ("x", "result", "dim")
    x: Saved
    result: Saved
    dim: int

    def __init__(self, x: Saved, result: Saved, dim: int) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.dim = dim

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        if g.ndim == 0 or g.size == 0:
            return (g,)
        x = unpack(self, self.x, graph)
        out = unpack(self, self.result, graph)
        lowest = np.finfo(g.dtype).min
        gd = g._data if graph else g
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_abs = np.log(np.abs(g))
            parts = [np.where(mask, log_abs, lowest) for mask in (gd > 0, gd < 0)]
            pos, neg = (np.exp(_reverse_logcumsumexp(p - out, self.dim) + x) for p in parts)
            return (pos - neg,)


@SCAN.op(nodes=(LogcumsumexpBackward0,))
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably (pairwise log-add-exp); floating inputs only."""
    xd = input._data
    d = _wrap_dim(dim, xd.ndim)
    if xd.dtype.kind not in "f":
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for \'{torch_dtype_name(xd.dtype)}\'')
    out = wrap(np.logaddexp.accumulate(xd, axis=d) if xd.ndim else xd.copy(), input._device)
    if input._requires_grad and grad_enabled():
        link_one(LogcumsumexpBackward0(save(input), save_output(out), d), input, out)
    return out


# ----- cummax, cummin ------------------------------------------------------------------------------


class CummaxBackward0(Node):
    """Each output's gradient goes to the input element it came from (``indices``), summed."""

    __slots__ = ("indices", "in_shape", "dim")
    indices: np.ndarray
    in_shape: Shape
    dim: int

    def __init__(self, indices: np.ndarray, in_shape: Shape, dim: int) -> None:
        self._init_node()
        self.indices = indices
        self.in_shape = in_shape
        self.dim = dim

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        if not self.in_shape:
            return (g,)
        if g.__class__ is Tensor:
            zeros = Tensor._wrap(np.zeros(self.in_shape, g.dtype), g._device)
            return (zeros.scatter_add(self.dim, self.indices, g),)
        gi = np.zeros(self.in_shape, g.dtype)
        grid: list[Any] = list(np.indices(self.indices.shape, sparse=True))
        grid[self.dim] = self.indices  # each element's own position, but along dim where it came from
        np.add.at(gi, tuple(grid), g)
        return (gi,)


class CumminBackward0(CummaxBackward0):
    __slots__ = ()


def _cumulative_extremum(name: str, input: Tensor, dim: int, accumulate: Any, node_cls: type[CummaxBackward0],
                         ret: type) -> Any:
    """Running max/min along ``dim`` and where each came from: the last index at which the running
    value was reached (ties move the index on, as torch), and once a NaN is met, the last NaN."""
    xd = input._data
    d = _wrap_dim(dim, xd.ndim)
    if not xd.ndim:
        values, indices = xd.copy(), np.zeros((), np.int64)
    else:
        values = accumulate.accumulate(xd, axis=d)
        reached = xd == values
        if xd.dtype.kind in "fc":
            reached |= np.isnan(xd)
        pos = np.arange(xd.shape[d]).reshape((-1,) + (1,) * (xd.ndim - d - 1))
        indices = np.maximum.accumulate(np.where(reached, pos, 0), axis=d).astype(np.int64, copy=False)
    vt = wrap(values, input._device)
    it = wrap(indices, input._device)
    if input._requires_grad and grad_enabled() and xd.dtype.kind in "fc":
        link_one(node_cls(indices, xd.shape, d), input, vt)
    return ret(vt, it)


@SCAN.op(nodes=(CummaxBackward0,))
def cummax(input: Tensor, dim: int) -> return_types.cummax:
    """``(values, indices)``: the running maximum along ``dim`` (NaN propagates) and the index each
    value came from (the latest of equal ones, as torch)."""
    return _cumulative_extremum("cummax", input, dim, np.maximum, CummaxBackward0,
                                return_types.cummax)


@SCAN.op(nodes=(CumminBackward0,))
def cummin(input: Tensor, dim: int) -> return_types.cummin:
    """``(values, indices)``: the running minimum along ``dim`` (NaN propagates) and where each came from."""
    return _cumulative_extremum("cummin", input, dim, np.minimum, CumminBackward0,
                                return_types.cummin)


__all__ = SCAN.exports(__name__)
