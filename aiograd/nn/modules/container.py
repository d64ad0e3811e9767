"""``torch.nn.modules.container``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList
from . import Sequential

__all__ = [
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
]
