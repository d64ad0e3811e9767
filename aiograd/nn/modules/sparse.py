"""``torch.nn.modules.sparse``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import Embedding

__all__ = [
    "Embedding",
]
