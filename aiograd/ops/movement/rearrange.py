"""Copies that move or repeat elements, and their derivative rules: flip (fliplr, flipud),
roll, rot90, repeat, tile, repeat_interleave; diff.

Each moving op's gradient is the inverse move of the gradient, written with the numpy
function that the op itself serves (``np.roll(g, -shifts)``), so a create_graph pass
runs the differentiable op (NOTE [One rule for both modes] in _common.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one
from ...tensor import Tensor, new_tensor
from .._common import grad_enabled
from .._table import OpTable
from ..convert import contiguous
from ..pointwise.elementwise import ELEMENTWISE, logical_xor, sub
from ..indexing.index import IndexSelectBackward0, index_select, narrow
from .join import cat
from .shape import ViewBackward0, _index, _wrap_dim, expand, int_tuple, reshape, unsqueeze, view
from ..._dtypes import torch_dtype_name as _torch_dtype_name

REARRANGE = OpTable("movement.rearrange")


def _link(node: Node, input: Tensor, out: Tensor) -> Tensor:
    if input._requires_grad and grad_enabled():
        link_one(node, input, out)
    return out


def _dims(dims: Any, nd: int, op: str, name: str = "dims") -> tuple[int, ...]:
    """Distinct dims, wrapped (torch's error for a repeated one)."""
    ds = tuple(_wrap_dim(d, nd) for d in int_tuple((dims,) if not isinstance(dims, (tuple, list)) else (dims,),
                                                   op, name))
    for d in ds:
        if ds.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return ds


# ----- flip ----------------------------------------------------------------------------------


class FlipBackward0(Node):
    __slots__ = ("dims",)
    dims: tuple[int, ...]

    def __init__(self, dims: tuple[int, ...]) -> None:
        self._init_node()
        self.dims = dims

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (np.flip(grads[0], self.dims),)


def _flip(input: Tensor, ds: tuple[int, ...]) -> Tensor:
    xd = input._data
    out = new_tensor(np.flip(xd, ds).copy() if ds else xd.copy(), input._device)
    return _link(FlipBackward0(ds), input, out)


@REARRANGE.op(nodes=(FlipBackward0,), functions=(np.flip,))
def flip(input: Tensor, dims: Any = None, *, axis: Any = None) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as torch.flip; all dims when None)."""
    if axis is not None:
        dims = axis
    nd = input.ndim
    ds = tuple(range(nd)) if dims is None else _dims(dims, nd, "flip")
    return _flip(input, ds if nd else ())


@REARRANGE.op(nodes=(FlipBackward0,), functions=(np.fliplr,))
def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dim 1) of a tensor of at least 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _flip(input, (1,))


@REARRANGE.op(nodes=(FlipBackward0,), functions=(np.flipud,))
def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dim 0) of a tensor of at least 1 dim."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _flip(input, (0,))


# ----- roll / rot90 --------------------------------------------------------------------------


class RollBackward0(Node):
    __slots__ = ("shifts", "dims")
    shifts: tuple[int, ...]
    dims: tuple[int, ...] | None

    def __init__(self, shifts: tuple[int, ...], dims: tuple[int, ...] | None) -> None:
        self._init_node()
        self.shifts = shifts
        self.dims = dims

    def apply(self, grads: list[Any]) -> tuple[Any]:
        back = tuple(-s for s in self.shifts)
        return (np.roll(grads[0], back if self.dims is not None else back[0], self.dims),)


def _np_roll(a: Tensor, shift: Any, axis: Any = None) -> Tensor:
    return roll(a, shift, axis)


@REARRANGE.op(nodes=(RollBackward0,), functions=((np.roll, _np_roll),))
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements by ``shifts`` along ``dims``, wrapping around; without ``dims`` the
    flattened tensor is rolled and the shape restored."""
    sh = int_tuple((shifts,) if isinstance(shifts, (tuple, list)) else (shifts,), "roll", "shifts")
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        out = new_tensor(np.roll(input._data, sh[0]), input._device)
        return _link(RollBackward0(sh, None), input, out)
    ds_raw = int_tuple((dims,) if isinstance(dims, (tuple, list)) else (dims,), "roll", "dims")
    if len(sh) != len(ds_raw):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds_raw)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {ds_raw[0]} but tensor has no dimensions")
    ds = tuple(_wrap_dim(d, input.ndim) for d in ds_raw)
    out = new_tensor(np.roll(input._data, sh, ds), input._device)
    return _link(RollBackward0(sh, ds), input, out)


