"""``torch.nn.modules.module``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import Module

__all__ = [
    "Module",
]
