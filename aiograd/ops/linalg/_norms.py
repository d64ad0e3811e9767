"""Vector and matrix norms: ``linalg.vector_norm`` (one node for every ``ord``, as torch),
``linalg.matrix_norm`` (made from it, ``svdvals`` and the reductions) and ``linalg.norm``,
which picks one of the two by ``ord`` and ``dim`` as torch does.

NOTE [Norm primitives]: these are the norm primitives of aiograd; ``aiograd.norm`` (the
reductions family's ``torch.norm``) picks one of them as torch.norm does and keeps none of
its own. As torch's, they accumulate float16 in float32 (its opmath type) and round once,
and the gradient of an inf/-inf norm counts NaN as the extreme.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one
from ...autograd.saved import Saved, save, save_output
from ...tensor import Tensor, _resolve_dtype
from .._common import torch_dtype_name, wrap
from ..reduction.reduce import _unpack_with_kept_dims, accumulation_dtype, amax, amin, normalize_dims
from ..reduction.reduce import sum as reduce_sum
from ..movement.shape import _wrap_dim, movedim
from ._decomp import linalg_svdvals
from ._family import LINALG, check_float, check_matrix, records

__all__ = ["linalg_vector_norm", "linalg_matrix_norm", "linalg_norm", "norm"]


def _ord_text(ord: Any) -> str:
    """``ord`` as torch prints it in messages (``inf``, ``-2``, ``0.5``)."""
    if isinstance(ord, float) and math.isfinite(ord) and ord.is_integer():
        return str(int(ord))
    return str(ord)


def _with_dtype(op: str, x: Tensor, dtype: Any) -> Tensor:
    """``x`` (a float input) cast to ``dtype``, which may not narrow it, as torch."""
    d = x._data
    if dtype is None:
        return x
    want = _resolve_dtype(dtype)
    assert want is not None
    if want.kind not in "fc":
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {torch_dtype_name(want)}")
    if np.promote_types(d.dtype, want) != want:
        raise RuntimeError(f"{op}: the dtype of the input ({torch_dtype_name(d.dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({torch_dtype_name(want)})")
    return x if want == d.dtype else x.to(want)


class LinalgVectorNormBackward0(Node):
    """The gradient of ``||x||_ord`` (torch's rule at the edges): 0 for ord 0 (no gradient); ``sign(x)``
    for ord 1; ``x / ||x||`` for ord 2; ``sign(x)`` shared evenly among the elements at the extreme for
    ord inf/-inf; ``sign(x) |x|^(p-1) / ||x||^(p-1)`` otherwise, 0 where the norm (for ord < 1: the
    element) is 0."""

    __slots__ = ("x", "result", "ord", "in_shape", "dims", "keepdim")
    x: Saved
    result: Saved
    ord: float
    in_shape: Shape
    dims: Any
    keepdim: bool

    def __init__(self, x: Saved, result: Saved, ord: float, in_shape: Shape, dims: Any, keepdim: bool) -> None:
        self._init_node()
        self.x = x
        self.result = result
        self.ord = ord
        self.in_shape = in_shape
        self.dims = dims
        self.keepdim = keepdim

    def release_variables(self) -> None:
        self.x = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        p = self.ord
        if p == 0:
            return (None,)
        g, x, r, graph = _unpack_with_kept_dims(self, grads[0])
        xd = x._data if graph else x
        rd = r._data if graph else r
        if p == 1:
            return (np.sign(x) * g,)
        if math.isinf(p):
            # torch's rule: NaN counts as the extreme, so a NaN norm's elements share nothing (no 0/0 over
            # the row), and as torch's sgn(NaN) is 0 (aiograd's sign too), a NaN element gets 0 as well
            nan = np.isnan(xd)
            at = np.abs(xd) == rd
            share = (at / np.sum(at | nan, axis=self.dims, keepdims=True)).astype(xd.dtype)
            sign = np.sign(x) if graph else np.sign(np.where(nan, 0, xd))
            return (sign * share * g,)
        if p == 2:
            scale = g / np.where(rd == 0, 1, r)
            return (x * np.where(rd == 0, 0, scale),)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p < 1:
                scaled = np.sign(x) * np.where(xd == 0, 0, np.abs(np.where(xd == 0, 1, x)) ** (p - 1))
                return (scaled * g * r ** (1 - p),)
            scaled = np.sign(x) * np.abs(x) ** (p - 1)
            scale = g / np.where(rd == 0, 1, r) ** (p - 1)
            return (scaled * np.where(rd == 0, 0, scale),)


def _number_ord(ord: Any) -> float:
    if isinstance(ord, Tensor) and ord._data.size == 1:
        return float(ord._data)
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return float(ord)


def _norm_values(xd: np.ndarray, p: float, dims: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """The ``p``-norm of ``xd`` over ``dims`` in the dtype torch accumulates ``|xd|`` in (float32 for
    float16: NOTE [Norm primitives]); overflow is inf and ``0 ** -p`` is inf, without a warning."""
    a = np.abs(xd)
    a = a.astype(accumulation_dtype(a.dtype), copy=False)
    with np.errstate(divide="ignore", over="ignore"):
        if p == 0:
            return np.sum(a != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        if p == math.inf:
            return np.max(a, axis=dims, keepdims=keepdim)
        if p == -math.inf:
            return np.min(a, axis=dims, keepdims=keepdim)
        if p == 1:
            return np.sum(a, axis=dims, keepdims=keepdim)
        if p == 2:
            return np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        return np.sum(a ** p, axis=dims, keepdims=keepdim) ** (1 / p)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None or empty)."""
    p = _number_ord(ord)
    check_float("linalg.vector_norm", x._data)
    x = _with_dtype("linalg.vector_norm", x, dtype)
    xd = x._data
    dims = normalize_dims(dim, xd.ndim)
    if (p < 0 or math.isinf(p)) and xd.size == 0:  # a reduction without an identity over nothing
        if dims is None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_text(ord)} norm on an empty tensor "
                               "because the operation does not have an identity")
        given = dim if isinstance(dim, (tuple, list)) else (dim,)  # torch names the first empty dim as given
        empty = next((d for d in given if xd.shape[d] == 0), None)
        if empty is not None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_text(ord)} norm on the dimension "
                               f"{empty}because this dimension is empty and the operation does not have an identity")
    res = _norm_values(xd, p, dims, keepdim)
    real = np.empty(0, xd.dtype).real.dtype
    with np.errstate(over="ignore"):  # a float16 norm past its range is inf, as torch's
        out = wrap(np.asarray(res).astype(real, copy=False), x._device)
    if records("linalg.vector_norm", x):
        node = LinalgVectorNormBackward0(save(x), None, p, xd.shape, dims, keepdim)
        link_one(node, x, out)
        node.result = save_output(out)
    return out


