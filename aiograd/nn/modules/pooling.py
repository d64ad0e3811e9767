"""``torch.nn.modules.pooling``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
    AvgPool2d, MaxPool1d, MaxPool2d, _MaxPoolNd,
)

__all__ = [
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
]
