"""Reductions and their derivative rules: sum, mean (more in this family: see __all__).

``dim`` may be an int, a tuple or None; ``keepdim`` keeps reduced dims as 1.
numpy spellings ``axis``/``keepdims`` are accepted too, so backward rules
written in numpy terms work on Tensors (NOTE [One rule for both modes]).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.graph import Node
from ..tensor import Tensor
from ._common import implements_function, needs_grad, record, tensor_method, wrap

__all__ = ["sum", "mean"]


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` as a sorted tuple of non-negative axes (None: all)."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        dims = tuple(dim)
    else:
        dims = (dim,)
    out = []
    for d in dims:
        d = int(d)
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {d})"
            )
        out.append(d % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
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


class SumBackward0(Node):
    __slots__ = ("in_shape", "dims", "keepdim")

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (expand_reduced(grads[0], self.in_shape, self.dims, self.keepdim),)


class MeanBackward0(SumBackward0):
    __slots__ = ("count",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (expand_reduced(grads[0] / self.count, self.in_shape, self.dims, self.keepdim),)


@implements_function(np.sum)
def sum(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """Sum over ``dim`` (all dims by default)."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    dims = normalize_dims(dim, xd.ndim)
    res = np.sum(xd, axis=dims, keepdims=keepdim, dtype=dtype)
    if dtype is None and xd.dtype.kind in "biu":
        res = np.asarray(res).astype(np.int64)
    out = wrap(res, input._device)
    if needs_grad(input):
        node = SumBackward0()
        node.in_shape = xd.shape
        node.dims = dims
        node.keepdim = keepdim
        record(node, (input,), (out,))
    return out


@implements_function(np.mean)
def mean(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """Mean over ``dim`` (all dims by default); floating inputs only, as torch."""
    dim, keepdim = _pick(dim, axis, keepdim, keepdims)
    xd = input._data
    if xd.dtype.kind not in "fc" and dtype is None:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {xd.dtype}"
        )
    dims = normalize_dims(dim, xd.ndim)
    res = np.mean(xd, axis=dims, keepdims=keepdim, dtype=dtype)
    out = wrap(np.asarray(res).astype(dtype or xd.dtype, copy=False), input._device)
    if needs_grad(input):
        node = MeanBackward0()
        node.in_shape = xd.shape
        node.dims = dims
        node.keepdim = keepdim
        count = 1
        for d in dims if dims is not None else range(xd.ndim):
            count *= xd.shape[d]
        node.count = count
        record(node, (input,), (out,))
    return out


tensor_method("sum")(sum)
tensor_method("mean")(mean)
