"""Sorting and order statistics: sort, argsort, topk, kthvalue, median, nanmedian, mode,
quantile, nanquantile.

Each works on rows: the dim it runs along is moved last and the tensor viewed as
``(rows, n)``. numpy sorts the rows; where torch's answer among equal values depends
on the algorithm its CPU kernel runs, the rows concerned are replayed with that
algorithm (NOTE [Ties] in _tie_order.py). NaN counts as the largest value, as in torch.
Results that select elements send each gradient back to the element it came from
(MaxBackward0 in reduce.py); quantile is composed of sort, gather and lerp.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import return_types
from ...autograd.graph import link_one
from ...autograd.saved import save, save_output
from ...tensor import Tensor
from .._common import grad_enabled, wrap
from .._table import OpTable
from ._tie_order import (
    REPLAY_BUDGET,
    greater_nan_first,
    less_nan_last,
    quickselect,
    stl_nth_element,
    stl_partial_sort,
    stl_sort,
)
from ..pointwise.elementwise import lerp, where
from .reduce import MaxBackward0, MaxBackward1
from ..movement.shape import _wrap_dim, movedim

SORTING = OpTable("reduction.sorting")

_INSERTION_SORTED = 16  # rows up to this long are insertion-sorted by std::sort: equal values keep their order


# ----- rows ----------------------------------------------------------------------------------------


def _rows(xd: np.ndarray, dim: int) -> np.ndarray:
    """``xd`` with ``dim`` moved last, as ``(rows, n)``."""
    moved = np.moveaxis(xd, dim, -1)
    return moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])


def _unrows(a: np.ndarray, xd_shape: tuple[int, ...], dim: int, n: int) -> np.ndarray:
    """The inverse of ``_rows`` for a result with ``n`` entries per row."""
    moved_shape = tuple(s for i, s in enumerate(xd_shape) if i != dim) + (n,)
    return np.moveaxis(a.reshape(moved_shape), -1, dim)


def _is_nan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, dtype=bool)


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality where NaN equals NaN (ties as the kernels' comparators see them)."""
    eq = a == b
    if a.dtype.kind in "fc":
        eq |= np.isnan(a) & np.isnan(b)
    return eq


def _stable_order(x2: np.ndarray, descending: bool) -> np.ndarray:
    """Each row's stable sort order, NaN largest (last ascending, first descending): equal values
    keep their order, in both directions."""
    if not descending:
        return np.argsort(x2, axis=-1, kind="stable")
    n = x2.shape[-1]
    return n - 1 - np.flip(np.argsort(np.flip(x2, -1), axis=-1, kind="stable"), -1)


def _replayable(rows: np.ndarray, n: int) -> bool:
    """Whether replaying ``rows`` rows of ``n`` elements stays within the budget (NOTE [Ties])."""
    return len(rows) * n <= REPLAY_BUDGET


def _items(row: np.ndarray) -> list[tuple[Any, int]]:
    return list(zip(row.tolist(), range(len(row))))


def _value_dim(input: Tensor, dim: Any) -> tuple[np.ndarray, int, int]:
    """(data, dim in range, its size: 1 for a 0-d input)."""
    xd = input._data
    d = _wrap_dim(-1 if dim is None else dim, xd.ndim)
    return xd, d, (xd.shape[d] if xd.ndim else 1)


def _selected(input: Tensor, values: np.ndarray, indices: np.ndarray, d: int, keepdim: bool,
              node_cls: type[MaxBackward0], ret: type) -> Any:
    """The named tuple of a selecting op, recording its node (the gradient goes to ``indices``)."""
    vt = wrap(values, input._device)
    it = wrap(indices.astype(np.int64, copy=False), input._device)
    if input._requires_grad and grad_enabled() and input._data.dtype.kind in "fc":
        link_one(node_cls(it._data, input._data.shape, d, keepdim), input, vt)
    return ret(vt, it)


