"""Indexing ops and their derivative rules: ``__getitem__`` (basic and advanced),
gather, index_select, index_put, scatter/scatter_add, index_add, masked_fill,
take_along_dim, nonzero.

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
version-checked).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.graph import Node, Shape, link_one, record, sum_to
from ..tensor import Tensor, _to_array, new_tensor
from ._common import broadcast_shapes, check_operand, grad_enabled, is_operand, needs_grad, operand_error
from ._table import OpTable
from .nn import _torch_dtype_name
from .shape import _wrap_dim, make_view, reshape

INDEX = OpTable("index")
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


class TakeAlongDimBackward0(IndexBackward0):
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


def _check_gather_shapes(op: str, input: Tensor, dim: int, index: np.ndarray, other: Any = None) -> None:
    if index.ndim != max(input.ndim, 1) and not (index.ndim == 0 and input.ndim == 0):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor")
    for k in range(index.ndim):
        if k != dim and index.shape[k] > input.shape[k]:
            raise RuntimeError(
                f"{op}(): Size does not match at dimension {k} expected index {list(index.shape)} to be "
                f"smaller than self {list(input.shape)} apart from dimension {dim}"
            )
        if other is not None and index.shape[k] > other.shape[k]:
            raise RuntimeError(
                f"{op}(): Expected index {list(index.shape)} to be smaller than src {list(other.shape)} "
                "in every dimension"
            )


@INDEX.op(nodes=(GatherBackward0,))
def gather(input: Tensor, dim: int, index: Any) -> Tensor:
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` (for dim 0): values picked along ``dim``."""
    idx_arr = _index_array(index, "gather")
    d = _wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return getitem(input, ...) if idx_arr.ndim == 0 else getitem(input.reshape(1), (idx_arr,))  # type: ignore[attr-defined]
    _check_gather_shapes("gather", input, d, idx_arr)
    idx = _along_dim_index(idx_arr, d)
    try:
        out = new_tensor(input._data[idx], input._device)
    except IndexError as e:
        raise RuntimeError(f"gather(): index out of bounds: {e}") from None
    _record_read(GatherBackward0, input, idx, out)
    return out


def _np_take_along_axis(arr: Tensor, indices: Any, axis: Any) -> Tensor:
    return take_along_dim(arr, indices, axis)


@INDEX.op(nodes=(TakeAlongDimBackward0,), functions=((np.take_along_axis, _np_take_along_axis),))
def take_along_dim(input: Tensor, indices: Any, dim: int | None = None) -> Tensor:
    """Pick values along ``dim`` like numpy's take_along_axis (indices broadcast against input)."""
    idx_arr = _index_array(indices, "take_along_dim")
    if dim is None:
        flat = input.reshape(-1)  # type: ignore[attr-defined]
        return take_along_dim(flat, idx_arr.reshape(-1), 0)
    d = _wrap_dim(dim, input.ndim)
    if idx_arr.ndim != input.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.ndim} dimensions for input, and {idx_arr.ndim} dimensions for indices"
        )
    shp = list(np.broadcast_shapes(tuple(s if k != d else 1 for k, s in enumerate(input.shape)),
                                   tuple(s if k != d else 1 for k, s in enumerate(idx_arr.shape))))
    ishape = list(shp)
    ishape[d] = idx_arr.shape[d]
    idx_b = np.broadcast_to(idx_arr, ishape)
    xshape = list(shp)
    xshape[d] = input.shape[d]
    x = input if tuple(xshape) == input.shape else input.expand(xshape)  # type: ignore[attr-defined]
    idx = _along_dim_index(idx_b, d)
    out = new_tensor(x._data[idx], input._device)
    _record_read(TakeAlongDimBackward0, x, idx, out)
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
    try:
        arr = np.take(xd, idx_arr, axis=d)
    except IndexError as e:
        raise IndexError(f"index_select(): index out of range in self: {e}") from None
    if input.ndim == 0:
        arr = arr.reshape(())
        idx: tuple[Any, ...] = ()
    else:
        idx = (slice(None),) * d + (idx_arr,)
    out = new_tensor(arr, input._device)
    _record_read(IndexSelectBackward0, input, idx, out)
    return out


@INDEX.op(nodes=(MaskedSelectBackward0,))
def masked_select(input: Tensor, mask: Any) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast) is true, as a 1-d tensor
    (a 0-d input and mask are one element, as torch)."""
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {m.dtype}")
    shape = broadcast_shapes(m.shape, input.shape) or (1,)  # torch names the mask "a"
    x = input if shape == input.shape else input.expand(shape)  # type: ignore[attr-defined]
    idx = np.nonzero(np.broadcast_to(m, shape))
    out = new_tensor(x._data[idx], input._device)
    _record_read(MaskedSelectBackward0, x, idx, out)
    return out


@INDEX.op()
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an int64 (n, ndim) tensor, or a tuple of 1-d tensors."""
    xd = input._data
    if as_tuple:
        return tuple(Tensor._wrap(i.astype(np.int64), input._device) for i in np.nonzero(np.atleast_1d(xd)))
    return Tensor._wrap(np.argwhere(xd).astype(np.int64), input._device)


