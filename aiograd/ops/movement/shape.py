"""Views and their derivative rules: reshape/view, flatten/ravel/unflatten,
squeeze/unsqueeze, permute/transpose/t/movedim, expand/broadcast_to.

Every op here returns a view where torch does (numpy views share the input's
memory); ``make_view`` gives a view the input's version counter (as torch views
do), so an in-place change through either is seen by saved-tensor checks, and
registers it for NOTE [Live views]. Joining and splitting are in join.py,
copies that move elements (flip, roll, repeat) in rearrange.py, diagonals in
diagonal.py, indexing views (narrow, select, slices) in ops/indexing/index.py.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one, sum_to
from ...tensor import Tensor, new_tensor
from .._common import grad_enabled
from .._table import OpTable
from ..convert import contiguous

SHAPE = OpTable("movement.shape")


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

    def __init__(self, in_shape: Shape) -> None:
        self._init_node()
        self.in_shape = in_shape

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


def _reshape(
    input: Tensor, shape: tuple[Any, ...], view_only: bool, node: type[ViewBackward0] = ViewBackward0
) -> Tensor:
    """reshape (a view when the strides allow one, else a copy) or, with ``view_only``, view
    (refused when they do not; NOTE [View compatibility]). ``node``: the view's node class
    (squeeze and unsqueeze have their own names)."""
    xd = input._data
    target = _infer_shape(int_tuple(shape, "view" if view_only else "reshape", "shape"), xd.size)
    node_cls: type[ViewBackward0] = node
    if not xd.flags.c_contiguous:
        if view_strides(xd.shape, xd.strides, target, xd.itemsize) is not None:
            node_cls = node if view_only else ReshapeAliasBackward0
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


@SHAPE.op(nodes=(ViewBackward0, UnsafeViewBackward0, ReshapeAliasBackward0))
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when the strides allow, as reshape)."""
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


def _np_ravel(a: Tensor, order: str = "C") -> Tensor:
    if order != "C":
        return NotImplemented
    return ravel(a)


@SHAPE.op(nodes=(ViewBackward0,), functions=((np.ravel, _np_ravel),))
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor: a view of a contiguous input, else a view of a
    contiguous copy (as torch: ``contiguous().view(-1)``)."""
    return view(contiguous(input), -1)


@SHAPE.op(nodes=(ViewBackward0,))
def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one of them may be -1): a view."""
    sizes = int_tuple((sizes,), "unflatten", "sizes")
    if input.ndim == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    if -1 in sizes:
        new = _infer_shape(sizes, n)
    else:
        known = 1
        for s in sizes:
            known *= s
        if known != n:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({n}) in the "
                "input tensor"
            )
        new = sizes
    return view(input, input.shape[:d] + new + input.shape[d + 1 :])


class SqueezeBackward0(ViewBackward0):
    """squeeze() of every size-1 dim (as torch names it)."""

    __slots__ = ()


class SqueezeBackward1(ViewBackward0):
    """squeeze(dim) (as torch names it)."""

    __slots__ = ()


class SqueezeBackward2(ViewBackward0):
    """squeeze(dims) with a tuple of dims (as torch names it)."""

    __slots__ = ()


class UnsqueezeBackward0(ViewBackward0):
    __slots__ = ()


def _np_squeeze(a: Tensor, axis: Any = None) -> Tensor:
    return squeeze(a, axis)


@SHAPE.op(nodes=(SqueezeBackward0, SqueezeBackward1, SqueezeBackward2), functions=((np.squeeze, _np_squeeze),))
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove dims of size 1 (all, or those in ``dim``): a view."""
    shp = input.shape
    node: type[ViewBackward0]
    if dim is None:
        new = tuple(s for s in shp if s != 1)
        node = SqueezeBackward0
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        ds = {_wrap_dim(d, len(shp)) for d in dims}
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
        node = SqueezeBackward2 if isinstance(dim, (tuple, list)) else SqueezeBackward1
    return _reshape(input, new, view_only=True, node=node)


def _np_expand_dims(a: Tensor, axis: int) -> Tensor:
    return unsqueeze(a, axis)


@SHAPE.op(nodes=(UnsqueezeBackward0,), functions=((np.expand_dims, _np_expand_dims),))
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at ``dim``: a view."""
    shp = input.shape
    d = _wrap_dim(dim, len(shp) + 1)
    return _reshape(input, shp[:d] + (1,) + shp[d:], view_only=True, node=UnsqueezeBackward0)


class PermuteBackward0(Node):
    __slots__ = ("dims",)
    dims: tuple[int, ...]

    def __init__(self, dims: tuple[int, ...]) -> None:
        self._init_node()
        self.dims = dims

    def apply(self, grads: list[Any]) -> tuple[Any]:
        inv = tuple(np.argsort(self.dims))
        return (np.transpose(grads[0], inv),)


class TransposeBackward0(PermuteBackward0):
    """transpose/swapaxes/swapdims (as torch names them)."""

    __slots__ = ()


class TBackward0(PermuteBackward0):
    __slots__ = ()


def _permute(input: Tensor, dims: tuple[int, ...], node: type[PermuteBackward0]) -> Tensor:
    out = make_view(input, np.transpose(input._data, dims))
    if input._requires_grad and grad_enabled():
        link_one(node(dims), input, out)
    return out


