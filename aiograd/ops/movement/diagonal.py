"""Diagonals and triangles, and their derivative rules: diagonal (a view), diagonal_scatter,
diag, diag_embed, diagflat, tril/triu, tril_indices/triu_indices, trace.

NOTE [Diagonal adjoint pair]: ``diagonal`` reads the elements ``x[..., i, ..., i + offset, ...]``
and ``diag_embed``/``diagonal_scatter`` write them, so each rule is the other's adjoint:
the gradient of diagonal is the gradient written into zeros by ``diagonal_scatter``, and the
gradient of diag_embed is the gradient's diagonal. Both are differentiable ops here, so a
create_graph pass runs them and gets every higher derivative (as the index ops do, NOTE
[Index adjoint pair] in ops/indexing/index.py). The elements are reached with one strided view
(``diagonal_view``), in the forward (torch's diagonal is a writable view) and in the rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...autograd.graph import Node, Shape, link_one, record
from ...device import DeviceLike
from ...tensor import DTypeLike, Tensor, _make, _resolve_dtype, new_tensor
from .._common import common_device, grad_enabled, needs_grad
from .._table import OpTable
from ..._dtypes import torch_dtype_name as _torch_dtype_name
from .shape import _index, _wrap_dim, make_view, reshape

DIAGONAL = OpTable("movement.diagonal")


def diagonal_view(arr: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    """The diagonal of ``arr`` over dims ``d1``, ``d2`` (wrapped, distinct) as a view: those dims
    removed and the diagonal appended as the last dim (writable when ``arr`` is)."""
    n1, n2 = arr.shape[d1], arr.shape[d2]
    idx = [slice(None)] * arr.ndim
    if offset >= 0:
        n = max(0, min(n1, n2 - offset))
        idx[d2] = slice(min(offset, n2), None)
    else:
        n = max(0, min(n1 + offset, n2))
        idx[d1] = slice(min(-offset, n1), None)
    a = arr[tuple(idx)]
    rest = [k for k in range(arr.ndim) if k not in (d1, d2)]
    shape = tuple(a.shape[k] for k in rest) + (n,)
    strides = tuple(a.strides[k] for k in rest) + (a.strides[d1] + a.strides[d2],)
    return as_strided(a, shape, strides, writeable=a.flags.writeable)


def _diag_dims(nd: int, dim1: int, dim2: int) -> tuple[int, int]:
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


class _OnDiagonal(Node):
    """A node whose rule reads or writes the diagonal ``offset`` over ``dim1``, ``dim2``."""

    __slots__ = ("offset", "dim1", "dim2")
    offset: int
    dim1: int
    dim2: int

    def __init__(self, offset: int, dim1: int, dim2: int) -> None:
        self._init_node()
        self.offset = offset
        self.dim1 = dim1
        self.dim2 = dim2


class DiagonalBackward0(_OnDiagonal):
    """Gradient of a diagonal: written into zeros of the input's shape (NOTE [Diagonal adjoint pair])."""

    __slots__ = ("in_shape",)
    in_shape: Shape

    def __init__(self, offset: int, dim1: int, dim2: int, in_shape: Shape) -> None:
        self._init_node()
        self.offset = offset
        self.dim1 = dim1
        self.dim2 = dim2
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            zeros = Tensor._wrap(np.zeros(self.in_shape, g._data.dtype), g._device)
            return (diagonal_scatter(zeros, g, self.offset, self.dim1, self.dim2),)
        gi = np.zeros(self.in_shape, g.dtype)
        diagonal_view(gi, self.offset, self.dim1, self.dim2)[...] = g
        return (gi,)


class DiagonalBackward0_copy(DiagonalBackward0):  # noqa: N801 - torch's name (diag of a matrix)
    __slots__ = ()


