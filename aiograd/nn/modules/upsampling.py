"""``torch.nn.modules.upsampling``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..pooling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
]
