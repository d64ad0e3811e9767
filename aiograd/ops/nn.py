"""Fused neural-network primitives and their derivative rules.

softmax, log_softmax, nll_loss, conv2d, max_pool2d, embedding, layer_norm,
dropout. Each is one node with a fused, numerically stable rule (these are
the places where composing from elementwise primitives would be slower or
lose precision).

Rules that are plain numpy expressions of the saved values also serve
create_graph passes (NOTE [One rule for both modes] in _common.py). Where a
rule is a scatter (embedding, max_pool2d) the graph-mode path calls the
differentiable row gather/scatter pair defined here, each the other's
derivative. conv2d's rule is not expressible that way: its double backward
raises a clear "not supported" error.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..autograd.graph import Node, Saved, SavedArray, Shape, link_one, record, save, save_output, unpack
from ..tensor import Tensor, _generator
from ._common import grad_enabled, needs_grad, wrap
from ._common import torch_dtype_name as _torch_dtype_name
from ._table import OpTable
from .shape import _wrap_dim, int_tuple

NN = OpTable("nn")


def _pair(v: Any, name: str) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return int(v[0]), int(v[0])
        if len(v) != 2:
            raise RuntimeError(f"{name} must be an int or a tuple of two ints, got {tuple(v)}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _float_input(x: Tensor, op: str) -> np.ndarray:
    d = x._data
    if d.dtype.kind not in "fc":
        raise RuntimeError(f'"{op}" not implemented for \'{_torch_dtype_name(d.dtype)}\'')
    return d


# ----- softmax / log_softmax ------------------------------------------------------------


class SoftmaxBackward0(Node):
    """grad_input = y * (g - sum(g * y, dim)) with y the saved output."""

    __slots__ = ("out", "dim")
    out: Saved
    dim: int | None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        y = unpack(self, self.out, g.__class__ is Tensor)
        gy = g * y
        return (gy - y * np.sum(gy, axis=self.dim, keepdims=True),)


class LogSoftmaxBackward0(Node):
    """grad_input = g - exp(y) * sum(g, dim) with y the saved output."""

    __slots__ = ("out", "dim")
    out: Saved
    dim: int | None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        y = unpack(self, self.out, g.__class__ is Tensor)
        return (g - np.exp(y) * np.sum(g, axis=self.dim, keepdims=True),)


def _softmax_prep(input: Tensor, dim: int, dtype: Any, op: str) -> tuple[Tensor, np.ndarray, int]:
    if dtype is not None:
        input = input.to(dtype)  # type: ignore[attr-defined]
    xd = _float_input(input, op)
    return input, xd, _wrap_dim(dim, xd.ndim)


@NN.op(nodes=(SoftmaxBackward0,))
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed after subtracting the max (stable)."""
    input, xd, d = _softmax_prep(input, dim, dtype, "softmax")
    if xd.ndim == 0:
        res = np.ones_like(xd)
    elif xd.size == 0:  # nothing to normalize (the max of an empty dim would raise)
        res = np.empty_like(xd)
    else:
        e = xd - xd.max(axis=d, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=d, keepdims=True)
        res = e
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(SoftmaxBackward0(save_output(out), d if xd.ndim else None), input, out)
    return out


