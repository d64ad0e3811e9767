"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_max_pool1d/2d, with torch's output sizes
(``ceil_mode``), padding rules and indices. (Adaptive average pooling is a separable
linear map: resample.py.)

Each 2-D pool runs over the strided slabs of its padded input, one slab per
kernel tap (NOTE [Window geometry] in _window.py): a running max (keeping the
tap of the first maximum, and NaN as the maximum, as torch's kernels do) or a
running sum, so no copy of the windows is ever made. A 1-D pool is its 2-D pool
on an unsqueezed input (torch's own composition: its result's node is
``SqueezeBackward1``). Max pooling's gradient goes to the input position of
each maximum (a scatter by flat index; the graph-mode path uses the
differentiable row scatter of layers.py); average pooling's is col2im of the
gradient spread over each window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one
from ...tensor import Tensor
from .._common import grad_enabled, wrap
from ._nn_common import float_data, ntuple
from .._table import OpTable
from ._window import Window, pad_hw
from .conv import cols_to_image
from .layers import _scatter_rows

POOL = OpTable("nn.pool")


def pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """torch's pooling output size: floor or ceil mode; a last window must start inside input or left padding."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def _taps(xp: np.ndarray, w: Window) -> Any:
    """Each kernel tap's slab of the padded input: (tap index, (..., Ho, Wo) strided view)."""
    (kh, kw), (sh, sw), (dh, dw), (Ho, Wo) = w.k, w.s, w.d, w.out
    t = 0
    for i in range(kh):
        for j in range(kw):
            yield t, xp[..., i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw]
            t += 1


def _padded_for(x: np.ndarray, w: Window, fill: Any) -> np.ndarray:
    """``x`` padded on the top/left by the pool's padding and on the bottom/right as far as the windows reach."""
    (H, W), (kh, kw), (sh, sw), (dh, dw), (Ho, Wo) = w.size, w.k, w.s, w.d, w.out
    pt, pl = w.pads[0], w.pads[2]
    pb = max(0, (Ho - 1) * sh + dh * (kh - 1) + 1 - H - pt)
    pr = max(0, (Wo - 1) * sw + dw * (kw - 1) + 1 - W - pl)
    return pad_hw(x, (pt, pb, pl, pr), fill)


# ----- max pooling ---------------------------------------------------------------------------


class _MaxPoolBackward(Node):
    """Each output's gradient goes to the input position of its maximum (``flat``: positions in the
    flattened input; added up where windows overlap). A pool of tiling windows keeps only the tap of
    each maximum instead (``taps``, NOTE [Tiling max pool]) and makes ``flat`` only for a graph-mode pass."""

    __slots__ = ("flat", "in_shape", "overlap", "valid", "taps", "kernel")
    flat: np.ndarray | None
    in_shape: Shape
    overlap: bool
    valid: np.ndarray | None
    taps: np.ndarray | None
    kernel: tuple[int, int]

    def __init__(
        self,
        flat: np.ndarray | None,
        in_shape: Shape,
        overlap: bool,
        valid: np.ndarray | None,
        taps: np.ndarray | None,
        kernel: tuple[int, int],
    ) -> None:
        self._init_node()
        self.flat = flat
        self.in_shape = in_shape
        self.overlap = overlap
        self.valid = valid
        self.taps = taps
        self.kernel = kernel

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if self.taps is not None:
            if g.__class__ is not Tensor:
                return (_tiling_max_grad(g, self.taps, self.kernel, self.in_shape),)
            self.flat = _tiling_flat(self.taps, self.kernel, self.in_shape)
        assert self.flat is not None
        size = int(np.prod(self.in_shape))
        if self.valid is not None:  # windows wholly in the padding send no gradient
            g = g * self.valid
        gi: Any
        if g.__class__ is Tensor:
            gi = _scatter_rows(g.reshape(-1, 1), self.flat, size)
            return (gi.reshape(self.in_shape),)
        if self.overlap or self.valid is not None:
            gi = np.bincount(self.flat, weights=g.reshape(-1), minlength=size).astype(g.dtype, copy=False)
        else:
            gi = np.zeros(size, dtype=g.dtype)
            gi[self.flat] = g.reshape(-1)
        return (gi.reshape(self.in_shape),)


class MaxPool2DWithIndicesBackward0(_MaxPoolBackward):
    __slots__ = ()


class AdaptiveMaxPool2DBackward0(_MaxPoolBackward):
    __slots__ = ()


def _running_max(xp: np.ndarray, w: Window) -> tuple[np.ndarray, np.ndarray]:
    """The max over each window and the tap that holds it: the first maximum, or the last NaN (torch's
    rule). The values are a chain of ``np.maximum`` over the tap slabs; the taps then come from one
    equality test per slab, last to first, so the first tap that holds the maximum is the one left (about
    twice as fast as tracking both in one loop with masked copies)."""
    slabs = [slab for _, slab in _taps(xp, w)]
    best = slabs[0].copy()
    for slab in slabs[1:]:
        np.maximum(best, slab, out=best)
    arg = np.full(best.shape, len(slabs) - 1, dtype=np.int16 if len(slabs) < 32768 else np.int64)
    hit = np.empty(best.shape, dtype=bool)
    for t in range(len(slabs) - 2, -1, -1):
        np.copyto(arg, t, where=np.equal(slabs[t], best, out=hit))
    if xp.dtype.kind == "f" and np.isnan(best).any():  # NaN is the maximum: its last tap, as torch
        for t, slab in enumerate(slabs):
            np.copyto(arg, t, where=np.isnan(slab, out=hit))
    return best, arg


# NOTE [Tiling max pool]: the pool of every CNN (kernel == stride, no padding, no dilation)
# tiles the input with its windows. Its taps are then one contiguous copy of the input,
# regrouped (tap, plane, Ho, Wo): the maximum is a chain of np.maximum over contiguous slabs,
# and the tap of the first maximum is counted without a masked copy (the number of leading
# taps that are not the maximum: a running AND of ``!=``), kept as small ints. The backward
# writes each tap's share with one strided assignment and no scatter. A NaN in the result
# sends the pool down the general path (torch takes the last NaN's tap there).


def _tiling_max(x3: np.ndarray, kh: int, kw: int, Ho: int, Wo: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(max, tap of the first max) of the (kh, kw) tiles of (B, H, W) ``x3``; None if a max is NaN."""
    B = x3.shape[0]
    K = kh * kw
    tiles = x3[:, :Ho * kh, :Wo * kw].reshape(B, Ho, kh, Wo, kw)
    taps = np.ascontiguousarray(tiles.transpose(2, 4, 0, 1, 3)).reshape(K, B, Ho, Wo)
    best = taps[0].copy()
    for t in range(1, K):
        np.maximum(best, taps[t], out=best)
    if best.dtype.kind == "f" and np.isnan(best).any():
        return None
    before = np.not_equal(taps[0], best)  # still no maximum among the taps so far
    arg = before.astype(np.int8 if K <= 127 else np.int32)
    for t in range(1, K - 1):
        before &= np.not_equal(taps[t], best)
        arg += before
    return best, arg


def _tiling_max_grad(g: np.ndarray, arg: np.ndarray, kernel: tuple[int, int], in_shape: Shape) -> np.ndarray:
    """The input gradient of a tiling max pool: each tap's positions get the outputs it won."""
    kh, kw = kernel
    B, Ho, Wo = arg.shape
    H, W = in_shape[-2:]
    g3 = g.reshape(B, Ho, Wo)
    gi = np.zeros((B, H, W), dtype=g.dtype)
    zero = g.dtype.type(0)
    for i in range(kh):
        for j in range(kw):
            gi[:, i:Ho * kh:kh, j:Wo * kw:kw] = np.where(arg == i * kw + j, g3, zero)
    return gi.reshape(in_shape)


def _tiling_flat(arg: np.ndarray, kernel: tuple[int, int], in_shape: Shape) -> np.ndarray:
    """Flat input positions of a tiling max pool's maxima (for the graph-mode scatter)."""
    kh, kw = kernel
    B, Ho, Wo = arg.shape
    H, W = in_shape[-2:]
    rows = np.arange(Ho).reshape(Ho, 1) * kh + arg // kw
    cols = np.arange(Wo) * kw + arg % kw
    return (rows * W + cols + (np.arange(B) * (H * W)).reshape(B, 1, 1)).reshape(-1)


def _record_max(
    input: Tensor, vals: np.ndarray, rows: np.ndarray, cols: np.ndarray, node_cls: type[_MaxPoolBackward],
    overlap: bool, return_indices: bool,
) -> Any:
    """The pooled result, its indices (flat positions in each H*W plane) and, if needed, the node."""
    xd = input._data
    H, W = xd.shape[-2:]
    out_shape = xd.shape[:-2] + vals.shape[-2:]
    indices = rows * W + cols
    out = wrap(vals.reshape(out_shape), input._device)
    if input._requires_grad and grad_enabled():
        inside = (rows >= 0) & (rows < H) & (cols >= 0) & (cols < W)
        ok = bool(inside.all())
        safe = indices if ok else np.where(inside, indices, 0)
        B = vals.shape[0]
        flat = (safe + (np.arange(B) * (H * W)).reshape((B,) + (1,) * (safe.ndim - 1))).reshape(-1)
        valid = None if ok else np.broadcast_to(inside, vals.shape).reshape(out_shape).astype(xd.dtype)
        link_one(node_cls(flat, xd.shape, overlap, valid, None, (0, 0)), input, out)
    if return_indices:
        return out, Tensor._wrap(np.broadcast_to(indices, vals.shape).reshape(out_shape).astype(np.int64),
                                 input._device)
    return out


@POOL.op(nodes=(MaxPool2DWithIndicesBackward0,), method=False)
def max_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:
    """2-D max pooling over (N, C, H, W) (or (C, H, W)); ``return_indices`` also returns the
    flat H*W index of each max, as torch."""
    xd = input._data
    if xd.ndim not in (3, 4):
        raise RuntimeError(
            f"non-empty 3D or 4D (batch mode) tensor expected for input, but got: {list(xd.shape)}"
        )
    kh, kw = ntuple(kernel_size, 2, "kernel_size")
    sh, sw = ntuple(stride, 2, "stride") if stride is not None and stride != () and stride != [] else (kh, kw)
    ph, pw = ntuple(padding, 2, "padding")
    dh, dw = ntuple(dilation, 2, "dilation")
    if min(kh, kw) < 1:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if min(sh, sw) < 1:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if min(dh, dw) < 1:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    for p, k, d in ((ph, kh, dh), (pw, kw, dw)):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                f"and dilation={d}"
            )
    H, W = xd.shape[-2:]
    Ho = pool_out(H, kh, sh, ph, dh, ceil_mode)
    Wo = pool_out(W, kw, sw, pw, dw, ceil_mode)
    if Ho < 1 or Wo < 1:
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, xd.shape[-3:]))}). Calculated output size: "
            f"({xd.shape[-3]}x{Ho}x{Wo}). Output size is too small"
        )
    w = Window((H, W), (kh, kw), (sh, sw), (dh, dw), (ph, 0, pw, 0), (Ho, Wo))
    x3 = xd.reshape((-1, H, W))
    if ((sh, sw) == (kh, kw) and (ph, pw, dh, dw) == (0, 0, 1, 1) and not return_indices and Ho * kh <= H
            and Wo * kw <= W):  # NOTE [Tiling max pool]
        tiled = _tiling_max(x3, kh, kw, Ho, Wo)
        if tiled is not None:
            best, taps = tiled
            out = wrap(best.reshape(xd.shape[:-2] + (Ho, Wo)), input._device)
            if input._requires_grad and grad_enabled():
                link_one(MaxPool2DWithIndicesBackward0(None, xd.shape, False, None, taps, (kh, kw)), input, out)
            return out
    fill = -np.inf if xd.dtype.kind == "f" else np.iinfo(xd.dtype).min
    vals, arg = _running_max(_padded_for(x3, w, fill), w)
    rows = np.arange(Ho).reshape(Ho, 1) * sh - ph + (arg // kw) * dh
    cols = np.arange(Wo) * sw - pw + (arg % kw) * dw
    overlap = sh < (kh - 1) * dh + 1 or sw < (kw - 1) * dw + 1
    return _record_max(input, vals, rows, cols, MaxPool2DWithIndicesBackward0, overlap, return_indices)


def _adaptive_bounds(n: int, o: int) -> tuple[np.ndarray, np.ndarray]:
    """torch's adaptive windows: ``[floor(i*n/o), ceil((i+1)*n/o))`` for each of ``o`` outputs."""
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def adaptive_size(output_size: Any, shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    """``output_size`` as ``n`` ints (an int repeats; None keeps the input's size)."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise RuntimeError(f"output_size must be {n}")
        return tuple(shape[i] if v is None else int(v) for i, v in enumerate(output_size))
    if isinstance(output_size, Tensor):
        output_size = output_size.item()
    return (int(output_size),) * n


@POOL.op(nodes=(AdaptiveMaxPool2DBackward0,), method=False, export=False)
def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The max over each of ``output_size`` windows that tile (N, C, H, W) (or (C, H, W)), as torch."""
    xd = input._data
    if xd.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(xd.shape)}")
    float_data(input, "adaptive_max_pool2d")
    H, W = xd.shape[-2:]
    Ho, Wo = adaptive_size(output_size, (H, W), 2)
    if Ho < 0 or Wo < 0:
        raise RuntimeError(f"adaptive_max_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {output_size}")
    x3 = xd.reshape(-1, H, W)
    B = x3.shape[0]
    hs, he = _adaptive_bounds(H, Ho)
    ws, we = _adaptive_bounds(W, Wo)
    vals = np.empty((B, Ho, Wo), dtype=xd.dtype)
    rows = np.empty((B, Ho, Wo), dtype=np.int64)
    cols = np.empty((B, Ho, Wo), dtype=np.int64)
    for i in range(Ho):
        for j in range(Wo):
            win = x3[:, hs[i]:he[i], ws[j]:we[j]].reshape(B, -1)
            a = win.argmax(axis=1)
            vals[:, i, j] = win[np.arange(B), a]
            wj = int(we[j] - ws[j])
            rows[:, i, j] = hs[i] + a // wj
            cols[:, i, j] = ws[j] + a % wj
    return _record_max(input, vals, rows, cols, AdaptiveMaxPool2DBackward0, True, return_indices)


# ----- average pooling ---------------------------------------------------------------------------


class AvgPool2DBackward0(Node):
    """col2im of the gradient divided by each window's divisor and spread over its taps."""

    __slots__ = ("window", "div", "in_shape")
    window: Window
    div: np.ndarray
    in_shape: Shape

    def __init__(self, window: Window, div: np.ndarray, in_shape: Shape) -> None:
        self._init_node()
        self.window = window
        self.div = div
        self.in_shape = in_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        w = self.window
        B = int(np.prod(self.in_shape[:-2]))
        gd = (g / self.div).reshape(B, 1, w.positions)
        cols = np.broadcast_to(gd, (B, w.taps, w.positions))
        return (cols_to_image(cols, w).reshape(self.in_shape),)


def _counts(n: int, k: int, s: int, p: int, o: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output along one dim: the window's size within input + padding, and within the input alone."""
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    pool = end - start
    return pool, np.minimum(end, n) - np.maximum(start, 0)


@POOL.op(nodes=(AvgPool2DBackward0,), method=False, export=False)
def avg_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:
    """2-D average pooling over (N, C, H, W) (or (C, H, W)), with torch's divisors (padding counted
    or not, ``divisor_override``) and ``ceil_mode`` windows."""
    xd = input._data
    if xd.ndim not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
            f"{list(xd.shape)}"
        )
    kh, kw = ntuple(kernel_size, 2, "kernel_size")
    sh, sw = ntuple(stride, 2, "stride") if stride is not None and stride != () and stride != [] else (kh, kw)
    ph, pw = ntuple(padding, 2, "padding")
    if min(sh, sw) < 1 or min(kh, kw) < 1:
        raise RuntimeError("stride should not be zero" if min(sh, sw) < 1 else
                           f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    for p, k in ((ph, kh), (pw, kw)):
        if p > k // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation=1"
            )
    H, W = xd.shape[-2:]
    Ho = pool_out(H, kh, sh, ph, 1, ceil_mode)
    Wo = pool_out(W, kw, sw, pw, 1, ceil_mode)
    if Ho < 1 or Wo < 1:
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, xd.shape[-3:]))}). Calculated output size: "
            f"({xd.shape[-3]}x{Ho}x{Wo}). Output size is too small"
        )
    w = Window((H, W), (kh, kw), (sh, sw), (1, 1), (ph, 0, pw, 0), (Ho, Wo))
    x3 = xd.reshape(-1, H, W)
    xp = _padded_for(x3, w, 0)
    acc: Any = None
    for _, slab in _taps(xp, w):
        if acc is None:
            acc = slab.astype(np.float64 if xd.dtype.kind != "f" else xd.dtype)
        else:
            acc += slab
    pool_h, count_h = _counts(H, kh, sh, ph, Ho)
    pool_w, count_w = _counts(W, kw, sw, pw, Wo)
    if divisor_override is not None:
        div = np.full((Ho, Wo), float(divisor_override))
    elif count_include_pad:
        div = np.outer(pool_h, pool_w).astype(np.float64)
    else:
        div = np.outer(count_h, count_w).astype(np.float64)
    res = acc / div
    if xd.dtype.kind != "f":
        out = wrap(np.trunc(res).astype(xd.dtype).reshape(xd.shape[:-2] + (Ho, Wo)), input._device)
        return out
    div = div.astype(xd.dtype)
    out = wrap(res.astype(xd.dtype, copy=False).reshape(xd.shape[:-2] + (Ho, Wo)), input._device)
    if input._requires_grad and grad_enabled():
        # the gradient's col2im runs on the pool's own padded frame: bottom/right pads as far as the windows reach
        Hp, Wp = xp.shape[-2:]
        frame = Window((H, W), w.k, w.s, w.d, (ph, Hp - H - ph, pw, Wp - W - pw), (Ho, Wo))
        link_one(AvgPool2DBackward0(frame, div, xd.shape), input, out)
    return out


