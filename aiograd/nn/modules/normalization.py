"""``torch.nn.modules.normalization``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..normalization import GroupNorm, LayerNorm, RMSNorm

__all__ = [
    "LayerNorm", "GroupNorm", "RMSNorm",
]
