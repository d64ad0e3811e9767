"""Shape ops and their derivative rules: reshape/view, flatten, squeeze/unsqueeze,
permute/transpose, expand/broadcast_to, cat/stack, split/chunk/unbind, flip,
repeat/tile.

Results that are numpy views share the input's version counter (as torch
views do), so an in-place change through either is seen by saved-tensor checks.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

import numpy as np

from ..autograd.graph import Node, Shape, link_one, record, sum_to
from ..tensor import Tensor, _shape_args, new_tensor
from ._common import common_device, grad_enabled, is_operand, needs_grad
from ._table import OpTable

SHAPE = OpTable("shape")


def make_view(input: Tensor, arr: np.ndarray) -> Tensor:
    """Wrap ``arr``; when it is a view of ``input``'s array, share storage bookkeeping."""
    out = new_tensor(arr, input._device)
    if arr.base is not None and (np.may_share_memory(arr, input._data) or arr.size == 0):
        out._version_counter = input._version_counter
        root = input._base if input._base is not None else input
        out._base = root
        if not (root._requires_grad and root.grad_fn is None):
            _register_view(root, out)
    return out


# NOTE [Live views]: an in-place op that rebases the history of a tensor (gives it a
# new grad_fn) changes the values seen by every view of its storage, so those views
# must get a new grad_fn too, or their gradients would flow into the old history
# (torch regenerates a view's grad_fn lazily when it sees the version moved). We keep
# weak references to the views of each base and regenerate the overlapping ones at
# the in-place op (ops/inplace.py). Views of a leaf that requires grad are not kept:
# an in-place op that could rebase them is an error. Dead entries are pruned when a
# list doubles, so a long-lived base sliced in a loop does not grow the registry.
_VIEWS: dict[int, list[Any]] = {}


def _drop_entry(key: int) -> Any:
    """The callback of the weak reference to a base: forget its views when it dies."""

    def drop(_ref: Any) -> None:
        _VIEWS.pop(key, None)

    return drop


def _register_view(root: Tensor, view: Tensor) -> None:
    key = id(root)
    entry = _VIEWS.get(key)
    if entry is None:
        # entry = [weakref to root (its callback drops the entry), prune threshold, *view refs]
        entry = _VIEWS[key] = [weakref.ref(root, _drop_entry(key)), 16]
    entry.append(weakref.ref(view))
    if len(entry) > entry[1]:
        alive = [r for r in entry[2:] if r() is not None]
        entry[2:] = alive
        entry[1] = max(16, 2 * len(entry))


def live_views(root: Tensor) -> list[Tensor]:
    """The views of ``root``'s storage that are still alive (see NOTE [Live views])."""
    entry = _VIEWS.get(id(root))
    if entry is None:
        return []
    return [v for v in (r() for r in entry[2:]) if v is not None]


def _index(value: Any, what: str) -> int:
    """An integer argument (a Python or numpy int, or an integer tensor of one element), else a TypeError."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None


def int_tuple(values: tuple[Any, ...], op: str, name: str) -> tuple[int, ...]:
    """Sizes or dims given as ``f(2, 3)`` or ``f((2, 3))``, as ints (never truncating a float, as ``int()`` would)."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(values[0])
    out = []
    for i, v in enumerate(values):
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(
                f"{op}(): argument '{name}' must be tuple of ints, but found element of type {type(v).__name__} "
                f"at pos {i}"
            ) from None
    return tuple(out)


def _wrap_dim(d: int, ndim: int) -> int:
    """``d`` as a dim in ``[0, ndim)`` (negative counts from the end; a 0-d tensor has dims 0 and -1)."""
    if not isinstance(d, int):
        d = _index(d, "dim")
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


class ViewBackward0(Node):
    __slots__ = ("in_shape",)
    in_shape: Shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0].reshape(self.in_shape),)


class ReshapeAliasBackward0(ViewBackward0):
    """reshape that could view a non-contiguous input (as torch names it)."""

    __slots__ = ()


class UnsafeViewBackward0(ViewBackward0):
    """reshape that had to copy (as torch names it)."""

    __slots__ = ()


_VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
    "contiguous subspaces). Use .reshape(...) instead."
)


