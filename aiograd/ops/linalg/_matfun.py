"""Functions of a matrix: matrix_power (made from matmul and inverse, as torch) and matrix_exp
(scipy's ``expm``, and its Frechet derivative for the gradient).

NOTE [Matrix exponential gradient]: the gradient of ``exp(A)`` along ``g`` is the Frechet
derivative of exp at ``A^T`` in the direction ``g``, which is the upper right block of
``exp([[A^T, g], [0, A^T]])`` (Mathias, 1996). One ``expm`` of a matrix of twice the size
computes it for a whole batch, and in a create_graph pass the same block matrix goes
through the differentiable ``matrix_exp`` again, which gives second derivatives.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...autograd.graph import Node, link_one
from ...autograd.saved import Saved, save, unpack
from ...tensor import Tensor
from .._common import graph_mode, grad_enabled, wrap
from ._family import LINALG, check_square, records
from ._matrix import is_graph, mT
from ._products import MmBackward0, matmul
from ._solve import LinalgInvExBackward0, _inv
from ..movement.join import cat
from ..convert import clone
from ..pointwise.elementwise import where

__all__ = ["matrix_power", "linalg_matrix_power", "matrix_exp", "linalg_matrix_exp"]


def _square_any_dtype(op: str, A: Tensor) -> np.ndarray:
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {d.shape[-2]} by {d.shape[-1]} "
                           "matrices")
    return d


def _matrix_power(A: Tensor, n: Any) -> Tensor:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        try:
            n = operator.index(n)
        except TypeError:
            raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                            f"{type(n).__name__}") from None
    n = int(n)
    d = _square_any_dtype("linalg.matrix_power", A)
    if n == 0:
        eye = np.broadcast_to(np.eye(d.shape[-1], dtype=d.dtype), d.shape)
        if not (A._requires_grad and grad_enabled()):
            return wrap(eye.copy(), A._device)
        return where(np.ones(d.shape, bool), eye, A)  # the identity, a zero gradient
    if n < 0:
        A = _inv(A)
        if n == -1:
            return A
        n = -n
    if n == 1:
        return clone(A)
    # binary powering: A^n = prod of A^(2^i) over the bits of n
    result: Tensor | None = None
    square = A
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            break
        square = matmul(square, square)
    assert result is not None
    return result


@LINALG.op(nodes=(MmBackward0, LinalgInvExBackward0), functions=(np.linalg.matrix_power,))
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` multiplied by itself ``n`` times (square matrices, batched): the identity for ``n = 0``,
    powers of the inverse for ``n < 0`` (made from matmul and inverse, whose gradients it has)."""
    return _matrix_power(input, n)


@LINALG.op(nodes=(MmBackward0, LinalgInvExBackward0), method=False, export=False)
def linalg_matrix_power(input: Tensor, n: int) -> Tensor:
    """``aiograd.linalg.matrix_power``: ``A`` to the integer power ``n`` (see ``aiograd.matrix_power``)."""
    return _matrix_power(input, n)


def expm(a: Any) -> Any:
    """``exp`` of each matrix of ``a``: scipy's ``expm`` on arrays, the differentiable op on Tensors."""
    if is_graph(a):
        return _matrix_exp(a)
    import scipy.linalg  # on first use, as scipy.special (NOTE [erf])

    if a.size == 0:
        return np.zeros_like(a)
    if a.dtype == np.float32:  # scipy computes in the input's precision: float64 is twice as accurate here
        return scipy.linalg.expm(a.astype(np.float64)).astype(np.float32)
    return scipy.linalg.expm(a)


def frechet_exp(a: Any, g: Any) -> Any:
    """The Frechet derivative of exp at ``a^T`` along ``g``, for a batch (NOTE [Matrix exponential gradient])."""
    at = mT(a)
    n = a.shape[-1]
    block: Any
    zeros = np.zeros(a.shape, dtype=a.dtype)
    if is_graph(at) or is_graph(g):
        z = Tensor._wrap(zeros)
        parts = [x if is_graph(x) else Tensor._wrap(np.asarray(x)) for x in (at, g)]
        block = cat([cat([parts[0], parts[1]], -1), cat([z, parts[0]], -1)], -2)
    else:
        block = np.block([[at, g], [zeros, at]]) if a.ndim == 2 else np.concatenate(
            [np.concatenate([at, g], -1), np.concatenate([zeros, at], -1)], -2)
    return expm(block)[..., :n, n:]


class LinalgMatrixExpBackward0(Node):
    """NOTE [Matrix exponential gradient]."""

    __slots__ = ("a",)
    a: Saved

    def __init__(self, a: Saved) -> None:
        self._init_node()
        self.a = a

    def release_variables(self) -> None:
        self.a = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (frechet_exp(unpack(self, self.a, graph_mode(g)), g),)


def _matrix_exp(A: Tensor) -> Tensor:
    d = check_square("linalg.matrix_exp", A)
    out = wrap(np.asarray(expm(d)).astype(d.dtype, copy=False), A._device)
    if records("linalg.matrix_exp", A):
        node = LinalgMatrixExpBackward0(save(A))
        link_one(node, A, out)
        node.work = 16 * d.size * d.shape[-1]
    return out


@LINALG.op(nodes=(LinalgMatrixExpBackward0,))
def matrix_exp(input: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix or of each in a batch."""
    return _matrix_exp(input)


@LINALG.op(nodes=(LinalgMatrixExpBackward0,), method=False, export=False)
def linalg_matrix_exp(input: Tensor) -> Tensor:
    """``aiograd.linalg.matrix_exp``: the matrix exponential (see ``aiograd.matrix_exp``)."""
    return _matrix_exp(input)