@SHAPE.op(nodes=(PermuteBackward0,), functions=(np.transpose,))
def permute(input: Tensor, *dims: Any, axes: Any = None) -> Tensor:
    """Reorder dims: output dim i is input dim ``dims[i]`` (a view)."""
    if axes is not None:
        dims = (axes,)
    dims = int_tuple(dims, "permute", "dims")
    if not dims:
        dims = tuple(reversed(range(input.ndim)))
    nd = input.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _permute(input, dims, PermuteBackward0)


def _transpose(input: Tensor, dim0: int, dim1: int, node: type[PermuteBackward0]) -> Tensor:
    nd = input.ndim
    a, b = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    perm = list(range(nd))
    if nd:
        perm[a], perm[b] = perm[b], perm[a]
    return _permute(input, tuple(perm), node)


@SHAPE.op(nodes=(TransposeBackward0,))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    return _transpose(input, dim0, dim1, TransposeBackward0)


def _np_swapaxes(a: Tensor, axis1: int, axis2: int) -> Tensor:
    return swapaxes(a, axis1, axis2)


@SHAPE.op(nodes=(TransposeBackward0,), functions=((np.swapaxes, _np_swapaxes),))
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """numpy's name of ``transpose``."""
    return _transpose(input, axis0, axis1, TransposeBackward0)


@SHAPE.op(nodes=(TransposeBackward0,))
def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Another name of ``transpose``."""
    return _transpose(input, dim0, dim1, TransposeBackward0)


@SHAPE.op(nodes=(TBackward0,))
def t(input: Tensor) -> Tensor:
    """The transpose of a matrix (a view); a tensor of 0 or 1 dims is returned as a view of itself."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return _transpose(input, 0, -1, TBackward0)


def _dim_list(dims: Any, op: str, name: str) -> tuple[int, ...]:
    return int_tuple((dims,), op, name) if isinstance(dims, (tuple, list)) else (_index(dims, name),)


def _np_moveaxis(a: Tensor, source: Any, destination: Any) -> Tensor:
    return movedim(a, source, destination)


@SHAPE.op(nodes=(PermuteBackward0,), aliases=("moveaxis",), functions=((np.moveaxis, _np_moveaxis),))
def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims from ``source`` to ``destination`` positions, keeping the others in order (a view)."""
    src = _dim_list(source, "movedim", "source")
    dst = _dim_list(destination, "movedim", "destination")
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain the same "
            f"number of dims as destination ({list(dst)} dims)"
        )
    nd = input.ndim
    ws = [_wrap_dim(s, nd) for s in src]
    wd = [_wrap_dim(d, nd) for d in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    result = [-1] * max(nd, 1)
    for s, d in zip(ws, wd):
        result[d] = s
    rest = iter(i for i in range(nd) if i not in ws)
    perm = tuple(r if r != -1 else next(rest) for r in result) if nd else ()
    return _permute(input, perm, PermuteBackward0)


class ExpandBackward0(Node):
    __slots__ = ("in_shape",)
    in_shape: Shape

    def __init__(self, in_shape: Shape) -> None:
        self._init_node()
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (sum_to(grads[0], self.in_shape),)


def _expand_error(shape: tuple[int, ...], target: tuple[int, ...]) -> RuntimeError:
    """torch's error for expanding ``shape`` to ``target``, naming the first dim that does not fit."""
    lead = len(target) - len(shape)
    if lead < 0:
        return RuntimeError(
            f"expand: the number of sizes provided ({len(target)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({len(shape)})"
        )
    for i, s in enumerate(target):
        if i < lead:
            if s < 0:
                return RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {i}"
                )
        elif shape[i - lead] not in (1, s):
            return RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({shape[i - lead]}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(target)}.  Tensor sizes: {list(shape)}"
            )
    return RuntimeError(f"cannot expand a tensor of shape {list(shape)} to {list(target)}")


def _expand(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    xd = input._data
    try:
        arr = np.broadcast_to(xd, shape)
    except ValueError:
        raise _expand_error(xd.shape, shape) from None
    out = make_view(input, arr)
    if input._requires_grad and grad_enabled():
        link_one(ExpandBackward0(xd.shape), input, out)
    return out


@SHAPE.op(nodes=(ExpandBackward0,), functions=(np.broadcast_to,))
def broadcast_to(input: Tensor, shape: Any) -> Tensor:
    """A read-only broadcast view of ``input`` with ``shape`` (``expand``; -1 keeps a dim's size)."""
    return expand(input, shape)


@SHAPE.op(nodes=(ExpandBackward0,))
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes`` (a read-only view); -1 keeps a dim's size."""
    sizes = int_tuple(sizes, "expand", "size")
    shp = input.shape
    lead = len(sizes) - len(shp)
    if lead < 0:
        raise _expand_error(shp, sizes)
    target = tuple(shp[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    return _expand(input, target)


@SHAPE.op(nodes=(ViewBackward0,), export=False, same_device=False)
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.reshape(other.shape)``."""
    return reshape(self, other.shape)


@SHAPE.op(nodes=(ExpandBackward0,), export=False, same_device=False)
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.expand(other.shape)``."""
    return broadcast_to(self, other.shape)


@SHAPE.op(nodes=(ViewBackward0,), export=False, same_device=False)
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.view(other.shape)``."""
    return view(self, other.shape)


moveaxis = movedim

__all__ = SHAPE.exports(__name__)
