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

__all__ = ["Window", "out_size", "window_view", "im2col", "col2im", "pad_hw", "taps_by_position", "add_taps"]


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


# NOTE [Taps by position]: a convolution's three products are each one BLAS call when its
# columns are a matrix (C*kh*kw, Ho*Wo*N), rows ordered (kh, kw, C) and columns (Ho, Wo, N):
# the weight times it is the output (Cout, Ho*Wo*N), the output gradient times its transpose
# the weight gradient, the weight's transpose times the output gradient the columns'
# gradient. ``im2col``'s (N, C*kh*kw, Ho*Wo) layout needs a batched product over N (a BLAS
# call per image: slow for the small images of a LeNet) or a transposing copy first. Built
# from the input as (C, H, W, N), each tap's slab is a slice whose rows run Wo*N contiguous
# elements, so the copies are long (im2col's runs are Wo elements long).


def taps_by_position(x: np.ndarray, w: Window) -> np.ndarray:
    """The receptive fields of ``x`` (N, C, H, W) as a (kh*kw*C, Ho*Wo*N) matrix (NOTE [Taps by position])."""
    N, C, H, W = x.shape
    pt, pb, pl, pr = w.pads
    Hp, Wp = w.padded
    xp = np.zeros((C, Hp, Wp, N), dtype=x.dtype)
    xp[:, pt: pt + H, pl: pl + W, :] = x.transpose(1, 2, 3, 0)
    (kh, kw), (Ho, Wo), (sh, sw), (dh, dw) = w.k, w.out, w.s, w.d
    cols = np.empty((kh, kw, C, Ho, Wo, N), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[i, j] = xp[:, i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw, :]
    return cols.reshape(kh * kw * C, Ho * Wo * N)


def add_taps(cols: np.ndarray, w: Window, n: int) -> np.ndarray:
    """The adjoint of ``taps_by_position``: a (kh*kw*C, Ho*Wo*N) matrix added back into (N, C, H, W)."""
    (kh, kw), (Ho, Wo), (sh, sw), (dh, dw) = w.k, w.out, w.s, w.d
    C = cols.shape[0] // (kh * kw)
    c6 = cols.reshape(kh, kw, C, Ho, Wo, n)
    Hp, Wp = w.padded
    xp = np.zeros((C, Hp, Wp, n), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xp[:, i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw, :] += c6[i, j]
    pt, _, pl, _ = w.pads
    H, W = w.size
    return np.ascontiguousarray(xp[:, pt: pt + H, pl: pl + W, :].transpose(3, 0, 1, 2))
