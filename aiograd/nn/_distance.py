"""The distances of aiograd.nn.functional: cosine_similarity and pairwise_distance, composed as
torch composes them. Their own module because both the functional API and its losses
(cosine_embedding_loss, triplet_margin_loss in _losses.py) use them.
"""

from __future__ import annotations

import numpy as np

from ..ops._common import checked as _checked
from ..tensor import Tensor

__all__ = ["cosine_similarity", "pairwise_distance"]


@_checked
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (the operands broadcast), as torch:
    the clamp holds the values, not the gradient."""
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))  # the norms of the broadcast operands
    x1 = x1.expand(*shape) if tuple(x1.shape) != shape else x1
    x2 = x2.expand(*shape) if tuple(x2.shape) != shape else x2
    n1 = x1.norm(2, dim, keepdim=True)
    n2 = x2.norm(2, dim, keepdim=True)
    n1 = n1 + Tensor._wrap(np.maximum(n1._data, eps) - n1._data, n1.device)
    n2 = n2 + Tensor._wrap(np.maximum(n2._data, eps) - n2._data, n2.device)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@_checked
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    diff = x1 - x2 + eps
    dim = max(x1.ndim, x2.ndim) - 1
    return diff.norm(p, dim if dim >= 0 else None, keepdim=keepdim)