def _picked(xd: np.ndarray, pick: np.ndarray, d: int, keepdim: bool) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of one index per row (``pick``), in the input's shape without dim ``d``
    (``keepdim``: with it as 1)."""
    idx = _unrows(pick[:, None], xd.shape, d, 1)
    values = np.take_along_axis(xd, idx, d)
    return (values, idx) if keepdim else (np.squeeze(values, d), np.squeeze(idx, d))


# ----- sort, argsort -------------------------------------------------------------------------------


class SortBackward0(MaxBackward0):
    """Each sorted value's gradient back to where it was (``indices``)."""

    __slots__ = ()


class SortBackward1(SortBackward0):
    """``sort`` called with ``stable=`` (torch's other overload names its node apart)."""

    __slots__ = ()


def _sort_indices(xd: np.ndarray, d: int, descending: bool, stable: bool) -> np.ndarray:
    if xd.dtype.kind == "c":
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    if not xd.ndim:
        return np.zeros((), np.int64)
    n = xd.shape[d]
    x2 = _rows(xd, d)
    idx = _stable_order(x2, descending)
    if not stable and n > _INSERTION_SORTED:
        ordered = np.take_along_axis(x2, idx, -1)
        rows = np.nonzero(_equal(ordered[:, 1:], ordered[:, :-1]).any(-1))[0]
        if _replayable(rows, n):
            less = greater_nan_first if descending else less_nan_last
            for r in rows:  # std::sort's order among equal values (NOTE [Ties])
                items = _items(x2[r])
                stl_sort(items, less)
                idx[r] = [i for _, i in items]
    return _unrows(idx, xd.shape, d, n)


def _np_sort(a: Tensor, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Tensor:
    return sort(a.reshape(-1), 0).values if axis is None else sort(a, axis, stable=True).values


def _np_argsort(a: Tensor, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Tensor:
    return argsort(a.reshape(-1), 0) if axis is None else argsort(a, axis, stable=True)


@SORTING.op(nodes=(SortBackward0, SortBackward1), functions=((np.sort, _np_sort),))
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None) -> return_types.sort:
    """``(values, indices)`` sorted along ``dim``, NaN largest. ``stable=True`` keeps equal values in
    their order; otherwise their order is torch's CPU kernel's (NOTE [Ties] in _tie_order.py)."""
    xd, d, _ = _value_dim(input, dim)
    idx = _sort_indices(xd, d, descending, bool(stable))
    values = np.take_along_axis(xd, idx, d) if xd.ndim else xd.copy()
    node = SortBackward0 if stable is None else SortBackward1
    return _selected(input, values, idx, d, True, node, return_types.sort)


@SORTING.op(functions=((np.argsort, _np_argsort),))
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``); int64, not differentiable."""
    xd, d, _ = _value_dim(input, dim)
    return wrap(_sort_indices(xd, d, descending, bool(stable)), input._device)


@SORTING.op(name="msort")
def msort(input: Tensor) -> Tensor:
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


# ----- topk ----------------------------------------------------------------------------------------


class TopkBackward0(MaxBackward0):
    __slots__ = ()


@SORTING.op(nodes=(TopkBackward0,))
def topk(input: Tensor, k: int, dim: int | None = None, largest: bool = True, sorted: bool = True) -> return_types.topk:
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements along ``dim``
    (the last by default), NaN largest; in order unless ``sorted=False`` (then in the order torch's
    kernel leaves them). Which of equal values are picked is torch's (NOTE [Ties])."""
    xd, d, n = _value_dim(input, dim)
    if xd.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if not xd.ndim:
        return _selected(input, xd.copy(), np.zeros((), np.int64), d, True, TopkBackward0,
                         return_types.topk)
    x2 = _rows(xd, d)
    order = _stable_order(x2, largest)
    idx = order[:, :k].copy()
    if k and n > 1:
        head = np.take_along_axis(x2, order[:, : min(k + 1, n)], -1)
        tied = _equal(head[:, 1:], head[:, :-1]).any(-1)
        partial = k * 64 <= n  # the kernel's partial_sort path sorts; its nth_element path sorts only if asked
        rows = np.nonzero(tied if (sorted or partial) else np.ones(len(x2), bool))[0]
        if _replayable(rows, n):
            less = greater_nan_first if largest else less_nan_last
            for r in rows:
                items = _items(x2[r])
                if partial:
                    stl_partial_sort(items, k, less)
                else:
                    stl_nth_element(items, k - 1, less)
                    if sorted:
                        stl_sort(items, less, k - 1)
                idx[r] = [i for _, i in items[:k]]
    idx = _unrows(idx, xd.shape, d, k)
    values = np.take_along_axis(xd, idx, d)
    return _selected(input, values, idx, d, True, TopkBackward0, return_types.topk)


