"""``torch.nn.modules.flatten``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import Flatten, Unflatten

__all__ = [
    "Flatten", "Unflatten",
]
