"""The named tuples the linalg ops return, named as torch's ``torch.return_types`` (``type(r).__name__``
is ``"linalg_svd"`` for ``linalg.svd``, ``"svd"`` for the legacy ``svd``): they unpack as tuples and
read fields by name (``linalg.svd(A).S``)."""

from __future__ import annotations

from typing import NamedTuple

from ...tensor import Tensor

__all__ = ["svd", "linalg_svd", "qr", "linalg_qr", "linalg_eigh", "slogdet", "linalg_slogdet", "linalg_lstsq"]


class linalg_svd(NamedTuple):
    """``(U, S, Vh)`` of ``linalg.svd``: ``A = U diag(S) Vh``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class svd(NamedTuple):
    """``(U, S, V)`` of the legacy ``svd``: ``V`` is ``Vh`` transposed."""

    U: Tensor
    S: Tensor
    V: Tensor


class linalg_qr(NamedTuple):
    """``(Q, R)`` of ``linalg.qr``."""

    Q: Tensor
    R: Tensor


class qr(NamedTuple):
    """``(Q, R)`` of the legacy ``qr``."""

    Q: Tensor
    R: Tensor


class linalg_eigh(NamedTuple):
    """``(eigenvalues, eigenvectors)`` of ``linalg.eigh``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class slogdet(NamedTuple):
    """``(sign, logabsdet)`` of ``slogdet``."""

    sign: Tensor
    logabsdet: Tensor


class linalg_slogdet(NamedTuple):
    """``(sign, logabsdet)`` of ``linalg.slogdet``."""

    sign: Tensor
    logabsdet: Tensor


class linalg_lstsq(NamedTuple):
    """``(solution, residuals, rank, singular_values)`` of ``linalg.lstsq``."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor
