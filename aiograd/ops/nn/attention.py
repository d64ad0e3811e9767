"""scaled_dot_product_attention as one fused node (torch's CPU flash-attention node name).

NOTE [Attention gradient]: with ``s = q k^T * scale + mask``, ``p = softmax(s)``,
``pd = p * keep / (1 - dropout_p)`` and ``out = pd v``:

    gv = pd^T g,   gp = (g v^T) * keep / (1 - dropout_p),
    gs = p * (gp - sum(gp * p, -1)),   gq = gs k * scale,   gk = gs^T q * scale

and a float mask that requires grad gets ``gs`` summed to its shape. An ordinary
pass reuses the forward's ``p`` (one (..., L, S) array: no recomputation of the
scores); a create_graph pass recomputes ``p`` from the saved q, k (and mask) with
differentiable ops, and the same lines (``@``, ``np.swapaxes``, ``np.sum``)
record the double-backward graph. A row whose every key is masked out gives 0
(as torch's math path does), not NaN. ``enable_gqa`` repeats each key/value head
for its group of query heads; their gradients are summed back per group.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, SavedArray, SavedTensor, save, unpack
from ..._generator import default_stream
from ...tensor import Tensor
from .._common import broadcast_shapes, needs_grad, wrap
from ._nn_common import torch_dtype_name
from .activation import softmax
from .._table import OpTable

ATTENTION = OpTable("nn.attention")


def _t(x: Any) -> Any:
    """The last two dims swapped (an ndarray view, or a differentiable Tensor op)."""
    return np.swapaxes(x, -1, -2)


def _repeat_heads(x: Any, rep: int) -> Any:
    """Each head (dim -3) repeated ``rep`` times in place, as torch's repeat_interleave (ndarray only)."""
    return x if rep == 1 else np.repeat(x, rep, axis=-3)


