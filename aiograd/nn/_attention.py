"""Attention in aiograd.nn.functional: scaled_dot_product_attention (a fused op,
aiograd.ops.attention) and multi_head_attention_forward, composed as torch's.

NOTE [Attention masks]: two conventions meet here, as in torch. For
``scaled_dot_product_attention`` a bool mask says where to attend (True: attend).
For ``multi_head_attention_forward`` (and nn.MultiheadAttention, nn.Transformer*)
a bool ``attn_mask`` or ``key_padding_mask`` says what to hide (True: masked
out); both are turned into float masks (``-inf`` where hidden) and added.
"""

from __future__ import annotations

import math
import numpy as np

from ..ops.nn import activation as _act
from ..ops.nn import attention as _attention
from ..ops.nn import layers as _nn
from ..ops._common import checked as _checked
from ..ops.nn.pad import pad as _pad
from ..ops.movement.join import cat
from ..tensor import Tensor, zeros

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

scaled_dot_product_attention = _checked(_attention.scaled_dot_product_attention)


_linear = _nn.linear_nd


def canonical_mask(mask: Tensor | None, name: str, dtype: np.dtype) -> Tensor | None:
    """A bool mask (True: hidden) as a float mask with -inf where hidden (NOTE [Attention masks])."""
    if mask is None:
        return None
    md = mask._data
    if md.dtype == np.bool_:
        return Tensor._wrap(np.where(md, -np.inf, 0.0).astype(dtype), mask.device)
    if md.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                 attn_mask: Tensor | None, num_heads: int) -> bool:
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.ndim}-D and {value.ndim}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found "
                f"{key_padding_mask.ndim}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.ndim}-D tensor instead"
            )
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.ndim}-D and {value.ndim}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found "
                f"{key_padding_mask.ndim}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                    f"{attn_mask.ndim}-D tensor instead"
                )
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != (num_heads, query.shape[0], key.shape[0]):
                raise AssertionError(
                    f"Expected `attn_mask` shape to be {(num_heads, query.shape[0], key.shape[0])} but got "
                    f"{tuple(attn_mask.shape)}"
                )
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query tensor")


def _pad_last(mask: Tensor) -> Tensor:
    """A zero column appended to a float mask (the bias_k / zero-attention key is never hidden)."""
    return _pad(mask, (0, 1))


@_checked
def multi_head_attention_forward(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None,
    add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
    training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
    attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
    static_v: Tensor | None = None, average_attn_weights: bool = True, is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention on (L, N, E) query and (S, N, E) key/value (or unbatched (L, E)), as torch's:
    the in-projection (packed ``in_proj_weight`` or separate ``q/k/v_proj_weight``), ``bias_k``/``bias_v``,
    ``add_zero_attn``, masks (NOTE [Attention masks]), attention, the out-projection. Returns the output and,
    with ``need_weights``, the attention weights (averaged over heads if ``average_attn_weights``)."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    dtype = query.dtype
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal flag of scaled_dot_product_attention stands for the mask
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    E = embed_dim
    if not use_separate_proj_weight:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        # one product for the packed projections, split by one node (its backward one concatenation)
        if query is key and key is value:
            q, k, v = _linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w = in_proj_weight
            b = in_proj_bias
            q = _linear(query, w[:E], b[:E] if b is not None else None)
            if key is value:
                k, v = _linear(key, w[E:], b[E:] if b is not None else None).chunk(2, -1)
            else:
                k = _linear(key, w[E: 2 * E], b[E: 2 * E] if b is not None else None)
                v = _linear(value, w[2 * E:], b[2 * E:] if b is not None else None)
    else:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's {tuple(value.shape[:2])}"
            )
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            missing = "q" if q_proj_weight is None else "k" if k_proj_weight is None else "v"
            raise AssertionError(f"use_separate_proj_weight is True but {missing}_proj_weight is None")
        b = in_proj_bias
        q = _linear(query, q_proj_weight, b[:E] if b is not None else None)
        k = _linear(key, k_proj_weight, b[E: 2 * E] if b is not None else None)
        v = _linear(value, v_proj_weight, b[2 * E:] if b is not None else None)
    src_len = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is torch.Size({list(attn_mask.shape)}), but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 3D attn_mask is torch.Size({list(attn_mask.shape)}), but should be "
                f"{(bsz * num_heads, tgt_len, src_len)}."
            )
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"bias cannot be added to static {'key' if static_k is not None else 'value'}.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None else "bias_v is set but bias_k is None")
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        z = zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k, v = cat([k, z], 1), cat([v, z], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}"
                if key_padding_mask.shape[0] != bsz else
                f"Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}"
            )
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        weights = q_scaled @ k.transpose(-2, -1)
        if attn_mask is not None:
            weights = weights + attn_mask
        weights = _act.softmax(weights, -1)
        if dropout_p > 0.0:
            weights = _nn.dropout(weights, dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = _attention.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
    return out, None

