"""``torch.nn.modules.instancenorm``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = [
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
]
