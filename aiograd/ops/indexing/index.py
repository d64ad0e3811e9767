"""Indexing ops that read, and the write they are adjoint to: ``__getitem__`` (basic and
advanced), narrow, select, take, gather, take_along_dim, index_select, masked_select, and
index_put (the other writes, scatter and friends, are built on ``_put`` in scatter.py).

Every differentiable op here is "read some elements of the input" or "write
some elements of a copy", described by one normalized numpy index tuple:
gather and index_select are advanced indexing with a tuple built from their
arguments. So there are two rules:

* reading (``IndexBackward0`` and its kin): the gradient is scattered into
  zeros of the input's shape, ADDING where an element was read more than once
  (``np.add.at``); basic indexing never repeats an element, so a plain
  assignment does.
* writing (``IndexPutBackward0``): the gradient of the written values is the
  gradient read back at the index, and the overwritten elements of the input
  get zero.

NOTE [Index adjoint pair]: each rule is the other's adjoint, so in a
create_graph pass the reading rule calls the differentiable ``index_put``
(accumulate) and the writing rule calls the differentiable getitem, which
gives higher derivatives of every op here without another implementation.

Index tuples are saved as numpy arrays (index tensors are not
version-checked). Integer indices are bounds-checked as torch does (numpy
would wrap a negative index where torch refuses it).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one, record, sum_to
from ...tensor import Tensor, _to_array, new_tensor
from .._common import broadcast_shapes, common_device, grad_enabled, is_operand, needs_grad
from .._table import OpTable
from ..._dtypes import torch_dtype_name as _torch_dtype_name
from ..movement.shape import _wrap_dim, expand, make_view, reshape

INDEX = OpTable("indexing.index")
Index = tuple[Any, ...]  # a normalized numpy index tuple


# ----- index normalization -------------------------------------------------------------

_BASIC = 0  # ints, slices, None, Ellipsis: a view
_SELECT = 1  # ints only: a view (torch's SelectBackward0)
_ADVANCED = 2  # integer or boolean arrays: a copy


def _index_item(it: Any) -> tuple[Any, bool]:
    """One element of an index: (normalized item, is_advanced)."""
    cls = it.__class__
    if cls is int or cls is slice or it is None or it is Ellipsis:
        return it, False
    if isinstance(it, Tensor):
        it = it._data
    if isinstance(it, (bool, np.bool_)):
        return bool(it), True
    if isinstance(it, (int, np.integer)):
        return int(it), False
    if isinstance(it, slice):
        return it, False
    arr = np.asarray(it)
    if arr.dtype == np.bool_:
        return arr, True
    if arr.dtype.kind in "iu":
        if arr.ndim == 0:
            return int(arr), False
        return arr.astype(np.intp, copy=False), True
    if arr.size == 0 and arr.dtype.kind == "f":  # x[[]]
        return arr.astype(np.intp), True
    raise IndexError(
        f"tensors used as indices must be long, int, byte or bool tensors, got {arr.dtype} "
        "(only integers, slices, None, Ellipsis and integer or boolean arrays are valid indices)"
    )


def normalize_index(index: Any) -> tuple[tuple[Any, ...], int]:
    """A numpy index tuple for ``index`` and its kind (_SELECT, _BASIC or _ADVANCED)."""
    cls = index.__class__
    if cls is int:
        return (index,), _SELECT
    if cls is slice:
        return (index,), _BASIC
    items = index if cls is tuple else (index,)
    out = []
    advanced = False
    all_int = True
    for it in items:
        it, adv = _index_item(it)
        advanced = advanced or adv
        if it.__class__ is not int:
            all_int = False
        out.append(it)
    if advanced:
        return tuple(out), _ADVANCED
    return tuple(out), (_SELECT if all_int else _BASIC)


# ----- reading: getitem, gather, index_select --------------------------------------------


class IndexBackward0(Node):
    """Gradient of reading ``x[index]``: scatter-add into zeros of x's shape."""

    __slots__ = ("index", "in_shape")
    index: Index
    in_shape: Shape

    def __init__(self, index: Index, in_shape: Shape) -> None:
        self._init_node()
        self.index = index
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            zeros = Tensor._wrap(np.zeros(self.in_shape, g._data.dtype), g._device)
            return (_put(zeros, self.index, g, True, IndexPutBackward0),)
        gi = np.zeros(self.in_shape, g.dtype)
        np.add.at(gi, self.index, g)
        return (gi,)


class GatherBackward0(IndexBackward0):
    __slots__ = ()


class IndexSelectBackward0(IndexBackward0):
    __slots__ = ()


class TakeBackward0(IndexBackward0):
    __slots__ = ()


class MaskedSelectBackward0(IndexBackward0):
    __slots__ = ()


