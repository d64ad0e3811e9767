"""Sliding windows over the last two dims of (N, C, H, W) arrays: the geometry of a
convolution or pooling, the strided view of its receptive fields, im2col and col2im.

NOTE [Window geometry]: a ``Window`` describes a kernel of ``k`` taps (dilated by
``d``) sliding with stride ``s`` over a "large" side of ``size`` (H, W), padded by
``pads`` (top, bottom, left, right), giving ``out`` (Ho, Wo) positions. The padded
size may exceed what the windows cover (a transposed convolution's
``output_padding``, a ceil-mode pool's partial window): such rows get nothing.
One geometry serves both directions: im2col reads the large side into columns
(N, C*kh*kw, Ho*Wo), in torch's ``unfold`` layout, and col2im adds columns back
into it (their adjoint), so a convolution, its transpose and their gradients all
use the same two kernels.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["Window", "out_size", "window_view", "im2col", "col2im", "pad_hw"]


class Window(NamedTuple):
    """NOTE [Window geometry]."""

    size: tuple[int, int]  #: (H, W) of the large side, unpadded
    k: tuple[int, int]  #: kernel taps (kh, kw)
    s: tuple[int, int]  #: stride
    d: tuple[int, int]  #: dilation
    pads: tuple[int, int, int, int]  #: top, bottom, left, right
    out: tuple[int, int]  #: window positions (Ho, Wo)

    @property
    def padded(self) -> tuple[int, int]:
        pt, pb, pl, pr = self.pads
        return self.size[0] + pt + pb, self.size[1] + pl + pr

    @property
    def taps(self) -> int:
        return self.k[0] * self.k[1]

    @property
    def positions(self) -> int:
        return self.out[0] * self.out[1]


def out_size(size: int, k: int, s: int, pad_total: int, d: int) -> int:
    """Window positions along one dim (floor mode): ``(size + pads - d*(k-1) - 1) // s + 1``."""
    return (size + pad_total - d * (k - 1) - 1) // s + 1


def pad_hw(x: np.ndarray, pads: tuple[int, int, int, int], value: float = 0.0) -> np.ndarray:
    """``x`` padded on its last two dims (no copy when there is nothing to pad)."""
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    if value == 0.0:
        out = np.zeros(x.shape[:-2] + (x.shape[-2] + pt + pb, x.shape[-1] + pl + pr), dtype=x.dtype)
    else:
        out = np.full(x.shape[:-2] + (x.shape[-2] + pt + pb, x.shape[-1] + pl + pr), value, dtype=x.dtype)
    out[..., pt: pt + x.shape[-2], pl: pl + x.shape[-1]] = x
    return out


def window_view(xp: np.ndarray, w: Window) -> np.ndarray:
    """A read-only strided view (N, C, kh, kw, Ho, Wo) of the padded ``xp``'s receptive fields."""
    sN, sC, sH, sW = xp.strides
    N, C = xp.shape[:2]
    return as_strided(
        xp, shape=(N, C) + w.k + w.out,
        strides=(sN, sC, sH * w.d[0], sW * w.d[1], sH * w.s[0], sW * w.s[1]), writeable=False,
    )


def im2col(x: np.ndarray, w: Window) -> np.ndarray:
    """The receptive fields of ``x`` (N, C, H, W) as columns (N, C*kh*kw, Ho*Wo), as torch's unfold."""
    N, C = x.shape[:2]
    win = window_view(pad_hw(x, w.pads), w)
    return np.ascontiguousarray(win).reshape(N, C * w.taps, w.positions)


def col2im(cols: np.ndarray, w: Window) -> np.ndarray:
    """The adjoint of ``im2col``: columns (N, C*kh*kw, Ho*Wo) added back into (N, C, H, W)."""
    N = cols.shape[0]
    kh, kw = w.k
    Ho, Wo = w.out
    C = cols.shape[1] // (kh * kw)
    c6 = cols.reshape(N, C, kh, kw, Ho, Wo)
    Hp, Wp = w.padded
    (sh, sw), (dh, dw) = w.s, w.d
    xp = np.zeros((N, C, Hp, Wp), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xp[:, :, i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw] += c6[:, :, i, j]
    pt, _, pl, _ = w.pads
    H, W = w.size
    if (Hp, Wp) == (H, W):
        return xp
    return xp[:, :, pt: pt + H, pl: pl + W]
