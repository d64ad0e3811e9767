"""Size: the shape of a tensor as torch gives it, a tuple of ints with ``numel()``."""

from __future__ import annotations

import operator
from typing import Any, Iterable, SupportsIndex, overload


class Size(tuple[int, ...]):
    """A tensor's shape (``t.size()``): a tuple of ints, as ``torch.Size``.

    It compares equal to the plain tuple of the same ints, and slicing it or
    adding a tuple to it gives a ``Size`` again. ``numel()`` is the number of
    elements a tensor of this shape holds.
    """

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> "Size":
        out = []
        for i, s in enumerate(sizes):
            try:
                out.append(operator.index(s))
            except TypeError:
                raise TypeError(
                    f"aiograd.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')"
                ) from None
        return tuple.__new__(cls, out)

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    @overload
    def __getitem__(self, key: SupportsIndex) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> "Size": ...

    def __getitem__(self, key: Any) -> Any:
        got = tuple.__getitem__(self, key)
        return tuple.__new__(Size, got) if isinstance(key, slice) else got

    def __add__(self, other: tuple[Any, ...]) -> "Size":
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: tuple[Any, ...]) -> "Size":
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __repr__(self) -> str:
        return f"aiograd.Size({list(self)})"


def as_size(shape: tuple[int, ...]) -> Size:
    """``shape`` (a tuple of ints already, e.g. an array's shape) as a Size, without checking it."""
    return tuple.__new__(Size, shape)
