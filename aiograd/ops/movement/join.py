"""Joining and splitting, and their derivative rules: cat/stack and the numpy-style
stacks (hstack, vstack, dstack, column_stack, atleast_nd), split/chunk/tensor_split/
unbind and the numpy-style splits, broadcast_tensors and meshgrid.

The pieces of a split are views of the input (torch's SplitBackward0 for split and
chunk, one SliceBackward0 per piece for tensor_split, as torch), and broadcast_tensors
and meshgrid return expanded views.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._warn import warn_user
from ...autograd.graph import Node, Shape, record
from ...tensor import Tensor, new_tensor
from .._common import broadcast_shapes, common_device, is_operand, needs_grad
from .._table import OpTable
from ..indexing.index import SliceBackward0, getitem
from .shape import ExpandBackward0, _index, _wrap_dim, expand, int_tuple, make_view, reshape, unsqueeze
from ..._dtypes import torch_dtype_name as _torch_dtype_name

JOIN = OpTable("movement.join")


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
        if op == "cat":
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return ts


class CatBackward0(Node):
    __slots__ = ("slicers",)
    slicers: list[tuple[Any, ...]]

    def __init__(self, slicers: list[tuple[Any, ...]]) -> None:
        self._init_node()
        self.slicers = slicers

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        return [g[s] if self.should_compute_output(i) else None for i, s in enumerate(self.slicers)]


class StackBackward0(CatBackward0):
    __slots__ = ()


def _np_concatenate(arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Tensor:
    if out is not None or kwargs:
        return NotImplemented
    return cat(arrays, axis)


@JOIN.op(nodes=(CatBackward0,), method=False, aliases=("concat", "concatenate"),
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
        return NotImplemented
    return stack(arrays, axis)


@JOIN.op(nodes=(StackBackward0,), method=False, functions=((np.stack, _np_stack),))
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


# ----- numpy-style stacks: atleast_nd, hstack, vstack, dstack, column_stack -------------------


def _atleast(tensors: tuple[Any, ...], fn: Any) -> Any:
    """torch's atleast_nd convention: one tensor in, one out; several (or a sequence), a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(fn(t) for t in _as_tensor_list(tensors, "atleast")) if tensors else ()