# ----- writing: index_put, scatter, index_add --------------------------------------------


class IndexPutBackward0(Node):
    """Gradient of ``out = input; out[index] = values`` (or ``+=`` with accumulate)."""

    __slots__ = ("index", "values_shape", "accumulate")
    index: Index
    values_shape: Shape
    accumulate: bool

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        ga: Any = None
        gv: Any = None
        if g.__class__ is Tensor:
            if e[0] is not None:
                ga = g if self.accumulate else _put(g, self.index, 0.0, False, IndexPutBackward0)
            if e[1] is not None:
                gv = sum_to(getitem(g, self.index), self.values_shape)
            return ga, gv
        if e[0] is not None:
            if self.accumulate:
                ga = g
            else:
                ga = np.array(g)
                ga[self.index] = 0
        if e[1] is not None:
            gv = sum_to(g[self.index], self.values_shape)
        return ga, gv


class ScatterBackward0(IndexPutBackward0):
    __slots__ = ()


class ScatterAddBackward0(IndexPutBackward0):
    __slots__ = ()


class IndexAddBackward0(IndexPutBackward0):
    __slots__ = ()


def _values(values: Any, like: Tensor) -> tuple[Any, Any]:
    """(values as recorded, its array) for a write into ``like``: a Tensor, a number, a numeric
    array, or a nested sequence of numbers (read as ``tensor()`` reads it); anything else is refused."""
    if isinstance(values, Tensor):
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


def _scatter_args(op: str, input: Tensor, dim: int, index: Any, src: Any) -> tuple[Any, Any]:
    idx_arr = _index_array(index, op)
    d = _wrap_dim(dim, input.ndim)
    _check_gather_shapes(op, input, d, idx_arr, src if isinstance(src, Tensor) else None)
    idx = _along_dim_index(idx_arr, d)
    if isinstance(src, Tensor) and src.shape != idx_arr.shape:
        src = getitem(src, tuple(slice(0, s) for s in idx_arr.shape))
    return idx, src


@INDEX.op(nodes=(ScatterBackward0,))
def scatter(input: Tensor, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or the number ``value``) written at ``index`` along ``dim``."""
    if src is None:
        src = value
    if input.ndim == 0:
        return _scatter_into_one_element("scatter", input, dim, index, src, scatter)
    idx, src = _scatter_args("scatter", input, dim, index, src)
    return _put(input, idx, src, False, ScatterBackward0)


@INDEX.op(nodes=(ScatterAddBackward0,))
def scatter_add(input: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up)."""
    if input.ndim == 0:
        return _scatter_into_one_element("scatter_add", input, dim, index, src, scatter_add)
    idx, src = _scatter_args("scatter_add", input, dim, index, src)
    return _put(input, idx, src, True, ScatterAddBackward0)


def _scatter_into_one_element(op: str, input: Tensor, dim: int, index: Any, src: Any, fn: Any) -> Tensor:
    """A 0-d ``input`` is one element (as torch): scatter into its 1-d view, then drop the dim again."""
    _wrap_dim(dim, 0)
    idx_arr = _index_array(index, op)
    if idx_arr.ndim > 1:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and src.ndim <= 1:
        src = reshape(src, (-1,))
    return reshape(fn(reshape(input, (1,)), 0, idx_arr.reshape(-1), src), ())


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


@INDEX.op(nodes=(IndexAddBackward0,))
def index_add(input: Tensor, dim: int, index: Any, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at the slices ``index`` along ``dim``."""
    idx, source = index_add_args("index_add_", input, dim, index, source)
    if alpha != 1:
        source = source * alpha  # type: ignore[operator]
    return _put(input, idx, source, True, IndexAddBackward0)


# ----- masked_fill ---------------------------------------------------------------------------


class MaskedFillBackward0(Node):
    """Gradient of ``where(mask, value, input)``: none where filled; the value gets the rest."""

    __slots__ = ("mask", "in_shape", "value_shape")
    mask: np.ndarray
    in_shape: Shape
    value_shape: Shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        mask = self.mask
        gi = sum_to(np.where(mask, 0, g), self.in_shape) if e[0] is not None else None
        gv = np.where(mask, g, 0).sum().reshape(self.value_shape) if e[1] is not None else None
        return gi, gv


class MaskedFillBackward1(MaskedFillBackward0):
    __slots__ = ()


@INDEX.op(nodes=(MaskedFillBackward0, MaskedFillBackward1))
def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    """``input`` with ``value`` (a number or 0-d tensor) where ``mask`` (broadcastable) is true."""
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
    xd = input._data
    check_operand(value, "masked_fill", "value", 3)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        vd = value._data
    else:
        vd = value
    res = np.where(m, vd, xd)
    if res.dtype != xd.dtype:
        res = res.astype(xd.dtype)
    out = new_tensor(res, input._device)
    if needs_grad(input, value):
        cls = MaskedFillBackward1 if isinstance(value, Tensor) else MaskedFillBackward0
        record(cls(m, xd.shape, np.shape(vd)), (input, value), (out,))
    return out


__all__ = INDEX.exports(__name__)
