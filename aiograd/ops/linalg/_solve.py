"""Inverse, determinants and linear solves, and their derivative rules: inverse (``linalg.inv``), det,
slogdet, logdet, ``linalg.solve`` (``left=``, vector right-hand sides, broadcast batch dims).

Each forward is numpy's batched LAPACK call; a failure names the first singular matrix
of the batch and LAPACK's zero pivot (NOTE [Linalg errors] in _family.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import return_types
from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor
from .._common import broadcast_shapes, common_device, graph_mode, torch_dtype_name, wrap
from ._family import LINALG, LinAlgError, batch_label, check_float, check_square, first_failure, lapack_info, records
from ._matrix import diag_embed, is_graph, mT, solve
from ._decomp import linalg_svd
from ..movement.join import cat
from ..pointwise.elementwise import where

__all__ = ["inverse", "linalg_inv", "det", "linalg_det", "slogdet", "linalg_slogdet", "logdet", "linalg_solve"]


# ----- inverse ------------------------------------------------------------------------------


def _singular_inverse(op: str, a: np.ndarray) -> LinAlgError:
    """torch's error for the first singular matrix of ``a``: LU's first zero pivot (NOTE [Linalg errors])."""
    found = first_failure(a, lambda m: lapack_info("getrf", m) > 0)
    index, m = found if found is not None else (0, a.reshape((-1,) + a.shape[-2:])[0])
    return LinAlgError(f"{op}: {batch_label(a.shape[:-2], index)}The diagonal element {lapack_info('getrf', m)} is "
                       "zero, the inversion could not be completed because the input matrix is singular.")


def invert(op: str, a: np.ndarray) -> np.ndarray:
    """``a``'s inverse (a batch), or torch's singular-matrix error naming ``op``."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular_inverse(op, a) from None


class LinalgInvExBackward0(Node):
    """``-A^{-T} g A^{-T}``, from the saved inverse (the op's output)."""

    __slots__ = ("inverse",)
    inverse: Saved

    def __init__(self, inverse: Saved) -> None:
        self._init_node()
        self.inverse = inverse

    def release_variables(self) -> None:
        self.inverse = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        t = mT(unpack(self, self.inverse, graph_mode(g)))
        return (-np.matmul(np.matmul(t, g), t),)


def _inv(A: Tensor) -> Tensor:
    d = check_square("linalg.inv", A)
    out = wrap(invert("linalg.inv", d), A._device)
    if records("linalg.inv", A):
        node = LinalgInvExBackward0(None)
        record(node, (A,), (out,))
        node.inverse = save_output(out)
        node.work = 2 * d.size * d.shape[-1]
    return out


@LINALG.op(nodes=(LinalgInvExBackward0,))
def inverse(input: Tensor) -> Tensor:
    """The inverse of a square matrix or of each in a batch (``linalg.inv``)."""
    return _inv(input)


@LINALG.op(nodes=(LinalgInvExBackward0,), method=False, export=False, functions=(np.linalg.inv,))
def linalg_inv(A: Tensor) -> Tensor:
    """``aiograd.linalg.inv``: the inverse of a square matrix or of each in a batch; a singular matrix
    raises ``LinAlgError``."""
    return _inv(A)


# ----- det ------------------------------------------------------------------------------------


def _prod_of_others(s: Any) -> Any:
    """``P[..., i] = prod_{j != i} s[..., j]``, exact with zeros in ``s`` (no division)."""
    n = s.shape[-1]
    eye = np.eye(n, dtype=s.dtype)
    return np.prod(np.expand_dims(s, -2) * (1 - eye) + eye, axis=-1)


def _cofactor_by_svd(a: Any, scale: Any) -> Any:
    """``scale * det(A) A^{-T}`` (the cofactor matrix) for any square ``A``, singular included, from its
    SVD ``A = U diag(s) Vh``: ``scale * det(U) det(Vh) U diag(prod_{j != i} s_j) Vh``."""
    u: Any
    s: Any
    vh: Any
    sign: Any
    if is_graph(a):
        u, s, vh = linalg_svd(a)
        sign = _det(u) * _det(vh)
    else:
        u, s, vh = np.linalg.svd(a)
        sign = np.linalg.det(u) * np.linalg.det(vh)
    d = _prod_of_others(s) * np.expand_dims(scale * sign, -1)
    return np.matmul(u * np.expand_dims(d, -2), vh)