class SliceBackward0(IndexBackward0):
    """Gradient of a basic-indexing view: no element repeats, so assign instead of add."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            zeros = Tensor._wrap(np.zeros(self.in_shape, g._data.dtype), g._device)
            return (_put(zeros, self.index, g, False, IndexPutBackward0),)
        gi = np.zeros(self.in_shape, g.dtype)
        gi[self.index] = g
        return (gi,)


class SelectBackward0(SliceBackward0):
    __slots__ = ()


def _record_read(node_cls: type[IndexBackward0], input: Tensor, index: tuple[Any, ...], out: Tensor) -> None:
    if input._requires_grad and grad_enabled():
        link_one(node_cls(index, input._data.shape), input, out)


@INDEX.op(name="__getitem__", nodes=(IndexBackward0, SliceBackward0, SelectBackward0), method=False,
          operators=("__getitem__",), export=False)
def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]`` as numpy indexes: a view for basic indexing (ints, slices with any
    step, None, Ellipsis), a copy for advanced indexing (integer/boolean arrays or tensors)."""
    idx, kind = normalize_index(index)
    xd = input._data
    arr = xd[idx]
    if kind == _ADVANCED:
        out = new_tensor(arr if arr.__class__ is np.ndarray else np.asarray(arr), input._device)
        _record_read(IndexBackward0, input, idx, out)
        return out
    if arr.__class__ is not np.ndarray:  # a numpy scalar from an all-int index on ... (never a view)
        arr = xd[idx + (Ellipsis,)]
    out = make_view(input, arr)
    _record_read(SelectBackward0 if kind == _SELECT else SliceBackward0, input, idx, out)
    return out


def _index_array(index: Any, op: str) -> np.ndarray:
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {arr.dtype}")
    return arr.astype(np.intp, copy=False)


def _long_index(index: Any, op: str) -> np.ndarray:
    """An index that torch wants as int64 (take, index_copy): another integer dtype is refused too."""
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if arr.dtype != np.int64 and not (arr.size == 0 and arr.dtype.kind == "f" and not isinstance(index, Tensor)):
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_torch_dtype_name(arr.dtype)}")
    return arr.astype(np.intp, copy=False)


def check_bounds(idx: np.ndarray, size: int, dim: int, error: type[Exception] = RuntimeError, prefix: str = "") -> None:
    """torch's bounds check of an index along a dim of ``size`` (negative indices are refused)."""
    if idx.size:
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise error(f"{prefix}index {int(idx[bad].flat[0])} is out of bounds for dimension {dim} with size {size}")


def _along_dim_index(index: np.ndarray, dim: int) -> tuple[Any, ...]:
    """The advanced-index tuple that reads ``x[i0, ..., index[i], ..., in]`` for each position i of index."""
    nd = index.ndim
    out: list[Any] = []
    for k in range(nd):
        if k == dim:
            out.append(index)
        else:
            shape = [1] * nd
            shape[k] = index.shape[k]
            out.append(np.arange(index.shape[k]).reshape(shape))
    return tuple(out)


def check_gather_shapes(input: Tensor, dim: int, index: np.ndarray, src: Any = None, scatter: bool = False) -> None:
    """torch's shape checks of gather (``scatter=False``) and of the scatters (with their ``src``)."""
    if index.ndim != max(input.ndim, 1) and not (index.ndim == 0 and input.ndim == 0):
        who = "self" if scatter else "input"
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {who} tensor")
    ishape, xshape = list(index.shape), list(input.shape)
    for k in range(index.ndim):
        too_big = k != dim and index.shape[k] > input.shape[k]
        if not scatter and too_big:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {ishape} to be no larger than self {xshape} "
                f"apart from dimension {dim}"
            )
        if scatter and (too_big or (src is not None and index.shape[k] > src.shape[k])):
            also = f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
            raise RuntimeError(
                f"Expected index {ishape} to be no larger than self {xshape} apart from dimension {dim}{also}"
            )


