"""Shape ops and their derivative rules: reshape/view, flatten, squeeze/unsqueeze,
permute/transpose, expand/broadcast_to.

Results that are numpy views share the input's version counter (as torch
views do), so an in-place change through either is seen by saved-tensor checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.graph import Node, sum_to
from ..tensor import Tensor, _shape_args
from ._common import implements_function, needs_grad, record, tensor_method

__all__ = [
    "reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "swapaxes",
    "expand", "broadcast_to", "movedim",
]


def make_view(input: Tensor, arr: np.ndarray) -> Tensor:
    """Wrap ``arr``; when it is a view of ``input``'s array, share storage bookkeeping."""
    out = Tensor._wrap(arr, input._device)
    if arr.base is not None and np.shares_memory(arr, input._data):
        out._version_counter = input._version_counter
        out._base = input._base if input._base is not None else input
    return out


def _wrap_dim(d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


class ViewBackward0(Node):
    __slots__ = ("in_shape",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0].reshape(self.in_shape),)


def _infer_shape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or size % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same data with a new shape (a view when possible). One dim may be -1."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    xd = input._data
    target = _infer_shape(shape, xd.size)
    out = make_view(input, xd.reshape(target))
    if needs_grad(input):
        node = ViewBackward0()
        node.in_shape = xd.shape
        record(node, (input,), (out,))
    return out


def view(input: Tensor, *shape: Any) -> Tensor:
    """Like reshape (aiograd arrays are always viewable through numpy)."""
    return reshape(input, *shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one."""
    shp = input.shape
    if not shp:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, len(shp))
    e = _wrap_dim(end_dim, len(shp))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for d in shp[s : e + 1]:
        n *= d
    return reshape(input, shp[:s] + (n,) + shp[e + 1 :])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove dims of size 1 (all, or those in ``dim``)."""
    shp = input.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        ds = {_wrap_dim(d, len(shp)) for d in dims} if shp else set()
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
    return reshape(input, new)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at ``dim``."""
    shp = input.shape
    d = _wrap_dim(dim, len(shp) + 1)
    return reshape(input, shp[:d] + (1,) + shp[d:])


class PermuteBackward0(Node):
    __slots__ = ("dims",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        inv = tuple(np.argsort(self.dims))
        return (np.transpose(grads[0], inv),)


@implements_function(np.transpose)
def permute(input: Tensor, *dims: Any, axes: Any = None) -> Tensor:
    """Reorder dims: output dim i is input dim ``dims[i]``."""
    if axes is not None:
        dims = (axes,)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if not dims:
        dims = tuple(reversed(range(input.ndim)))
    nd = input.ndim
    dims = tuple(_wrap_dim(int(d), nd) for d in dims)
    if sorted(dims) != list(range(nd)):
        raise RuntimeError(f"permute(): dims {list(dims)} are not a permutation of the {nd} dims of the input")
    out = make_view(input, np.transpose(input._data, dims))
    if needs_grad(input):
        node = PermuteBackward0()
        node.dims = dims
        record(node, (input,), (out,))
    return out


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    nd = input.ndim
    if nd == 0:
        return permute(input)
    perm = list(range(nd))
    a, b = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(input, perm)


@implements_function(np.swapaxes)
def swapaxes(input: Tensor, axis1: int, axis2: int) -> Tensor:
    return transpose(input, axis1, axis2)


@implements_function(np.moveaxis)
def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims from ``source`` to ``destination`` positions."""
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    nd = input.ndim
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    rest = [i for i in range(nd) if i not in src]
    result = [-1] * nd
    for s, d in zip(src, dst):
        result[d] = s
    it = iter(rest)
    result = [r if r != -1 else next(it) for r in result]
    return permute(input, result)


class ExpandBackward0(Node):
    __slots__ = ("in_shape",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (sum_to(grads[0], self.in_shape),)


@implements_function(np.broadcast_to)
def broadcast_to(input: Tensor, shape: Any) -> Tensor:
    """A read-only broadcast view of ``input`` with ``shape``."""
    shape = _shape_args((shape,)) if not isinstance(shape, int) else (shape,)
    xd = input._data
    try:
        arr = np.broadcast_to(xd, shape)
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor must match the existing size at non-singleton dimensions: "
            f"cannot broadcast {list(xd.shape)} to {list(shape)}"
        ) from None
    out = make_view(input, arr)
    if needs_grad(input):
        node = ExpandBackward0()
        node.in_shape = xd.shape
        record(node, (input,), (out,))
    return out


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes``; -1 keeps a dim's size."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shp = input.shape
    lead = len(sizes) - len(shp)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({len(shp)})"
        )
    target = tuple(shp[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    return broadcast_to(input, target)


@implements_function(np.reshape)
def _np_reshape(a: Tensor, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Tensor:
    return reshape(a, shape if shape is not None else newshape)


@implements_function(np.expand_dims)
def _np_expand_dims(a: Tensor, axis: int) -> Tensor:
    return unsqueeze(a, axis)


@implements_function(np.squeeze)
def _np_squeeze(a: Tensor, axis: Any = None) -> Tensor:
    return squeeze(a, axis)


for _name, _fn in {
    "reshape": reshape, "view": view, "flatten": flatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "expand": expand,
    "broadcast_to": broadcast_to, "movedim": movedim,
}.items():
    tensor_method(_name)(_fn)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return reshape(self, other.shape)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    return broadcast_to(self, other.shape)


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    return reshape(self, other.shape)


Tensor.reshape_as = _reshape_as  # type: ignore[attr-defined]
Tensor.expand_as = _expand_as  # type: ignore[attr-defined]
Tensor.view_as = _view_as  # type: ignore[attr-defined]
