"""Sparse COO tensors: construction, conversion to and from dense, coalescing, the parts
(indices, values), and the sparse-aware products, sums and softmaxes of ``aiograd.sparse``,
each with torch's gradient.

A sparse tensor is a Tensor whose payload is a ``SparseCOO`` (NOTE [Sparse payload] in
aiograd/_sparse.py). The dense ops reach it through numpy's protocols: ``S @ D``,
``ag.mm``, ``ag.spmm``, ``S.t()`` and ``S.sum()`` run as dense ops (with torch's dense
gradient for ``S``), every other dense op raises NotImplementedError naming itself.

NOTE [Sparse gradients]: as in torch, the gradient of a sparse tensor has its
sparsity pattern where the op says so: ``to_dense``, ``values``, ``aiograd.sparse.mm``,
``aiograd.sparse.sum`` and ``aiograd.sparse.softmax`` give a sparse gradient with the
input's (coalesced) indices, while ``mm``/``matmul``/``@`` give a dense one. The
gradient of ``values`` given to ``sparse_coo_tensor`` is the incoming gradient read at
each entry's index (repeated indices each read it: their values add up in the
tensor). In an ordinary pass gradients are payloads (ndarray or SparseCOO); in a
``create_graph`` pass they are Tensors, and each rule below builds its result from
the differentiable ops of this module and the dense ones, so second derivatives
hold (``aiograd.sparse.softmax``/``log_softmax`` are first order only).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from .._sparse import SparseCOO, unsupported
from ..autograd.graph import Node, Shape, link_one, record
from ..autograd.saved import Saved, save, unpack
from ..device import CPU, Device
from ..tensor import Tensor, _resolve_dtype, _to_array, new_tensor
from ._common import grad_enabled, needs_grad, torch_dtype_name
from ._table import OpTable
from .linalg._products import MmBackward0, mm

__all__ = ["SPARSE", "sparse_coo_tensor", "spmm"]

SPARSE = OpTable("sparse")


def _payload(x: Tensor, op: str) -> SparseCOO:
    """``x``'s SparseCOO, or torch's error for a dense tensor given to a sparse-only op."""
    d = x._data
    if d.__class__ is not SparseCOO:
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got Strided")
    return d


def _sparse(coo: SparseCOO, device: Device) -> Tensor:
    return new_tensor(coo, device)  # type: ignore[arg-type]


def _int_indices(pattern: SparseCOO) -> tuple[np.ndarray, ...]:
    return tuple(pattern.indices)


# ----- the primitives every rule is made of ------------------------------------------------


class SparseCooTensorWithDimsAndTensorsBackward0(Node):
    """Gradient of the values of ``sparse_coo_tensor``: the incoming gradient at each entry."""

    __slots__ = ("pattern",)
    pattern: SparseCOO

    def __init__(self, pattern: SparseCOO) -> None:
        self._init_node()
        self.pattern = pattern

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (_values_at(grads[0], self.pattern),)


class SparseMaskBackward0(Node):
    """Gradient of reading a sparse tensor at the entries of ``pattern``: a sparse tensor of them."""

    __slots__ = ("pattern",)
    pattern: SparseCOO

    def __init__(self, pattern: SparseCOO) -> None:
        self._init_node()
        self.pattern = pattern

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (_from_values(self.pattern, grads[0]),)


def _from_values(pattern: SparseCOO, values: Any) -> Any:
    """The sparse tensor (payload, or Tensor in a create_graph pass) with ``pattern``'s indices
    and ``values``."""
    if values.__class__ is Tensor:
        return _make(pattern.indices, values, pattern.shape, pattern.coalesced)
    return SparseCOO(pattern.indices, values, pattern.shape, pattern.coalesced)


def _values_at(g: Any, pattern: SparseCOO) -> Any:
    """``g`` (dense or sparse, payload or Tensor) read at each entry of ``pattern``."""
    if g.__class__ is not Tensor:
        return pattern.gather(g)
    if g._data.__class__ is SparseCOO:
        out = new_tensor(pattern.gather(g._data), g._device)
        if g._requires_grad and grad_enabled():
            link_one(SparseMaskBackward0(pattern), g, out)
        return out
    return g[_int_indices(pattern)]


def _make(indices: np.ndarray, values: Tensor, shape: Shape, coalesced: bool) -> Tensor:
    """A sparse tensor of ``values`` (a Tensor, whose graph it keeps) at ``indices`` (checked)."""
    coo = SparseCOO(indices, values._data, shape, coalesced)
    out = _sparse(coo, values._device)
    if values._requires_grad and grad_enabled():
        link_one(SparseCooTensorWithDimsAndTensorsBackward0(coo), values, out)
    return out


# ----- construction ---------------------------------------------------------------------------


def _check_invariants(indices: np.ndarray, shape: Shape) -> None:
    for d in range(indices.shape[0]):
        row = indices[d]
        if row.size == 0:
            continue
        lo, hi = int(row.min()), int(row.max())
        if lo < 0:
            raise RuntimeError(f"found negative index {lo} for dim {d}")
        if hi >= shape[d]:
            raise RuntimeError(
                f"size is inconsistent with indices: for dim {d}, size is {shape[d]} but found index {hi}"
            )


@SPARSE.op(nodes=(SparseCooTensorWithDimsAndTensorsBackward0,), method=False)
def sparse_coo_tensor(
    indices: Any, values: Any, size: Sequence[int] | None = None, *, dtype: Any = None,
    device: Any = None, requires_grad: bool = False, check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> Tensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (``indices``: ``(sparse_dim, nnz)``,
    ``values``: ``(nnz, *dense_dims)``); the size is inferred from the indices when not given.
    Repeated indices add up (``coalesce()`` sums them). Differentiable w.r.t. ``values`` when it
    is a Tensor that requires grad. Indices are always checked against the size (torch checks
    them only with ``check_invariants=True``), so a bad index is an error here, not later."""
    idx = np.asarray(indices._data if isinstance(indices, Tensor) else _to_array(indices, None, copy=False))
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if idx.dtype.kind not in "iu":
        if idx.dtype.kind == "f" and idx.size and not np.all(idx == np.round(idx)):
            raise RuntimeError("indices must be an int64 tensor")
        idx = idx.astype(np.int64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if isinstance(values, Tensor):
        vals = values
        if values._data.__class__ is SparseCOO:
            raise RuntimeError("values must be a dense tensor, not a sparse one")
        want = _resolve_dtype(dtype)
        if want is not None and want != vals.dtype:
            vals = vals.to(want)
    else:
        vals = new_tensor(_to_array(values, dtype, copy=True), Device(device) if device is not None else CPU)
    if device is not None and Device(device) is not vals._device:
        vals = vals.to(device)
    v = vals._data
    if v.ndim == 0:
        raise RuntimeError("values must have at least one dimension (nnz)")
    sparse_dim, nnz = idx.shape
    if v.shape[0] != nnz:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: {v.shape[0]}"
        )
    dense_shape = tuple(v.shape[1:])
    if size is None:
        sparse_shape = tuple(int(m) + 1 for m in idx.max(axis=1)) if nnz else (0,) * sparse_dim
        shape = sparse_shape + dense_shape
    else:
        shape = tuple(int(s) for s in (size.tolist() if isinstance(size, Tensor) else size))
        if len(shape) != sparse_dim + len(dense_shape):
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(shape)}, "
                f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}"
            )
        if shape[sparse_dim:] != dense_shape:
            raise RuntimeError(
                f"values has incorrect size, expected {[nnz, *shape[sparse_dim:]]}, got {list(v.shape)}"
            )
    _check_invariants(idx, shape)
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    if requires_grad:
        out = _sparse(SparseCOO(idx, v, shape, coalesced), vals._device)
        out.requires_grad_(True)
        return out
    return _make(idx, vals, shape, coalesced)


