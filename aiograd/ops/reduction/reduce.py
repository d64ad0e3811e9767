"""Reductions and their derivative rules: sum, mean (more in this family: see __all__).

``dim`` may be an int, a tuple or None; ``keepdim`` keeps reduced dims as 1.
numpy spellings ``axis``/``keepdims`` are accepted too, so backward rules
written in numpy terms work on Tensors (NOTE [One rule for both modes]).
"""

from __future__ import annotations

import builtins
from typing import Any, ClassVar

import numpy as np

from ... import return_types
from ...autograd.graph import Node, Shape, link_one, record
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor, _resolve_dtype, get_default_dtype
from .._common import grad_enabled, torch_dtype_name, wrap
from .._table import OpTable
from ..pointwise.elementwise import maximum, minimum, where

REDUCE = OpTable("reduction.reduce")
Dims = Any  # tuple[int, ...] | None: normalized reduction dims (None: all)

_builtin_max = builtins.max


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` as a sorted tuple of non-negative axes (None: all).

    A 0-d tensor accepts dim 0 and -1 (as torch) and reduces over nothing: ``()``.
    """
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        dims = tuple(dim)
    else:
        dims = (dim,)
    out = []
    top = _builtin_max(ndim, 1)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"dim must be an int or a tuple of ints, got {type(d).__name__}")
        d = int(d)
        if not -top <= d < top:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-top}, {top - 1}], but got {d})"
            )
        out.append(d % ndim if ndim else 0)
    if len(set(out)) != len(out):
        repeated = next(d for i, d in enumerate(out) if d in out[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    if not ndim or not out:
        return None  # a 0-d input, or an empty list of dims (torch: reduce over all)
    return tuple(sorted(out))


def _pick(dim: Any, axis: Any, keepdim: Any, keepdims: Any) -> tuple[Any, bool]:
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return dim, bool(keepdim)


def expand_reduced(g: Any, in_shape: tuple[int, ...], dims: tuple[int, ...] | None, keepdim: bool) -> Any:
    """Broadcast the gradient of a reduction back to the input's shape."""
    if not keepdim and dims is not None and in_shape:
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        g = g.reshape(tuple(shape))
    elif not keepdim and dims is None and in_shape:
        g = g.reshape((1,) * len(in_shape))
    return np.broadcast_to(g, in_shape)


def accumulation_dtype(dt: np.dtype) -> np.dtype:
    """The dtype torch accumulates a reduction of ``dt`` in: float32 for float16 (its opmath type)."""
    return np.dtype(np.float32) if dt == np.float16 else dt


def _accumulating_reduction(fn: Any, input: Tensor, dims: Any, keepdim: bool, dtype: Any) -> Tensor:
    """``np.sum``/``np.prod`` with torch's dtype rule: bool and integer inputs give int64, and float16
    accumulates in float32."""
    xd = input._data
    dtype = _resolve_dtype(dtype) if dtype is not None else None
    out_dtype = dtype if dtype is not None else np.dtype(np.int64) if xd.dtype.kind in "biu" else xd.dtype
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, a product may overflow: no warning
        res = fn(xd, axis=dims, keepdims=keepdim, dtype=accumulation_dtype(out_dtype))
    return wrap(np.asarray(res).astype(out_dtype, copy=False), input._device)


class SumBackward0(Node):
    __slots__ = ("in_shape", "dims", "keepdim")
    in_shape: Shape
    dims: Dims
    keepdim: bool

    def __init__(self, in_shape: Shape, dims: Dims, keepdim: bool) -> None:
        self._init_node()
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (expand_reduced(grads[0], self.in_shape, self.dims, self.keepdim),)


class MeanBackward0(SumBackward0):
    __slots__ = ("count",)
    count: int

    def __init__(self, in_shape: Shape, dims: Dims, keepdim: bool, count: int) -> None:
        self._init_node()
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.count = count

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (expand_reduced(grads[0] / self.count, self.in_shape, self.dims, self.keepdim),)


@REDUCE.op(nodes=(SumBackward0,), functions=(np.sum,))
def sum(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """Sum over ``dim`` (all dims by default)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    dims = normalize_dims(dim, xd.ndim)
    out = _accumulating_reduction(np.sum, input, dims, keepdim, dtype)
    if input._requires_grad and grad_enabled():
        link_one(SumBackward0(xd.shape, dims, keepdim), input, out)
    return out


@REDUCE.op(nodes=(MeanBackward0,), functions=(np.mean,))
def mean(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """Mean over ``dim`` (all dims by default); floating inputs only, as torch."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    dtype = _resolve_dtype(dtype) if dtype is not None else None
    if xd.dtype.kind not in "fc" and dtype is None:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {xd.dtype}"
        )
    dims = normalize_dims(dim, xd.ndim)
    res = np.mean(xd, axis=dims, keepdims=keepdim, dtype=accumulation_dtype(dtype or xd.dtype))
    out = wrap(np.asarray(res).astype(dtype or xd.dtype, copy=False), input._device)
    if input._requires_grad and grad_enabled():
        link_one(MeanBackward0(xd.shape, dims, keepdim, _count(xd.shape, dims)), input, out)
    return out




def _keep_shape(in_shape: tuple[int, ...], dims: tuple[int, ...] | None) -> tuple[int, ...]:
    """The output shape with keepdim=True."""
    if dims is None:
        return (1,) * len(in_shape)
    shape = list(in_shape)
    for d in dims:
        shape[d] = 1
    return tuple(shape)


def _count(in_shape: tuple[int, ...], dims: tuple[int, ...] | None) -> int:
    n = 1
    for d in dims if dims is not None else range(len(in_shape)):
        n *= in_shape[d]
    return n


def _float_only(name: str, xd: np.ndarray) -> None:
    if xd.dtype.kind not in "fc":
        raise RuntimeError(f"{name}(): expected a floating point input, but got {xd.dtype}")


# ----- prod ---------------------------------------------------------------------------


def _prod_others_numpy(x: np.ndarray, dims: tuple[int, ...] | None) -> np.ndarray:
    """For each element, the product of the other elements of its reduction group (exact with zeros).

    The reduced dims are moved last and flattened; exclusive cumulative
    products from the left and from the right multiply to "all but me".
    """
    nd = x.ndim
    red = tuple(range(nd)) if dims is None else dims
    keep = tuple(i for i in range(nd) if i not in red)
    xm = np.transpose(x, keep + red)
    moved_shape = xm.shape
    k = _count(x.shape, red) if nd else 1
    xm = xm.reshape(moved_shape[: len(keep)] + (k,))
    left = np.ones_like(xm)
    right = np.ones_like(xm)
    if k > 1:
        np.cumprod(xm[..., :-1], axis=-1, out=left[..., 1:])
        np.cumprod(xm[..., :0:-1], axis=-1, out=right[..., -2::-1])
    others = (left * right).reshape(moved_shape)
    return np.transpose(others, np.argsort(keep + red))


def _prod_others_graph(x: Tensor, dims: tuple[int, ...] | None) -> Tensor:
    """``_prod_others_numpy`` with differentiable ops (create_graph passes through inputs with zeros):
    row i of a (K, K) stack is the group with element i replaced by 1, and each row is multiplied out."""
    nd = x.ndim
    red = tuple(range(nd)) if dims is None else dims
    keep = tuple(i for i in range(nd) if i not in red)
    xm = x.permute(keep + red) if nd else x
    moved_shape = xm.shape
    k = _count(x.shape, red) if nd else 1
    lead = moved_shape[: len(keep)]
    xm = xm.reshape(lead + (1, k))
    stack = np.broadcast_to(xm, lead + (k, k))
    stack = where(np.eye(k, dtype=bool), 1.0, stack)
    others = prod(stack, -1).reshape(moved_shape)
    return others.permute(tuple(np.argsort(keep + red))) if nd else others


class ProdBackward0(Node):
    """Gradient of a product: ``g * result / x`` without zeros, the product of the others with them."""

    __slots__ = ("x", "result", "in_shape", "dims", "keepdim")
    x: Saved
    result: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool

    def __init__(self, x: Saved, result: Saved, in_shape: Shape, dims: Dims, keepdim: bool) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        xd = x._data if graph else x
        gk = g if self.keepdim or not self.in_shape else g.reshape(_keep_shape(self.in_shape, self.dims))
        if (xd != 0).all():
            r = unpack(self, self.result, graph)
            rk = r if self.keepdim or not self.in_shape else r.reshape(_keep_shape(self.in_shape, self.dims))
            return (gk * (rk / x),)
        others = _prod_others_graph(x, self.dims) if graph else _prod_others_numpy(xd, self.dims)
        return (gk * others,)


@REDUCE.op(nodes=(ProdBackward0,), functions=(np.prod,))
def prod(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """Product over ``dim`` (all dims by default); exact gradient also where the input has zeros."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    dims = normalize_dims(dim, xd.ndim)
    out = _accumulating_reduction(np.prod, input, dims, keepdim, dtype)
    if input._requires_grad and grad_enabled() and out._data.dtype.kind in "fc":
        link_one(ProdBackward0(save(input), save_output(out), xd.shape, dims, keepdim), input, out)
    return out


# ----- max / min / amax / amin / argmax / argmin ------------------------------------------


def _tie_weights(xd: np.ndarray, rk: np.ndarray, dims: tuple[int, ...] | None, dtype: Any,
                 nan_ties: bool = True) -> np.ndarray:
    """1/count at every element equal to its group's extremum, else 0.

    NOTE [NaN extrema]: torch's two rules differ at a NaN extremum. max()/min()/median()
    share the gradient among the NaN elements (``nan_ties``: evenly_distribute_backward);
    amax/amin/aminmax count the elements equal to the result, none for NaN, and so divide
    0 by 0: NaN for the whole group (scale_grad_by_count). Both are kept, as torch's.
    """
    mask = xd == rk
    if nan_ties and rk.dtype.kind in "fc":
        nan = np.isnan(rk)
        if nan.any():
            mask |= np.isnan(xd) & nan
    w = mask.astype(dtype)
    count = w.sum(axis=dims, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / count


class AmaxBackward0(Node):
    """Gradient of amax/amin (and of max()/min() without dim): shared evenly among tied extrema
    (NOTE [NaN extrema])."""

    __slots__ = ("x", "result", "in_shape", "dims", "keepdim")
    x: Saved
    result: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool
    nan_ties: ClassVar[bool] = False

    def __init__(self, x: Saved, result: Saved, in_shape: Shape, dims: Dims, keepdim: bool) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        xd = unpack(self, self.x, False)
        rd = unpack(self, self.result, False)
        kshape = _keep_shape(self.in_shape, self.dims)
        w: Any = _tie_weights(xd, rd.reshape(kshape), self.dims, g.dtype, self.nan_ties)
        gk = g if self.keepdim else g.reshape(kshape)
        if graph:
            w = Tensor._wrap(w, g._device)
        return (gk * w,)


class AminBackward0(AmaxBackward0):
    __slots__ = ()


class MaxBackward1(AmaxBackward0):
    """max() over all elements (torch's evenly_distribute_backward)."""

    __slots__ = ()
    nan_ties: ClassVar[bool] = True


class MinBackward1(MaxBackward1):
    __slots__ = ()


def _amax_like(
    name: str, fn: Any, node_cls: type, input: Tensor, dim: Any, keepdim: bool
) -> Tensor:
    xd = input._data
    dims = normalize_dims(dim, xd.ndim)
    if xd.size == 0:
        if dims is None or builtins.any(xd.shape[d] == 0 for d in dims):
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument."
                if dims is None
                else f"{name}(): Expected reduction dim {dims[0]} to have non-zero size."
            )
    out = wrap(fn(xd, axis=dims, keepdims=keepdim), input._device)
    if input._requires_grad and grad_enabled():
        link_one(node_cls(save(input), save_output(out), xd.shape, dims, keepdim), input, out)
    return out


def _np_max(a: Tensor, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
    return amax(a, () if axis is None else axis, keepdims)


def _np_min(a: Tensor, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
    return amin(a, () if axis is None else axis, keepdims)


@REDUCE.op(nodes=(AmaxBackward0,), functions=((np.max, _np_max), (np.amax, _np_max)))
def amax(input: Tensor, dim: Any = (), keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Maximum over ``dim`` (an int or a tuple; all dims by default); ties share the gradient evenly."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    return _amax_like("amax", np.max, AmaxBackward0, input, dim, keepdim)


@REDUCE.op(nodes=(AminBackward0,), functions=((np.min, _np_min), (np.amin, _np_min)))
def amin(input: Tensor, dim: Any = (), keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Minimum over ``dim`` (an int or a tuple; all dims by default); ties share the gradient evenly."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    return _amax_like("amin", np.min, AminBackward0, input, dim, keepdim)


class AminmaxBackward0(Node):
    """``aminmax``'s one node for its two results: each extremum's gradient shared evenly among the
    elements equal to it (NaN with NaN), as amin's and amax's."""

    __slots__ = ("x", "in_shape", "dims", "keepdim", "min", "max")
    x: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool
    min: Saved
    max: Saved

    def __init__(self, x: Saved, in_shape: Shape, dims: Dims, keepdim: bool, min: Saved, max: Saved) -> None:
        self._init_node()
        self.x = x
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.min = min
        self.max = max

    def release_variables(self) -> None:
        self.x = None
        self.min = None
        self.max = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        xd = unpack(self, self.x, False)
        kshape = _keep_shape(self.in_shape, self.dims)
        gi: Any = None
        for g, saved in zip(grads, (self.min, self.max)):
            if g is None:
                continue
            w: Any = _tie_weights(xd, unpack(self, saved, False).reshape(kshape), self.dims, g.dtype, False)
            if g.__class__ is Tensor:
                w = Tensor._wrap(w, g._device)
            part = (g if self.keepdim else g.reshape(kshape)) * w
            gi = part if gi is None else gi + part
        return (gi,)


@REDUCE.op(nodes=(AminmaxBackward0,))
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> return_types.aminmax:
    """``(min, max)`` over ``dim`` (all elements by default) in one call; ties share each gradient."""
    xd = input._data
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    dims = normalize_dims(dim, xd.ndim)
    if dim is None and xd.size == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dims is not None and xd.shape[dims[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    keep = keepdim and (dim is not None or xd.ndim > 0)
    lo = wrap(np.asarray(np.min(xd, axis=dims, keepdims=keep)), input._device)
    hi = wrap(np.asarray(np.max(xd, axis=dims, keepdims=keep)), input._device)
    if input._requires_grad and grad_enabled():
        node = AminmaxBackward0(save(input), xd.shape, dims, keep, None, None)
        record(node, (input,), (lo, hi))
        node.min, node.max = save_output(lo), save_output(hi)  # after record: their output numbers
    return return_types.aminmax(lo, hi)


class MaxBackward0(Node):
    """Gradient of an op that selects elements along ``dim`` (max(dim), min(dim), and topk, sort,
    kthvalue, median, mode): each output's gradient to the position in ``indices`` it came from
    (torch's value_selecting_reduction_backward)."""

    __slots__ = ("indices", "in_shape", "dim", "keepdim")
    indices: np.ndarray
    in_shape: Shape
    dim: Any
    keepdim: bool

    def __init__(self, indices: np.ndarray, in_shape: Shape, dim: Any, keepdim: bool) -> None:
        self._init_node()
        self.indices = indices
        self.in_shape = in_shape
        self.dim = dim
        self.keepdim = keepdim

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        dim = self.dim
        idx = self.indices
        if not self.in_shape:
            return (g,)
        if not self.keepdim:
            idx = np.expand_dims(idx, dim)
            g = np.expand_dims(g, dim) if g.__class__ is not Tensor else g.unsqueeze(dim)
        if g.__class__ is Tensor:  # differentiable in g: scatter's gradient gathers it back
            zeros = Tensor._wrap(np.zeros(self.in_shape, dtype=g.dtype), g._device)
            return (zeros.scatter(dim, idx, g),)
        out = np.zeros(self.in_shape, dtype=g.dtype)
        np.put_along_axis(out, idx, g, axis=dim)
        return (out,)


class MinBackward0(MaxBackward0):
    __slots__ = ()


def _arg_extremum(name: str, argfn: Any, xd: np.ndarray, dim: int | None, keepdim: bool) -> np.ndarray:
    if xd.ndim == 0:
        return np.zeros((), dtype=np.int64)
    if dim is None:
        if xd.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        idx = np.asarray(argfn(xd), dtype=np.int64)
        return idx.reshape((1,) * xd.ndim) if keepdim else idx
    if xd.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    return np.asarray(argfn(xd, axis=dim, keepdims=keepdim), dtype=np.int64)


def _nan_arg(argfn: Any, nanarg: Any) -> Any:
    """numpy's argmax ignores NaN ordering; torch treats NaN as the extremum (first NaN wins)."""

    def f(xd: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        if xd.dtype.kind == "f":
            nan = np.isnan(xd)
            if nan.any():
                return np.asarray(np.argmax(nan, axis=axis, keepdims=keepdims) if axis is not None or not keepdims
                                  else np.argmax(nan))
        return np.asarray(argfn(xd, axis=axis, keepdims=keepdims) if axis is not None else argfn(xd))

    return f


_argmax = _nan_arg(np.argmax, None)
_argmin = _nan_arg(np.argmin, None)


def _max_min(name: str, red: Any, argfn: Any, full_node: type, dim_node: type, ret: type,
             input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):
        return (maximum if name == "max" else minimum)(input, dim)
    xd = input._data
    if dim is None:
        return _amax_like(name, red, full_node, input, None, False)
    d = normalize_dims(dim, xd.ndim)
    axis = d[0] if d else None
    if axis is None:  # a 0-d input
        values = wrap(xd.copy(), input._device)
        indices = wrap(np.zeros((), dtype=np.int64), input._device)
    else:
        idx = _arg_extremum(name, argfn, xd, axis, True)
        vals = np.take_along_axis(xd, idx, axis=axis)
        if not keepdim:
            idx = idx.squeeze(axis)
            vals = vals.squeeze(axis)
        values = wrap(vals, input._device)
        indices = wrap(idx, input._device)
    if input._requires_grad and grad_enabled():
        link_one(dim_node(indices._data, xd.shape, axis, keepdim), input, values)
    return ret(values, indices)


@REDUCE.op(nodes=(MaxBackward0, MaxBackward1))
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``max(input)``: the largest element (0-d; ties share the gradient evenly).
    ``max(input, dim, keepdim=False)``: ``(values, indices)``, the gradient goes to ``indices``.
    ``max(input, other)``: ``maximum``."""
    return _max_min("max", np.max, _argmax, MaxBackward1, MaxBackward0, return_types.max, input, dim, keepdim)


@REDUCE.op(nodes=(MinBackward0, MinBackward1))
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``min(input)``, ``min(input, dim, keepdim=False) -> (values, indices)``, ``min(input, other)``."""
    return _max_min("min", np.min, _argmin, MinBackward1, MinBackward0, return_types.min, input, dim, keepdim)


@REDUCE.op(functions=(np.argmax,))
def argmax(input: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Index of the largest element (flattened without ``dim``); int64, not differentiable."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    d = normalize_dims(dim, input.ndim) if dim is not None else None
    return wrap(_arg_extremum("argmax", _argmax, input._data, d[0] if d else None, keepdim), input._device)


@REDUCE.op(functions=(np.argmin,))
def argmin(input: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Index of the smallest element (flattened without ``dim``); int64, not differentiable."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    d = normalize_dims(dim, input.ndim) if dim is not None else None
    return wrap(_arg_extremum("argmin", _argmin, input._data, d[0] if d else None, keepdim), input._device)




# ----- nansum, nanmean, count_nonzero -------------------------------------------------------------


class NansumBackward0(Node):
    """``g`` where the input was not NaN, 0 where it was (a constant mask)."""

    __slots__ = ("kept", "in_shape", "dims", "keepdim")
    kept: np.ndarray
    in_shape: Shape
    dims: Dims
    keepdim: bool

    def __init__(self, kept: np.ndarray, in_shape: Shape, dims: Dims, keepdim: bool) -> None:
        self._init_node()
        self.kept = kept
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        mask: Any = self.kept.astype(g.dtype)
        if g.__class__ is Tensor:
            mask = Tensor._wrap(mask, g._device)
        return (expand_reduced(g, self.in_shape, self.dims, self.keepdim) * mask,)


def _np_nansum(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
               **kw: Any) -> Tensor:
    return nansum(a, axis, keepdims, dtype=dtype)


@REDUCE.op(nodes=(NansumBackward0,), functions=((np.nansum, _np_nansum),))
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``sum`` with NaN counted as 0 (bool and integer inputs give int64, as ``sum``)."""
    xd = input._data
    dims = normalize_dims(dim, xd.ndim)
    out = _accumulating_reduction(np.nansum, input, dims, keepdim, dtype)
    if input._requires_grad and grad_enabled() and out._data.dtype.kind in "fc":
        link_one(NansumBackward0(~np.isnan(xd), xd.shape, dims, keepdim), input, out)
    return out


def _np_nanmean(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
                **kw: Any) -> Tensor:
    return nanmean(a, axis, keepdims, dtype=dtype)


@REDUCE.op(functions=((np.nanmean, _np_nanmean),))
def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of the non-NaN elements over ``dim`` (NaN where all are NaN): ``nansum`` over the
    count of non-NaN elements, as torch composes it; floating inputs only."""
    xd = input._data
    if xd.dtype.kind not in "fc":
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got {torch_dtype_name(xd.dtype)}"
        )
    dims = normalize_dims(dim, xd.ndim)
    total = nansum(input, dim, keepdim, dtype=dtype)
    count = np.sum(~np.isnan(xd), axis=dims, keepdims=keepdim).astype(total._data.dtype)
    with np.errstate(invalid="ignore"):  # 0 / 0 where every element is NaN: NaN, without a warning
        return total / Tensor._wrap(np.asarray(count), input._device)


def _np_count_nonzero(a: Tensor, axis: Any = None, *, keepdims: bool = False) -> Tensor:
    return count_nonzero(a, axis)


@REDUCE.op(functions=((np.count_nonzero, _np_count_nonzero),))
def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """The number of nonzero elements over ``dim`` (an int or a tuple; all by default): int64."""
    xd = input._data
    return wrap(np.asarray(np.count_nonzero(xd, axis=normalize_dims(dim, xd.ndim)), dtype=np.int64), input._device)


# ----- var / std ------------------------------------------------------------------------


def _correction(name: str, dim: Any, unbiased: Any, correction: Any) -> tuple[Any, float]:
    if isinstance(dim, bool):  # var(x, False): the legacy positional unbiased
        if unbiased is not None:
            raise TypeError(f"{name}() got unbiased twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}(): cannot specify both 'unbiased' and 'correction'; use correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, float(correction)


def _var_grad(node: Any, g: Any, x: Any) -> Any:
    """``g * 2 (x - mean) / (N - correction)`` (``node.factor`` is the constant)."""
    gk = g if node.keepdim or not node.in_shape else g.reshape(_keep_shape(node.in_shape, node.dims))
    centered = x - x.mean(axis=node.dims, keepdims=True)
    return gk * (centered * node.factor)


def _std_grad(node: Any, g: Any, x: Any, r: Any, graph: bool) -> Any:
    """``g * (x - mean) / ((N - correction) * std)``, 0 where std is 0 (as torch)."""
    kshape = _keep_shape(node.in_shape, node.dims)
    gk = g if node.keepdim or not node.in_shape else g.reshape(kshape)
    rk = r if node.keepdim or not node.in_shape else r.reshape(kshape)
    rd = rk._data if graph else rk
    zero = rd == 0
    if zero.any():
        mask = np.broadcast_to(zero, gk.shape)
        gk = where(mask, 0.0, gk) if graph else np.where(mask, 0, gk).astype(g.dtype, copy=False)
        rk = where(zero, 1.0, rk) if graph else np.where(zero, 1, rk).astype(rd.dtype, copy=False)
    centered = x - x.mean(axis=node.dims, keepdims=True)
    return gk / rk * (centered * node.factor)


def _mean_grad(node: Any, g: Any) -> Any:
    """The mean's gradient ``g / N``, broadcast back to the input."""
    return expand_reduced(g / node.count, node.in_shape, node.dims, node.keepdim)


class VarBackward0(Node):
    """``g * 2 (x - mean) / (N - correction)``."""

    __slots__ = ("x", "in_shape", "dims", "keepdim", "factor")
    x: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool
    factor: float

    def __init__(self, x: Saved, in_shape: Shape, dims: Dims, keepdim: bool, factor: float) -> None:
        self._init_node()
        self.x = x
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.factor = factor

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (_var_grad(self, g, unpack(self, self.x, g.__class__ is Tensor)),)


class StdBackward0(Node):
    """``g * (x - mean) / ((N - correction) * std)``; zero where std is zero (as torch)."""

    __slots__ = ("x", "result", "in_shape", "dims", "keepdim", "factor")
    x: Saved
    result: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool
    factor: float

    def __init__(self, x: Saved, result: Saved, in_shape: Shape, dims: Dims, keepdim: bool, factor: float) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.factor = factor

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        return (_std_grad(self, g, unpack(self, self.x, graph), unpack(self, self.result, graph), graph),)


class VarMeanBackward0(Node):
    """``var_mean``'s one node for its two results: the variance's gradient plus the mean's."""

    __slots__ = ("x", "in_shape", "dims", "keepdim", "factor", "count")
    x: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool
    factor: float
    count: int

    def __init__(self, x: Saved, in_shape: Shape, dims: Dims, keepdim: bool, factor: float, count: int) -> None:
        self._init_node()
        self.x = x
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.factor = factor
        self.count = count

    def release_variables(self) -> None:
        self.x = None

    def moment_grad(self, g: Any, graph: bool) -> Any:
        return _var_grad(self, g, unpack(self, self.x, graph))

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g_moment, g_mean = grads
        gi = None
        if g_moment is not None:
            gi = self.moment_grad(g_moment, g_moment.__class__ is Tensor)
        if g_mean is not None:
            part = _mean_grad(self, g_mean)
            gi = part if gi is None else gi + part
        return (gi,)


class StdMeanBackward0(VarMeanBackward0):
    """``std_mean``'s one node for its two results: the standard deviation's gradient plus the mean's."""

    __slots__ = ("result",)
    result: Saved

    def __init__(
        self,
        x: Saved,
        in_shape: Shape,
        dims: Dims,
        keepdim: bool,
        factor: float,
        count: int,
        result: Saved,
    ) -> None:
        self._init_node()
        self.x = x
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim
        self.factor = factor
        self.count = count
        self.result = result

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def moment_grad(self, g: Any, graph: bool) -> Any:
        return _std_grad(self, g, unpack(self, self.x, graph), unpack(self, self.result, graph), graph)


def _moments(name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any,
             take_sqrt: bool) -> tuple[np.ndarray, np.ndarray, Dims, int, float]:
    """(var or std, mean, dims, N, the gradient's constant) of ``input`` over ``dim``."""
    dim, corr = _correction(name, dim, unbiased, correction)
    xd = input._data
    if xd.dtype.kind not in "fc":
        what = f"{name} only support" if name.endswith("_mean") else f"{name}(): std and var only support"
        raise RuntimeError(f"{what} floating point and complex dtypes")
    dims = normalize_dims(dim, xd.ndim)
    n = _count(xd.shape, dims)
    denom = _builtin_max(n - corr, 0.0)  # torch divides by max(N - correction, 0): inf or nan below that
    out_dtype, xd = xd.dtype, xd.astype(accumulation_dtype(xd.dtype), copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = xd.mean(axis=dims, keepdims=True)
        c = xd - mean
        res = np.sum(c * c, axis=dims, keepdims=keepdim) / np.float64(denom)
        if take_sqrt:
            res = np.sqrt(res)
    if not keepdim:
        mean = mean.reshape(np.shape(res))
    factor = (1.0 if take_sqrt else 2.0) / denom if denom > 0 else np.inf
    return (np.asarray(res).astype(out_dtype, copy=False), np.asarray(mean).astype(out_dtype, copy=False), dims, n,
            factor)


def _var_std(
    name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any, take_sqrt: bool
) -> Tensor:
    res, _, dims, _, factor = _moments(name, input, dim, unbiased, keepdim, correction, take_sqrt)
    xd = input._data
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        node: Node = (
            StdBackward0(save(input), save_output(out), xd.shape, dims, keepdim, factor) if take_sqrt
            else VarBackward0(save(input), xd.shape, dims, keepdim, factor)
        )
        link_one(node, input, out)
    return out


def _var_std_mean(name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any,
                  take_sqrt: bool) -> tuple[Tensor, Tensor]:
    res, mean, dims, n, factor = _moments(name, input, dim, unbiased, keepdim, correction, take_sqrt)
    xd = input._data
    out, mean_out = wrap(res, input._device), wrap(mean, input._device)
    if input._requires_grad and grad_enabled():
        node: Node = (
            StdMeanBackward0(save(input), xd.shape, dims, keepdim, factor, n, save_output(out)) if take_sqrt
            else VarMeanBackward0(save(input), xd.shape, dims, keepdim, factor, n)
        )
        record(node, (input,), (out, mean_out))
    return out, mean_out


def _np_var(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **kw: Any) -> Tensor:
    return var(a, axis, keepdim=keepdims, correction=ddof)


def _np_std(a: Tensor, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **kw: Any) -> Tensor:
    return std(a, axis, keepdim=keepdims, correction=ddof)


@REDUCE.op(nodes=(VarBackward0,), functions=((np.var, _np_var),))
def var(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = None, keepdims: Any = None,
) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; legacy ``unbiased=False`` means 0)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    return _var_std("var", input, dim, unbiased, keepdim, correction, False)


@REDUCE.op(nodes=(StdBackward0,), functions=((np.std, _np_std),))
def std(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = None, keepdims: Any = None,
) -> Tensor:
    """Standard deviation over ``dim`` (``correction`` and legacy ``unbiased`` as in ``var``)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    return _var_std("std", input, dim, unbiased, keepdim, correction, True)


@REDUCE.op(nodes=(VarMeanBackward0,), method=False)
def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` in one pass (``correction`` and legacy ``unbiased`` as in ``var``)."""
    return _var_std_mean("var_mean", input, dim, unbiased, keepdim, correction, False)


@REDUCE.op(nodes=(StdMeanBackward0,), method=False)
def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim`` in one pass (``correction`` and legacy ``unbiased`` as in ``var``)."""
    return _var_std_mean("std_mean", input, dim, unbiased, keepdim, correction, True)


