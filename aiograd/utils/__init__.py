"""aiograd.utils: helpers around training, named as in ``torch.utils``.

``aiograd.utils.data`` holds the Dataset, Sampler and DataLoader API;
``aiograd.utils.checkpoint`` is ``torch.utils.checkpoint``'s import path.
"""

from __future__ import annotations

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