def _cofactor(a: Any, scale: Any) -> Any:
    """``scale * det(A) A^{-T}`` (the cofactor matrix) over a batch: by a solve where ``A`` is safely
    invertible, by the SVD where ``|det| < 100 eps`` (exact at singular matrices, where a solve is not).

    The determinant is that of ``A^T``, whose LU factorization the solve repeats: with one
    factorization the rounding of ``det`` and of ``A^{-T}`` cancel, and the product stays accurate
    close to a singular matrix (as torch's, which reuses the forward's LU)."""
    at = mT(a)
    det = _det(at) if is_graph(at) else np.linalg.det(at)
    dd = det._data if is_graph(det) else np.asarray(det)
    small = np.abs(dd) < 100 * np.finfo(dd.dtype).eps
    if not small.any():
        return solve(at, diag_embed(np.expand_dims(scale * det, -1) * np.ones(a.shape[-1], dtype=a.dtype)))
    if small.all():
        return _cofactor_by_svd(a, scale)
    # A mixed batch: each formula on its own matrices, then back in batch order.
    n = a.shape[-1]
    fa = a.reshape((-1, n, n))
    fscale = (scale * np.ones(dd.shape, dtype=dd.dtype)).reshape((-1,))
    bad = np.flatnonzero(small.reshape(-1))
    good = np.flatnonzero(~small.reshape(-1))
    parts = (_cofactor(fa[good], fscale[good]), _cofactor_by_svd(fa[bad], fscale[bad]))
    order = np.argsort(np.concatenate([good, bad]))
    if is_graph(a):
        joined = cat([p if is_graph(p) else Tensor._wrap(p) for p in parts], 0)
        return joined[order].reshape(a.shape)
    return np.concatenate(parts, 0)[order].reshape(a.shape)


class LinalgDetBackward0(Node):
    """``g * det * A^{-T}`` (the cofactor matrix, also at singular matrices)."""

    __slots__ = ("a",)
    a: Saved

    def __init__(self, a: Saved) -> None:
        self._init_node()
        self.a = a

    def release_variables(self) -> None:
        self.a = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (_cofactor(unpack(self, self.a, graph_mode(g)), g),)


def _det(A: Any) -> Any:
    d = check_square("linalg.det", A, kernel="lu_cpu")
    out = wrap(np.linalg.det(d).astype(d.dtype, copy=False), A._device)
    if records("linalg.det", A):
        node = LinalgDetBackward0(save(A))
        record(node, (A,), (out,))
        node.work = 2 * d.size * d.shape[-1]
    return out


@LINALG.op(nodes=(LinalgDetBackward0,))
def det(input: Tensor) -> Tensor:
    """The determinant of a square matrix or of each in a batch."""
    return _det(input)


@LINALG.op(nodes=(LinalgDetBackward0,), method=False, export=False, functions=(np.linalg.det,))
def linalg_det(A: Tensor) -> Tensor:
    """``aiograd.linalg.det``: the determinant of a square matrix or of each in a batch."""
    return _det(A)


# ----- slogdet / logdet -----------------------------------------------------------------------


class LinalgSlogdetBackward0(Node):
    """``g_logabsdet * A^{-T}`` (the sign of a real matrix is locally constant: no gradient); infinite
    at a singular matrix, as torch."""

    __slots__ = ("a", "sign", "logabsdet")
    a: Saved
    sign: Saved
    logabsdet: Saved

    def __init__(self, a: Saved, sign: Saved, logabsdet: Saved) -> None:
        self._init_node()
        self.a = a
        self.sign = sign
        self.logabsdet = logabsdet

    def release_variables(self) -> None:
        self.a = None
        self.sign = None
        self.logabsdet = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[1]
        if g is None:
            return (None,)
        graph = graph_mode(g)
        a = unpack(self, self.a, graph)
        la = unpack(self, self.logabsdet, graph)
        if np.isfinite(la._data if graph else la).all():
            return (solve(mT(a), diag_embed(np.expand_dims(g, -1) * np.ones(a.shape[-1], dtype=a.dtype))),)
        # Some matrix is singular: cofactor / det, +-inf or nan there (as torch).
        det = unpack(self, self.sign, graph) * np.exp(la)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (_cofactor(a, g) / np.expand_dims(np.expand_dims(det, -1), -1),)


def _slogdet(A: Tensor, ret: type) -> Any:
    d = check_square("linalg.slogdet", A)
    sign, logabs = np.linalg.slogdet(d)
    device = A._device
    s_out = wrap(np.asarray(sign).astype(d.dtype, copy=False), device)
    l_out = wrap(np.asarray(logabs).astype(d.dtype, copy=False), device)
    if records("linalg.slogdet", A):
        node = LinalgSlogdetBackward0(save(A), None, None)
        record(node, (A,), (s_out, l_out))
        node.sign = save_output(s_out)
        node.logabsdet = save_output(l_out)
        node.work = 2 * d.size * d.shape[-1]
    return ret(s_out, l_out)


@LINALG.op(nodes=(LinalgSlogdetBackward0,))
def slogdet(input: Tensor) -> return_types.slogdet:
    """``(sign, logabsdet)`` of the determinant of a square matrix or of each in a batch: the sign (0 for
    a singular matrix) and the log of its absolute value (``-inf`` there); only ``logabsdet`` has a
    gradient."""
    return _slogdet(input, return_types.slogdet)


