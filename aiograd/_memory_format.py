"""``memory_format``: how a copy lays its elements out in memory (torch's names, and its rules
for which layout a copy gets).

aiograd's tensors are numpy arrays, which hold any strides, so the formats are honoured
rather than only accepted: ``preserve_format`` (the default of clone, to, the casts and the
``*_like`` functions) keeps the input's dim order (numpy's order "K"), ``contiguous_format``
gives C order, and ``channels_last`` (``channels_last_3d``) puts the channel dim innermost
of a 4-d (5-d) tensor. Values never depend on the layout; ``view`` and ``is_contiguous`` do,
as in torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
           "layout_copy", "empty_in_format", "is_contiguous_in", "check_format", "suggest_format"]


class memory_format:  # noqa: N801 - torch's name
    """A memory layout (``ag.contiguous_format``, ``ag.preserve_format``, ``ag.channels_last``,
    ``ag.channels_last_3d``), as ``torch.memory_format``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"aiograd.{self._name}"

    def __reduce__(self) -> str:
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# the dims of a channels-last tensor from the innermost out: C, then W, H (D), then N
_CHANNELS_LAST_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_format(fmt: Any, ndim: int) -> None:
    """Refuse what is not a memory_format, and a channels-last format for the wrong rank (torch's error)."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be a memory_format (aiograd.contiguous_format, ...), not "
                        f"{type(fmt).__name__}")
    if fmt in _CHANNELS_LAST_ORDER:
        rank = _CHANNELS_LAST_ORDER[fmt][0]
        if ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")


def is_contiguous_in(arr: np.ndarray, fmt: Any) -> bool:
    """Whether ``arr``'s strides are ``fmt``'s (dims of size 1 may have any stride, as torch)."""
    if fmt in _CHANNELS_LAST_ORDER:
        rank, order = _CHANNELS_LAST_ORDER[fmt]
        if arr.ndim != rank:
            return False
        expected = arr.itemsize
        for d in order:
            n = arr.shape[d]
            if n != 1:
                if arr.strides[d] != expected:
                    return False
                expected *= n
        return True
    return bool(arr.flags.c_contiguous)


def suggest_format(arr: np.ndarray) -> memory_format:
    """The format ``arr`` is laid out in, as torch suggests it: channels-last for a 4-d (5-d) array
    with those strides and not C-contiguous, else contiguous_format."""
    if not arr.flags.c_contiguous:
        for fmt, (rank, _) in _CHANNELS_LAST_ORDER.items():
            if arr.ndim == rank and is_contiguous_in(arr, fmt):
                return fmt
    return contiguous_format


def empty_in_format(shape: tuple[int, ...], dtype: Any, fmt: Any, like: np.ndarray | None = None) -> np.ndarray:
    """An uninitialised array of ``shape`` laid out as ``fmt`` (``preserve_format``: as ``like``)."""
    if fmt in _CHANNELS_LAST_ORDER:
        _, order = _CHANNELS_LAST_ORDER[fmt]
        outer = tuple(reversed(order))  # N, H, W, C (N, D, H, W, C)
        base = np.empty(tuple(shape[d] for d in outer), dtype)
        return base.transpose(tuple(outer.index(d) for d in range(len(shape))))
    if fmt is preserve_format and like is not None:
        return np.empty_like(like, dtype=dtype, order="K")
    return np.empty(shape, dtype)


def layout_copy(arr: np.ndarray, fmt: Any, dtype: Any = None) -> np.ndarray:
    """A copy of ``arr`` (cast to ``dtype``) laid out as ``fmt``."""
    check_format(fmt, arr.ndim)
    dt = arr.dtype if dtype is None else dtype
    if fmt is preserve_format:
        return arr.astype(dt, order="K", copy=True)
    if fmt is contiguous_format:
        return np.array(arr, dtype=dt, order="C", copy=True)
    out = empty_in_format(arr.shape, dt, fmt)
    np.copyto(out, arr, casting="unsafe")
    return out