@INDEX.op(nodes=(GatherBackward0,))
def gather(input: Tensor, dim: int, index: Any) -> Tensor:
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` (for dim 0): values picked along ``dim``."""
    idx_arr = _index_array(index, "gather")
    d = _wrap_dim(dim, input.ndim)
    if idx_arr.size == 0 and idx_arr.ndim != input.ndim:  # torch reads nothing and checks nothing
        idx = (np.zeros(idx_arr.shape, np.intp),) * input.ndim
        out = new_tensor(np.zeros(idx_arr.shape, input.dtype), input._device)
        _record_read(GatherBackward0, input, idx, out)
        return out
    if input.ndim == 0:
        check_bounds(idx_arr, 1, 0)
        return getitem(input, ...) if idx_arr.ndim == 0 else getitem(reshape(input, (1,)), (idx_arr,))
    check_gather_shapes(input, d, idx_arr)
    check_bounds(idx_arr, input.shape[d], d)
    idx = _along_dim_index(idx_arr, d)
    out = new_tensor(input._data[idx], input._device)
    _record_read(GatherBackward0, input, idx, out)
    return out


def _np_take_along_axis(arr: Tensor, indices: Any, axis: Any = -1) -> Tensor:
    return take_along_dim(arr, indices, axis)


@INDEX.op(nodes=(GatherBackward0,), functions=((np.take_along_axis, _np_take_along_axis),))
def take_along_dim(input: Tensor, indices: Any, dim: int | None = None) -> Tensor:
    """Pick values along ``dim`` as numpy's take_along_axis: ``input`` and ``indices`` broadcast
    against each other in every other dim; without ``dim``, both are flattened."""
    idx_arr = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx_arr.dtype != np.int64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {_torch_dtype_name(idx_arr.dtype)}"
        )
    if dim is None:
        return take_along_dim(reshape(input, (-1,)), idx_arr.reshape(-1), 0)
    if idx_arr.ndim != input.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.ndim} dimensions for input, and {idx_arr.ndim} dimensions for indices"
        )
    d = _wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return gather(input, 0, idx_arr)
    shp = list(broadcast_shapes(tuple(s if k != d else 1 for k, s in enumerate(input.shape)),
                                tuple(s if k != d else 1 for k, s in enumerate(idx_arr.shape))))
    ishape = list(shp)
    ishape[d] = idx_arr.shape[d]
    xshape = list(shp)
    xshape[d] = input.shape[d]
    x = input if tuple(xshape) == input.shape else expand(input, xshape)
    n = input.shape[d]
    wrapped = np.where((idx_arr < 0) & (idx_arr >= -n), idx_arr + n, idx_arr)  # as numpy's take_along_axis
    return gather(x, d, np.broadcast_to(wrapped, ishape))


def _np_take(a: Tensor, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    if out is not None or mode != "raise":
        return NotImplemented
    if axis is None:
        return take(a, Tensor._wrap(np.asarray(indices, dtype=np.int64)))
    return getitem(a, (slice(None),) * _wrap_dim(axis, a.ndim) + (np.asarray(indices),))


@INDEX.op(nodes=(TakeBackward0,), functions=((np.take, _np_take),))
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index`` (negative indices count from the end),
    in ``index``'s shape."""
    idx = _long_index(index, "take")
    n = input._data.size
    if n == 0 and idx.size:
        raise IndexError("take(): tried to take from an empty tensor")
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(idx[bad].flat[0])} on a tensor of {n} elements.")
    flat = np.where(idx < 0, idx + n, idx)
    where = np.unravel_index(flat, input.shape) if input.ndim else (np.zeros_like(flat),)
    xd = input._data if input.ndim else input._data.reshape(1)
    out = new_tensor(np.asarray(xd[where]), input._device)
    if input._requires_grad and grad_enabled():
        node = TakeBackward0(where, xd.shape)
        if input.ndim == 0:
            link_one(node, reshape(input, (1,)), out)
        else:
            link_one(node, input, out)
    return out


@INDEX.op(nodes=(IndexSelectBackward0,))
def index_select(input: Tensor, dim: int, index: Any) -> Tensor:
    """The slices ``index`` (1-d) of ``input`` along ``dim``."""
    idx_arr = _index_array(index, "index_select")
    if idx_arr.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx_arr = idx_arr.reshape(-1)
    d = _wrap_dim(dim, input.ndim)
    if input.ndim == 0 and idx_arr.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx_arr.size} value(s)")
    xd = input._data if input.ndim else input._data.reshape(1)
    if idx_arr.size and ((idx_arr < 0) | (idx_arr >= xd.shape[d])).any():
        raise IndexError("index out of range in self")
    arr = np.take(xd, idx_arr, axis=d)
    if input.ndim == 0:
        arr = arr.reshape(())
        idx: tuple[Any, ...] = ()
    else:
        idx = (slice(None),) * d + (idx_arr,)
    out = new_tensor(arr, input._device)
    _record_read(IndexSelectBackward0, input, idx, out)
    return out


# ----- narrow / select: views ---------------------------------------------------------------


def _narrow_bounds(input: Tensor, dim: int, start: Any, length: Any) -> tuple[int, int, int]:
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim)
    start = _index_value(start, "start")
    length = _index_value(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return d, start, length


def _index_value(value: Any, what: str) -> int:
    """An int argument given as an int or a one-element integer tensor (never a float)."""
    if isinstance(value, (bool, float)) or (isinstance(value, Tensor) and value.dtype.kind not in "iu"):
        raise TypeError(f"narrow(): argument '{what}' must be int, not {type(value).__name__}")
    return operator.index(value)


@INDEX.op(nodes=(SliceBackward0,))
def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The ``length`` elements from ``start`` along ``dim`` (a negative start counts from the end): a view."""
    d, s, n = _narrow_bounds(input, dim, start, length)
    return getitem(input, (slice(None),) * d + (slice(s, s + n),))


class NarrowCopyBackward0(SliceBackward0):
    __slots__ = ()


@INDEX.op(nodes=(NarrowCopyBackward0,))
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``narrow``, as a new tensor rather than a view."""
    d, s, n = _narrow_bounds(input, dim, start, length)
    idx = (slice(None),) * d + (slice(s, s + n),)
    out = new_tensor(input._data[idx].copy(), input._device)
    _record_read(NarrowCopyBackward0, input, idx, out)
    return out


@INDEX.op(nodes=(SelectBackward0,))
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, with that dim removed: a view."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim)
    i = operator.index(index)
    n = input.shape[d]
    if not -n <= i < n:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    idx = (slice(None),) * d + (i % n,)
    out = make_view(input, input._data[idx])
    _record_read(SelectBackward0, input, idx, out)
    return out


@INDEX.op(nodes=(MaskedSelectBackward0,))
def masked_select(input: Tensor, mask: Any) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast) is true, as a 1-d tensor
    (a 0-d input and mask are one element, as torch)."""
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {m.dtype}")
    shape = broadcast_shapes(m.shape, input.shape) or (1,)  # torch names the mask "a"
    x = input if shape == input.shape else input.expand(shape)
    idx = np.nonzero(np.broadcast_to(m, shape))
    out = new_tensor(x._data[idx], input._device)
    _record_read(MaskedSelectBackward0, x, idx, out)
    return out


# ----- writing: index_put, scatter, index_add --------------------------------------------


class IndexPutBackward0(Node):
    """Gradient of ``out = input; out[index] = values`` (or ``+=`` with accumulate)."""

    __slots__ = ("index", "values_shape", "accumulate")
    index: Index
    values_shape: Shape
    accumulate: bool

    def __init__(self, index: Index, values_shape: Shape, accumulate: bool) -> None:
        self._init_node()
        self.index = index
        self.values_shape = values_shape
        self.accumulate = accumulate

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        ga: Any = None
        gv: Any = None
        if g.__class__ is Tensor:
            if self.should_compute_output(0):
                ga = g if self.accumulate else _put(g, self.index, 0.0, False, IndexPutBackward0)
            if self.should_compute_output(1):
                gv = sum_to(getitem(g, self.index), self.values_shape)
            return ga, gv
        if self.should_compute_output(0):
            if self.accumulate:
                ga = g
            else:
                ga = np.array(g)
                ga[self.index] = 0
        if self.should_compute_output(1):
            gv = sum_to(g[self.index], self.values_shape)
        return ga, gv


def _values(values: Any, like: Tensor) -> tuple[Any, Any]:
    """(values as recorded, its array) for a write into ``like``: a Tensor, a number, a numeric
    array, or a nested sequence of numbers (read as ``tensor()`` reads it); anything else is refused."""
    if isinstance(values, Tensor):
        if values._device is not like._device:
            common_device(like, values)  # NOTE [One device per op]
        return values, values._data
    if isinstance(values, (bool, int, float)):
        return values, values
    if isinstance(values, (list, tuple)):
        values = _to_array(values, None, copy=False)
    elif not is_operand(values):
        raise TypeError(f"can't assign a {type(values).__name__} to a tensor of dtype {like.dtype}")
    arr = np.asarray(values)
    return Tensor._wrap(arr.astype(like._data.dtype) if arr.dtype.kind == "f" else arr, like._device), arr


def _put(
    input: Tensor, idx: tuple[Any, ...], values: Any, accumulate: bool, node_cls: type[IndexPutBackward0]
) -> Tensor:
    v, vd = _values(values, input)
    res = np.array(input._data)
    try:
        if accumulate:
            np.add.at(res, idx, vd)
        else:
            res[idx] = vd
    except ValueError as e:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(np.shape(vd))} cannot be broadcast to indexing "
            f"result of shape {list(input._data[idx].shape)} ({e})"
        ) from None
    out = new_tensor(res, input._device)
    if needs_grad(input, v):
        record(node_cls(idx, np.shape(vd), accumulate), (input, v), (out,))
    return out


@INDEX.op(nodes=(IndexPutBackward0,))
def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``indices`` (added, with repeats, when
    ``accumulate``). ``indices`` is anything ``__getitem__`` takes."""
    idx, _ = normalize_index(indices)
    return _put(input, idx, values, accumulate, IndexPutBackward0)


__all__ = INDEX.exports(__name__)
