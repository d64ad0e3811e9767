"""Indexed writes and their derivative rules: scatter (src, value, reduce), scatter_add,
scatter_reduce, index_add, index_copy, index_fill, masked_fill, masked_scatter.

Each write but scatter_reduce and masked_scatter is ``_put`` (index.py) with a normalized
index tuple, so its gradient is IndexPutBackward0's rule under the op's own node name
(NOTE [Index adjoint pair] in index.py). scatter_reduce's rule (torch's, from
FunctionsManual) is written with aiograd ops, run on plain tensors in an ordinary pass and
on the graph's tensors in a create_graph pass, so that one rule serves both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._warn import warn_user
from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor, new_tensor
from .._common import broadcast_shapes, check_operand, common_device, needs_grad, operand_error
from .._table import OpTable
from ..pointwise.elementwise import NotImplementedBackward, eq, where
from .index import (
    IndexPutBackward0,
    _along_dim_index,
    check_gather_shapes,
    _index_array,
    _long_index,
    _put,
    check_bounds,
    gather,
    getitem,
)
from ..movement.join import cat
from ..._dtypes import torch_dtype_name as _torch_dtype_name
from ..movement.shape import _wrap_dim, reshape

SCATTER = OpTable("indexing.scatter")


class ScatterBackward0(IndexPutBackward0):
    __slots__ = ()


class ScatterBackward1(IndexPutBackward0):
    """scatter of a number (``value``)."""

    __slots__ = ()


class ScatterAddBackward0(IndexPutBackward0):
    __slots__ = ()


class IndexAddBackward0(IndexPutBackward0):
    __slots__ = ()


class IndexCopyBackward0(IndexPutBackward0):
    __slots__ = ()


class IndexFillBackward0(IndexPutBackward0):
    """index_fill with a number."""

    __slots__ = ()


class IndexFillBackward1(IndexPutBackward0):
    """index_fill with a 0-d tensor."""

    __slots__ = ()


# ----- scatter / scatter_add ----------------------------------------------------------------


def scatter_args(op: str, input: Tensor, dim: int, index: Any, src: Any) -> tuple[tuple[Any, ...], Any]:
    """The index tuple of a scatter along ``dim``, after torch's checks; a larger ``src`` is cut to
    the index's shape (torch reads only that corner of it)."""
    idx_arr = _index_array(index, op)
    if isinstance(src, Tensor) and src._device is not input._device:
        common_device(input, src)  # NOTE [One device per op]
    d = _wrap_dim(dim, input.ndim)
    check_gather_shapes(input, d, idx_arr, src if isinstance(src, Tensor) else None, scatter=True)
    check_bounds(idx_arr, input.shape[d] if input.ndim else 1, d)
    if isinstance(src, Tensor) and src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    idx = _along_dim_index(idx_arr, d)
    if isinstance(src, Tensor) and src.shape != idx_arr.shape:
        src = getitem(src, tuple(slice(0, s) for s in idx_arr.shape))
    return idx, src


def _scatter_into_one_element(op: str, input: Tensor, dim: int, index: Any, src: Any, fn: Any) -> Tensor:
    """A 0-d ``input`` is one element (as torch): scatter into its 1-d view, then drop the dim again."""
    _wrap_dim(dim, 0)
    idx_arr = _index_array(index, op)
    if idx_arr.ndim > 1:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and src.ndim <= 1:
        src = reshape(src, (-1,))
    return reshape(fn(reshape(input, (1,)), 0, idx_arr.reshape(-1), src), ())


_LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}


def _scatter_legacy_reduce(input: Tensor, dim: int, index: Any, src: Any, reduce: str) -> Tensor:
    """scatter(..., reduce="add"|"multiply"): scatter_reduce including self, with no derivative (as torch)."""
    if reduce not in _LEGACY_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        warn_user(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future "
            "PyTorch release. Use torch.scatter_reduce instead for more reduction options."
        )
    else:
        check_operand(src, "scatter", "value", 4)
    idx, src = scatter_args("scatter", input, dim, index, src)
    sd = src._data if isinstance(src, Tensor) else np.asarray(src, input.dtype)
    shape = np.broadcast_shapes(*(np.shape(i) for i in idx))
    res = _reduce_into(input._data, idx, np.broadcast_to(sd, shape), _LEGACY_REDUCE[reduce], True)
    out = new_tensor(res, input._device)
    if needs_grad(input, src):
        record(NotImplementedBackward("scatter"), (input, src), (out,))
    return out