def _sum_heads(g: Any, rep: int) -> Any:
    """The adjoint of ``_repeat_heads``: the gradients of each group of ``rep`` heads added."""
    if rep == 1:
        return g
    shape = g.shape
    return np.sum(g.reshape(shape[:-3] + (shape[-3] // rep, rep) + shape[-2:]), axis=-3)


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    """Softmax over the last dim, in place; a row of -inf gives zeros (torch's safe softmax)."""
    m = s.max(axis=-1, keepdims=True)
    dead = ~np.isfinite(m)
    if dead.any():
        m[dead] = 0.0
    s -= m
    np.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    if dead.any():
        np.divide(s, total, out=s, where=total > 0)
    else:
        s /= total
    return s


class ScaledDotProductFlashAttentionForCpuBackward0(Node):
    """NOTE [Attention gradient]."""

    __slots__ = ("q", "k", "v", "mask", "p", "keep", "scale", "rep", "shapes", "mask_shape")
    q: Saved
    k: Saved
    v: Saved
    mask: Any  #: a float mask: Saved if it requires grad, else an ndarray; a bool mask as an additive array
    p: SavedArray  #: softmax(s), before dropout
    keep: np.ndarray | None  #: the dropout mask, already scaled by 1 / (1 - p)
    scale: float
    rep: int  #: query heads per key/value head (enable_gqa)
    shapes: tuple[Shape, Shape, Shape]
    mask_shape: Shape

    def __init__(
        self,
        q: Saved,
        k: Saved,
        v: Saved,
        mask: Any,
        p: SavedArray,
        keep: np.ndarray | None,
        scale: float,
        rep: int,
        shapes: tuple[Shape, Shape, Shape],
        mask_shape: Shape,
    ) -> None:
        self._init_node()
        self.q = q
        self.k = k
        self.v = v
        self.mask = mask
        self.p = p
        self.keep = keep
        self.scale = scale
        self.rep = rep
        self.shapes = shapes
        self.mask_shape = mask_shape

    def release_variables(self) -> None:
        self.q = None
        self.k = None
        self.v = None
        self.p = None

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        graph = g.__class__ is Tensor
        q = unpack(self, self.q, graph)
        k = _repeat_tensor(unpack(self, self.k, graph), self.rep)
        v = _repeat_tensor(unpack(self, self.v, graph), self.rep)
        mask = self.mask
        if isinstance(mask, SavedTensor):
            mask = unpack(self, mask, graph)
        if graph:  # recompute p differentiably
            s = (q @ _t(k)) * self.scale
            if mask is not None:
                s = s + mask
            p: Any = softmax(s, -1)
        else:
            if self.p is None:
                unpack(self, None, False)
            p = self.p
        pd = p * self.keep if self.keep is not None else p
        gq = gk = gv = gm = None
        if self.should_compute_output(2):
            gv = sum_to(_sum_heads(_t(pd) @ g, self.rep), self.shapes[2])
        if self.should_compute_output(0) or self.should_compute_output(1) or (self.should_compute_output(3)):
            gp = g @ _t(v)
            if self.keep is not None:
                gp = gp * self.keep
            if graph:
                gs = p * (gp - np.sum(gp * p, axis=-1, keepdims=True))
            else:  # the same, on gp in place: one (..., L, S) temporary instead of three
                gp -= np.sum(gp * p, axis=-1, keepdims=True)
                gs = np.multiply(gp, p, out=gp)
            if self.should_compute_output(3):
                gm = sum_to(gs, self.mask_shape)
            # the scale on the (..., L, E) products, not on the larger (..., L, S) gs
            if self.should_compute_output(0):
                gq = sum_to((gs @ k) * self.scale, self.shapes[0])
            if self.should_compute_output(1):
                gk = sum_to(_sum_heads((_t(gs) @ q) * self.scale, self.rep), self.shapes[1])
        return (gq, gk, gv, gm) if self.n_edges > 3 else (gq, gk, gv)


def _repeat_tensor(x: Any, rep: int) -> Any:
    if rep == 1:
        return x
    if x.__class__ is Tensor:
        shape = x.shape
        expanded = x.unsqueeze(-3).expand(*shape[:-2], rep, *shape[-2:])
        return expanded.reshape(*shape[:-3], shape[-3] * rep, *shape[-2:])
    return _repeat_heads(x, rep)


@ATTENTION.op(nodes=(ScaledDotProductFlashAttentionForCpuBackward0,), method=False, export=False)
def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
    is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False,
) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` over (..., L, E) queries, (..., S, E) keys and (..., S, Ev) values.

    ``attn_mask``: bool (True attends) or float (added), broadcast to (..., L, S); ``is_causal``: the
    lower-triangular mask; ``dropout_p``: dropout on the attention weights (aiograd's generator);
    ``scale``: default ``1 / sqrt(E)``; ``enable_gqa``: fewer key/value heads than query heads (dim -3).
    """
    qd, kd, vd = query._data, key._data, value._data
    if not (qd.dtype == kd.dtype == vd.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{torch_dtype_name(qd.dtype).lower()} key.dtype: {torch_dtype_name(kd.dtype).lower()} and value.dtype: "
            f"{torch_dtype_name(vd.dtype).lower()} instead."
        )
    if min(qd.ndim, kd.ndim, vd.ndim) < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at least 2 dimensions")
    if qd.dtype.kind != "f":
        raise NotImplementedError(f"\"scaled_dot_product_attention\" not implemented for '{torch_dtype_name(qd.dtype)}'")
    if kd.shape[-1] != qd.shape[-1] or kd.shape[-2] != vd.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: expected query (..., L, E), key (..., S, E) and value (..., S, Ev), but "
            f"got query {list(qd.shape)}, key {list(kd.shape)} and value {list(vd.shape)}"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    rep = 1
    if enable_gqa and qd.ndim >= 3 and kd.ndim >= 3 and qd.shape[-3] != kd.shape[-3]:
        if qd.shape[-3] % kd.shape[-3] or kd.shape[-3] != vd.shape[-3]:
            raise RuntimeError(
                "Number of heads in key and value must divide the number of heads in query, and key and value must "
                f"have the same number of heads, but got query {list(qd.shape)}, key {list(kd.shape)}, value "
                f"{list(vd.shape)}"
            )
        rep = qd.shape[-3] // kd.shape[-3]
    L, S, E = qd.shape[-2], kd.shape[-2], qd.shape[-1]
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    k_r, v_r = _repeat_heads(kd, rep), _repeat_heads(vd, rep)
    if E <= S:  # scale the smaller of q (..., L, E) and the scores (..., L, S)
        s = np.matmul(qd * qd.dtype.type(sc), np.swapaxes(k_r, -1, -2))
    else:
        s = np.matmul(qd, np.swapaxes(k_r, -1, -2))
        s *= qd.dtype.type(sc)
    mask_saved: Any = None
    mask_shape: Shape = ()
    md: np.ndarray | None = None
    if is_causal:
        md = np.tril(np.ones((L, S), dtype=bool))
    elif attn_mask is not None:
        md = attn_mask._data
        if md.dtype != np.bool_ and md.dtype != qd.dtype:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
                f"{torch_dtype_name(md.dtype).lower()} and  query.dtype: {torch_dtype_name(qd.dtype).lower()} instead."
            )
        broadcast_shapes(s.shape, md.shape)
        mask_shape = md.shape
    if md is not None:
        if md.dtype == np.bool_:
            if s.shape != np.broadcast_shapes(s.shape, md.shape):
                s = np.broadcast_to(s, np.broadcast_shapes(s.shape, md.shape)).copy()
            np.copyto(s, -np.inf, where=~md)
            mask_saved = np.where(md, 0.0, -np.inf).astype(qd.dtype)
        else:
            s = s + md
            mask_saved = save(attn_mask) if attn_mask is not None and attn_mask._requires_grad else md
    p = _softmax_rows(s)
    keep = None
    if dropout_p > 0.0:
        if dropout_p >= 1.0:
            keep = np.zeros(p.shape, dtype=qd.dtype)
        else:
            keep = (default_stream().random(p.shape) >= dropout_p).astype(qd.dtype)
            keep *= qd.dtype.type(1.0 / (1.0 - dropout_p))
        out_arr = np.matmul(p * keep, v_r)
    else:
        out_arr = np.matmul(p, v_r)
    out = wrap(out_arr, query._device)
    mask_t = attn_mask if (attn_mask is not None and attn_mask._requires_grad and md is not None
                           and md.dtype != np.bool_) else None
    inputs = (query, key, value) if mask_t is None else (query, key, value, mask_t)
    if needs_grad(*inputs):
        node = ScaledDotProductFlashAttentionForCpuBackward0(
            save(query), save(key), save(value), mask_saved, p, keep, sc, rep, (qd.shape, kd.shape, vd.shape),
            mask_shape,
        )
        record(node, inputs, (out,))
        node.work = 2 * s.size * (E + vd.shape[-1])
    return out


__all__ = ATTENTION.exports(__name__)