class Rot90Backward0(Node):
    __slots__ = ("k", "dims")
    k: int
    dims: tuple[int, int]

    def __init__(self, k: int, dims: tuple[int, int]) -> None:
        self._init_node()
        self.k = k
        self.dims = dims

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (np.rot90(grads[0], -self.k, self.dims),)


def _np_rot90(m: Tensor, k: int = 1, axes: Any = (0, 1)) -> Tensor:
    return rot90(m, k, axes)


@REARRANGE.op(nodes=(Rot90Backward0,), functions=((np.rot90, _np_rot90),))
def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dim towards the second."""
    k = _index(k, "k")
    ds = int_tuple((dims,), "rot90", "dims")
    if len(ds) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(ds)}")
    nd = input.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    a, b = _wrap_dim(ds[0], nd), _wrap_dim(ds[1], nd)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    out = new_tensor(np.rot90(input._data, k, (a, b)).copy(), input._device)
    return _link(Rot90Backward0(k % 4, (a, b)), input, out)


# ----- repeat / tile / repeat_interleave -----------------------------------------------------


class RepeatBackward0(Node):
    __slots__ = ("split_shape", "axes", "in_shape")
    split_shape: Shape
    axes: tuple[int, ...]
    in_shape: Shape

    def __init__(self, split_shape: Shape, axes: tuple[int, ...], in_shape: Shape) -> None:
        self._init_node()
        self.split_shape = split_shape
        self.axes = axes
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0].reshape(self.split_shape).sum(axis=self.axes)
        return (g.reshape(self.in_shape),)


@REARRANGE.op(nodes=(RepeatBackward0,))
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile ``input`` ``sizes[i]`` times along dim i (torch.Tensor.repeat; ``len(sizes) >= ndim``)."""
    reps = int_tuple(sizes, "repeat", "repeats")
    shp = input.shape
    if len(reps) < len(shp):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    padded = (1,) * (len(reps) - len(shp)) + shp
    out_shape = [r * s for r, s in zip(reps, padded)]
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out_shape)}: {out_shape}")
    out = new_tensor(np.tile(input._data.reshape(padded), reps), input._device)
    split_shape: list[int] = []
    for r, s in zip(reps, padded):
        split_shape += [r, s]
    return _link(RepeatBackward0(tuple(split_shape), tuple(range(0, 2 * len(reps), 2)), shp), input, out)


def _np_tile(a: Tensor, reps: Any) -> Tensor:
    return tile(a, reps)


@REARRANGE.op(nodes=(RepeatBackward0,), functions=((np.tile, _np_tile),))
def tile(input: Tensor, dims: Any, *more: Any) -> Tensor:
    """Like repeat, but ``dims`` shorter than ``ndim`` is padded with ones in front."""
    reps = int_tuple((dims,) if isinstance(dims, (tuple, list)) else (dims,) + more, "tile", "dims")
    if len(reps) < input.ndim:
        reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


def _repeats_array(repeats: Any) -> np.ndarray | int:
    """An int, or the repeats tensor's integer array (0-d or 1-d)."""
    if isinstance(repeats, (Tensor, np.ndarray, list, tuple)):
        arr = repeats._data if isinstance(repeats, Tensor) else np.asarray(repeats)
        if arr.dtype.kind not in "iu":
            raise NotImplementedError(
                f"\"repeat_interleave_cpu\" not implemented for '{_torch_dtype_name(arr.dtype)}'"
            )
        if arr.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if (arr < 0).any():
            raise RuntimeError("repeats can not be negative")
        return arr.astype(np.int64)
    r = _index(repeats, "repeats")
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    return r