@SCATTER.op(nodes=(ScatterBackward0, ScatterBackward1))
def scatter(input: Tensor, dim: int, index: Any, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or a number, also given as ``value``) written at
    ``index`` along ``dim``: ``out[index[i][j]][j] = src[i][j]`` for dim 0. The legacy ``reduce``
    ("add", "multiply") combines instead of writing (no derivative, as torch: use scatter_reduce)."""
    if src is None:
        src = value
    if reduce is not None:
        if input.ndim == 0:
            return _scatter_into_one_element(
                "scatter", input, dim, index, src, lambda x, d, i, s: scatter(x, d, i, s, reduce=reduce)
            )
        return _scatter_legacy_reduce(input, dim, index, src, reduce)
    if input.ndim == 0:
        return _scatter_into_one_element("scatter", input, dim, index, src, scatter)
    idx, src = scatter_args("scatter", input, dim, index, src)
    return _put(input, idx, src, False, ScatterBackward0 if isinstance(src, Tensor) else ScatterBackward1)


@SCATTER.op(nodes=(ScatterAddBackward0,))
def scatter_add(input: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up)."""
    if input.ndim == 0:
        return _scatter_into_one_element("scatter_add", input, dim, index, src, scatter_add)
    idx, src = scatter_args("scatter_add", input, dim, index, src)
    return _put(input, idx, src, True, ScatterAddBackward0)


# ----- scatter_reduce -----------------------------------------------------------------------

_REDUCERS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
_ALIASES = {"max": "amax", "min": "amin"}  # torch accepts these too


def _identity(reduce: str, dtype: np.dtype) -> Any:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind in "fc" else (True if dtype.kind == "b" else np.iinfo(dtype).max)
    small = -np.inf if dtype.kind in "fc" else (False if dtype.kind == "b" else np.iinfo(dtype).min)
    return small if reduce == "amax" else big


def _reduce_into(xd: np.ndarray, idx: tuple[Any, ...], sd: np.ndarray, reduce: str, include_self: bool) -> np.ndarray:
    """``xd`` with ``sd`` combined in at ``idx`` by ``reduce`` (the forward of scatter_reduce)."""
    res = np.array(xd)
    if not include_self:
        res[idx] = _identity(reduce, xd.dtype)
    _REDUCERS[reduce].at(res, idx, sd)
    if reduce == "mean":
        counts = np.zeros(xd.shape, np.int64)
        np.add.at(counts, idx, 1)
        if include_self:
            counts += 1
        counts[counts == 0] = 1
        res = res / counts if xd.dtype.kind in "fc" else np.floor_divide(res, counts)
        res = res.astype(xd.dtype, copy=False)
    return res


class ScatterReduceBackward0(Node):
    """torch's scatter_reduce derivative, written with aiograd ops (see the module docstring):
    sum and mean pass the gradient (divided by the count), prod divides the product by the
    factor (with care for zeros), amax/amin share it evenly among the elements equal to the result."""

    __slots__ = ("self_", "src", "result", "index", "dim", "reduce", "include_self")
    self_: Saved
    src: Saved
    result: Saved
    index: np.ndarray
    dim: int
    reduce: str
    include_self: bool

    def __init__(
        self,
        self_: Saved,
        src: Saved,
        result: Saved,
        index: np.ndarray,
        dim: int,
        reduce: str,
        include_self: bool,
    ) -> None:
        self._init_node()
        self.self_ = self_
        self.src = src
        self.result = result
        self.index = index
        self.dim = dim
        self.reduce = reduce
        self.include_self = include_self

    def release_variables(self) -> None:
        self.self_ = None
        self.src = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor

        def t(v: Any) -> Tensor:
            return v if graph else Tensor._wrap(v)

        grad = t(g)
        x = t(unpack(self, self.self_, graph))
        s = t(unpack(self, self.src, graph))
        d, idx, reduce = self.dim, self.index, self.reduce
        if reduce == "sum":
            gi, gs = grad, gather(grad, d, idx)
        elif reduce == "mean":
            n = np.zeros(x.shape, x.dtype) + (1 if self.include_self else 0)
            np.add.at(n, _along_dim_index(idx, d), 1)
            n[n == 0] = 1
            gi = grad / Tensor._wrap(n, grad.device)
            gs = gather(gi, d, idx)
        elif reduce == "prod":
            result = t(unpack(self, self.result, graph))
            masked_self = x.masked_fill(eq(x, 0), 1)
            gi = grad * scatter_reduce(masked_self, d, idx, s, "prod", include_self=self.include_self) / masked_self
            src_zero = eq(s, 0)
            zeros_at = np.zeros(x.shape, x.dtype)
            np.add.at(zeros_at, _along_dim_index(idx, d), src_zero._data.astype(x.dtype))
            single = src_zero._data & (zeros_at[_along_dim_index(idx, d)] == 1)
            masked_src = s.masked_fill(single, 1)
            with_single = gather(grad * scatter_reduce(x, d, idx, masked_src, "prod", include_self=self.include_self),
                                 d, idx)
            plain = gather(grad * result, d, idx) / s.masked_fill(src_zero, 1)
            gs = where(single, with_single, plain)
        else:  # amax / amin
            result = t(unpack(self, self.result, graph))
            value = gather(result, d, idx)
            self_is = (x._data == result._data).astype(x.dtype)
            src_is = (s._data == value._data).astype(x.dtype)
            count = np.array(self_is)
            np.add.at(count, _along_dim_index(idx, d), src_is)
            shared = grad / Tensor._wrap(count, grad.device)
            gi = shared * Tensor._wrap(self_is, grad.device)
            gs = gather(shared, d, idx) * Tensor._wrap(src_is, grad.device)
        if not self.include_self:
            gi = scatter(gi, d, idx, 0.0)
        gi_out = (gi if graph else gi._data) if self.should_compute_output(0) else None
        gs_out = (gs if graph else gs._data) if self.should_compute_output(1) else None
        return gi_out, gs_out


