"""Matrix helpers for the linalg derivative rules, each working on ndarrays (an ordinary pass) and on
Tensors (a create_graph pass, where it is made of differentiable ops): NOTE [One rule for both modes]
in ops/_common.py.

On Tensors a diagonal, a triangle or a diagonal matrix is a product with a constant mask
(an identity or a triangle of ones), so the rules need no shape op beyond what numpy's
dispatch reaches (``swapaxes``, ``expand_dims``, ``sum``, ``matmul``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor import Tensor

__all__ = ["mT", "is_graph", "diag_embed", "diagonal", "tril", "triu", "solve", "eye_like"]


def is_graph(x: Any) -> bool:
    """Whether ``x`` is a Tensor (a create_graph pass) rather than an ndarray."""
    return isinstance(x, Tensor)


def mT(x: Any) -> Any:
    """The transpose of the last two dims."""
    return np.swapaxes(x, -1, -2)


def eye_like(x: Any, n: int | None = None) -> np.ndarray:
    """The identity of size ``n`` (``x``'s last dim) in ``x``'s dtype."""
    return np.eye(x.shape[-1] if n is None else n, dtype=x.dtype)


def diag_embed(v: Any) -> Any:
    """The batch of diagonal matrices with ``v`` (``(*, k)``) on their diagonals."""
    return np.expand_dims(v, -1) * eye_like(v)


def diagonal(x: Any) -> Any:
    """The main diagonals of the matrices of ``x`` (``(*, m, n)`` to ``(*, min(m, n))``)."""
    if not is_graph(x):
        return np.diagonal(x, 0, -2, -1)
    k = min(x.shape[-2:])
    if x.shape[-2] != k or x.shape[-1] != k:
        x = x[..., :k, :k]
    return (x * eye_like(x, k)).sum(-1)


def _triangle(x: Any, k: int, lower: bool) -> Any:
    if not is_graph(x):
        return np.tril(x, k) if lower else np.triu(x, k)
    ones = np.ones(x.shape[-2:], dtype=x.dtype)
    return x * (np.tril(ones, k) if lower else np.triu(ones, k))


def tril(x: Any, k: int = 0) -> Any:
    """The lower triangles (diagonal ``k`` and below) of the matrices of ``x``."""
    return _triangle(x, k, True)


def triu(x: Any, k: int = 0) -> Any:
    """The upper triangles (diagonal ``k`` and above) of the matrices of ``x``."""
    return _triangle(x, k, False)


def solve(a: Any, b: Any) -> Any:
    """``a^{-1} b`` for a batch of invertible ``a`` and matrices ``b`` (differentiable on Tensors)."""
    if is_graph(a) or is_graph(b):
        from ._solve import linalg_solve  # cycle: linalg._solve -> linalg._matrix -> linalg._solve

        return linalg_solve(a, b)
    return np.linalg.solve(a, b)
