"""``torch.nn.modules.linear``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import Bilinear, Identity, Linear

__all__ = [
    "Bilinear", "Identity", "Linear",
]
