"""Matrix factorizations and their derivative rules: svd (``linalg.svd`` and the legacy
``torch.svd``), svdvals, qr (``linalg.qr`` modes and the legacy ``some=``), cholesky (``linalg``'s
and the legacy one), eigh, eigvalsh.

NOTE [Factorization gradients]: the rules are the real-matrix formulas torch uses
(its svd_backward, linalg_qr_backward, cholesky_backward and linalg_eig_backward for
symmetric input), written with ``_matrix``'s helpers so that a create_graph pass
differentiates them again (second order). Their caveats are torch's:

* a rule that reads the singular vectors (eigenvectors) divides by differences of
  squared singular values (of eigenvalues): repeated values give inf/nan, as torch;
  a loss that only reads the values (``S``, ``eigvalsh``) is smooth there;
* ``svd`` with ``full_matrices=True`` and ``m != n`` uses only the first ``min(m, n)``
  columns of U (rows of Vh), the rest being arbitrary;
* the sign of each singular (eigen) vector is arbitrary: a loss depending on it has no
  gradient, which is not checked for real matrices (torch checks only the complex
  phase);
* ``eigh`` and ``cholesky`` read one triangle but return the symmetric gradient;
* ``qr`` is not differentiable in ``mode='complete'`` with more rows than columns, nor
  in ``mode='r'`` (no Q): backward raises torch's error.

``svdvals`` and ``eigvalsh`` also compute the vectors their rules need when the input
requires grad, as hidden outputs of their node, so that second derivatives reach them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import return_types
from ...autograd.graph import Node, record
from ...autograd.saved import Saved, save_output, unpack
from ...tensor import Tensor
from .._common import graph_mode, wrap
from ._family import (LINALG, LinAlgError, batch_label, check_matrix, check_square, first_failure, lapack_info,
                      not_implemented, records, svd_arrays)
from ._matrix import diag_embed, diagonal, eye_like, is_graph, mT, solve, tril
from ..movement.join import cat

__all__ = ["svd", "linalg_svd", "linalg_svdvals", "qr", "linalg_qr", "cholesky", "linalg_cholesky", "linalg_eigh",
           "linalg_eigvalsh"]


def _hidden(arr: np.ndarray, like: Tensor) -> Tensor:
    """A node output the user never sees (the vectors of svdvals/eigvalsh), saved for the rule."""
    return wrap(arr, like._device)


def _save_outputs(node: Node, fields: tuple[str, ...], outs: tuple[Tensor, ...]) -> None:
    for f, out in zip(fields, outs):
        setattr(node, f, save_output(out))


# ----- svd --------------------------------------------------------------------------------------


def svd_backward(gu: Any, gs: Any, gvh: Any, u: Any, s: Any, vh: Any) -> Any:
    """The gradient of a real SVD ``A = U diag(S) Vh`` from those of its factors (NOTE [Factorization
    gradients]); ``U``/``Vh`` may be full, only their first ``k = len(S)`` columns/rows are read."""
    k = s.shape[-1]
    m, n = u.shape[-2], vh.shape[-1]
    if u.shape[-1] != k:
        u = u[..., :k]
        gu = None if gu is None else gu[..., :k]
    if vh.shape[-2] != k:
        vh = vh[..., :k, :]
        gvh = None if gvh is None else gvh[..., :k, :]
    if gu is None and gvh is None:
        return np.matmul(u * np.expand_dims(gs, -2), vh)
    s2 = s * s
    # E[i, j] = s_j^2 - s_i^2 off the diagonal, 1 on it (where the skew parts are 0)
    e = np.expand_dims(s2, -2) - np.expand_dims(s2, -1) + eye_like(s, k)
    inner = 0
    if gs is not None:
        inner = inner + diag_embed(gs)
    sr = np.expand_dims(s, -2)  # S as a row: X * sr = X diag(S)
    if gu is not None:
        utgu = np.matmul(mT(u), gu)
        inner = inner + (utgu - mT(utgu)) / e * sr
    v = mT(vh)
    if gvh is not None:
        gv = mT(gvh)
        vtgv = np.matmul(vh, gv)
        inner = inner + mT(sr) * ((vtgv - mT(vtgv)) / e)
    ga = np.matmul(np.matmul(u, inner), vh)
    if gu is not None and m > k:
        ga = ga + np.matmul((gu - np.matmul(u, utgu)) / sr, vh)
    if gvh is not None and n > k:
        ga = ga + np.matmul(u, mT((gv - np.matmul(v, vtgv)) / sr))
    return ga


class LinalgSvdBackward0(Node):
    """The SVD's rule (``svd_backward``); ``svdvals`` records it with U and Vh as hidden outputs."""

    __slots__ = ("u", "s", "vh")
    u: Saved
    s: Saved
    vh: Saved

    def __init__(self, u: Saved, s: Saved, vh: Saved) -> None:
        self._init_node()
        self.u = u
        self.s = s
        self.vh = vh

    def release_variables(self) -> None:
        self.u = None
        self.s = None
        self.vh = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        gu, gs, gvh = grads
        graph = graph_mode(next(g for g in grads if g is not None))
        u, s, vh = (unpack(self, f, graph) for f in (self.u, self.s, self.vh))
        return (svd_backward(gu, gs, gvh, u, s, vh),)


