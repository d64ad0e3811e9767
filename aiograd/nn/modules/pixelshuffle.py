"""``torch.nn.modules.pixelshuffle``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..pooling import PixelShuffle, PixelUnshuffle

__all__ = [
    "PixelShuffle", "PixelUnshuffle",
]