@NN.op(nodes=(LogSoftmaxBackward0,))
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed after subtracting the max (stable)."""
    input, xd, d = _softmax_prep(input, dim, dtype, "log_softmax")
    if xd.ndim == 0:
        res = np.zeros_like(xd)
    elif xd.size == 0:
        res = np.empty_like(xd)
    else:
        res = xd - xd.max(axis=d, keepdims=True)
        res -= np.log(np.exp(res).sum(axis=d, keepdims=True))
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(LogSoftmaxBackward0(save_output(out), d if xd.ndim else None), input, out)
    return out


# ----- nll_loss ----------------------------------------------------------------------------

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


class NllLossBackward0(Node):
    """The gradient is ``g`` (broadcast) times a constant: -weight[target] at each target
    position (scaled by 1/total_weight for 'mean'), zero elsewhere; linear in ``g``."""

    __slots__ = ("coef", "g_shape")
    coef: np.ndarray
    g_shape: Shape | None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if self.g_shape is not None:
            g = g.reshape(self.g_shape)
        return (g * self.coef,)


@NN.op(nodes=(NllLossBackward0,), method=False)
def nll_loss(
    input: Tensor, target: Any, weight: Tensor | None = None, ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class-index ``target`` under log-probabilities ``input``.

    ``input`` is (C,), (N, C) or (N, C, d1, ...); ``target`` holds class indices of
    shape (), (N,) or (N, d1, ...). ``weight`` rescales each class; targets equal
    to ``ignore_index`` contribute nothing. ``reduction='mean'`` divides by the
    sum of the weights of the non-ignored targets (as torch).
    """
    _check_reduction(reduction)
    xd = input._data
    td = target._data if isinstance(target, Tensor) else np.asarray(target)
    if td.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected scalar type Long but found {_torch_dtype_name(td.dtype)}"
        )
    if xd.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {xd.ndim})")
    if xd.ndim == 1:
        if td.ndim != 0:
            if td.ndim == 1 and td.shape[0] != 1:
                raise ValueError(
                    f"Expected input batch_size (1) to match target batch_size ({td.shape[0]})."
                )
        x2 = xd.reshape(1, -1)
        t2 = td.reshape(1)
    else:
        if td.ndim == 0 or xd.shape[0] != td.shape[0]:
            raise ValueError(
                f"Expected input batch_size ({xd.shape[0]}) to match target batch_size "
                f"({td.shape[0] if td.ndim else 0})."
            )
        if td.shape[1:] != xd.shape[2:]:
            raise RuntimeError(
                f"Expected target size {[xd.shape[0]] + list(xd.shape[2:])}, got {list(td.shape)}"
            )
        x2, t2 = xd, td
    C = x2.shape[1]
    valid = t2 != ignore_index
    safe = np.where(valid, t2, 0)
    bad = valid & ((t2 < 0) | (t2 >= C))
    if bad.any():
        raise IndexError(f"Target {int(t2[bad].flat[0])} is out of bounds.")
    if weight is not None:
        wd = weight._data if isinstance(weight, Tensor) else np.asarray(weight)
        if wd.shape != (C,):
            raise RuntimeError(
                f"weight tensor should be defined either for all {C} classes or no classes but got "
                f"weight tensor of shape: {list(wd.shape)}"
            )
        w = wd[safe].astype(x2.dtype, copy=False) * valid
    else:
        w = valid.astype(x2.dtype)
    picked = np.take_along_axis(x2, safe[:, None], axis=1)[:, 0]
    losses = -picked * w
    scale: Any = 1.0
    if reduction == "none":
        res = losses if xd.ndim > 1 else losses.reshape(())
    elif reduction == "sum":
        res = losses.sum()
    else:
        total = w.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            res = losses.sum() / total  # 0/0 = nan when every target is ignored, as torch
            scale = np.reciprocal(total)
    out = wrap(np.asarray(res, dtype=xd.dtype), input._device)
    if input._requires_grad and grad_enabled():
        # Only the targets that count get a coefficient (as torch writes only those): with every
        # target ignored the gradient is 0, not 0 * (1 / 0); a counted target of weight 0 with a
        # total weight of 0 gets 0 * inf = NaN, as torch's.
        with np.errstate(invalid="ignore"):
            picked_coef = np.where(valid, -w * scale, 0).astype(xd.dtype, copy=False)
        coef = np.zeros(x2.shape, dtype=xd.dtype)
        np.put_along_axis(coef, safe[:, None], picked_coef[:, None], axis=1)
        g_shape = (x2.shape[0], 1) + x2.shape[2:] if reduction == "none" and xd.ndim > 1 else None
        link_one(NllLossBackward0(coef.reshape(xd.shape), g_shape), input, out)
    return out


# ----- conv2d (im2col) --------------------------------------------------------------------


