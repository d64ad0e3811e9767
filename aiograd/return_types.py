"""The named tuples returned by ops with several results, named as torch's ``torch.return_types``.

``values, indices = x.sort()`` unpacks as a tuple; ``x.sort().indices`` reads a field by
name. Each op has its own class (``type(x.sort()).__name__ == "sort"``), as in torch; the
linalg ops' classes carry torch's names too (``linalg_svd`` for ``linalg.svd``, ``svd`` for
the legacy ``svd``).
"""

from __future__ import annotations

from typing import NamedTuple

from .tensor import Tensor

__all__ = [
    "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "aminmax",
    "svd", "linalg_svd", "qr", "linalg_qr", "linalg_eigh", "slogdet", "linalg_slogdet", "linalg_lstsq",
]


class _ValuesIndices(NamedTuple):
    values: Tensor
    indices: Tensor


class max(_ValuesIndices):
    """``(values, indices)`` of ``max(input, dim)``."""

    __slots__ = ()


class min(_ValuesIndices):
    """``(values, indices)`` of ``min(input, dim)``."""

    __slots__ = ()


class sort(_ValuesIndices):
    """``(values, indices)`` of ``sort``."""

    __slots__ = ()


class topk(_ValuesIndices):
    """``(values, indices)`` of ``topk``."""

    __slots__ = ()


class kthvalue(_ValuesIndices):
    """``(values, indices)`` of ``kthvalue``."""

    __slots__ = ()


class median(_ValuesIndices):
    """``(values, indices)`` of ``median(input, dim)``."""

    __slots__ = ()


class nanmedian(_ValuesIndices):
    """``(values, indices)`` of ``nanmedian(input, dim)``."""

    __slots__ = ()


class mode(_ValuesIndices):
    """``(values, indices)`` of ``mode``."""

    __slots__ = ()


class cummax(_ValuesIndices):
    """``(values, indices)`` of ``cummax``."""

    __slots__ = ()


class cummin(_ValuesIndices):
    """``(values, indices)`` of ``cummin``."""

    __slots__ = ()


class aminmax(NamedTuple):
    """``(min, max)`` of ``aminmax``."""

    min: Tensor
    max: Tensor


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