def _at1(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t.ndim == 0 else t


def _at2(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return reshape(t, (1, 1))
    return unsqueeze(t, 0) if t.ndim == 1 else t


def _at3(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return reshape(t, (1, 1, 1))
    if t.ndim == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if t.ndim == 2 else t


def _np_atleast(fn: Any) -> Any:
    def adapter(*arys: Any) -> Any:
        out = _atleast(arys, fn)
        return list(out) if isinstance(out, tuple) else out

    return adapter


@JOIN.op(method=False, functions=((np.atleast_1d, _np_atleast(_at1)),))
def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dim (a 0-d one becomes shape (1,)): one tensor for one, else a tuple."""
    return _atleast(tensors, _at1)


@JOIN.op(method=False, functions=((np.atleast_2d, _np_atleast(_at2)),))
def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dims (a 1-d one of size n becomes (1, n))."""
    return _atleast(tensors, _at2)


@JOIN.op(method=False, functions=((np.atleast_3d, _np_atleast(_at3)),))
def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dims (1-d (n,) becomes (1, n, 1); 2-d (m, n) becomes (m, n, 1))."""
    return _atleast(tensors, _at3)


def _np_stacker(name: str) -> Any:
    def adapter(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
        if dtype is not None:
            return NotImplemented
        return JOIN[name].fn(tup)

    return adapter


@JOIN.op(nodes=(CatBackward0,), method=False, functions=((np.hstack, _np_stacker("hstack")),))
def hstack(tensors: Any) -> Tensor:
    """Concatenate along dim 1 (along dim 0 for 1-d tensors), as numpy's hstack."""
    ts = [_at1(t) for t in _as_tensor_list(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


@JOIN.op(nodes=(CatBackward0,), method=False, aliases=("row_stack",),
         functions=((np.vstack, _np_stacker("vstack")),))
def vstack(tensors: Any) -> Tensor:
    """Concatenate along dim 0 after making each tensor at least 2-d (a 1-d one is a row)."""
    return cat([_at2(t) for t in _as_tensor_list(tensors, "vstack")], 0)


@JOIN.op(nodes=(CatBackward0,), method=False, functions=((np.dstack, _np_stacker("dstack")),))
def dstack(tensors: Any) -> Tensor:
    """Concatenate along dim 2 after making each tensor at least 3-d."""
    return cat([_at3(t) for t in _as_tensor_list(tensors, "dstack")], 2)


@JOIN.op(nodes=(CatBackward0,), method=False, functions=(np.column_stack,))
def column_stack(tensors: Any) -> Tensor:
    """Concatenate along dim 1, a tensor of 0 or 1 dims becoming a column."""
    ts = _as_tensor_list(tensors, "column_stack")
    return cat([reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in ts], 1)


# ----- split / chunk / unbind ------------------------------------------------------------
# One node for all the pieces (torch's SplitBackward0): its outputs are views of the
# input. A piece that receives no gradient contributes zeros.


class SplitBackward0(Node):
    __slots__ = ("slicers", "in_shape", "dtype", "dim")
    slicers: list[tuple[Any, ...]]
    in_shape: Shape
    dtype: np.dtype
    dim: int

    def __init__(self, slicers: list[tuple[Any, ...]], in_shape: Shape, dtype: np.dtype, dim: int) -> None:
        self._init_node()
        self.slicers = slicers
        self.in_shape = in_shape
        self.dtype = dtype
        self.dim = dim

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


def _np_split_adapter(ary: Tensor, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    return _np_split(ary, indices_or_sections, axis)


@JOIN.op(nodes=(SplitBackward0, SplitWithSizesBackward0), functions=((np.split, _np_split_adapter),))
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


@JOIN.op(nodes=(SplitBackward0, SplitWithSizesBackward0))
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


@JOIN.op(nodes=(UnbindBackward0,))
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, as views with that dim removed."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim)
    return _split_pieces(input, [1] * input.shape[d], d, UnbindBackward0, select=True)



def _slices(input: Tensor, d: int, bounds: list[tuple[int, int | None]]) -> tuple[Tensor, ...]:
    """The pieces ``input[..., start:end, ...]`` along ``d``: views, each its own SliceBackward0 (as torch)."""
    lead = (slice(None),) * d
    return tuple(getitem(input, lead + (slice(a, b),)) for a, b in bounds)


def _section_bounds(n: int, sections: int) -> list[tuple[int, int | None]]:
    """numpy's array_split: the first ``n % sections`` pieces one longer."""
    size, extra = divmod(n, sections)
    bounds: list[tuple[int, int | None]] = []
    start = 0
    for i in range(sections):
        end = start + size + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def _index_bounds(indices: tuple[int, ...]) -> list[tuple[int, int | None]]:
    """Pieces between consecutive indices, sliced as Python slices are (negative wraps, out of range clips)."""
    starts = (0, *indices)
    ends: tuple[int | None, ...] = (*indices, None)
    return list(zip(starts, ends))


def _split_arg(op: str, value: Any) -> int | tuple[int, ...]:
    """A sections count (an int or a 0-d integer tensor) or split indices (a sequence or a 1-d tensor)."""
    if isinstance(value, Tensor):
        if value._data.dtype.kind not in "iu":
            raise RuntimeError(
                f"{op} expected tensor_indices_or_sections to have dtype of long, but got "
                f"{_torch_dtype_name(value._data.dtype)}"
            )
        if value.ndim > 1:
            raise RuntimeError(
                f"{op} expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, "
                f"but got a tensor with {value.ndim} dims"
            )
        return int(value._data) if value.ndim == 0 else tuple(int(i) for i in value._data)
    if isinstance(value, (list, tuple)):
        return int_tuple((value,), op, "indices")
    return _index(value, "sections")


def _tensor_split(input: Tensor, arg: int | tuple[int, ...], dim: int, op: str) -> tuple[Tensor, ...]:
    if input.ndim == 0:
        raise RuntimeError(f"{op} expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.ndim)
    if isinstance(arg, int):
        if arg <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {arg}")
        return _slices(input, d, _section_bounds(input.shape[d], arg))
    return _slices(input, d, _index_bounds(arg))


def _np_array_split(ary: Tensor, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    return list(tensor_split(ary, indices_or_sections, axis))


@JOIN.op(nodes=(SliceBackward0,), functions=((np.array_split, _np_array_split),))
def tensor_split(
    input: Tensor, indices_or_sections: Any = None, dim: int = 0, *, sections: Any = None, indices: Any = None,
    tensor_indices_or_sections: Any = None,
) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim``: into ``sections`` pieces (the first ``size % sections``
    one longer, as numpy's array_split), or at ``indices`` (a list, or a 0-d/1-d integer tensor)."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes one of indices_or_sections, sections, indices or "
                        "tensor_indices_or_sections")
    return _tensor_split(input, _split_arg("tensor_split", given[0]), dim, "tensor_split")


def _np_split(ary: Tensor, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """numpy's split: tensor_split, where a sections count must divide the dim."""
    if isinstance(indices_or_sections, int) and ary.ndim and ary.shape[_wrap_dim(axis, ary.ndim)] % max(
        indices_or_sections, 1
    ):
        raise ValueError("array split does not result in an equal division")
    return list(tensor_split(ary, indices_or_sections, axis))


def _directional_split(op: str, input: Tensor, indices_or_sections: Any, min_dims: int, dim: int) -> tuple[Tensor, ...]:
    """hsplit/vsplit/dsplit: tensor_split along one dim, where a sections count must divide it."""
    if input.ndim < min_dims:
        raise RuntimeError(
            f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with "
            f"{input.ndim} dimensions!"
        )
    arg = _split_arg(op, indices_or_sections)
    if isinstance(arg, int):
        n = input.shape[dim]
        if arg == 0 or n % arg:
            raise RuntimeError(
                f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension {n} is not "
                f"divisible by the split_size {arg}!"
            )
    return _tensor_split(input, arg, dim, op)


@JOIN.op(nodes=(SliceBackward0,), functions=(np.hsplit,))
def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 1 (dim 0 for a 1-d tensor); a sections count must divide that dim."""
    return _directional_split("hsplit", input, indices_or_sections, 1, 0 if input.ndim == 1 else 1)


@JOIN.op(nodes=(SliceBackward0,), functions=(np.vsplit,))
def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 0 of a tensor of at least 2 dims."""
    return _directional_split("vsplit", input, indices_or_sections, 2, 0)


@JOIN.op(nodes=(SliceBackward0,), functions=(np.dsplit,))
def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 2 of a tensor of at least 3 dims."""
    return _directional_split("dsplit", input, indices_or_sections, 3, 2)


# ----- broadcast_tensors / meshgrid ------------------------------------------------------------


def _tensors_arg(tensors: tuple[Any, ...], op: str) -> list[Tensor]:
    """``f(a, b)`` or ``f([a, b])``, as torch's functions taking ``*tensors``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


def _np_broadcast_arrays(*args: Any, subok: bool = False) -> Any:
    return list(broadcast_tensors(*args))


@JOIN.op(nodes=(ExpandBackward0,), method=False, functions=((np.broadcast_arrays, _np_broadcast_arrays),))
def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (read-only views; a tensor already of
    that shape is returned as is, as torch)."""
    ts = _tensors_arg(tensors, "broadcast_tensors")
    if not ts:
        return ()
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t if t.shape == shape else expand(t, shape) for t in ts)


def _np_meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    if sparse:
        return NotImplemented
    return list(meshgrid(*xi, indexing=indexing))


@JOIN.op(nodes=(ExpandBackward0,), method=False, functions=((np.meshgrid, _np_meshgrid),))
def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 0-d or 1-d tensors (expanded views): with ``indexing="ij"`` output i varies
    along dim i; with ``"xy"`` the first two dims are swapped (numpy's default). torch warns when
    ``indexing`` is left out, and uses "ij"."""
    ts = _tensors_arg(tensors, "meshgrid")
    if indexing is None:
        warn_user("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t._data}"
            )
        if t.dtype != ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    common_device(*ts)
    where = list(range(len(ts)))  # the dim along which each tensor varies
    if indexing == "xy" and len(ts) >= 2:
        where[0], where[1] = 1, 0
    shape = [0] * len(ts)
    for t, i in zip(ts, where):
        shape[i] = t.numel()
    out = []
    for t, i in zip(ts, where):
        view_shape = [1] * len(ts)
        view_shape[i] = t.numel()
        out.append(expand(reshape(t, tuple(view_shape)), tuple(shape)))
    return tuple(out)


concat = concatenate = cat
row_stack = vstack

__all__ = JOIN.exports(__name__)