# ----- conversions ----------------------------------------------------------------------------


class ToDenseBackward0(Node):
    """Gradient of ``to_dense``: the dense gradient at the input's (coalesced) indices, sparse
    (``masked_grad=False``: all of the dense gradient, in the sparse layout)."""

    __slots__ = ("pattern", "masked")
    pattern: SparseCOO
    masked: bool

    def __init__(self, pattern: SparseCOO, masked: bool) -> None:
        self._init_node()
        self.pattern = pattern
        self.masked = masked

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if not self.masked:
            if g.__class__ is Tensor:
                return (to_sparse(g),)
            return (_dense_to_sparse(np.asarray(g), g.ndim),)
        return (_from_values(self.pattern, _values_at(g, self.pattern)),)


@SPARSE.op(nodes=(ToDenseBackward0,), export=False)
def to_dense(input: Tensor, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
    """The dense tensor a sparse one stands for (a dense tensor is returned as is). Its gradient
    w.r.t. a sparse input is sparse, at the input's entries (NOTE [Sparse gradients]); with
    ``masked_grad=False``, the whole dense gradient in the sparse layout."""
    d = input._data
    if d.__class__ is not SparseCOO:
        return input if dtype is None else input.to(dtype)
    coo: SparseCOO = d
    if dtype is not None and _resolve_dtype(dtype) != coo.dtype:
        return to_dense(input.to(dtype), masked_grad=masked_grad)
    out = new_tensor(coo.to_dense(), input._device)
    if input._requires_grad and grad_enabled():
        pattern = coo.coalesce()
        link_one(ToDenseBackward0(SparseCOO(pattern.indices, pattern.values, pattern.shape, True), bool(masked_grad)),
                 input, out)
    return out


class ToSparseBackward0(Node):
    """Gradient of ``to_sparse``: the gradient as a dense tensor."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            return (to_dense(g),)
        return (g.to_dense() if g.__class__ is SparseCOO else g,)


class ToSparseBackward1(ToSparseBackward0):
    """``to_sparse()`` without ``sparse_dim``, as torch names it."""

    __slots__ = ()


@SPARSE.op(nodes=(ToSparseBackward0, ToSparseBackward1), export=False, aliases=("to_sparse_coo",))
def to_sparse(input: Tensor, sparse_dim: int | None = None) -> Tensor:
    """This tensor as a coalesced sparse COO tensor of its nonzero entries; with ``sparse_dim``,
    only the first ``sparse_dim`` dims are sparse and each entry holds the rest (a hybrid
    tensor). Its gradient is dense."""
    d = input._data
    if d.__class__ is SparseCOO:
        if sparse_dim is not None and sparse_dim != d.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return input
    nd = d.ndim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim must be in [0, {nd}], got {sd}")
    out = _sparse(_dense_to_sparse(d, sd), input._device)
    if input._requires_grad and grad_enabled():
        link_one(ToSparseBackward1() if sparse_dim is None else ToSparseBackward0(), input, out)
    return out


def _dense_to_sparse(d: np.ndarray, sd: int) -> SparseCOO:
    """The nonzero entries of ``d`` (of its first ``sd`` dims: rows with a nonzero), coalesced."""
    if sd == d.ndim:
        idx = np.stack(np.nonzero(d)).astype(np.int64).reshape(sd, -1)
    else:
        mask = d.reshape(d.shape[:sd] + (-1,)).any(axis=-1) if d.size else np.zeros(d.shape[:sd], bool)
        idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sd, -1)
    return SparseCOO(idx, np.ascontiguousarray(d[tuple(idx)]), d.shape, True)


class CoalesceBackward0(Node):
    """Gradient of ``coalesce``: input and output are the same tensor, so the gradient passes."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0],)


@SPARSE.op(nodes=(CoalesceBackward0,), export=False)
def coalesce(input: Tensor) -> Tensor:
    """The same tensor with sorted, unique indices (the values of repeated ones summed);
    a coalesced tensor is returned as is."""
    coo = _payload(input, "coalesce")
    if coo.coalesced:
        return input
    out = _sparse(coo.coalesce(), input._device)
    if input._requires_grad and grad_enabled():
        link_one(CoalesceBackward0(), input, out)
    return out


@SPARSE.op(export=False)
def is_coalesced(input: Tensor) -> bool:
    """Whether the indices are sorted and unique."""
    return _payload(input, "is_coalesced").coalesced


class ValuesBackward0(Node):
    """Gradient of ``values()``: a sparse tensor of the gradient at the input's indices."""

    __slots__ = ("pattern",)
    pattern: SparseCOO

    def __init__(self, pattern: SparseCOO) -> None:
        self._init_node()
        self.pattern = pattern

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (_from_values(self.pattern, grads[0]),)


@SPARSE.op(nodes=(ValuesBackward0,), export=False)
def values(input: Tensor) -> Tensor:
    """The values of a coalesced sparse tensor, ``(nnz, *dense_dims)``, differentiable."""
    d = input._data
    if d.__class__ is not SparseCOO:
        raise RuntimeError("values expected sparse tensor layout but got Strided")
    coo: SparseCOO = d
    if not coo.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    out = new_tensor(coo.values, input._device)
    if input._requires_grad and grad_enabled():
        link_one(ValuesBackward0(coo), input, out)
    return out


@SPARSE.op(export=False)
def _values(input: Tensor) -> Tensor:
    """The values of any sparse tensor (repeated indices included), not differentiable."""
    d = input._data
    if d.__class__ is not SparseCOO:
        raise unsupported("_values() of a dense tensor")  # torch: not implemented for a dense tensor
    return new_tensor(d.values, input._device)


@SPARSE.op(export=False)
def indices(input: Tensor) -> Tensor:
    """The int64 indices ``(sparse_dim, nnz)`` of a coalesced sparse tensor."""
    coo = _payload(input, "indices")
    if not coo.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return new_tensor(coo.indices, input._device)


@SPARSE.op(export=False)
def _indices(input: Tensor) -> Tensor:
    """The int64 indices of any sparse tensor (repeated ones included)."""
    return new_tensor(_payload(input, "_indices").indices, input._device)


@SPARSE.op(export=False)
def _nnz(input: Tensor) -> int:
    """The number of stored entries (repeated indices counted)."""
    return _payload(input, "_nnz").nnz


@SPARSE.op(export=False)
def sparse_dim(input: Tensor) -> int:
    """The number of sparse dims (0 for a dense tensor)."""
    d = input._data
    return d.sparse_dim if d.__class__ is SparseCOO else 0


@SPARSE.op(export=False)
def dense_dim(input: Tensor) -> int:
    """The number of dense dims of each entry (all dims for a dense tensor)."""
    d = input._data
    return d.dense_dim if d.__class__ is SparseCOO else d.ndim


# ----- products ----------------------------------------------------------------------------------


@SPARSE.op(nodes=(MmBackward0,), method=False)
def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``mm`` under torch's other name, for a sparse ``input`` (GCN code: ``torch.spmm(adj, x)``);
    the gradient of a sparse ``input`` is dense, as ``mm``'s."""
    return mm(input, mat2)


class SparseAddmmBackward0(Node):
    """Gradient of ``sparse.mm(S, D)``: ``S^T @ G`` for ``D``; for ``S``, ``G @ D^T`` at S's entries."""

    __slots__ = ("s", "d", "pattern")
    s: Saved
    d: Saved
    pattern: SparseCOO

    def __init__(self, s: Saved, d: Saved, pattern: SparseCOO) -> None:
        self._init_node()
        self.s = s
        self.d = d
        self.pattern = pattern

    def release_variables(self) -> None:
        self.s = None
        self.d = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        gs = gd = None
        pattern = self.pattern
        if self.should_compute_output(0):
            d = unpack(self, self.d, graph)
            rows, cols = pattern.indices
            if graph:
                vals = (g[rows] * d[cols]).sum(1)
            else:
                vals = np.einsum("ij,ij->i", g[rows], d[cols])
            gs = _from_values(pattern, vals)
        if self.should_compute_output(1):
            s = unpack(self, self.s, graph)
            gd = sparse_mm(s.t(), g) if graph else np.matmul(s.T, g)
        return gs, gd


def _from_scipy(m: Any, dtype: Any) -> SparseCOO:
    """A scipy sparse matrix as a coalesced payload (its stored zeros kept, as torch keeps them)."""
    m = m.tocsr()
    m.sum_duplicates()
    c = m.tocoo()
    indices = np.stack((c.row, c.col)).astype(np.int64).reshape(2, -1)
    return SparseCOO(indices, c.data.astype(dtype, copy=False), c.shape, True)


def _product_payload(a: Any, b: Any) -> Any:
    """``a @ b`` of two payloads, at least one sparse: sparse when both are, else dense."""
    if a.__class__ is SparseCOO and b.__class__ is SparseCOO:
        return _from_scipy(a.tocsr() @ b.tocsr(), np.result_type(a.dtype, b.dtype))
    return np.matmul(a, b)


class SparseSparseMatmulBackward0(Node):
    """Gradient of ``sparse.mm`` of two sparse matrices: ``G @ B^T`` at A's entries and ``A^T @ G`` at
    B's, sparse (as torch). First order only."""

    __slots__ = ("a", "b", "a_pattern", "b_pattern")
    a: Saved
    b: Saved
    a_pattern: SparseCOO
    b_pattern: SparseCOO

    def __init__(self, a: Saved, b: Saved, a_pattern: SparseCOO, b_pattern: SparseCOO) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.a_pattern = a_pattern
        self.b_pattern = b_pattern

    def release_variables(self) -> None:
        self.a = None
        self.b = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            raise NotImplementedError(f"{self.name()}: aiograd does not differentiate a product of two sparse "
                                      "matrices twice (create_graph=True)")
        ga = gb = None
        if self.should_compute_output(0):
            b = unpack(self, self.b, False)
            ga = _masked(_product_payload(g, b.T), self.a_pattern)
        if self.should_compute_output(1):
            a = unpack(self, self.a, False)
            gb = _masked(_product_payload(a.T, g), self.b_pattern)
        return ga, gb


def _masked(x: Any, pattern: SparseCOO) -> SparseCOO:
    """The gradient ``x`` (dense or sparse) at the entries of ``pattern``: a sparse tensor."""
    return SparseCOO(pattern.indices, pattern.gather(x).astype(pattern.dtype, copy=False), pattern.shape, True)


def _sparse_sparse_mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    a: SparseCOO = mat1._data  # type: ignore[assignment]
    b: SparseCOO = mat2._data  # type: ignore[assignment]
    for m in (a, b):
        if m.ndim != 2 or m.dense_dim:
            raise RuntimeError(f"sparse.mm: matrices expected, got a {m.ndim}D sparse tensor with {m.dense_dim} "
                               "dense dims")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    out = _sparse(_product_payload(a, b), mat1._device)
    if needs_grad(mat1, mat2):
        node = SparseSparseMatmulBackward0(save(mat1) if mat2._requires_grad else None,
                                           save(mat2) if mat1._requires_grad else None, a.coalesce(), b.coalesce())
        record(node, (mat1, mat2), (out,))
    return out


@SPARSE.op(nodes=(SparseAddmmBackward0, SparseSparseMatmulBackward0), method=False, export=False)
def sparse_mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``aiograd.sparse.mm``: a sparse matrix times a dense one (a dense result); the gradient of
    the sparse matrix is sparse, at its entries (NOTE [Sparse gradients]). Two sparse matrices
    give a sparse product (its gradients are sparse, first order only); two dense ones their ``mm``."""
    a = mat1._data
    if a.__class__ is not SparseCOO:
        if mat2._data.__class__ is SparseCOO:
            raise unsupported("sparse.mm of a dense matrix by a sparse one (use mm, or transpose both)")
        return mm(mat1, mat2)
    coo: SparseCOO = a
    b = mat2._data
    if b.__class__ is SparseCOO:
        return _sparse_sparse_mm(mat1, mat2)
    if coo.ndim != 2 or coo.dense_dim or b.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {coo.ndim if coo.ndim != 2 else b.ndim}D tensor")
    if b.shape[0] != coo.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {coo.shape[1]}, got {b.shape[0]}")
    if b.dtype != coo.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(coo.dtype)} but found {torch_dtype_name(b.dtype)}")
    out = new_tensor(np.matmul(coo, b), mat1._device)
    if needs_grad(mat1, mat2):
        # S's gradient needs its coalesced pattern; a constant S (an adjacency matrix) skips the sort
        pattern = coo.coalesce() if mat1._requires_grad else coo
        node = SparseAddmmBackward0(save(mat1) if mat2._requires_grad else None,
                                    save(mat2) if mat1._requires_grad else None, pattern)
        record(node, (mat1, mat2), (out,))
    return out


# ----- reductions ----------------------------------------------------------------------------------


def _dims(dim: Any, nd: int) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(nd))
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    out = []
    for d in dims:
        d = int(d)
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
        out.append(d % nd)
    return tuple(sorted(set(out)))


class SparseSumBackward0(Node):
    """Gradient of ``sparse.sum``: the gradient at each input entry's remaining index, sparse."""

    __slots__ = ("pattern", "dims", "kept")
    pattern: SparseCOO
    dims: tuple[int, ...]
    kept: "SparseCOO | None"  # the result's pattern when it is sparse

    def __init__(self, pattern: SparseCOO, dims: tuple[int, ...], kept: 'SparseCOO | None') -> None:
        self._init_node()
        self.pattern = pattern
        self.dims = dims
        self.kept = kept

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        pattern, dims = self.pattern, self.dims
        sd = pattern.sparse_dim
        kept = self.kept
        # the gradient of each input entry's result entry: (nnz, *kept dense dims)
        if kept is not None:
            keep = [d for d in range(sd) if d not in dims]
            at = SparseCOO(pattern.indices[keep], pattern.values, kept.shape, False)
            per_entry = _values_at(g, at)
        else:
            per_entry = g.reshape((1, *g.shape)) if g.__class__ is Tensor else np.reshape(g, (1, *g.shape))
        # put back the summed dense dims, then broadcast to the values' shape
        dense_summed = [1 + d - sd for d in dims if d >= sd]
        vshape = (pattern.nnz, *pattern.shape[sd:])
        for ax in dense_summed:
            per_entry = per_entry.unsqueeze(ax) if per_entry.__class__ is Tensor else np.expand_dims(per_entry, ax)
        vals: Any
        if per_entry.__class__ is Tensor:
            vals = per_entry.expand(*vshape)
        else:
            vals = np.ascontiguousarray(np.broadcast_to(per_entry, vshape))
        return (_from_values(pattern, vals),)


class _FullSparseSumBackward(SparseSumBackward0):
    """``sparse.sum`` over every dim: torch names the node SumBackward0."""

    __slots__ = ()

    def name(self) -> str:
        return "SumBackward0"


@SPARSE.op(nodes=(SparseSumBackward0, _FullSparseSumBackward), method=False, export=False)
def sparse_sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:
    """``aiograd.sparse.sum``: the sum over ``dim`` (all dims by default). The result is sparse
    while sparse dims remain, else dense; the gradient w.r.t. the input is sparse, at its
    entries (NOTE [Sparse gradients])."""
    d = input._data
    if d.__class__ is not SparseCOO:
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got Strided")
    if dtype is not None and _resolve_dtype(dtype) != d.dtype:
        input = input.to(dtype)
        d = input._data
    coo: SparseCOO = d.coalesce()
    nd = coo.ndim
    dims = _dims(dim, nd)
    sd = coo.sparse_dim
    keep = [k for k in range(sd) if k not in dims]
    vals = coo.values
    dense_axes = tuple(1 + k - sd for k in dims if k >= sd)
    if dense_axes:
        vals = vals.sum(axis=dense_axes)
    kept: SparseCOO | None = None
    if keep:
        shape = tuple(coo.shape[k] for k in keep) + tuple(coo.shape[k] for k in range(sd, nd) if k not in dims)
        kept = SparseCOO(coo.indices[keep], vals, shape, False).coalesce()
        out = _sparse(kept, input._device)
    else:
        out = new_tensor(np.asarray(coo.sum_dense(dims)), input._device)
    if input._requires_grad and grad_enabled():
        cls = _FullSparseSumBackward if dim is None else SparseSumBackward0
        pattern = SparseCOO(coo.indices, coo.values, coo.shape, True)
        link_one(cls(pattern, dims, kept), input, out)
    return out


# ----- softmax over the specified entries ---------------------------------------------------------


def _groups(coo: SparseCOO, dim: int) -> tuple[np.ndarray, int]:
    """For each entry, the number of its slice along ``dim`` (entries that differ only in ``dim``
    share one), and the number of slices."""
    others = [k for k in range(coo.sparse_dim) if k != dim]
    if not others:
        return np.zeros(coo.nnz, np.int64), 1
    lin = np.ravel_multi_index(tuple(coo.indices[others]), tuple(coo.shape[k] for k in others))
    uniq, inv = np.unique(lin, return_inverse=True)
    return inv.reshape(-1), len(uniq)


class SparseSoftmaxBackward0(Node):
    """Gradient of ``sparse.softmax``: ``y * (g - sum(g * y))`` per slice, at the input's entries."""

    __slots__ = ("out_values", "group", "n", "pattern")
    out_values: np.ndarray
    group: np.ndarray
    n: int
    pattern: SparseCOO
    _log = False

    def __init__(self, out_values: np.ndarray, group: np.ndarray, n: int, pattern: SparseCOO) -> None:
        self._init_node()
        self.out_values = out_values
        self.group = group
        self.n = n
        self.pattern = pattern

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            raise NotImplementedError(f"{self.name()}: aiograd does not differentiate sparse softmax twice "
                                      "(create_graph=True)")
        gv = _values_at(g, self.pattern)
        y = self.out_values
        tail = y.shape[1:]
        if self._log:
            s = np.zeros((self.n, *tail), y.dtype)
            np.add.at(s, self.group, gv)
            gx = gv - np.exp(y) * s[self.group]
        else:
            s = np.zeros((self.n, *tail), y.dtype)
            np.add.at(s, self.group, gv * y)
            gx = y * (gv - s[self.group])
        return (_from_values(self.pattern, gx),)


class SparseLogSoftmaxBackward0(SparseSoftmaxBackward0):
    __slots__ = ()
    _log = True


def _softmax(input: Tensor, dim: int, dtype: Any, log: bool) -> Tensor:
    op = "log_softmax" if log else "softmax"
    d = input._data
    if d.__class__ is not SparseCOO:
        raise unsupported(f"sparse.{op} of a dense tensor (use aiograd.{op})")
    if dtype is not None and _resolve_dtype(dtype) != d.dtype:
        input = input.to(dtype)
        d = input._data
    coo: SparseCOO = d.coalesce()
    nd = coo.ndim
    (dim,) = _dims(dim, nd)
    if dim >= coo.sparse_dim:
        raise unsupported(f"sparse.{op} over a dense dim of a hybrid tensor")
    group, n = _groups(coo, dim)
    x = coo.values
    tail = x.shape[1:]
    m = np.full((n, *tail), -np.inf, x.dtype)
    np.maximum.at(m, group, x)
    z = x - m[group]
    e = np.exp(z)
    s = np.zeros((n, *tail), x.dtype)
    np.add.at(s, group, e)
    y = z - np.log(s[group]) if log else e / s[group]
    pattern = SparseCOO(coo.indices, coo.values, coo.shape, True)
    out = _sparse(SparseCOO(coo.indices, y, coo.shape, True), input._device)
    if input._requires_grad and grad_enabled():
        cls = SparseLogSoftmaxBackward0 if log else SparseSoftmaxBackward0
        link_one(cls(y, group, n, pattern), input, out)
    return out


@SPARSE.op(nodes=(SparseSoftmaxBackward0,), method=False, export=False)
def sparse_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``aiograd.sparse.softmax``: softmax along ``dim`` over the specified entries only (the
    others count as -inf, so they stay unspecified); a sparse result with the input's pattern."""
    return _softmax(input, dim, dtype, False)


@SPARSE.op(nodes=(SparseLogSoftmaxBackward0,), method=False, export=False)
def sparse_log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``aiograd.sparse.log_softmax``: log of ``sparse.softmax``, computed stably."""
    return _softmax(input, dim, dtype, True)


__all__ = SPARSE.exports(__name__)