@LINALG.op(nodes=(LinalgSlogdetBackward0,), method=False, export=False, functions=(np.linalg.slogdet,))
def linalg_slogdet(A: Tensor) -> return_types.linalg_slogdet:
    """``aiograd.linalg.slogdet``: ``(sign, logabsdet)`` of the determinant (see ``aiograd.slogdet``)."""
    return _slogdet(A, return_types.linalg_slogdet)


@LINALG.op(nodes=(LinalgSlogdetBackward0,))
def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN where the determinant is negative, ``-inf`` where it is 0 (made from
    ``slogdet`` and ``where``, as torch)."""
    d = input._data
    if d.ndim >= 2:
        check_float("logdet", d)
    sign, logabs = _slogdet(input, return_types.slogdet)
    return where(sign < 0, np.array(np.nan, dtype=d.dtype), logabs)


# ----- solve ------------------------------------------------------------------------------------


def is_vector_rhs(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """torch's rule: ``B`` is a (batch of) vector(s) if 1-D, or of ``A``'s shape without its last dim."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])


class LinalgSolveExBackward0(Node):
    """``X = A^{-1} B`` (``left``) or ``X = B A^{-1}``: ``gB = A^{-T} g`` (``g A^{-T}``), ``gA = -gB X^T``
    (``-X^T gB``); both summed over broadcast batch dims."""

    __slots__ = ("a", "x", "left", "vector", "a_shape", "b_shape")
    a: Saved
    x: Saved
    left: bool
    vector: bool
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a: Saved, x: Saved, left: bool, vector: bool, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a = a
        self.x = x
        self.left = left
        self.vector = vector
        self.a_shape = a_shape
        self.b_shape = b_shape

    def release_variables(self) -> None:
        self.a = None
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = graph_mode(g)
        a = unpack(self, self.a, graph)
        if self.vector:
            g = np.expand_dims(g, -1)
        gb = solve(mT(a), g) if self.left else mT(solve(a, mT(g)))
        ga = None
        if self.should_compute_output(0):
            x = unpack(self, self.x, graph)
            if self.vector:
                x = np.expand_dims(x, -1)
            ga = sum_to(-np.matmul(gb, mT(x)) if self.left else -np.matmul(mT(x), gb), self.a_shape)
        if not self.should_compute_output(1):
            return ga, None
        if self.vector:
            gb = gb.reshape(gb.shape[:-1])
        return ga, sum_to(gb, self.b_shape)


def _as_tensor(x: Any, like: Any) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._wrap(np.asarray(x), like._device)


def _np_solve(a: Any, b: Any) -> Tensor:
    """``np.linalg.solve`` on Tensors: numpy 2's rule (``b`` is a vector only when 1-D)."""
    a = _as_tensor(a, b)
    b = _as_tensor(b, a)
    if b.ndim == 1:
        return linalg_solve(a, b)
    return linalg_solve(a, b.unsqueeze(-1)).squeeze(-1) if b.ndim == a.ndim - 1 else linalg_solve(a, b)


@LINALG.op(nodes=(LinalgSolveExBackward0,), method=False, export=False, functions=((np.linalg.solve, _np_solve),))
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``aiograd.linalg.solve``: ``X`` with ``A X = B`` (``left=False``: ``X A = B``) for square ``A``; ``B``
    is a (batch of) vector(s) when 1-D or of ``A``'s shape without its last dim; batch dims broadcast."""
    if not isinstance(A, Tensor) or not isinstance(B, Tensor):
        A, B = _as_tensor(A, B), _as_tensor(B, A)
    ad = check_square("linalg.solve", A)
    bd = B._data
    if bd.dtype != ad.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{torch_dtype_name(ad.dtype)} and B of type {torch_dtype_name(bd.dtype)} instead")
    vector = is_vector_rhs(ad.shape, bd.shape)
    bm = bd[..., None] if vector else bd
    n = ad.shape[-1]
    if bm.ndim < 2 or (bm.shape[-2] if left else bm.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        rows, cols = (bm.shape[-2], bm.shape[-1]) if bm.ndim >= 2 else (bm.shape[0], 1)
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{rows}x{cols})")
    broadcast_shapes(bm.shape[:-2], ad.shape[:-2])
    device = common_device(A, B)
    try:
        x = np.linalg.solve(ad, bm) if left else mT(np.linalg.solve(mT(ad), mT(bm)))
    except np.linalg.LinAlgError:
        found = first_failure(ad, lambda m: lapack_info("getrf", m) > 0)
        index = found[0] if found is not None else 0
        raise LinAlgError(f"torch.linalg.solve: {batch_label(ad.shape[:-2], index)}The solver failed because the "
                          "input matrix is singular.") from None
    if vector:
        x = x[..., 0]
    out = wrap(np.ascontiguousarray(x), device)
    if records("linalg.solve", A, B):
        node = LinalgSolveExBackward0(save(A), None, left, vector, ad.shape, bd.shape)
        record(node, (A, B), (out,))
        if A._requires_grad:
            node.x = save_output(out)
        node.work = 2 * (ad.size * n + out._data.size * n)
    return out