# ----- kthvalue, median, nanmedian -----------------------------------------------------------------


class KthvalueBackward0(MaxBackward0):
    __slots__ = ()


class MedianBackward1(MaxBackward0):
    __slots__ = ()


class NanmedianBackward1(MaxBackward0):
    __slots__ = ()


class MedianBackward0(MaxBackward1):
    """``median(input)``: the gradient shared evenly among the elements equal to the median (NaN
    with NaN: NOTE [NaN extrema] in reduce.py)."""

    __slots__ = ()


class NanmedianBackward0(MaxBackward1):
    __slots__ = ()


def _no_bool(name: str, xd: np.ndarray) -> None:
    if xd.dtype.kind == "b":
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Bool\'')


@SORTING.op(nodes=(KthvalueBackward0,))
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> return_types.kthvalue:
    """``(values, indices)``: the ``k``-th smallest element along ``dim`` (NaN largest) and its index;
    among equal values, the one torch's kernel picks (NOTE [Ties])."""
    xd, d, n = _value_dim(input, dim)
    _no_bool("kthvalue", xd)
    if xd.ndim and xd.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if not xd.ndim:
        return _selected(input, xd.copy(), np.zeros((), np.int64), d, keepdim,
                         KthvalueBackward0, return_types.kthvalue)
    x2 = _rows(xd, d)
    order = _stable_order(x2, False)
    pick = order[:, k - 1].copy()
    if x2.shape[0]:
        kth = np.take_along_axis(x2, pick[:, None], -1)
        rows = np.nonzero(_equal(x2, kth).sum(-1) > 1)[0]
        if _replayable(rows, n):
            for r in rows:  # torch's quickselect picks among the equal ones
                values, where = x2[r].tolist(), list(range(n))
                quickselect(values, where, k - 1)
                pick[r] = where[k - 1]
    values, idx = _picked(xd, pick, d, keepdim)
    return _selected(input, values, idx, d, keepdim, KthvalueBackward0, return_types.kthvalue)


def _nanmedian_less(x: tuple[Any, int], y: tuple[Any, int]) -> bool:
    """nanmedian's kernel's order: (value, index), NaN last; NaNs are all equivalent to each other."""
    a, b = x[0], y[0]
    return a < b or (a == b and x[1] < y[1]) or (b != b and a == a)


