"""The named tuples returned by ops with several results, named as torch's ``torch.return_types``.

``values, indices = x.sort()`` unpacks as a tuple; ``x.sort().indices`` reads a field by
name. Each op has its own class (``type(x.sort()).__name__ == "sort"``), as in torch.
"""

from __future__ import annotations

from typing import NamedTuple

from .tensor import Tensor

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "aminmax"]


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