@SCATTER.op(nodes=(ScatterReduceBackward0,))
def scatter_reduce(input: Tensor, dim: int, index: Any, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of ``input`` where each ``src`` element at ``index`` along ``dim`` is combined into its
    destination by ``reduce``: "sum", "prod", "mean", "amax" or "amin"; with ``include_self=False``
    the destinations' own values are left out (a destination nothing is scattered to keeps its value).
    An integer mean rounds down."""
    reduce = _ALIASES.get(reduce, reduce)
    if reduce not in _REDUCERS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if input.ndim == 0:
        return _scatter_into_one_element(
            "scatter_reduce", input, dim, index, src,
            lambda x, d, i, s: scatter_reduce(x, d, i, s, reduce, include_self=include_self),
        )
    idx, src = scatter_args("scatter_reduce", input, dim, index, src)
    res = _reduce_into(input._data, idx, src._data, reduce, include_self)
    out = new_tensor(res, common_device(input, src))
    if needs_grad(input, src):
        idx_arr = _index_array(index, "scatter_reduce")
        node = ScatterReduceBackward0(save(input), save(src), None, idx_arr, _wrap_dim(dim, input.ndim), reduce,
                                      include_self)
        record(node, (input, src), (out,))
        if reduce in ("prod", "amax", "amin"):
            node.result = save_output(out)
    return out


# ----- index_add / index_copy / index_fill -------------------------------------------------------


def index_add_args(op: str, input: Tensor, dim: int, index: Any, source: Any) -> tuple[tuple[Any, ...], Tensor]:
    """The index tuple at which index_add adds ``source``, after torch's checks (a 0-d
    ``input`` is one element: index 0 along dim 0 or -1)."""
    idx_arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if idx_arr.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {_torch_dtype_name(idx_arr.dtype)}")
    if idx_arr.ndim > 1:
        raise IndexError(
            f"{op}(): Index is supposed to be a vector, but got dim: {idx_arr.ndim} with type: "
            f"{_torch_dtype_name(idx_arr.dtype)} and size: {list(idx_arr.shape)}"
        )
    if not isinstance(source, Tensor):
        raise operand_error(op.rstrip("_"), "source", 4, source)
    d = _wrap_dim(dim, input.ndim)
    if source.dtype != input.dtype:
        raise RuntimeError(
            f"{op}(): self ({_torch_dtype_name(input.dtype)}) and source ({_torch_dtype_name(source.dtype)}) "
            "must have the same scalar type"
        )
    xs, ss = input.shape, source.shape
    if len(ss) != len(xs) or any(a != b for k, (a, b) in enumerate(zip(xs, ss)) if k != d):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(xs)} source.shape = {list(ss)}"
        )
    count = ss[d] if ss else 1
    if idx_arr.size != count:
        raise RuntimeError(
            f"{op}(): Number of indices ({idx_arr.size}) should be equal to source.size(dim): ({count}), for dim: {d}"
        )
    size = xs[d] if xs else 1
    bad = (idx_arr < 0) | (idx_arr >= size)
    if bad.any():
        if not xs:
            raise IndexError("index out of range in self")
        raise RuntimeError(f"index {int(idx_arr[bad].flat[0])} is out of bounds for dimension {d} with size {size}")
    if not xs:
        return (), source
    return (slice(None),) * d + (idx_arr.reshape(-1).astype(np.intp, copy=False),), source


@SCATTER.op(nodes=(IndexAddBackward0,))
def index_add(input: Tensor, dim: int, index: Any, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at the slices ``index`` along ``dim``."""
    idx, source = index_add_args("index_add_", input, dim, index, source)
    if alpha != 1:
        source = source * alpha
    return _put(input, idx, source, True, IndexAddBackward0)