def _conv_padding(padding: Any, kh: int, kw: int, dh: int, dw: int, stride: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) zero padding."""
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding == "same":
            if stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            th, tw = dh * (kh - 1), dw * (kw - 1)
            return th // 2, th - th // 2, tw // 2, tw - tw // 2
        raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    ph, pw = _pair(padding, "padding")
    if ph < 0 or pw < 0:
        raise RuntimeError("negative padding is not supported")
    return ph, ph, pw, pw


def _windows(xp: np.ndarray, Ho: int, Wo: int, kh: int, kw: int, s: tuple[int, int], d: tuple[int, int]) -> np.ndarray:
    """A strided view (N, C, Ho, Wo, kh, kw) of the padded input's receptive fields."""
    sN, sC, sH, sW = xp.strides
    N, C = xp.shape[:2]
    return as_strided(
        xp, shape=(N, C, Ho, Wo, kh, kw),
        strides=(sN, sC, sH * s[0], sW * s[1], sH * d[0], sW * d[1]), writeable=False,
    )


class ConvolutionBackward0(Node):
    """Backward of conv2d: grad_weight = g^T @ cols, grad_input = col2im(g @ W), grad_bias = sum(g)."""

    __slots__ = (
        "x", "w", "cols", "in_shape", "stride", "dilation", "pads", "groups", "out_hw", "unbatched",
    )
    x: Saved
    w: Saved
    cols: SavedArray  # the im2col matrix of the input (weight gradient), None if the weight needs none
    in_shape: tuple[int, int, int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]
    groups: int
    out_hw: tuple[int, int]
    unbatched: bool

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        if g.__class__ is Tensor:
            raise RuntimeError(
                "conv2d double backward is not supported: ConvolutionBackward0 cannot run in a "
                "create_graph=True pass. Compute first-order gradients only."
            )
        e = self.next_edges
        wd = unpack(self, self.w, False)
        unpack(self, self.x, False)  # the in-place check on the input
        cols: Any = self.cols
        if self.unbatched:
            g = g[None]
        N, C, H, W = self.in_shape
        O, Cg, kh, kw = wd.shape
        G = self.groups
        Og = O // G
        Ho, Wo = self.out_hw
        K = Cg * kh * kw
        M = N * Ho * Wo
        gm = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).reshape(M, O)
        gx = gw = gb = None
        if e[1] is not None:
            if G == 1:
                gw = (gm.T @ cols).reshape(wd.shape)
            else:
                gw = np.matmul(
                    gm.reshape(M, G, Og).transpose(1, 2, 0), cols.reshape(M, G, K).transpose(1, 0, 2)
                ).reshape(wd.shape)
        if len(e) > 2 and e[2] is not None:
            gb = gm.sum(axis=0)
        if e[0] is not None:
            if G == 1:
                dcols = gm @ wd.reshape(O, K)
            else:
                dcols = np.matmul(gm.reshape(M, G, Og).transpose(1, 0, 2), wd.reshape(G, Og, K))
                dcols = dcols.transpose(1, 0, 2)
            # (N, Ho, Wo, C, kh, kw) -> (kh, kw, N, C, Ho, Wo): each kernel tap is one slab to add.
            dcols = np.ascontiguousarray(
                dcols.reshape(N, Ho, Wo, C, kh, kw).transpose(4, 5, 0, 3, 1, 2)
            )
            pt, pb, pl, pr = self.pads
            (sh, sw), (dh, dw) = self.stride, self.dilation
            dxp = np.zeros((N, C, H + pt + pb, W + pl + pr), dtype=dcols.dtype)
            for i in range(kh):
                for j in range(kw):
                    dxp[:, :, i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw] += dcols[i, j]
            gx = dxp[:, :, pt: pt + H, pl: pl + W]
            if self.unbatched:
                gx = gx[0]
        return (gx, gw, gb) if len(e) > 2 else (gx, gw)