# ----- logsumexp ---------------------------------------------------------------------------


def _unpack_with_kept_dims(node: Any, g: Any) -> tuple[Any, Any, Any, bool]:
    """(g, x, result, graph) of a reduction node saving ``x`` and ``result``, with the
    reduced dims of ``g`` and ``result`` restored as size 1 so they broadcast against x."""
    graph = g.__class__ is Tensor
    x = unpack(node, node.x, graph)
    r = unpack(node, node.result, graph)
    if not node.keepdim and node.in_shape:
        kshape = _keep_shape(node.in_shape, node.dims)
        g = g.reshape(kshape)
        r = r.reshape(kshape)
    return g, x, r, graph


class LogsumexpBackward0(Node):
    """``g * exp(x - result)``."""

    __slots__ = ("x", "result", "in_shape", "dims", "keepdim")
    x: Saved
    result: Saved
    in_shape: Shape
    dims: Dims
    keepdim: bool

    def __init__(self, x: Saved, result: Saved, in_shape: Shape, dims: Dims, keepdim: bool) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g, x, r, _ = _unpack_with_kept_dims(self, grads[0])
        return (g * np.exp(x - r),)


@REDUCE.op(nodes=(LogsumexpBackward0,))
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably (the max is taken out first)."""
    xd = input._data
    if xd.dtype.kind not in "fc":
        xd = xd.astype(get_default_dtype())
    dims = normalize_dims(dim, xd.ndim)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(xd, axis=dims, keepdims=True) if xd.size else np.zeros(_keep_shape(xd.shape, dims), xd.dtype)
        m = np.where(np.isfinite(m), m, 0).astype(xd.dtype, copy=False)
        s = np.sum(np.exp(xd - m), axis=dims, keepdims=True)
        res = np.log(s) + m
    if not keepdim:
        res = res.reshape(np.sum(xd, axis=dims).shape) if xd.ndim else res.reshape(())
    out = wrap(np.asarray(res).astype(xd.dtype, copy=False), input._device)
    if input._requires_grad and grad_enabled():
        link_one(LogsumexpBackward0(save(input), save_output(out), xd.shape, dims, keepdim), input, out)
    return out


# ----- all / any ----------------------------------------------------------------------------


@REDUCE.op(functions=(np.all,))
def all(input: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Whether every element (along ``dim``) is true: a bool tensor (uint8 for uint8 input, as torch)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    res = np.all(xd, axis=normalize_dims(dim, xd.ndim), keepdims=keepdim)
    return wrap(np.asarray(res, dtype=np.uint8 if xd.dtype == np.uint8 else bool), input._device)


@REDUCE.op(functions=(np.any,))
def any(input: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: Any = None) -> Tensor:
    """Whether some element (along ``dim``) is true: a bool tensor (uint8 for uint8 input, as torch)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    res = np.any(xd, axis=normalize_dims(dim, xd.ndim), keepdims=keepdim)
    return wrap(np.asarray(res, dtype=np.uint8 if xd.dtype == np.uint8 else bool), input._device)


__all__ = REDUCE.exports(__name__)