def index_copy_args(input: Tensor, dim: int, index: Any, source: Any) -> tuple[tuple[Any, ...], Tensor]:
    """The index tuple at which index_copy writes ``source``, after torch's checks."""
    op = "index_copy_"
    idx_arr = _long_index(index, op)
    if idx_arr.ndim > 1:
        raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {idx_arr.ndim})")
    if not isinstance(source, Tensor):
        raise operand_error("index_copy", "source", 4, source)
    d = _wrap_dim(dim, input.ndim)
    if source.dtype != input.dtype:
        raise RuntimeError(
            f"{op}(): self and source expected to have the same dtype, but got (self) "
            f"{_torch_dtype_name(input.dtype)} and (source) {_torch_dtype_name(source.dtype)}"
        )
    xs, ss = input.shape, source.shape
    if xs and ss and len(xs) != len(ss):
        raise IndexError(
            f"{op}(): When source and destination are not scalars, their dimensionality must match. Source "
            f"dimensionality ({len(ss)}), destination dimensionality ({len(xs)})"
        )
    for k in range(len(xs)):
        if k != d and ss and ss[k] != xs[k]:
            at = k if k < d else k - 1  # the dim's place in a slice (``dim`` removed)
            raise RuntimeError(
                f"{op}(): Source/destination tensor must have same slice shapes. Destination slice shape: "
                f"{xs[k]} at dimension {at} and source slice shape: {ss[k]} at dimension {at}."
            )
    count = ss[d] if ss else 1
    if idx_arr.size != count:
        raise IndexError(f"{op}(): Number of indices ({idx_arr.size}) should be equal to source.size(dim) ({count})")
    check_bounds(idx_arr.reshape(-1), xs[d] if xs else 1, d, IndexError, f"{op}(): ")
    if not xs:
        return (), reshape(source, ())
    return (slice(None),) * d + (idx_arr.reshape(-1),), source


@SCATTER.op(nodes=(IndexCopyBackward0,))
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices ``index`` along ``dim`` replaced by ``source``'s slices, in order."""
    idx, source = index_copy_args(input, dim, index, source)
    return _put(input, idx, source, False, IndexCopyBackward0)


def index_fill_args(input: Tensor, dim: int, index: Any, value: Any) -> tuple[tuple[Any, ...], Any]:
    """The index tuple (repeats dropped: filling twice is filling once) of index_fill, after torch's checks."""
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if arr.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    check_operand(value, "index_fill", "value", 4)
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)."
        )
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    flat = arr.reshape(-1).astype(np.intp)
    bad = (flat < -n) | (flat >= n)
    if bad.any():
        raise IndexError(f"index {int(flat[bad][0])} is out of bounds for dimension {d} with size {n}")
    flat = np.unique(np.where(flat < 0, flat + n, flat))
    if not input.ndim:
        return ((Ellipsis,) if flat.size else (np.zeros(0, np.intp),)), value
    return (slice(None),) * d + (flat,), value