def _check_driver(driver: Any) -> None:
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def _svd(A: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor, Tensor]:
    d = check_matrix("linalg.svd", A, kernel="linalg_svd_cpu")
    u, s, vh = svd_arrays(d, full_matrices=full_matrices)
    device = A._device
    outs = (wrap(u, device), wrap(s, device), wrap(vh, device))
    if records("linalg.svd", A):
        node = LinalgSvdBackward0(None, None, None)
        record(node, (A,), outs)
        _save_outputs(node, ("u", "s", "vh"), outs)
        node.work = 4 * d.size * min(d.shape[-2:])
    return outs


@LINALG.op(nodes=(LinalgSvdBackward0,), method=False, export=False)
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> return_types.linalg_svd:
    """``aiograd.linalg.svd``: ``A = U diag(S) Vh`` with S descending; ``full_matrices=False`` gives the
    reduced factors (``k = min(m, n)`` columns of U, rows of Vh). ``driver`` is CUDA's only (refused, as
    torch on CPU). See NOTE [Factorization gradients] for the gradient's caveats."""
    _check_driver(driver)
    return return_types.linalg_svd(*_svd(A, full_matrices))


def _np_svd(a: Tensor, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    if not compute_uv:
        return linalg_svdvals(a)
    return return_types.linalg_svd(*_svd(a, full_matrices))


@LINALG.op(nodes=(LinalgSvdBackward0,), functions=((np.linalg.svd, _np_svd),))
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> return_types.svd:
    """The legacy ``torch.svd``: ``(U, S, V)`` with ``input = U diag(S) V^T``, reduced unless ``some=False``;
    ``compute_uv=False`` gives zero-filled ``U`` (m, m) and ``V`` (n, n) beside the singular values."""
    if not compute_uv:
        d = check_matrix("linalg.svd", input, kernel="linalg_svd_cpu")
        m, n = d.shape[-2:]
        s = linalg_svdvals(input)
        zeros = (np.zeros(d.shape[:-2] + (m, m), d.dtype), np.zeros(d.shape[:-2] + (n, n), d.dtype))
        return return_types.svd(wrap(zeros[0], input._device), s, wrap(zeros[1], input._device))
    u, s, vh = _svd(input, not some)
    return return_types.svd(u, s, vh.mT)


@LINALG.op(nodes=(LinalgSvdBackward0,), method=False, export=False)
def linalg_svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """``aiograd.linalg.svdvals``: the singular values, descending (smooth where they repeat)."""
    _check_driver(driver)
    d = check_matrix("linalg.svd", A, kernel="linalg_svd_cpu")
    if not records("linalg.svdvals", A):
        return wrap(svd_arrays(d, compute_uv=False), A._device)
    u, s, vh = svd_arrays(d)
    outs = (_hidden(u, A), wrap(s, A._device), _hidden(vh, A))
    node = LinalgSvdBackward0(None, None, None)
    record(node, (A,), outs)
    _save_outputs(node, ("u", "s", "vh"), outs)
    node.work = 4 * d.size * min(d.shape[-2:])
    return outs[1]


# ----- qr -----------------------------------------------------------------------------------------


def _copyltu(x: Any) -> Any:
    """The symmetric matrix with ``x``'s lower triangle."""
    return tril(x) + mT(tril(x, -1))


def _qr_backward_tall(gq: Any, gr: Any, q: Any, r: Any) -> Any:
    """``A = QR`` with ``m >= n`` (reduced): ``[gQ + Q copyltu(R gR^T - gQ^T Q)] R^{-T}``."""
    m = 0
    if gr is not None:
        m = np.matmul(r, mT(gr))
    if gq is not None:
        m = m - np.matmul(mT(gq), q)
    b = np.matmul(q, _copyltu(m))
    if gq is not None:
        b = b + gq
    return mT(solve(r, mT(b)))


def qr_backward(gq: Any, gr: Any, q: Any, r: Any) -> Any:
    """The gradient of a real reduced QR from those of Q and R. A wide ``A = [X | Y] = Q [U | V]`` is the
    square QR ``X = QU`` beside ``V = Q^T Y``: ``gY = Q gV``, and Q's gradient gains ``Y gV^T``."""
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        return _qr_backward_tall(gq, gr, q, r)
    gu = None
    if gr is None:
        gy = np.zeros(q.shape[:-1] + (n - m,), dtype=q.dtype)
    else:
        gu, gv = gr[..., :m], gr[..., m:]
        gy = np.matmul(q, gv)
        shift = np.matmul(np.matmul(q, r[..., m:]), mT(gv))
        gq = shift if gq is None else gq + shift
    gx = _qr_backward_tall(gq, gu, q, r[..., :m])
    if is_graph(gx) or is_graph(gy):
        return cat([x if is_graph(x) else Tensor._wrap(x) for x in (gx, gy)], -1)
    return np.concatenate([gx, gy], -1)


class LinalgQrBackward0(Node):
    """``qr_backward``; refuses mode 'r' (no Q) and mode 'complete' with more rows than columns."""

    __slots__ = ("q", "r", "mode")
    q: Saved
    r: Saved
    mode: str

    def __init__(self, q: Saved, r: Saved, mode: str) -> None:
        self._init_node()
        self.q = q
        self.r = r
        self.mode = mode

    def release_variables(self) -> None:
        self.q = None
        self.r = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        gq, gr = grads
        graph = graph_mode(gq if gq is not None else gr)
        q, r = unpack(self, self.q, graph), unpack(self, self.r, graph)
        if self.mode == "complete" and q.shape[-2] > r.shape[-1]:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        return (qr_backward(gq, gr, q, r),)


def _qr(A: Tensor, mode: str) -> tuple[Tensor, Tensor]:
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    d = check_matrix("linalg.qr", A, kernel="geqrf_cpu")
    device = A._device
    if mode == "r":
        q = np.zeros((0,), d.dtype)
        r = np.linalg.qr(d, mode="r")
    else:
        q, r = np.linalg.qr(d, mode=mode)  # type: ignore[call-overload]
    outs = (wrap(q, device), wrap(r, device))
    if records("linalg.qr", A):
        node = LinalgQrBackward0(None, None, mode)
        record(node, (A,), outs)
        _save_outputs(node, ("q", "r"), outs)
        node.work = 4 * d.size * min(d.shape[-2:])
    return outs


def _np_qr(a: Tensor, mode: str = "reduced") -> Any:
    q, r = _qr(a, mode)
    return r if mode == "r" else return_types.linalg_qr(q, r)


@LINALG.op(nodes=(LinalgQrBackward0,), method=False, export=False, functions=((np.linalg.qr, _np_qr),))
def linalg_qr(A: Tensor, mode: str = "reduced") -> return_types.linalg_qr:
    """``aiograd.linalg.qr``: ``A = QR`` with orthonormal Q and upper triangular R; ``mode`` 'reduced'
    (``k = min(m, n)`` columns of Q), 'complete' (square Q) or 'r' (R only, Q empty)."""
    return return_types.linalg_qr(*_qr(A, mode))


@LINALG.op(nodes=(LinalgQrBackward0,))
def qr(input: Tensor, some: bool = True) -> return_types.qr:
    """The legacy ``torch.qr``: ``linalg.qr`` in mode 'reduced' (``some=False``: 'complete')."""
    return return_types.qr(*_qr(input, "reduced" if some else "complete"))


# ----- cholesky ------------------------------------------------------------------------------------


def cholesky_backward(gl: Any, l: Any, upper: bool) -> Any:
    """``L^{-T} sym(Phi(L^T gL)) L^{-1}`` for ``A = L L^T`` (``Phi``: the lower triangle with the diagonal
    halved); the factor is ``L^T`` when ``upper``."""
    if upper:
        l, gl = mT(l), mT(gl)
    p = tril(np.matmul(mT(l), gl))
    p = p - diag_embed(diagonal(p)) / 2
    s = (p + mT(p)) / 2
    lt = mT(l)
    return mT(solve(lt, mT(solve(lt, s))))


class LinalgCholeskyExBackward0(Node):
    """``cholesky_backward`` from the saved factor (the op's output)."""

    __slots__ = ("factor", "upper")
    factor: Saved
    upper: bool

    def __init__(self, factor: Saved, upper: bool) -> None:
        self._init_node()
        self.factor = factor
        self.upper = upper

    def release_variables(self) -> None:
        self.factor = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        return (cholesky_backward(g, unpack(self, self.factor, graph_mode(g)), self.upper),)


class CholeskyBackward0(LinalgCholeskyExBackward0):
    """The legacy ``torch.cholesky``'s node (the same rule)."""

    __slots__ = ()


def _cholesky(op: str, A: Tensor, upper: bool, node_cls: type[LinalgCholeskyExBackward0]) -> Tensor:
    d = check_square(op, A, kernel="cholesky_cpu")
    src = mT(d) if upper else d  # the factor of A read from its upper triangle is that of A^T's lower one
    try:
        factor = np.linalg.cholesky(src)
    except np.linalg.LinAlgError:
        found = first_failure(src, lambda m: lapack_info("potrf", m) > 0)
        index, m = found if found is not None else (0, src.reshape((-1,) + src.shape[-2:])[0])
        raise LinAlgError(f"{op}: {batch_label(d.shape[:-2], index)}The factorization could not be completed because "
                          f"the input is not positive-definite (the leading minor of order "
                          f"{lapack_info('potrf', m)} is not positive-definite).") from None
    out = wrap(np.ascontiguousarray(mT(factor)) if upper else factor, A._device)
    if records(op, A):
        node = node_cls(None, upper)
        record(node, (A,), (out,))
        node.factor = save_output(out)
        node.work = 2 * d.size * d.shape[-1]
    return out


def _np_cholesky(a: Tensor, /, *, upper: bool = False) -> Tensor:
    return _cholesky("linalg.cholesky", a, upper, LinalgCholeskyExBackward0)


@LINALG.op(nodes=(LinalgCholeskyExBackward0,), method=False, export=False,
           functions=((np.linalg.cholesky, _np_cholesky),))
def linalg_cholesky(input: Tensor, *, upper: bool = False) -> Tensor:
    """``aiograd.linalg.cholesky``: lower triangular ``L`` with ``A = L L^T`` for a symmetric positive
    definite ``A`` (its lower triangle is read); ``upper=True``: ``U = L^T`` from the upper triangle."""
    return _cholesky("linalg.cholesky", input, upper, LinalgCholeskyExBackward0)


@LINALG.op(nodes=(CholeskyBackward0,))
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The legacy ``torch.cholesky`` (``upper`` positional): as ``linalg.cholesky``."""
    return _cholesky("cholesky", input, upper, CholeskyBackward0)


# ----- eigh ------------------------------------------------------------------------------------------


def eigh_backward(gl: Any, gv: Any, lam: Any, v: Any) -> Any:
    """``V (diag(gL) + skew(V^T gV) / 2E) V^T`` with ``E[i, j] = lam_j - lam_i`` (1 on the diagonal):
    the symmetric gradient of a symmetric eigendecomposition."""
    inner = 0
    if gv is not None:
        vtgv = np.matmul(mT(v), gv)
        e = np.expand_dims(lam, -2) - np.expand_dims(lam, -1) + eye_like(lam)
        inner = (vtgv - mT(vtgv)) / (2 * e)
    if gl is not None:
        inner = inner + diag_embed(gl)
    return np.matmul(np.matmul(v, inner), mT(v))


class LinalgEighBackward0(Node):
    """``eigh_backward``; ``eigvalsh`` records it with the eigenvectors as a hidden output."""

    __slots__ = ("values", "vectors")
    values: Saved
    vectors: Saved

    def __init__(self, values: Saved, vectors: Saved) -> None:
        self._init_node()
        self.values = values
        self.vectors = vectors

    def release_variables(self) -> None:
        self.values = None
        self.vectors = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        gl, gv = grads
        graph = graph_mode(gl if gl is not None else gv)
        lam, v = unpack(self, self.values, graph), unpack(self, self.vectors, graph)
        return (eigh_backward(gl, gv, lam, v),)


def _eigh_input(op: str, A: Tensor) -> np.ndarray:
    """torch's eigh checks: square matrices; a dtype its kernel lacks is "not implemented" there."""
    d = A._data
    if d.ndim >= 2 and (d.dtype.kind not in "fc" or d.dtype == np.float16):
        raise not_implemented("linalg_eigh_cpu", d.dtype)
    return check_square(op, A)


def _eigh(A: Tensor, UPLO: str, op: str) -> tuple[Tensor, Tensor]:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    d = _eigh_input(op, A)
    lam, v = np.linalg.eigh(d, UPLO=UPLO)  # type: ignore[call-overload]
    outs = (wrap(lam, A._device), wrap(v, A._device))
    if records(op, A):
        node = LinalgEighBackward0(None, None)
        record(node, (A,), outs)
        _save_outputs(node, ("values", "vectors"), outs)
        node.work = 4 * d.size * d.shape[-1]
    return outs


@LINALG.op(nodes=(LinalgEighBackward0,), method=False, export=False, functions=(np.linalg.eigh,))
def linalg_eigh(input: Tensor, UPLO: str = "L") -> return_types.linalg_eigh:
    """``aiograd.linalg.eigh``: eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric
    matrix, read from its lower (``UPLO='L'``) or upper triangle. See NOTE [Factorization gradients]."""
    return return_types.linalg_eigh(*_eigh(input, UPLO, "linalg.eigh"))


@LINALG.op(nodes=(LinalgEighBackward0,), method=False, export=False, functions=(np.linalg.eigvalsh,))
def linalg_eigvalsh(input: Tensor, UPLO: str = "L") -> Tensor:
    """``aiograd.linalg.eigvalsh``: the eigenvalues (ascending) of a symmetric matrix (smooth where they repeat)."""
    if records("linalg.eigvalsh", input):
        return _eigh(input, UPLO, "linalg.eigvalsh")[0]
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    d = _eigh_input("linalg.eigvalsh", input)
    return wrap(np.linalg.eigvalsh(d, UPLO=UPLO), input._device)  # type: ignore[call-overload]