def _np_repeat(a: Tensor, repeats: Any, axis: Any = None) -> Tensor:
    return repeat_interleave(a, repeats, axis)


@REARRANGE.op(nodes=(ViewBackward0, IndexSelectBackward0), functions=((np.repeat, _np_repeat),))
def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (each slice along ``dim``; of the flattened tensor without ``dim``)
    ``repeats`` times, or ``repeats[i]`` times for the i-th. ``repeat_interleave(counts)`` alone
    repeats the indices ``0..len(counts)-1``. An int count is an expanded view copied once
    (torch's ViewBackward0); a tensor of counts an index_select (IndexSelectBackward0)."""
    if repeats is None:  # torch.repeat_interleave(repeats)
        counts = _repeats_array(input)
        if isinstance(counts, int) or counts.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return Tensor._wrap(np.repeat(np.arange(counts.size, dtype=np.int64), counts), input._device)
    reps = _repeats_array(repeats)
    x = input
    if dim is None:
        x, d = reshape(input, (-1,)), 0
    else:
        d = _wrap_dim(dim, input.ndim)
        if input.ndim == 0:
            x = reshape(input, (1,))
    n = x.shape[d]
    if isinstance(reps, int):
        total = n * reps
        if output_size is not None and output_size != total:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}")
        shp = x.shape
        wide = expand(unsqueeze(x, d + 1), shp[: d + 1] + (reps,) + shp[d + 1 :])
        return view(contiguous(wide), shp[:d] + (total,) + shp[d + 1 :])
    if reps.ndim == 0 or reps.shape[0] == 1:  # one count for every slice
        reps = np.full(n, reps.reshape(-1)[0])
    if reps.shape[0] != n:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = {reps.shape[0]} and "
            f"input.size({d}) = {n}"
        )
    if output_size is not None and output_size != int(reps.sum()):
        raise RuntimeError("allocated size does not match required size")
    return index_select(x, d, np.repeat(np.arange(n, dtype=np.int64), reps))


# ----- diff ----------------------------------------------------------------------------------


def _np_diff(a: Tensor, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
    def as_edge(v: Any) -> Any:
        if v is None or isinstance(v, Tensor):
            return v
        shape = list(a.shape)
        shape[_wrap_dim(axis, a.ndim)] = 1
        arr = np.broadcast_to(np.asarray(v, dtype=a.dtype), shape) if np.ndim(v) == 0 else np.asarray(v)
        return Tensor._wrap(np.ascontiguousarray(arr), a.device)

    return diff(a, n, axis, as_edge(prepend), as_edge(append))


@REARRANGE.op(nodes=tuple(ELEMENTWISE["sub"].nodes), functions=((np.diff, _np_diff),))
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``x[1:] - x[:-1]``, repeated; exclusive or
    for bool), after concatenating ``prepend`` and ``append`` along it (torch's SubBackward0)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = _index(n, "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim)
    parts = []
    for edge in (prepend, input, append):
        if edge is None:
            continue
        if edge is not input:
            if edge.ndim != input.ndim:
                raise RuntimeError("diff expects prepend or append to be the same dimension as input")
            for k in range(input.ndim):
                if k != d and edge.shape[k] != input.shape[k]:
                    raise RuntimeError(
                        "diff expects the shape of tensor to prepend or append to match that of input except along "
                        f"the differencing dimension; input.size({k}) = {input.shape[k]}, but got "
                        f"tensor.size({k}) = {edge.shape[k]}"
                    )
        parts.append(edge)
    if n == 0:  # prepend and append are checked, not used (as torch)
        return input
    x = cat(parts, d) if len(parts) > 1 else input
    op = logical_xor if x.dtype == np.bool_ else sub
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        x = op(narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1))
    return x


__all__ = REARRANGE.exports(__name__)
