"""``torch.nn.modules.utils``, the import path torch code uses for its argument helpers:
``_pair(3) == (3, 3)``, ``_pair((1, 2)) == (1, 2)``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A function that makes an ``n``-tuple of a value (repeated) or of an iterable (as it is)."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, Iterable):
            return tuple(x)
        return (x,) * n

    parse.__name__ = parse.__qualname__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