@LINALG.op(nodes=(LinalgVectorNormBackward0,), method=False, export=False)
def linalg_vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                       dtype: Any = None) -> Tensor:
    """``aiograd.linalg.vector_norm``: ``sum(|x|^ord)^(1/ord)`` over ``dim`` (all elements when None);
    ord inf/-inf: the largest/smallest ``|x|``; ord 0: the number of nonzero elements. ``dtype`` (no
    narrower than the input's) is the dtype it computes and returns in."""
    return vector_norm(x, ord, dim, keepdim, dtype=dtype)


def _matrix_dims(A: Tensor, dim: Any) -> tuple[int, int]:
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = (_wrap_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


_MATRIX_ORDS = (1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The matrix ``ord``-norm of ``A`` over the two dims ``dim``."""
    # torch's order of checks: the argument types, ord, A (float16 refused where an SVD is needed), dim, dtype
    if not isinstance(dim, (tuple, list)):
        raise TypeError(f"linalg_matrix_norm(): argument 'dim' must be tuple of ints, not {type(dim).__name__}")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif isinstance(ord, bool) or not isinstance(ord, numbers.Real) or float(ord) not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_text(ord)} not supported.")
    if ord in ("nuc", 2, -2):
        check_matrix("linalg.matrix_norm", A)
    else:
        if A._data.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        check_float("linalg.matrix_norm", A._data)
    d0, d1 = _matrix_dims(A, dim)
    A = _with_dtype("linalg.matrix_norm", A, dtype)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = movedim(A, (d0, d1), (-2, -1))
        if ord == 2 and min(moved.shape[-2:]) == 0:  # an empty matrix's norm is 0 (for a positive ord), as torch
            res: Tensor = reduce_sum(moved, (-2, -1))
        elif ord == -2 and min(moved.shape[-2:]) == 0:
            raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
        else:
            s = linalg_svdvals(moved)
            res = reduce_sum(s, -1) if ord == "nuc" else (amax(s, -1) if ord == 2 else amin(s, -1))
        if keepdim:
            res = movedim(res.unsqueeze(-1).unsqueeze(-1), (-2, -1), (d0, d1))
        return res
    # 1 / -1: max/min column sum (sum over d0, then extreme over d1); inf / -inf: the other way
    inner, outer = (d0, d1) if abs(float(ord)) == 1 else (d1, d0)
    if not keepdim and outer > inner:
        outer -= 1
    extreme = amax if float(ord) > 0 else amin
    if float(ord) > 0 and A._data.shape[d0] * A._data.shape[d1] == 0:
        return reduce_sum(abs(A), (d0, d1), keepdim=keepdim)
    sums = reduce_sum(abs(A), inner, keepdim=keepdim)
    return extreme(sums, outer, keepdim=keepdim)


@LINALG.op(nodes=(LinalgVectorNormBackward0,), method=False, export=False)
def linalg_matrix_norm(input: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                       dtype: Any = None) -> Tensor:
    """``aiograd.linalg.matrix_norm``: the matrix norm over the two dims ``dim``: ``ord`` 'fro'
    (Frobenius), 'nuc' (sum of singular values), 2/-2 (largest/smallest singular value), 1/-1
    (largest/smallest column sum of ``|A|``), inf/-inf (largest/smallest row sum)."""
    return matrix_norm(input, ord, dim, keepdim, dtype=dtype)


def _np_norm(x: Tensor, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:
    return linalg_norm(x, ord, axis, keepdims)


@LINALG.op(nodes=(LinalgVectorNormBackward0,), method=False, export=False, functions=((np.linalg.norm, _np_norm),))
def linalg_norm(input: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``aiograd.linalg.norm``: a vector norm when ``dim`` is an int or a 1-tuple (or, with ``dim`` None, for
    a 1-D input; all elements when ``ord`` is None too), a matrix norm when ``dim`` is a 2-tuple (or for a
    2-D input with ``dim`` None); a string ``ord`` always means a matrix norm."""
    if dim is not None:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) == 1 and not isinstance(ord, str):
            return vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        return matrix_norm(input, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(input, 2, None, keepdim, dtype=dtype)
    if input._data.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{input._data.ndim}D.")
    if input._data.ndim == 1 and not isinstance(ord, str):
        return vector_norm(input, ord, None, keepdim, dtype=dtype)
    return matrix_norm(input, ord, (-2, -1), keepdim, dtype=dtype)


@LINALG.op(nodes=(LinalgVectorNormBackward0,))
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """torch.norm: a number ``p`` (None: 2) is the vector p-norm over ``dim`` (an int or a tuple; all
    elements by default); "fro" the same 2-norm (over at most two dims); "nuc" the nuclear norm of
    the matrices over the two dims ``dim`` (all dims of a 2-d input by default). It picks one of
    linalg's norms as torch.norm does (NOTE [Norm primitives])."""
    dims = [dim] if isinstance(dim, (int, np.integer)) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype)
        # "nuc", or an order matrix_norm refuses in torch's words
        return matrix_norm(input, p, list(range(input._data.ndim)) if dims is None else dims, keepdim, dtype=dtype)
    return vector_norm(input, 2 if p is None else p, dims, keepdim, dtype=dtype)
