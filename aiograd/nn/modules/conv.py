"""``torch.nn.modules.conv``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, _ConvNd

__all__ = [
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
]