# ----- 1-D pools: the 2-D ones on an unsqueezed input (as torch composes them) --------------------


def _check_1d(input: Tensor, name: str) -> None:
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 'self' "
            f"(while checking arguments for {name})"
        )


def _one(v: Any, name: str) -> int:
    return ntuple(v, 1, name)[0]


@POOL.op(nodes=(MaxPool2DWithIndicesBackward0,), method=False)
def max_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:
    """1-D max pooling over (N, C, L) (or (C, L)); ``return_indices`` also returns each max's position."""
    if input.ndim not in (2, 3):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
            f"got:{list(input.shape)}"
        )
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride")
    p, d = _one(padding, "padding"), _one(dilation, "dilation")
    if k < 1:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if pool_out(input.shape[-1], k, max(s, 1), p, max(d, 1), ceil_mode) < 1:
        raise RuntimeError(
            f"max_pool1d() Invalid computed output size: {pool_out(input.shape[-1], k, max(s, 1), p, max(d, 1), ceil_mode)}"
        )
    res = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


@POOL.op(nodes=(AvgPool2DBackward0,), method=False)
def avg_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling over (N, C, L) (or (C, L))."""
    _check_1d(input, "avg_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride")
    res = avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding")), ceil_mode,
                     count_include_pad)
    return res.squeeze(-2)


@POOL.op(nodes=(AdaptiveMaxPool2DBackward0,), method=False)
def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The max over each of ``output_size`` windows that tile (N, C, L) (or (C, L))."""
    _check_1d(input, "adaptive_max_pool1d")
    res = adaptive_max_pool2d(input.unsqueeze(-2), (1, _one(output_size, "output_size")), return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


__all__ = POOL.exports(__name__)