def _median_position(x2: np.ndarray, ignore_nan: bool) -> np.ndarray:
    """Each row's median index as torch's kernel finds it: with NaN (and not ignoring it) the first
    NaN; else the element of rank ``(m - 1) // 2`` among the m non-NaN values in (value, index)
    order, which is the stable sort's. In an all-NaN row nanmedian's kernel leaves whichever NaN
    std::nth_element puts first (NOTE [Ties])."""
    order = _stable_order(x2, False)
    nan = _is_nan(x2)
    count = x2.shape[-1] - nan.sum(-1)
    if ignore_nan:
        pos = np.take_along_axis(order, np.maximum((count - 1) // 2, 0)[:, None], -1)[:, 0]
        rows = np.nonzero(count == 0)[0]
        if _replayable(rows, x2.shape[-1]):
            for r in rows:
                items = _items(x2[r])
                stl_nth_element(items, 0, _nanmedian_less)
                pos[r] = items[0][1]
        return pos
    pos = np.take_along_axis(order, np.full((len(x2), 1), (x2.shape[-1] - 1) // 2), -1)[:, 0]
    return np.where(nan.any(-1), nan.argmax(-1), pos)


def _median(name: str, input: Tensor, dim: Any, keepdim: bool, ignore_nan: bool) -> Any:
    xd = input._data
    _no_bool(name, xd)
    if dim is None:  # the median of all elements: a 0-d tensor, the gradient shared among equal ones
        flat = xd.reshape(1, -1)
        if flat.size == 0:
            value = np.array(np.nan if xd.dtype.kind in "fc" else np.iinfo(xd.dtype).min, dtype=xd.dtype)
        else:
            value = flat[0, _median_position(flat, ignore_nan)[0]].copy()
        out = wrap(np.asarray(value), input._device)
        if input._requires_grad and grad_enabled() and xd.dtype.kind in "fc":
            node_cls = NanmedianBackward0 if ignore_nan else MedianBackward0
            link_one(node_cls(save(input), save_output(out), xd.shape, None, False), input, out)
        return out
    xd, d, n = _value_dim(input, dim)
    if xd.ndim and n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    ret = return_types.nanmedian if ignore_nan else return_types.median
    node = NanmedianBackward1 if ignore_nan else MedianBackward1
    if not xd.ndim:
        return _selected(input, xd.copy(), np.zeros((), np.int64), d, keepdim, node, ret)
    values, idx = _picked(xd, _median_position(_rows(xd, d), ignore_nan), d, keepdim)
    return _selected(input, values, idx, d, keepdim, node, ret)


@SORTING.op(nodes=(MedianBackward0, MedianBackward1))
def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median(input)``: the lower median of all elements (NaN if any is NaN). ``median(input, dim,
    keepdim=False)``: ``(values, indices)`` along ``dim``; among equal values the index torch gives
    (the last of the equal ones at the median's rank in (value, index) order)."""
    return _median("median", input, dim, keepdim, False)


@SORTING.op(nodes=(NanmedianBackward0, NanmedianBackward1))
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median`` ignoring NaN (NaN only where every element is)."""
    return _median("nanmedian", input, dim, keepdim, True)


# ----- mode ----------------------------------------------------------------------------------------


class ModeBackward0(MaxBackward0):
    __slots__ = ()


def _mode_row_replayed(row: np.ndarray) -> tuple[Any, int]:
    """torch's mode kernel on one row: std::sort by value (``<``), then the first longest run of
    equal values, reported by its last element."""
    items = _items(row)
    stl_sort(items, lambda x, y: x[0] < y[0])
    best = run = 0
    value, index = items[0]
    for j, (v, i) in enumerate(items):
        run += 1
        if j == len(items) - 1 or v != items[j + 1][0]:
            if run > best:
                best, value, index = run, v, i
            run = 0
    return value, index


@SORTING.op(nodes=(ModeBackward0,))
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> return_types.mode:
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest of equally frequent
    ones) and an index of it, the one torch's kernel reports (NOTE [Ties])."""
    xd, d, n = _value_dim(input, dim)
    if xd.ndim and n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if not xd.ndim:
        return _selected(input, xd.copy(), np.zeros((), np.int64), d, keepdim, ModeBackward0,
                         return_types.mode)
    x2 = _rows(xd, d)
    order = _stable_order(x2, False)
    ordered = np.take_along_axis(x2, order, -1)
    pos = np.arange(n)
    starts = np.concatenate([np.ones((len(x2), 1), bool), ordered[:, 1:] != ordered[:, :-1]], -1)
    ends = np.concatenate([ordered[:, 1:] != ordered[:, :-1], np.ones((len(x2), 1), bool)], -1)
    run_start = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    freq = np.where(ends, pos - run_start + 1, 0)
    best = freq.argmax(-1)  # the first longest run: the smallest of the most frequent values
    pick = np.take_along_axis(order, best[:, None], -1)[:, 0]  # its last element in stable order
    rows = np.nonzero(_is_nan(x2).any(-1) | ((freq.max(-1) > 1) & (n > _INSERTION_SORTED)))[0]
    if _replayable(rows, n):
        for r in rows:  # std::sort's arrangement decides which equal element ends the run (NOTE [Ties])
            pick[r] = _mode_row_replayed(x2[r])[1]
    values, idx = _picked(xd, pick, d, keepdim)
    return _selected(input, values, idx, d, keepdim, ModeBackward0, return_types.mode)


# ----- quantile, nanquantile -----------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    """torch's quantile: sort (differentiable), ranks ``q * (n - 1)`` (of the non-NaN count for
    nanquantile; n - 1 where quantile meets a NaN, so the result is NaN), the values at the ranks
    below and above (gather), and lerp between them."""
    xd = input._data
    if xd.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor):
        qd = q._data
        if qd.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if xd.dtype not in (np.float32, np.float64):
            raise RuntimeError("quantile() input tensor must be either float or double dtype")
        if qd.dtype != xd.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if not np.all((qd >= 0) & (qd <= 1)):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    else:
        if xd.dtype not in (np.float32, np.float64):
            raise RuntimeError("quantile() input tensor must be either float or double dtype")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        qd = np.asarray(q, dtype=xd.dtype)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    # sorted values with the reduced dims first and the sorted one last (keepdim: reduced dims as 1)
    if dim is None:
        s = sort(input.reshape(-1)).values
        lead = (1,) * xd.ndim if keepdim else ()
    else:
        d = _wrap_dim(dim, xd.ndim)
        s = sort(movedim(input, d, -1) if xd.ndim else input.reshape(1)).values
        if keepdim and xd.ndim:
            s = s.unsqueeze(d)
        lead = s.shape[:-1]
    s = s.reshape(lead + (s.shape[-1],))
    sd = s._data
    n = sd.shape[-1]
    nan = np.isnan(sd)
    q1 = qd.reshape(-1)
    if ignore_nan:
        ranks = q1 * (n - nan.sum(-1, keepdims=True) - 1).astype(sd.dtype)
        ranks = np.where(ranks < 0, 0, ranks).astype(sd.dtype, copy=False)
    else:
        ranks = np.where(nan.any(-1, keepdims=True), n - 1, q1 * np.asarray(n - 1, sd.dtype)).astype(sd.dtype)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as torch's round
    below = ranks.astype(np.int64)
    out = s.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights: Any = np.full(ranks.shape, 0.5, sd.dtype) if interpolation == "midpoint" else ranks - below
        weights = Tensor._wrap(weights.astype(sd.dtype, copy=False), input._device)
        if interpolation == "linear" and isinstance(q, Tensor) and q._requires_grad and grad_enabled():
            weights = _rank_weights(q, sd, nan, ignore_nan, below, input)
        out = lerp(out, s.gather(-1, np.ceil(ranks).astype(np.int64)), weights)
    if qd.ndim == 0:
        return out.squeeze(-1)
    return movedim(out, -1, 0)


def _rank_weights(q: Tensor, sd: np.ndarray, nan: np.ndarray, ignore_nan: bool, below: np.ndarray,
                  input: Tensor) -> Tensor:
    """The linear weights ``q * (count - 1) - below`` as a differentiable function of a tensor ``q``
    (torch's quantile has a gradient for q); constant where the rank was clamped or NaN forced it."""
    n = sd.shape[-1]
    count = (n - nan.sum(-1, keepdims=True)) if ignore_nan else np.full(nan.shape[:-1] + (1,), n)
    scale = (count - 1).astype(sd.dtype)
    fixed = (scale < 0) if ignore_nan else nan.any(-1, keepdims=True)
    q1 = q.reshape(-1)
    w = q1 * Tensor._wrap(scale, input._device) - Tensor._wrap(below.astype(sd.dtype), input._device)
    if fixed.any():
        w = where(np.broadcast_to(fixed, w.shape), Tensor._wrap(np.zeros((), sd.dtype)), w)
    return w


def _np_quantile(a: Tensor, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                 method: str = "linear", keepdims: bool = False, **kw: Any) -> Tensor:
    return quantile(a, q, axis, keepdims, interpolation=method)


def _np_nanquantile(a: Tensor, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                    method: str = "linear", keepdims: bool = False, **kw: Any) -> Tensor:
    return nanquantile(a, q, axis, keepdims, interpolation=method)


@SORTING.op(functions=((np.quantile, _np_quantile),))
def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-quantiles (a number or a 1-d tensor of them in [0, 1]) of ``input`` along ``dim``
    (of all elements by default); a tensor ``q`` adds a leading dim. ``interpolation`` between the
    two nearest ranks: linear, lower, higher, midpoint or nearest. NaN if a NaN is present.
    Differentiable (through sort, gather and lerp)."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@SORTING.op(functions=((np.nanquantile, _np_nanquantile),))
def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only where every element is)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)

__all__ = SORTING.exports(__name__)
