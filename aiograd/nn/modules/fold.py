"""``torch.nn.modules.fold``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..conv import Fold, Unfold

__all__ = [
    "Fold", "Unfold",
]
