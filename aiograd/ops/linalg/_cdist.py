"""Pairwise p-norm distances between two sets of row vectors (``cdist``) and their derivative rule.

The forward is scipy's ``cdist`` (C loops, no ``(P, R, M)`` difference tensor) for each matrix
of the broadcast batch; the distances are exact for every ``compute_mode`` (torch's matrix
product shortcut for p = 2 trades accuracy for speed on GPUs, which numpy does not need).
The p = 2 gradient is written with matrix products (no difference tensor either).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, save_output, unpack
from ...tensor import Tensor
from .._common import broadcast_shapes, common_device, graph_mode, torch_dtype_name, wrap
from ._family import LINALG, records
from ._matrix import mT

__all__ = ["cdist"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _distances(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """The ``(P, R)`` distances between the rows of ``a`` and of ``b``."""
    from scipy.spatial.distance import cdist as scipy_cdist  # on first use, as scipy.special (NOTE [erf])

    m = a.shape[-1]
    if a.shape[0] == 0 or b.shape[0] == 0 or m == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    if p == 0:
        return scipy_cdist(a, b, "hamming") * m
    if p == math.inf:
        return scipy_cdist(a, b, "chebyshev")
    return scipy_cdist(a, b, "minkowski", p=p)


class CdistBackward0(Node):
    """``d_ij = ||x1_i - x2_j||_p``: ``g_x1_i = sum_j g_ij c_ij``, ``g_x2_j = -sum_i g_ij c_ij`` with ``c`` the
    gradient of the norm at ``x1_i - x2_j`` (torch's edge rules: 0 at a zero distance; for p = inf every
    coordinate at the maximum, undivided). p = 0 gives zeros."""

    __slots__ = ("x1", "x2", "result", "p", "x1_shape", "x2_shape")
    x1: Saved
    x2: Saved
    result: Saved
    p: float
    x1_shape: Shape
    x2_shape: Shape

    def __init__(self, x1: Saved, x2: Saved, result: Saved, p: float, x1_shape: Shape, x2_shape: Shape) -> None:
        self._init_node()
        self.x1 = x1
        self.x2 = x2
        self.result = result
        self.p = p
        self.x1_shape = x1_shape
        self.x2_shape = x2_shape

    def release_variables(self) -> None:
        self.x1 = None
        self.x2 = None
        self.result = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        p = self.p
        g = grads[0]
        graph = graph_mode(g)
        x1, x2, dist = (unpack(self, f, graph) for f in (self.x1, self.x2, self.result))
        dd = dist._data if graph else dist
        if p == 0:  # zeros, as torch (not "no gradient")
            g1, g2 = x1 * 0, x2 * 0
        elif p == 2:
            w = np.where(dd == 0, 0, g / np.where(dd == 0, 1, dist))
            g1 = x1 * np.expand_dims(np.sum(w, axis=-1), -1) - np.matmul(w, x2)
            g2 = x2 * np.expand_dims(np.sum(w, axis=-2), -1) - np.matmul(mT(w), x1)
        else:
            diff = np.expand_dims(x1, -2) - np.expand_dims(x2, -3)  # (..., P, R, M)
            dfd = diff._data if graph else diff
            r = np.expand_dims(dist, -1)
            rd = np.expand_dims(dd, -1)
            if p == 1:
                coef = np.sign(diff)
            elif p == math.inf:
                coef = np.sign(diff) * (np.abs(dfd) == rd).astype(dfd.dtype)
            elif p < 1:
                with np.errstate(divide="ignore"):
                    powed = np.abs(np.where(dfd == 0, 1, diff)) ** (p - 1)
                coef = np.sign(diff) * np.where(dfd == 0, 0, powed) * r ** (1 - p)
            else:
                scale = np.where(rd == 0, 0, 1 / np.where(rd == 0, 1, r) ** (p - 1))
                coef = np.sign(diff) * np.abs(diff) ** (p - 1) * scale
            full = coef * np.expand_dims(g, -1)
            g1, g2 = np.sum(full, axis=-2), -np.sum(full, axis=-3)
        return (sum_to(g1, self.x1_shape) if self.should_compute_output(0) else None,
                sum_to(g2, self.x2_shape) if self.should_compute_output(1) else None)


@LINALG.op(nodes=(CdistBackward0,), method=False)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` (``(*, P, M)``) and each row of ``x2``
    (``(*, R, M)``): ``(*, P, R)``, batch dims broadcast. ``p`` is 0 (the number of differing coordinates),
    positive, or inf; ``compute_mode`` is accepted (the distances are computed exactly in every mode)."""
    ad, bd = x1._data, x2._data
    for d, name in ((ad, "X1"), (bd, "X2")):
        if d.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {d.ndim}D")
    for d, name in ((ad, "X1"), (bd, "X2")):
        if d.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {torch_dtype_name(d.dtype)}")
    if ad.shape[-1] != bd.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {ad.shape[-1]} X2: {bd.shape[-1]}")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(ad.dtype)} but found {torch_dtype_name(bd.dtype)}")
    batch = broadcast_shapes(ad.shape[:-2], bd.shape[:-2])
    device = common_device(x1, x2)
    pr, rr, m = ad.shape[-2], bd.shape[-2], ad.shape[-1]
    nb = math.prod(batch)
    a_all = np.broadcast_to(ad, batch + ad.shape[-2:]).reshape((nb, pr, m))
    b_all = np.broadcast_to(bd, batch + bd.shape[-2:]).reshape((nb, rr, m))
    res = np.empty((nb, pr, rr), ad.dtype)
    for i, (a, b) in enumerate(zip(a_all, b_all)):
        res[i] = _distances(a, b, float(p))
    out = wrap(res.reshape(batch + (pr, rr)), device)
    if records("cdist", x1, x2):
        node = CdistBackward0(save(x1), save(x2), None, float(p), ad.shape, bd.shape)
        record(node, (x1, x2), (out,))
        node.result = save_output(out)
        node.work = 4 * out._data.size * m
    return out