@NN.op(nodes=(ConvolutionBackward0,), method=False)
def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """2-D cross-correlation over (N, C, H, W) (or unbatched (C, H, W)) input, as torch.nn.functional.conv2d."""
    xd = input._data
    wd = weight._data
    if wd.ndim != 4:
        raise RuntimeError(
            f"weight should have at least three dimensions, got weight of size {list(wd.shape)}"
            if wd.ndim < 3 else
            f"Expected 4-dimensional weight for 4-dimensional input, but got weight of size {list(wd.shape)}"
        )
    if xd.ndim not in (3, 4):
        raise RuntimeError(
            f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: {list(xd.shape)}"
        )
    if xd.dtype != wd.dtype:
        raise RuntimeError(
            f"Input type ({_torch_dtype_name(xd.dtype)}) and weight type ({_torch_dtype_name(wd.dtype)}) "
            "should be the same"
        )
    unbatched = xd.ndim == 3
    if unbatched:
        xd = xd[None]
    N, C, H, W = xd.shape
    O, Cg, kh, kw = wd.shape
    groups = int(groups)
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if C != Cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(wd.shape)}, expected input"
            f"{list(input._data.shape)} to have {Cg * groups} channels, but got {C} channels instead"
        )
    if O % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
            f"weight of size {list(wd.shape)} instead"
        )
    s = _pair(stride, "stride")
    d = _pair(dilation, "dilation")
    if min(s) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(d) < 1:
        raise RuntimeError("dilation should be greater than zero")
    pt, pb, pl, pr = _conv_padding(padding, kh, kw, d[0], d[1], s)
    Hp, Wp = H + pt + pb, W + pl + pr
    ekh, ekw = d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1
    if Hp < ekh or Wp < ekw:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({Hp} x {Wp}). Kernel size: ({ekh} x {ekw}). "
            "Kernel size can't be greater than actual input size"
        )
    Ho = (Hp - ekh) // s[0] + 1
    Wo = (Wp - ekw) // s[1] + 1
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr))) if (pt or pb or pl or pr) else xd
    win = _windows(xp, Ho, Wo, kh, kw, s, d)  # (N, C, Ho, Wo, kh, kw)
    G = groups
    Og = O // G
    K = Cg * kh * kw
    M = N * Ho * Wo
    # cols[(n, ho, wo), (c, i, j)]: one contiguous copy of the receptive fields.
    cols = np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(M, C * kh * kw)
    if G == 1:
        res = cols @ np.ascontiguousarray(wd.reshape(O, K).T)  # C order: BLAS's fast path under load
    else:
        res = np.matmul(cols.reshape(M, G, K).transpose(1, 0, 2), wd.reshape(G, Og, K).transpose(0, 2, 1))
        res = res.transpose(1, 0, 2).reshape(M, O)
    res = res.reshape(N, Ho, Wo, O).transpose(0, 3, 1, 2)
    if bias is not None:
        bd = bias._data
        if bd.shape != (O,):
            raise RuntimeError(f"Given weight of size {list(wd.shape)}, expected bias to be 1-dimensional with {O} elements, but got bias of size {list(bd.shape)} instead")
        res = res + bd.reshape(1, O, 1, 1)
    res = np.ascontiguousarray(res, dtype=xd.dtype)
    if unbatched:
        res = res[0]
    out = wrap(res, input._device)
    inputs = (input, weight) if bias is None else (input, weight, bias)
    if needs_grad(*inputs):
        node = ConvolutionBackward0(
            save(input), save(weight), cols if weight._requires_grad else None, (N, C, H, W), s, d,
            (pt, pb, pl, pr), G, (Ho, Wo), unbatched,
        )
        record(node, inputs, (out,))
        node.work = 2 * M * K * O  # flops of one of the two products (read by the offload policy)
    return out


# ----- row gather / scatter (differentiable pair) -----------------------------------------


def _index_add_rows(g: np.ndarray, idx: np.ndarray, rows: int) -> np.ndarray:
    """out[rows, D] with out[idx[k]] += g[k] (repeated indices add up)."""
    D = g.shape[-1]
    g2 = g.reshape(-1, D)
    flat = idx.reshape(-1)
    if D == 1:
        return np.bincount(flat, weights=g2[:, 0], minlength=rows).astype(g.dtype, copy=False).reshape(rows, 1)
    out = np.zeros((rows, D), dtype=g.dtype)
    np.add.at(out, flat, g2)
    return out


class _GatherRowsBackward(Node):
    __slots__ = ("idx", "rows", "mask")
    idx: np.ndarray
    rows: int
    mask: np.ndarray | None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if self.mask is not None:
            g = g * self.mask
        if g.__class__ is Tensor:
            return (_scatter_rows(g, self.idx, self.rows),)
        return (_index_add_rows(g, self.idx, self.rows),)


class EmbeddingBackward0(_GatherRowsBackward):
    __slots__ = ()


class _ScatterRowsBackward(Node):
    __slots__ = ("idx",)
    idx: np.ndarray

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            return (_gather_rows(g, self.idx),)
        return (g[self.idx],)


