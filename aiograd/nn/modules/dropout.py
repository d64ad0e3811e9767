"""``torch.nn.modules.dropout``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from . import Dropout, Dropout1d, Dropout2d, Dropout3d, _DropoutNd

__all__ = [
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
]
