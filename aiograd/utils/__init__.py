"""aiograd.utils: helpers around training, named as in ``torch.utils``.

``aiograd.utils.data`` holds the Dataset, Sampler and DataLoader API.
"""

from __future__ import annotations

from . import data

__all__ = ["data"]
