"""``torch.nn.modules.batchnorm``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase

__all__ = [
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
]