@SCATTER.op(nodes=(IndexFillBackward0, IndexFillBackward1))
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number or a 0-d tensor)."""
    idx, value = index_fill_args(input, dim, index, value)
    if not isinstance(value, Tensor):
        value = np.asarray(value).astype(input.dtype) if input.dtype.kind in "iub" else value
    return _put(input, idx, value, False, IndexFillBackward1 if isinstance(value, Tensor) else IndexFillBackward0)


# ----- masked_fill / masked_scatter -----------------------------------------------------------------


class MaskedFillBackward0(Node):
    """Gradient of ``where(mask, value, input)``: none where filled; the value gets the rest."""

    __slots__ = ("mask", "in_shape", "value_shape")
    mask: np.ndarray
    in_shape: Shape
    value_shape: Shape

    def __init__(self, mask: np.ndarray, in_shape: Shape, value_shape: Shape) -> None:
        self._init_node()
        self.mask = mask
        self.in_shape = in_shape
        self.value_shape = value_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        mask = self.mask
        if not self.should_compute_output(0):
            gi = None
        else:  # a create_graph pass differentiates np.where (Tensor dispatch)
            gi = sum_to(np.where(mask, 0, g) if g.__class__ is Tensor else _filled(g, mask, 0), self.in_shape)
        gv = np.where(mask, g, 0).sum().reshape(self.value_shape) if self.should_compute_output(1) else None
        return gi, gv


class MaskedFillBackward1(MaskedFillBackward0):
    __slots__ = ()


def _filled(a: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    """A copy of ``a`` broadcast with ``mask``, holding ``value`` (cast to ``a``'s dtype) where ``mask`` is true:
    ``np.where(mask, value, a)`` in ``a``'s dtype, as a copy and a masked fill (1.5x faster than np.where)."""
    out = np.empty(np.broadcast_shapes(a.shape, mask.shape), dtype=a.dtype)
    out[...] = a
    np.copyto(out, value, casting="unsafe", where=mask)
    return out


def _bool_mask(mask: Any, op: str) -> np.ndarray:
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {_torch_dtype_name(m.dtype)}")
    return m


@SCATTER.op(nodes=(MaskedFillBackward0, MaskedFillBackward1))
def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    """``input`` with ``value`` (a number or 0-d tensor) where ``mask`` (broadcastable) is true."""
    m = _bool_mask(mask, "masked_fill_")
    xd = input._data
    check_operand(value, "masked_fill", "value", 3)
    common_device(input, mask, value)  # NOTE [One device per op]
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        vd = value._data
    else:
        vd = value
    out = new_tensor(_filled(xd, m, vd), input._device)
    if needs_grad(input, value):
        cls = MaskedFillBackward1 if isinstance(value, Tensor) else MaskedFillBackward0
        record(cls(m, xd.shape, np.shape(vd)), (input, value), (out,))
    return out


class MaskedScatterBackward0(Node):
    """The input keeps the gradient where the mask is false; the source's first n elements (n true
    mask positions) get the gradient at those positions, the rest zero."""

    __slots__ = ("mask", "in_shape", "source_shape")
    mask: np.ndarray
    in_shape: Shape
    source_shape: Shape

    def __init__(self, mask: np.ndarray, in_shape: Shape, source_shape: Shape) -> None:
        self._init_node()
        self.mask = mask
        self.in_shape = in_shape
        self.source_shape = source_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        gi: Any = None
        gs: Any = None
        if self.should_compute_output(0):
            gi = sum_to(np.where(self.mask, 0, g), self.in_shape)
        if self.should_compute_output(1):
            size = int(np.prod(self.source_shape))
            if g.__class__ is Tensor:
                picked = getitem(g, self.mask)
                rest = size - picked.shape[0]
                if rest:
                    picked = cat([picked, Tensor._wrap(np.zeros(rest, g._data.dtype), g._device)])
                gs = reshape(picked, self.source_shape)
            else:
                flat = np.zeros(size, g.dtype)
                picked = g[self.mask]
                flat[: picked.size] = picked
                gs = flat.reshape(self.source_shape)
        return gi, gs


@SCATTER.op(nodes=(MaskedScatterBackward0,))
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` (broadcast with ``mask``) whose elements where ``mask`` is true are
    taken from ``source`` in order (row-major)."""
    m = _bool_mask(mask, "masked_scatter_")
    if source.dtype != input.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{_torch_dtype_name(input.dtype)} and {_torch_dtype_name(source.dtype)}"
        )
    shape = broadcast_shapes(input.shape, m.shape)
    mb = np.broadcast_to(m, shape)
    n = int(mb.sum())
    if n > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    res = np.array(np.broadcast_to(input._data, shape))
    res[mb] = source._data.reshape(-1)[:n]
    out = new_tensor(res, common_device(input, source))
    if needs_grad(input, source):
        record(MaskedScatterBackward0(mb, input.shape, source.shape), (input, source), (out,))
    return out


__all__ = SCATTER.exports(__name__)