def _np_diagonal(a: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    return diagonal(a, offset, axis1, axis2)


@DIAGONAL.op(nodes=(DiagonalBackward0,), functions=((np.diagonal, _np_diagonal),))
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal over ``dim1`` and ``dim2`` (above the main one for ``offset > 0``, below for
    ``offset < 0``) as a writable view, appended as the last dim."""
    offset = _index(offset, "offset")
    d1, d2 = _diag_dims(input.ndim, dim1, dim2)
    out = make_view(input, diagonal_view(input._data, offset, d1, d2))
    if input._requires_grad and grad_enabled():
        link_one(DiagonalBackward0(offset, d1, d2, input._data.shape), input, out)
    return out


class DiagonalScatterBackward0(_OnDiagonal):
    """Gradient of ``out = input; diagonal(out) = src``: input gets the gradient off the diagonal,
    src the gradient's diagonal."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        gi: Any = None
        gs: Any = None
        if g.__class__ is Tensor:
            if self.should_compute_output(1):
                gs = diagonal(g, self.offset, self.dim1, self.dim2)
            if self.should_compute_output(0):
                shape = diagonal_view(g._data, self.offset, self.dim1, self.dim2).shape
                zeros = Tensor._wrap(np.zeros(shape, g._data.dtype), g._device)
                gi = diagonal_scatter(g, zeros, self.offset, self.dim1, self.dim2)
            return gi, gs
        view = diagonal_view(g, self.offset, self.dim1, self.dim2)
        if self.should_compute_output(1):
            gs = view.copy()
        if self.should_compute_output(0):
            gi = np.array(g)
            diagonal_view(gi, self.offset, self.dim1, self.dim2)[...] = 0
        return gi, gs


@DIAGONAL.op(nodes=(DiagonalScatterBackward0,))
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on its diagonal (as ``diagonal`` reads it)."""
    offset = _index(offset, "offset")
    d1, d2 = _diag_dims(input.ndim, dim1, dim2)
    device = common_device(input, src)
    res = np.array(input._data)
    view = diagonal_view(res, offset, d1, d2)
    if src.shape != view.shape:
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, slice size = "
            f"{list(view.shape)}"
        )
    view[...] = src._data
    out = new_tensor(res, device)
    if needs_grad(input, src):
        record(DiagonalScatterBackward0(offset, d1, d2), (input, src), (out,))
    return out


class DiagEmbedBackward0(_OnDiagonal):
    """Gradient of diag_embed: the gradient's diagonal (NOTE [Diagonal adjoint pair])."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            return (diagonal(g, self.offset, self.dim1, self.dim2),)
        return (diagonal_view(g, self.offset, self.dim1, self.dim2).copy(),)


def _embed(input: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    xd = input._data
    n = (xd.shape[-1] if xd.ndim else 1) + abs(offset)
    rest = list(xd.shape[:-1])
    shape = []
    for k in range(xd.ndim + 1):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    res = np.zeros(shape, xd.dtype)
    diagonal_view(res, offset, d1, d2)[...] = xd
    out = new_tensor(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(DiagEmbedBackward0(offset, d1, d2), input, out)
    return out


@DIAGONAL.op(nodes=(DiagEmbedBackward0,))
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose diagonals (over the new dims ``dim1``, ``dim2``) are ``input``'s last dim, zeros elsewhere."""
    offset = _index(offset, "offset")
    d1, d2 = _diag_dims(input.ndim + 1, dim1, dim2)
    return _embed(input, offset, d1, d2)


@DIAGONAL.op(nodes=(DiagEmbedBackward0, DiagonalBackward0_copy), functions=(np.diag,))
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d input as the ``diagonal``-th diagonal of a square matrix; a 2-d input's
    ``diagonal``-th diagonal, as a new 1-d tensor."""
    k = _index(diagonal, "diagonal")
    if input.ndim == 1:
        return _embed(input, k, 0, 1)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    out = new_tensor(diagonal_view(input._data, k, 0, 1).copy(), input._device)
    if input._requires_grad and grad_enabled():
        link_one(DiagonalBackward0_copy(k, 0, 1, input._data.shape), input, out)
    return out


def _np_diagflat(v: Tensor, k: int = 0) -> Tensor:
    return diagflat(v, k)


@DIAGONAL.op(nodes=(DiagEmbedBackward0,), functions=((np.diagflat, _np_diagflat),))
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input as the ``offset``-th diagonal of a square matrix."""
    return _embed(reshape(input, (-1,)), _index(offset, "offset"), 0, 1)


# ----- triangles -------------------------------------------------------------------------------


class TrilBackward0(Node):
    __slots__ = ("diagonal",)
    diagonal: int

    def __init__(self, diagonal: int) -> None:
        self._init_node()
        self.diagonal = diagonal

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (np.tril(grads[0], self.diagonal),)


class TriuBackward0(Node):
    __slots__ = ("diagonal",)
    diagonal: int

    def __init__(self, diagonal: int) -> None:
        self._init_node()
        self.diagonal = diagonal

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (np.triu(grads[0], self.diagonal),)


def _triangle(input: Tensor, diagonal: int, op: str) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    k = _index(diagonal, "diagonal")
    fn, node = (np.tril, TrilBackward0) if op == "tril" else (np.triu, TriuBackward0)
    out = new_tensor(fn(input._data, k), input._device)
    if input._requires_grad and grad_enabled():
        link_one(node(k), input, out)
    return out


def _np_tri(name: str) -> Any:
    def adapter(m: Tensor, k: int = 0) -> Tensor:
        return _triangle(m, k, name)

    return adapter


@DIAGONAL.op(nodes=(TrilBackward0,), functions=((np.tril, _np_tri("tril")),))
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below the ``diagonal``-th diagonal), zeros above."""
    return _triangle(input, diagonal, "tril")


@DIAGONAL.op(nodes=(TriuBackward0,), functions=((np.triu, _np_tri("triu")),))
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above the ``diagonal``-th diagonal), zeros below."""
    return _triangle(input, diagonal, "triu")


def _indices(op: str, row: int, col: int, offset: int, dtype: DTypeLike, device: DeviceLike | None) -> Tensor:
    row, col, offset = _index(row, "row"), _index(col, "col"), _index(offset, "offset")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = _resolve_dtype(dtype) or np.dtype(np.int64)
    if dt.kind not in "iu":
        raise NotImplementedError(f"\"{op}\" not implemented for '{_torch_dtype_name(dt)}'")
    fn = np.tril_indices if op == "tril_indices" else np.triu_indices
    rows, cols = fn(row, offset, col)
    return _make(np.stack([rows, cols]).astype(dt), device, False)


@DIAGONAL.op(method=False)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: DTypeLike = None,
                 device: DeviceLike | None = None) -> Tensor:
    """The (row, column) indices of the lower triangle of a ``row`` x ``col`` matrix, as a 2 x N
    int64 tensor in row-major order (``offset`` shifts the diagonal as in tril)."""
    return _indices("tril_indices", row, col, offset, dtype, device)


@DIAGONAL.op(method=False)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: DTypeLike = None,
                 device: DeviceLike | None = None) -> Tensor:
    """The (row, column) indices of the upper triangle of a ``row`` x ``col`` matrix (see tril_indices)."""
    return _indices("triu_indices", row, col, offset, dtype, device)