def view_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], new_shape: tuple[int, ...], itemsize: int
) -> tuple[int, ...] | None:
    """The strides (in bytes) with which ``new_shape`` views an array of ``shape`` and
    ``strides``, or None when no view exists and a copy is needed.

    NOTE [View compatibility]: torch's rule (its computeStride), so that ``view`` works and
    fails where torch's does. Reading the old dims from the innermost out, consecutive dims
    form one chunk while each outer stride equals the inner chunk's span (``stride[d-1] ==
    numel(d..) * stride of the chunk's innermost dim``); a dim of size 1 never breaks a
    chunk, whatever its stride. A view exists iff the new dims, also from the innermost,
    can be cut into consecutive groups whose element counts are exactly those of the chunks;
    each group then walks its chunk in C order. New dims of size 1 fit anywhere. A tensor
    with no elements views as any shape (with contiguous strides unless the shape is
    unchanged). numpy's no-copy reshape follows the same rule (a test checks that), so a
    view that exists is built by ``ndarray.reshape``.
    """
    if not shape:
        return (itemsize,) * len(new_shape)
    numel = 1
    for n in shape:
        numel *= n
    if numel == 0:
        if new_shape == shape:
            return strides
        out = []
        step = itemsize
        for n in reversed(new_shape):
            out.append(step)
            step *= n if n > 1 else 1
        return tuple(reversed(out))
    new_strides = [0] * len(new_shape)
    v = len(new_shape) - 1  # next new dim to place, innermost first
    chunk_stride = strides[-1]  # the innermost stride of the current chunk
    chunk_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        chunk_numel *= shape[d]
        chunk_ends = d == 0 or (shape[d - 1] != 1 and strides[d - 1] != chunk_numel * chunk_stride)
        if not chunk_ends:
            continue
        while v >= 0 and (view_numel < chunk_numel or new_shape[v] == 1):
            new_strides[v] = view_numel * chunk_stride
            view_numel *= new_shape[v]
            v -= 1
        if view_numel != chunk_numel:
            return None
        if d > 0:
            chunk_stride = strides[d - 1]
            chunk_numel = view_numel = 1
    return tuple(new_strides) if v == -1 else None


def _infer_shape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 and size == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified dimension "
                "size -1 can be any value and is ambiguous"
            )
        if known == 0 or size % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape


def _reshape(input: Tensor, shape: tuple[Any, ...], view_only: bool) -> Tensor:
    """reshape (a view when the strides allow one, else a copy) or, with ``view_only``, view
    (refused when they do not; NOTE [View compatibility])."""
    xd = input._data
    target = _infer_shape(int_tuple(shape, "view" if view_only else "reshape", "shape"), xd.size)
    node_cls: type[ViewBackward0] = ViewBackward0
    if not xd.flags.c_contiguous:
        if view_strides(xd.shape, xd.strides, target, xd.itemsize) is not None:
            node_cls = ViewBackward0 if view_only else ReshapeAliasBackward0
        elif view_only:
            raise RuntimeError(_VIEW_ERROR)
        else:
            node_cls = UnsafeViewBackward0
    out = make_view(input, xd.reshape(target))
    if input._requires_grad and grad_enabled():
        link_one(node_cls(xd.shape), input, out)
    return out