def _gather_rows(
    src: Tensor, idx: np.ndarray, node_cls: type[_GatherRowsBackward] = _GatherRowsBackward, mask: Any = None
) -> Tensor:
    """``src[idx]`` for a 2-D ``src`` (rows, D): the result has shape idx.shape + (D,)."""
    out = wrap(src._data[idx], src._device)
    if src._requires_grad and grad_enabled():
        link_one(node_cls(idx, src._data.shape[0], mask), src, out)
    return out


def _scatter_rows(src: Tensor, idx: np.ndarray, rows: int) -> Tensor:
    """The adjoint of ``_gather_rows``: rows of ``src`` added into a (rows, D) zero tensor at ``idx``."""
    out = wrap(_index_add_rows(src._data, idx, rows), src._device)
    if src._requires_grad and grad_enabled():
        link_one(_ScatterRowsBackward(idx), src, out)
    return out


# ----- embedding ------------------------------------------------------------------------------


@NN.op(nodes=(EmbeddingBackward0,), method=False)
def embedding(input: Any, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer ``input``;
    the gradient adds up over repeated indices and is zero at ``padding_idx``."""
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {_torch_dtype_name(idx.dtype)} instead (while checking arguments for embedding)"
        )
    wd = weight._data
    if wd.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = wd.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    mask = None
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += n
        if not 0 <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if (idx == padding_idx).any():
            mask = (idx != padding_idx)[..., None].astype(wd.dtype)
    return _gather_rows(weight, idx, EmbeddingBackward0, mask)


# ----- max_pool2d ----------------------------------------------------------------------------


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


class MaxPool2DWithIndicesBackward0(Node):
    """Each output's gradient goes to the input position that held the max (added where windows overlap)."""

    __slots__ = ("flat", "in_shape", "overlap", "valid")
    flat: np.ndarray
    in_shape: Shape
    overlap: bool
    valid: np.ndarray | None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        size = int(np.prod(self.in_shape))
        if self.valid is not None:  # windows that lie wholly in the padding send no gradient
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


@NN.op(nodes=(MaxPool2DWithIndicesBackward0,), method=False)
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
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride") if stride is not None and stride != () and stride != [] else (kh, kw)
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
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
    lead = xd.shape[:-2]
    H, W = xd.shape[-2:]
    Ho = _pool_out(H, kh, sh, ph, dh, ceil_mode)
    Wo = _pool_out(W, kw, sw, pw, dw, ceil_mode)
    if Ho < 1 or Wo < 1:
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, xd.shape[-3:]))}). Calculated output size: "
            f"({xd.shape[-3]}x{Ho}x{Wo}). Output size is too small"
        )
    x4 = xd.reshape((-1, 1, H, W))
    # pad so every window fits (ceil_mode may need more on the bottom/right)
    need_h = (Ho - 1) * sh + dh * (kh - 1) + 1
    need_w = (Wo - 1) * sw + dw * (kw - 1) + 1
    pb = max(0, need_h - H - ph)
    pr = max(0, need_w - W - pw)
    if ph or pw or pb or pr:
        fill = -np.inf if xd.dtype.kind == "f" else np.iinfo(xd.dtype).min
        x4 = np.pad(x4, ((0, 0), (0, 0), (ph, pb), (pw, pr)), constant_values=fill)
    win = _windows(x4, Ho, Wo, kh, kw, (sh, sw), (dh, dw))[:, 0]  # (B, Ho, Wo, kh, kw)
    B = win.shape[0]
    wflat = win.reshape(B, Ho, Wo, kh * kw)
    local = wflat.argmax(axis=-1)
    vals = np.take_along_axis(wflat, local[..., None], axis=-1)[..., 0]
    rows = np.arange(Ho).reshape(1, Ho, 1) * sh - ph + (local // kw) * dh
    colsi = np.arange(Wo).reshape(1, 1, Wo) * sw - pw + (local % kw) * dw
    indices = rows * W + colsi  # (B, Ho, Wo) flat index into H*W
    out = wrap(np.ascontiguousarray(vals).reshape(lead + (Ho, Wo)), input._device)
    if input._requires_grad and grad_enabled():
        inside = (rows >= 0) & (rows < H) & (colsi >= 0) & (colsi < W)
        safe = np.where(inside, indices, 0) if not inside.all() else indices
        node = MaxPool2DWithIndicesBackward0(
            (safe + (np.arange(B) * (H * W)).reshape(B, 1, 1)).reshape(-1), xd.shape,
            sh < (kh - 1) * dh + 1 or sw < (kw - 1) * dw + 1,
            None if inside.all() else inside.reshape(lead + (Ho, Wo)).astype(xd.dtype),
        )
        link_one(node, input, out)
    if return_indices:
        return out, Tensor._wrap(indices.reshape(lead + (Ho, Wo)).astype(np.int64), input._device)
    return out


# ----- layer_norm ----------------------------------------------------------------------------


class NativeLayerNormBackward0(Node):
    """gx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) with gh = g * weight;
    gw = sum(g * xhat), gb = sum(g) over the leading dims."""

    __slots__ = ("x", "w", "mean", "rstd", "axes", "lead", "eps")
    x: Saved
    w: Saved
    mean: SavedArray
    rstd: SavedArray
    axes: tuple[int, ...]
    lead: tuple[int, ...]
    eps: float

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        axes = self.axes
        x = unpack(self, self.x, graph)
        if graph:  # recompute the statistics differentiably, so double backward sees them
            mu = np.mean(x, axis=axes, keepdims=True)
            xc = x - mu
            rstd = 1.0 / np.sqrt(np.mean(xc * xc, axis=axes, keepdims=True) + self.eps)
        else:
            if self.mean is None:
                unpack(self, None, False)
            mu, rstd = self.mean, self.rstd
            xc = x - mu
        xhat = xc * rstd
        w = unpack(self, self.w, graph) if self.w is not None else None
        gx = gw = gb = None
        if e[0] is not None:
            gh = g * w if w is not None else g
            gx = rstd * (gh - np.mean(gh, axis=axes, keepdims=True)
                         - xhat * np.mean(gh * xhat, axis=axes, keepdims=True))
        if e[1] is not None:
            gw = g * xhat
            if self.lead:
                gw = np.sum(gw, axis=self.lead)
        if e[2] is not None:
            gb = np.sum(g, axis=self.lead) if self.lead else g
        return gx, gw, gb


@NN.op(nodes=(NativeLayerNormBackward0,), method=False)
def layer_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    ns = int_tuple((normalized_shape,), "layer_norm", "normalized_shape")
    xd = _float_input(input, "layer_norm")
    k = len(ns)
    if k == 0 or xd.ndim < k or xd.shape[xd.ndim - k:] != ns:
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*, {', '.join(map(str, ns))}], "
            f"but got input of size{list(xd.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != ns:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t._data.shape)} and normalized_shape = {list(ns)}"
            )
    axes = tuple(range(xd.ndim - k, xd.ndim))
    mu = xd.mean(axis=axes, keepdims=True)
    xc = xd - mu
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    y = xc * rstd
    if weight is not None:
        y *= weight._data
    if bias is not None:
        y += bias._data
    out = wrap(y.astype(xd.dtype, copy=False), input._device)
    if needs_grad(input, weight, bias):
        node = NativeLayerNormBackward0(
            save(input), save(weight) if weight is not None else None, mu, rstd.astype(xd.dtype, copy=False),
            axes, tuple(range(xd.ndim - k)), eps,
        )
        record(node, (input, weight, bias), (out,))
    return out


# ----- dropout -------------------------------------------------------------------------------


class NativeDropoutBackward0(Node):
    """grad_input = g * mask / (1 - p)."""

    __slots__ = ("mask",)
    mask: np.ndarray

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0] * self.mask,)


@NN.op(nodes=(NativeDropoutBackward0,), method=False)
def dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (identity when not training).

    The mask comes from aiograd's generator, so ``ag.manual_seed`` makes it reproducible.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0.0:
        return input
    xd = input._data
    if p == 1.0:
        mask = np.zeros(xd.shape, dtype=xd.dtype)
    else:
        mask = (_generator().random(xd.shape, dtype=np.float64) >= p).astype(xd.dtype)
        mask *= xd.dtype.type(1.0 / (1.0 - p))
    out = wrap(xd * mask, input._device)
    if input._requires_grad and grad_enabled():
        link_one(NativeDropoutBackward0(mask), input, out)
    return out


__all__ = NN.exports(__name__)
