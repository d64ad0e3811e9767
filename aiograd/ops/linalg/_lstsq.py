"""The pseudoinverse and least squares, and their derivative rules: ``linalg.pinv`` (``atol``/``rtol``,
the legacy ``rcond``, ``hermitian``), ``pinverse``, ``linalg.lstsq`` (torch's drivers, its returned
fields per driver).

The pseudoinverse's rule is the one for a matrix of constant rank (torch's pinv_backward);
lstsq's gradients go through the pseudoinverse, as torch's do (``X = pinv(A) B``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import return_types
from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor
from .._common import broadcast_shapes, common_device, graph_mode, torch_dtype_name, wrap
from ._family import LINALG, float_matrix, records, svd_arrays
from ._matrix import is_graph, mT

__all__ = ["linalg_pinv", "pinverse", "linalg_lstsq"]


# ----- pinv --------------------------------------------------------------------------------------


def _tolerance(s_max: np.ndarray, m: int, n: int, dtype: np.dtype, atol: Any, rtol: Any) -> np.ndarray:
    """``max(atol, rtol * s_max)`` with torch's defaults: ``rtol = eps * max(m, n)`` when neither is given,
    0 when only a positive ``atol`` is."""
    a = 0.0 if atol is None else (atol._data if isinstance(atol, Tensor) else np.asarray(atol))
    if rtol is None:
        rtol = np.finfo(dtype).eps * max(m, n) if atol is None or np.all(np.asarray(a) <= 0) else 0.0
    r = rtol._data if isinstance(rtol, Tensor) else np.asarray(rtol)
    return np.maximum(np.expand_dims(a, -1) if np.ndim(a) else a, np.expand_dims(r, -1) * s_max if np.ndim(r)
                      else r * s_max)


def pinv_array(d: np.ndarray, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> np.ndarray:
    """The pseudoinverse of each matrix of ``d``: singular values (eigenvalue magnitudes when
    ``hermitian``) at or below the tolerance count as zero."""
    m, n = d.shape[-2:]
    if d.size == 0:
        return np.zeros(d.shape[:-2] + (n, m), d.dtype)
    if hermitian:
        lam, v = np.linalg.eigh(d)
        s = np.abs(lam)
    else:
        u, s, vh = svd_arrays(d)
    tol = _tolerance(np.max(s, axis=-1, keepdims=True), m, n, d.dtype, atol, rtol)
    with np.errstate(divide="ignore"):
        inv = np.where(s > tol, 1 / np.where(s > tol, s if not hermitian else lam, 1), 0).astype(d.dtype)
    if hermitian:
        return np.matmul(v * np.expand_dims(inv, -2), mT(v))
    return np.matmul(mT(vh) * np.expand_dims(inv, -2), mT(u))


def pinv_backward(g: Any, p: Any, a: Any) -> Any:
    """The gradient of ``P = pinv(A)`` (``A`` of constant rank), in the order of products that keeps the
    intermediate matrices smallest."""
    m, n = a.shape[-2:]
    gt, pt = mT(g), mT(p)
    if m <= n:
        k = np.matmul(gt, p)
        kpt = np.matmul(k, pt)
        return (-mT(np.matmul(p, k)) + kpt - np.matmul(np.matmul(a, p), kpt)
                + np.matmul(np.matmul(pt, p), gt - np.matmul(k, a)))
    k = np.matmul(p, gt)
    ptk = np.matmul(pt, k)
    return (-mT(np.matmul(k, p)) + np.matmul(np.matmul(gt - np.matmul(a, k), p), pt) + ptk
            - np.matmul(np.matmul(ptk, p), a))


class LinalgPinvBackward0(Node):
    """``pinv_backward`` from the saved input and pseudoinverse (the op's output)."""

    __slots__ = ("a", "pinv")
    a: Saved
    pinv: Saved

    def __init__(self, a: Saved, pinv: Saved) -> None:
        self._init_node()
        self.a = a
        self.pinv = pinv

    def release_variables(self) -> None:
        self.a = None
        self.pinv = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = graph_mode(g)
        return (pinv_backward(g, unpack(self, self.pinv, graph), unpack(self, self.a, graph)),)


def _pinv(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    d = float_matrix("linalg.pinv", A)
    out = wrap(pinv_array(d, atol, rtol, hermitian), A._device)
    if records("linalg.pinv", A):
        node = LinalgPinvBackward0(save(A), None)
        record(node, (A,), (out,))
        node.pinv = save_output(out)
        node.work = 6 * d.size * min(d.shape[-2:])
    return out


_UNSET: Any = object()


def _np_pinv(a: Tensor, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _UNSET) -> Tensor:
    if rtol is not _UNSET:
        rcond = rtol
    return _pinv(a, None, rcond, hermitian)


@LINALG.op(nodes=(LinalgPinvBackward0,), method=False, export=False, functions=((np.linalg.pinv, _np_pinv),))
def linalg_pinv(input: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """``aiograd.linalg.pinv``: the Moore-Penrose pseudoinverse; singular values at or below
    ``max(atol, rtol * largest)`` count as zero (``rtol`` defaults to ``eps * max(m, n)`` unless a positive
    ``atol`` is given). ``rcond`` (positional, legacy) is ``rtol``; ``hermitian=True`` uses ``eigh``.
    ``atol``/``rtol`` may be tensors broadcasting with the batch dims."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_pinv(): pass the tolerance as rcond (legacy) or as atol/rtol, not both")
        rtol = rcond
    return _pinv(input, atol, rtol, hermitian)


@LINALG.op(nodes=(LinalgPinvBackward0,))
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudoinverse with relative tolerance ``rcond`` (``linalg.pinv(input, rtol=rcond)``)."""
    return _pinv(input, None, rcond, False)


# ----- lstsq --------------------------------------------------------------------------------------


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class LinalgLstsqBackward0(Node):
    """Through ``X = pinv(A) B``: ``gA = pinv_backward(gX B^T)``, ``gB = pinv(A)^T gX``; the squared
    residuals ``r = sum((AX - B)^2)`` (where computed) add ``2 (AX - B) g_r X^T`` and ``-2 (AX - B) g_r``."""

    __slots__ = ("a", "b", "x", "vector", "a_shape", "b_shape")
    a: Saved
    b: Saved
    x: Saved
    vector: bool
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a: Saved, b: Saved, x: Saved, vector: bool, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.x = x
        self.vector = vector
        self.a_shape = a_shape
        self.b_shape = b_shape

    def release_variables(self) -> None:
        self.a = None
        self.b = None
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        gx, gres = grads[0], grads[1]
        graph = graph_mode(gx if gx is not None else gres)
        a, b, x = (unpack(self, f, graph) for f in (self.a, self.b, self.x))
        if self.vector:
            b, x = np.expand_dims(b, -1), np.expand_dims(x, -1)
            gx = None if gx is None else np.expand_dims(gx, -1)
        ga = gb = None
        if gx is not None:
            p = linalg_pinv(a) if is_graph(a) else pinv_array(a)
            if self.should_compute_output(0):
                ga = pinv_backward(np.matmul(gx, mT(b)), p, a)
            if self.should_compute_output(1):
                gb = np.matmul(mT(p), gx)
        if gres is not None and gres.shape[-1] and x.shape[-2] < a.shape[-2]:
            wr = (np.matmul(a, x) - b) * np.expand_dims(gres, -2) * 2
            if self.should_compute_output(0):
                t = np.matmul(wr, mT(x))
                ga = t if ga is None else ga + t
            if self.should_compute_output(1):
                gb = -wr if gb is None else gb - wr
        if ga is not None:
            ga = sum_to(ga, self.a_shape)
        if gb is not None:
            if self.vector:
                gb = gb.reshape(gb.shape[:-1])
            gb = sum_to(gb, self.b_shape)
        return ga, gb


def _lstsq_checks(A: Tensor, B: Tensor, driver: Any) -> tuple[np.ndarray, np.ndarray, bool, str]:
    ad, bd = A._data, B._data
    if ad.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if not (ad.ndim >= bd.ndim and ad.ndim - bd.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if ad.dtype.kind not in "fc" or ad.dtype == np.float16:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if bd.dtype != ad.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {torch_dtype_name(ad.dtype)} and other's dtype {torch_dtype_name(bd.dtype)}")
    vector = bd.ndim == ad.ndim - 1
    if (bd.shape[-1] if vector else bd.shape[-2]) != ad.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size({-1 if vector else -2})")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    return ad, (bd[..., None] if vector else bd), vector, driver


def _solve_one(a: np.ndarray, b: np.ndarray, cond: float, driver: str) -> tuple[np.ndarray, int, Any]:
    """One least-squares problem: (solution, rank, singular values or None)."""
    import scipy.linalg  # on first use, as scipy.special (NOTE [erf])

    n = a.shape[-1]
    if a.size == 0 or b.size == 0:
        return np.zeros((n, b.shape[-1]), a.dtype), 0, np.zeros(min(a.shape), a.dtype)
    x, _, rank, s = scipy.linalg.lstsq(a, b, cond=cond, lapack_driver="gelsy" if driver == "gels" else driver,
                                       check_finite=False)
    return x, int(rank), s


@LINALG.op(nodes=(LinalgLstsqBackward0,), method=False, export=False)
def linalg_lstsq(input: Tensor, b: Tensor, rcond: float | None = None, *,
                 driver: str | None = None) -> return_types.linalg_lstsq:
    """``aiograd.linalg.lstsq``: ``X`` minimizing ``||A X - B||`` for each matrix of a batch (batch dims
    broadcast; ``B`` of one dim less is a batch of vectors). Fields as torch's for each driver (default
    'gelsy'): ``residuals``, the squared residual norms, only when ``m > n``, every matrix has full rank and
    the driver is not 'gelsy' (else empty); ``rank`` except for 'gels'; ``singular_values`` for 'gelsd' and
    'gelss'. ``rcond`` defaults to ``eps * max(m, n)``."""
    ad, bm, vector, driver = _lstsq_checks(input, b, driver)
    device = common_device(input, b)
    m, n = ad.shape[-2:]
    k = bm.shape[-1]
    batch = broadcast_shapes(bm.shape[:-2], ad.shape[:-2])
    cond = float(np.finfo(ad.dtype).eps * max(m, n)) if rcond is None else float(rcond)
    nb = math.prod(batch)
    a_all = np.broadcast_to(ad, batch + (m, n)).reshape((nb, m, n))
    b_all = np.broadcast_to(bm, batch + (m, k)).reshape((nb, m, k))
    solved = [_solve_one(aa, bb, cond, driver) for aa, bb in zip(a_all, b_all)]
    x = np.stack([s[0] for s in solved]).reshape(batch + (n, k)).astype(ad.dtype, copy=False) if solved else \
        np.zeros(batch + (n, k), ad.dtype)
    # rank and singular values are A's (its own batch shape), residuals the broadcast problems'
    zero = np.zeros((m, 1), ad.dtype)
    own = [_solve_one(a, zero, cond, driver) for a in ad.reshape((math.prod(ad.shape[:-2]), m, n))]
    ranks = np.array([o[1] for o in own], np.int64).reshape(ad.shape[:-2])
    full = bool(np.all(ranks == n)) if driver != "gels" else True
    if m > n and driver != "gelsy" and full:
        res = np.sum(np.square(np.matmul(np.broadcast_to(ad, batch + (m, n)), x) - bm), axis=-2)
    else:
        res = np.zeros((0,), ad.dtype)
    rank = ranks if driver != "gels" else np.zeros((0,), np.int64)
    if driver in ("gelsd", "gelss"):
        sv = np.array([o[2] for o in own], ad.dtype).reshape(ad.shape[:-2] + (min(m, n),))
    else:
        sv = np.zeros((0,), ad.dtype)
    if vector:
        x = x[..., 0]
    solution, residuals = wrap(np.ascontiguousarray(x), device), wrap(res, device)
    if records("linalg.lstsq", input, b):
        node = LinalgLstsqBackward0(save(input), save(b), None, vector, ad.shape, b._data.shape)
        record(node, (input, b), (solution, residuals))
        node.x = save_output(solution)
        node.work = 6 * a_all.size * min(m, n)
    return return_types.linalg_lstsq(solution, residuals, wrap(rank, device), wrap(sv, device))