def _np_reshape(a: Tensor, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Tensor:
    return reshape(a, shape if shape is not None else newshape)


@SHAPE.op(nodes=(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0), functions=((np.reshape, _np_reshape),))
def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same data with a new shape: a view when the strides allow one, else a copy. One dim may be -1."""
    return _reshape(input, shape, view_only=False)


@SHAPE.op(nodes=(ViewBackward0,))
def view(input: Tensor, *shape: Any) -> Tensor:
    """The same data with a new shape, always sharing memory; raises (as torch) when the
    strides do not allow it (NOTE [View compatibility]): then use reshape or contiguous()."""
    return _reshape(input, shape, view_only=True)


@SHAPE.op(nodes=(ViewBackward0,))
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


def _np_squeeze(a: Tensor, axis: Any = None) -> Tensor:
    return squeeze(a, axis)


@SHAPE.op(nodes=(ViewBackward0,), functions=((np.squeeze, _np_squeeze),))
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove dims of size 1 (all, or those in ``dim``)."""
    shp = input.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        ds = {_wrap_dim(d, len(shp)) for d in dims} if shp else set()
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
    return _reshape(input, new, view_only=True)


def _np_expand_dims(a: Tensor, axis: int) -> Tensor:
    return unsqueeze(a, axis)


@SHAPE.op(nodes=(ViewBackward0,), functions=((np.expand_dims, _np_expand_dims),))
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at ``dim``."""
    shp = input.shape
    d = _wrap_dim(dim, len(shp) + 1)
    return _reshape(input, shp[:d] + (1,) + shp[d:], view_only=True)


class PermuteBackward0(Node):
    __slots__ = ("dims",)
    dims: tuple[int, ...]

    def apply(self, grads: list[Any]) -> tuple[Any]:
        inv = tuple(np.argsort(self.dims))
        return (np.transpose(grads[0], inv),)


@SHAPE.op(nodes=(PermuteBackward0,), functions=(np.transpose,))
def permute(input: Tensor, *dims: Any, axes: Any = None) -> Tensor:
    """Reorder dims: output dim i is input dim ``dims[i]``."""
    if axes is not None:
        dims = (axes,)
    dims = int_tuple(dims, "permute", "dims")
    if not dims:
        dims = tuple(reversed(range(input.ndim)))
    nd = input.ndim
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if sorted(dims) != list(range(nd)):
        raise RuntimeError(f"permute(): dims {list(dims)} are not a permutation of the {nd} dims of the input")
    out = make_view(input, np.transpose(input._data, dims))
    if input._requires_grad and grad_enabled():
        link_one(PermuteBackward0(dims), input, out)
    return out


@SHAPE.op(nodes=(PermuteBackward0,))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    nd = input.ndim
    if nd == 0:
        return permute(input)
    perm = list(range(nd))
    a, b = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(input, perm)


@SHAPE.op(nodes=(PermuteBackward0,), functions=(np.swapaxes,))
def swapaxes(input: Tensor, axis1: int, axis2: int) -> Tensor:
    return transpose(input, axis1, axis2)


@SHAPE.op(nodes=(PermuteBackward0,), functions=(np.moveaxis,))
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
    in_shape: Shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (sum_to(grads[0], self.in_shape),)


@SHAPE.op(nodes=(ExpandBackward0,), functions=(np.broadcast_to,))
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
    if input._requires_grad and grad_enabled():
        link_one(ExpandBackward0(xd.shape), input, out)
    return out


@SHAPE.op(nodes=(ExpandBackward0,))
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes``; -1 keeps a dim's size."""
    sizes = int_tuple(sizes, "expand", "size")
    shp = input.shape
    lead = len(sizes) - len(shp)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({len(shp)})"
        )
    target = tuple(shp[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    return broadcast_to(input, target)


@SHAPE.op(nodes=(ViewBackward0,), export=False)
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.reshape(other.shape)``."""
    return reshape(self, other.shape)


@SHAPE.op(nodes=(ExpandBackward0,), export=False)
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.expand(other.shape)``."""
    return broadcast_to(self, other.shape)


@SHAPE.op(nodes=(ViewBackward0,), export=False)
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.view(other.shape)``."""
    return view(self, other.shape)


# ----- cat / stack ----------------------------------------------------------------------
# NOTE [Slicer tuples]: the backward of cat/stack hands each input the part of the
# gradient that came from it. The index tuples are built once in forward, so
# ``apply`` is one ``g[s]`` per input; ``g[s]`` is a numpy view in an ordinary
# pass and a differentiable getitem in a create_graph pass.


def _as_tensor_list(tensors: Any, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not Tensor")
    ts = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            if not isinstance(t, np.ndarray) or not is_operand(t):  # numpy arrays: np.concatenate dispatch
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
            t = Tensor._wrap(t)
        ts.append(t)
    if not ts:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    return ts


class CatBackward0(Node):
    __slots__ = ("slicers",)
    slicers: list[tuple[Any, ...]]

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        return [g[s] if e is not None else None for s, e in zip(self.slicers, self.next_edges)]


class StackBackward0(CatBackward0):
    __slots__ = ()


def _np_concatenate(arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Tensor:
    if out is not None or kwargs:
        return NotImplemented  # type: ignore[no-any-return]
    return cat(arrays, axis)


@SHAPE.op(nodes=(CatBackward0,), method=False, aliases=("concat", "concatenate"),
          functions=((np.concatenate, _np_concatenate),))
def cat(tensors: Any, dim: int = 0) -> Tensor:
    """Concatenate ``tensors`` along an existing dim ``dim``."""
    ts = _as_tensor_list(tensors, "cat")
    ref = ts[0]
    # torch skips legacy empty 1-d tensors when the others have more dims
    if ref.ndim > 1 or any(t.ndim > 1 for t in ts):
        ts2 = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)]
        ts = ts2 or ts
        ref = ts[0]
    nd = ref.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, nd)
    for i, t in enumerate(ts):
        if t.ndim != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {t.ndim}"
            )
        for k in range(nd):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {ref.shape[k]} "
                    f"but got size {t.shape[k]} for tensor number {i} in the list."
                )
    device = common_device(*ts)
    out = new_tensor(np.concatenate([t._data for t in ts], axis=d), device)
    if needs_grad(*ts):
        lead = (slice(None),) * d
        slicers = []
        off = 0
        for t in ts:
            n = t.shape[d]
            slicers.append(lead + (slice(off, off + n),))
            off += n
        record(CatBackward0(slicers), ts, (out,))
    return out


def _np_stack(arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Tensor:
    if out is not None or kwargs:
        return NotImplemented  # type: ignore[no-any-return]
    return stack(arrays, axis)


@SHAPE.op(nodes=(StackBackward0,), method=False, functions=((np.stack, _np_stack),))
def stack(tensors: Any, dim: int = 0) -> Tensor:
    """Join ``tensors`` (all of one shape) along a new dim ``dim``."""
    ts = _as_tensor_list(tensors, "stack")
    shp = ts[0].shape
    for i, t in enumerate(ts):
        if t.shape != shp:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 and "
                f"{list(t.shape)} at entry {i}"
            )
    d = _wrap_dim(dim, len(shp) + 1)
    device = common_device(*ts)
    out = new_tensor(np.stack([t._data for t in ts], axis=d), device)
    if needs_grad(*ts):
        lead = (slice(None),) * d
        record(StackBackward0([lead + (i,) for i in range(len(ts))]), ts, (out,))
    return out


# ----- split / chunk / unbind ------------------------------------------------------------
# One node for all the pieces (torch's SplitBackward0): its outputs are views of the
# input. A piece that receives no gradient contributes zeros.


class SplitBackward0(Node):
    __slots__ = ("slicers", "in_shape", "dtype", "dim")
    slicers: list[tuple[Any, ...]]
    in_shape: Shape
    dtype: np.dtype
    dim: int

    def apply(self, grads: list[Any]) -> tuple[Any]:
        present = [g for g in grads if g is not None]
        if present and present[0].__class__ is Tensor:
            return (self._graph(grads, present[0]),)
        if len(present) == len(grads):
            return (self._join(grads),)
        gi = np.zeros(self.in_shape, present[0].dtype if present else self.dtype)
        for s, g in zip(self.slicers, grads):
            if g is not None:
                gi[s] = g
        return (gi,)

    def _join(self, grads: list[Any]) -> Any:
        return np.concatenate(grads, axis=self.dim)

    def _zeros_like_piece(self, s: tuple[Any, ...], like: Tensor) -> Tensor:
        shp = np.empty(self.in_shape, dtype=bool)[s].shape
        return Tensor._wrap(np.zeros(shp, like._data.dtype), like._device)

    def _graph(self, grads: list[Any], like: Tensor) -> Tensor:
        full = [g if g is not None else self._zeros_like_piece(s, like) for s, g in zip(self.slicers, grads)]
        return self._join_graph(full)

    def _join_graph(self, full: list[Tensor]) -> Tensor:
        return cat(full, self.dim)


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()


class UnbindBackward0(SplitBackward0):
    __slots__ = ()

    def _join(self, grads: list[Any]) -> Any:
        return np.stack(grads, axis=self.dim)

    def _join_graph(self, full: list[Tensor]) -> Tensor:
        return stack(full, self.dim)


def _split_pieces(
    input: Tensor, sizes: list[int], d: int, node_cls: type[SplitBackward0], select: bool = False
) -> tuple[Tensor, ...]:
    xd = input._data
    lead = (slice(None),) * d
    slicers: list[tuple[Any, ...]] = []
    off = 0
    for n in sizes:
        slicers.append(lead + ((off if select else slice(off, off + n)),))
        off += n
    outs = tuple(make_view(input, xd[s]) for s in slicers)
    if needs_grad(input):
        record(node_cls(slicers, xd.shape, xd.dtype, d), (input,), outs)
    return outs


@SHAPE.op(nodes=(SplitBackward0, SplitWithSizesBackward0))
def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of ``split_size_or_sections`` (one int: equal pieces, the last
    smaller; a list: those sizes) along ``dim``. The pieces are views of ``tensor``."""
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(int_tuple((split_size_or_sections,), "split", "split_size"))
        if any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}"
            )
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {d}), but got split_sizes={sizes}"
            )
        return _split_pieces(tensor, sizes, d, SplitWithSizesBackward0)
    s = _index(split_size_or_sections, "split_size")
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    if n == 0:
        sizes = [0]
    else:
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
    return _split_pieces(tensor, sizes, d, SplitBackward0)