# ----- trace -----------------------------------------------------------------------------------


class TraceBackward0(Node):
    """``g`` on the diagonal of a matrix of the input's shape, zeros elsewhere."""

    __slots__ = ("in_shape",)
    in_shape: Shape

    def __init__(self, in_shape: Shape) -> None:
        self._init_node()
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            return (g * Tensor._wrap(np.eye(*self.in_shape, dtype=g._data.dtype), g._device),)
        gi = np.zeros(self.in_shape, g.dtype)
        diagonal_view(gi, 0, 0, 1)[...] = g
        return (gi,)


def _np_trace(a: Tensor, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    if dtype is not None or out is not None:
        return NotImplemented
    if offset == 0 and a.ndim == 2 and {_wrap_dim(axis1, 2), _wrap_dim(axis2, 2)} == {0, 1}:
        return trace(a)
    return diagonal(a, offset, axis1, axis2).sum(-1)


@DIAGONAL.op(nodes=(TraceBackward0,), functions=((np.trace, _np_trace),))
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal (integer inputs sum to int64, as torch)."""
    xd = input._data
    if xd.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {xd.ndim}")
    if xd.dtype == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    dt = np.int64 if xd.dtype.kind in "iu" else xd.dtype
    out = new_tensor(np.asarray(np.trace(xd, dtype=dt)), input._device)
    if input._requires_grad and grad_enabled():
        link_one(TraceBackward0(xd.shape), input, out)
    return out


__all__ = DIAGONAL.exports(__name__)
