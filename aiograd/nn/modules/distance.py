"""``torch.nn.modules.distance``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import CosineSimilarity, PairwiseDistance

__all__ = [
    "PairwiseDistance", "CosineSimilarity",
]