@SHAPE.op(nodes=(SplitBackward0, SplitWithSizesBackward0))
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of ``ceil(size / chunks)`` along ``dim`` (fewer if they run out)."""
    chunks = _index(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    size = -(-n // chunks)
    if size == 0:
        return split(input, [0] * chunks if n == 0 else 1, d)
    return split(input, size, d)


@SHAPE.op(nodes=(UnbindBackward0,))
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, as views with that dim removed."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim)
    return _split_pieces(input, [1] * input.shape[d], d, UnbindBackward0, select=True)


# ----- flip / repeat / tile ----------------------------------------------------------------


class FlipBackward0(Node):
    __slots__ = ("dims",)
    dims: tuple[int, ...]

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (np.flip(grads[0], self.dims),)


@SHAPE.op(nodes=(FlipBackward0,), functions=(np.flip,))
def flip(input: Tensor, dims: Any = None, *, axis: Any = None) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as torch.flip)."""
    if axis is not None:
        dims = axis
    nd = input.ndim
    if dims is None:
        ds = tuple(range(nd))
    else:
        ds = tuple(_wrap_dim(d, nd) for d in int_tuple((dims,), "flip", "dims"))
    out = new_tensor(np.flip(input._data, ds).copy() if nd else input._data.copy(), input._device)
    if input._requires_grad and grad_enabled():
        link_one(FlipBackward0(ds), input, out)
    return out


