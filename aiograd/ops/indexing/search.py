"""Ops that find positions or values, with integer (or non-differentiable) results: nonzero,
argwhere, searchsorted, bucketize, unique, unique_consecutive.

unique's values carry a grad_fn when the input requires grad, as torch's do, whose backward
raises: torch gives these ops no derivative.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ...autograd.graph import Node, record
from ...tensor import Tensor, new_tensor
from .._common import needs_grad
from .._table import OpTable
from ..movement.shape import _wrap_dim

SEARCH = OpTable("indexing.search")


def _np_nonzero(a: Tensor) -> Any:
    return nonzero(a, as_tuple=True)


@SEARCH.op(functions=((np.nonzero, _np_nonzero),))
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an int64 (n, ndim) tensor, or with ``as_tuple`` one 1-d
    tensor per dim (a 0-d input counts as 1-d)."""
    xd = input._data
    if as_tuple:
        return tuple(Tensor._wrap(i.astype(np.int64), input._device) for i in np.nonzero(np.atleast_1d(xd)))
    return Tensor._wrap(np.argwhere(xd).astype(np.int64), input._device)


@SEARCH.op(functions=(np.argwhere,))
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the (n, ndim) int64 indices of the non-zero elements."""
    return nonzero(input)


def _search_side(op: str, right: bool, side: str | None) -> str:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.{op}(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                f"torch.{op}(): side and right can't be set to opposites, got side of left while right was True"
            )
        return side
    return "right" if right else "left"


def _values_of(x: Any) -> tuple[np.ndarray, bool]:
    """(array, was a Python scalar) of the values to look up."""
    if isinstance(x, Tensor):
        return x._data, False
    if isinstance(x, (bool, int, float)):
        return np.asarray(x), True
    raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not {type(x).__name__}")


@SEARCH.op(method=False)
def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """For each value of ``input``, the index at which inserting it keeps ``sorted_sequence``'s
    last dim sorted (the first such index, or the last with ``right=True``/``side="right"``).
    A 1-d sequence serves every value; an N-d one has one row per row of ``input`` (same leading dims).
    ``sorter`` holds the indices that sort an unsorted sequence."""
    seq = sorted_sequence._data
    if seq.ndim == 0:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    vals, _ = _values_of(input)
    how: Literal["left", "right"] = "right" if _search_side("searchsorted", right, side) == "right" else "left"
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data.astype(np.intp), -1)
    if seq.ndim > 1 and (vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(seq.shape)} and input "
            f"value tensor {list(vals.shape)}"
        )
    if seq.ndim == 1:
        res = np.searchsorted(seq, vals, side=how)
    else:
        n_rows = int(np.prod(seq.shape[:-1]))
        rows_s = seq.reshape(n_rows, seq.shape[-1])
        rows_v = vals.reshape(n_rows, vals.shape[-1])
        res = np.zeros(rows_v.shape, np.int64)
        for r, (s, v) in enumerate(zip(rows_s, rows_v)):
            res[r] = np.searchsorted(s, v, side=how)
        res = res.reshape(vals.shape)
    return new_tensor(np.asarray(res, dtype=np.int32 if out_int32 else np.int64), sorted_sequence._device)


@SEARCH.op(method=False)
def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of ``boundaries`` (1-d, sorted) each value falls in: the first i with
    ``value <= boundaries[i]`` (``value < boundaries[i]`` with ``right=True``)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    vals, _ = _values_of(input)
    res = np.searchsorted(boundaries._data, vals, side="right" if right else "left")
    return new_tensor(np.asarray(res, dtype=np.int32 if out_int32 else np.int64), boundaries._device)


# ----- unique ----------------------------------------------------------------------------------


class _NoDerivative(Node):
    """The grad_fn torch gives unique's values: recorded, and raising if a backward reaches it."""

    __slots__ = ()
    op = ""

    def apply(self, grads: list[Any]) -> Any:
        raise NotImplementedError(f"the derivative for '{self.op}' is not implemented.")


class Unique2Backward0(_NoDerivative):
    __slots__ = ()
    op = "_unique2"


class UniqueDimBackward0(_NoDerivative):
    __slots__ = ()
    op = "unique_dim"


class UniqueConsecutiveBackward0(_NoDerivative):
    __slots__ = ()
    op = "unique_consecutive"


def _rows(xd: np.ndarray, d: int) -> np.ndarray:
    """The slices along ``d`` as rows of a 2-d array (compared as wholes)."""
    moved = np.moveaxis(xd, d, 0)
    return moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))


def _unique_results(input: Tensor, values: np.ndarray, inverse: np.ndarray, counts: np.ndarray,
                    return_inverse: bool, return_counts: bool, node: type[_NoDerivative]) -> Any:
    out = new_tensor(values, input._device)
    if needs_grad(input):
        record(node(), (input,), (out,))
    results: list[Tensor] = [out]
    if return_inverse:
        results.append(Tensor._wrap(inverse.astype(np.int64), input._device))
    if return_counts:
        results.append(Tensor._wrap(counts.astype(np.int64), input._device))
    return results[0] if len(results) == 1 else tuple(results)


def _np_unique(ar: Tensor, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
               axis: Any = None, **kwargs: Any) -> Any:
    if return_index or kwargs:
        return NotImplemented
    return unique(ar, return_inverse=return_inverse, return_counts=return_counts, dim=axis)


@SEARCH.op(nodes=(), functions=((np.unique, _np_unique),))
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None) -> Any:
    """The distinct elements (the distinct slices along ``dim``), sorted; with ``return_inverse``
    also where each element went (input's shape; along ``dim``, one index per slice) and with
    ``return_counts`` how often each occurs. NaNs are all distinct (as torch). ``sorted=False``
    sorts as well (as torch does on the CPU)."""
    xd = input._data
    if dim is None:
        flat = xd.reshape(-1)
        values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True, equal_nan=False)
        return _unique_results(input, values, inverse.reshape(xd.shape), counts, return_inverse, return_counts,
                               Unique2Backward0)
    if xd.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, xd.ndim)
    rows = _rows(xd, d)
    if rows.shape[0] == 0:
        values_rows, inverse, counts = rows, np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        values_rows, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    shape = list(np.moveaxis(xd, d, 0).shape)
    shape[0] = values_rows.shape[0]
    values = np.moveaxis(values_rows.reshape(shape), 0, d)
    return _unique_results(input, np.ascontiguousarray(values), inverse.reshape(-1), counts, return_inverse,
                           return_counts, UniqueDimBackward0)


@SEARCH.op(nodes=())
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse each run of equal consecutive elements (slices along ``dim``) to one; with
    ``return_inverse`` the run each element belongs to, with ``return_counts`` each run's length."""
    xd = input._data
    if dim is None:
        rows = xd.reshape(-1, 1)
    else:
        if xd.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        rows = _rows(xd, _wrap_dim(dim, xd.ndim))
    n = rows.shape[0]
    starts = np.ones(n, bool)
    if n > 1:
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    inverse = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, n))
    if dim is None:
        values = xd.reshape(-1)[first]
        inverse = inverse.reshape(xd.shape)
    else:
        d = _wrap_dim(dim, xd.ndim)
        values = np.ascontiguousarray(np.take(xd, first, axis=d))
    return _unique_results(input, values, inverse, counts, return_inverse, return_counts, UniqueConsecutiveBackward0)


__all__ = SEARCH.exports(__name__)