class RepeatBackward0(Node):
    __slots__ = ("split_shape", "axes", "in_shape")
    split_shape: Shape
    axes: tuple[int, ...]
    in_shape: Shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0].reshape(self.split_shape).sum(axis=self.axes)
        return (g.reshape(self.in_shape),)


@SHAPE.op(nodes=(RepeatBackward0,))
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile ``input`` ``sizes[i]`` times along dim i (torch.Tensor.repeat; ``len(sizes) >= ndim``)."""
    reps = int_tuple(sizes, "repeat", "repeats")
    shp = input.shape
    if len(reps) < len(shp):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    padded = (1,) * (len(reps) - len(shp)) + shp
    out = new_tensor(np.tile(input._data.reshape(padded), reps), input._device)
    if input._requires_grad and grad_enabled():
        split_shape: list[int] = []
        for r, s in zip(reps, padded):
            split_shape += [r, s]
        link_one(RepeatBackward0(tuple(split_shape), tuple(range(0, 2 * len(reps), 2)), shp), input, out)
    return out


@SHAPE.op(nodes=(RepeatBackward0,), functions=(np.tile,))
def tile(input: Tensor, dims: Any, *more: Any) -> Tensor:
    """Like repeat, but ``dims`` shorter than ``ndim`` is padded with ones in front."""
    reps = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,) + more
    if len(reps) < input.ndim:
        reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


concat = concatenate = cat

__all__ = SHAPE.exports(__name__)
