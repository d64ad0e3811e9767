"""aiograd.nn.functional: the functional neural-network API, as torch.nn.functional.

The differentiable primitives live in aiograd.ops with their derivative rules
(activation, conv, pool, resample, pad, normalization, loss, attention, nn);
this module gives them torch's signatures (``inplace=``, the legacy loss
keywords, unbatched inputs) and composes what torch composes (softmin, softsign,
tanhshrink, l1_loss, kl_div, cosine_similarity, pairwise_distance, normalize,
instance_norm, rms_norm, multi_head_attention_forward), so each result's node
is the one torch records. Losses: _losses.py; attention: _attention.py.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops import activation as _act
from ..ops import conv as _conv
from ..ops import elementwise as _ew
from ..ops import nn as _nn
from ..ops import normalization as _norm
from ..ops import pad as _pad
from ..ops import pool as _pool
from ..ops import resample as _resample
from ..ops._common import checked as _checked
from ..ops.inplace import _inplace
from ..ops.linalg import matmul
from ..ops.shape import int_tuple
from ..tensor import Tensor
from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._util import user_stacklevel
from ._losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)

__all__ = [
    # activations
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_", "prelu",
    "glu", "gelu", "logsigmoid", "hardshrink", "tanhshrink", "softsign", "softplus", "softmin", "softmax",
    "softshrink", "log_softmax", "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "hardswish", "hardtanh",
    "hardtanh_", "threshold", "threshold_",
    # linear, convolution, pooling, resampling
    "linear", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold",
    "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "pad", "interpolate",
    # normalization, dropout, embedding
    "batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm", "normalize", "dropout", "embedding",
    "one_hot",
    # distances, losses, attention
    "cosine_similarity", "pairwise_distance", "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "scaled_dot_product_attention", "multi_head_attention_forward",
]

# The public functions check their Tensor arguments (NOTE [Operands] in ops/_common.py): the
# ops' public forms do, and each function defined here is decorated with ``_checked``.
tanh = _ew.tanh
sigmoid = _ew.sigmoid
conv1d = _conv.conv1d
conv2d = _conv.conv2d
conv_transpose1d = _conv.conv_transpose1d
conv_transpose2d = _conv.conv_transpose2d
unfold = _checked(_conv.unfold)
fold = _checked(_conv.fold)
avg_pool1d = _pool.avg_pool1d
avg_pool2d = _checked(_pool.avg_pool2d)
max_pool1d = _pool.max_pool1d
max_pool2d = _pool.max_pool2d
adaptive_avg_pool1d = _resample.adaptive_avg_pool1d
adaptive_avg_pool2d = _checked(_resample.adaptive_avg_pool2d)
adaptive_max_pool1d = _pool.adaptive_max_pool1d
adaptive_max_pool2d = _checked(_pool.adaptive_max_pool2d)
pad = _checked(_pad.pad)
interpolate = _checked(_resample.interpolate)
batch_norm = _checked(_norm.batch_norm)
group_norm = _norm.group_norm
layer_norm = _norm.layer_norm
one_hot = _checked(_nn.one_hot)
hardshrink = _act.hardshrink
prelu = _act.prelu
softshrink = _checked(_act.softshrink)
logsigmoid = _checked(_act.logsigmoid)
glu = _checked(_act.glu)


# ----- activations -------------------------------------------------------------------------------


def _maybe_inplace(input: Tensor, inplace: bool, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(input)``, or written into ``input`` (NOTE [In-place ops] in ops/inplace.py) when ``inplace``."""
    if not inplace:
        return fn(input)

    def nograd(d: np.ndarray) -> None:
        np.copyto(d, fn(Tensor._wrap(d))._data, casting="same_kind")

    return _inplace(input, (), fn, nograd, saves_self=True)


@_checked
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``."""
    return _maybe_inplace(input, inplace, _ew.relu)


@_checked
def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return relu(input, inplace=True)


@_checked
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)`` (torch's node: HardtanhBackward0)."""
    return _maybe_inplace(input, inplace, lambda x: _act.hardtanh(x, 0.0, 6.0))


@_checked
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _maybe_inplace(input, inplace, lambda x: _act.elu(x, alpha))


@_checked
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place."""
    return elu(input, alpha, inplace=True)


@_checked
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _maybe_inplace(input, inplace, _act.selu)


@_checked
def selu_(input: Tensor) -> Tensor:
    """``selu`` in place."""
    return selu(input, inplace=True)


@_checked
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _maybe_inplace(input, inplace, lambda x: _act.celu(x, alpha))


@_checked
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place."""
    return celu(input, alpha, inplace=True)


@_checked
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, else ``negative_slope * x``."""
    return _maybe_inplace(input, inplace, lambda x: _act.leaky_relu(x, negative_slope))


@_checked
def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place."""
    return leaky_relu(input, negative_slope, inplace=True)


@_checked
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``."""
    return _maybe_inplace(input, inplace, lambda x: _act.hardtanh(x, min_val, max_val))


@_checked
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place."""
    return hardtanh(input, min_val, max_val, inplace=True)


@_checked
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    return _maybe_inplace(input, inplace, lambda x: _act.threshold(x, threshold, value))


@_checked
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place."""
    return _maybe_inplace(input, True, lambda x: _act.threshold(x, threshold, value))


@_checked
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``."""
    return _maybe_inplace(input, inplace, _act.hardsigmoid)


@_checked
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return _maybe_inplace(input, inplace, _act.hardswish)


@_checked
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _maybe_inplace(input, inplace, _act.silu)


@_checked
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _maybe_inplace(input, inplace, _act.mish)


@_checked
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit (``approximate='tanh'`` for the tanh form)."""
    return _ew.gelu(input, approximate=approximate)


@_checked
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``)."""
    return _ew.softplus(input, beta=beta, threshold=threshold)


@_checked
def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)  # type: ignore[attr-defined,no-any-return]


@_checked
def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - input.tanh()  # type: ignore[attr-defined,no-any-return]


@_checked
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: an N-d input is viewed as 2-D around one fused product, as torch
    composes it (its nodes: ViewBackward0 over AddmmBackward0; NOTE [Linear layout] in ops/nn.py)."""
    if weight.ndim != 2 or input.ndim == 0:
        out = matmul(input, weight.T if weight.ndim == 2 else weight)
        return out + bias if bias is not None else out
    return _nn.linear_nd(input, weight, bias)


def _get_softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return 0 if ndim in (0, 1, 3) else 1


@_checked
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Softmax along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim)
    return _nn.softmax(input, dim, dtype=dtype)


@_checked
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Softmax of ``-input`` along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim)
    return _nn.softmax(-input, dim, dtype=dtype)  # type: ignore[operator]


@_checked
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Log of softmax along ``dim``, computed stably."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim)
    return _nn.log_softmax(input, dim, dtype=dtype)


@_checked
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` while training."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    return _maybe_inplace(input, inplace, lambda x: _nn.dropout(x, p, training))


# ----- pooling with indices ----------------------------------------------------------------------


@_checked
def max_pool1d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = True,
) -> Any:
    """``max_pool1d`` returning (values, indices)."""
    return _pool.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@_checked
def max_pool2d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = True,
) -> Any:
    """``max_pool2d`` returning (values, indices)."""
    return _pool.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@_checked
def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    """``adaptive_max_pool1d`` returning (values, indices)."""
    return _pool.adaptive_max_pool1d(input, output_size, True)


@_checked
def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    """``adaptive_max_pool2d`` returning (values, indices)."""
    return _pool.adaptive_max_pool2d(input, output_size, True)


# ----- normalization ------------------------------------------------------------------------------


@_checked
def instance_norm(
    input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
    weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample of (N, C, ...) input, as torch: batch_norm on the
    (1, N*C, ...) view, the running statistics (if any) the mean over the batch."""
    shape = input.shape
    if use_input_stats:
        spatial = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        if len(shape) < 3 or spatial <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"torch.Size({list(shape)})")
    b, c = shape[0], shape[1]
    view = input.reshape(1, b * c, *shape[2:])  # type: ignore[attr-defined]

    def tiled(t: Tensor | None) -> Tensor | None:
        if t is None:
            return None
        return t.repeat(b) if t.requires_grad else Tensor._wrap(np.tile(t._data, b), t.device)  # type: ignore[attr-defined]

    rm, rv = tiled(running_mean), tiled(running_var)
    out = _norm.batch_norm(view, rm, rv, tiled(weight), tiled(bias), use_input_stats, momentum, eps)
    with no_grad():
        for stat, rep in ((running_mean, rm), (running_var, rv)):
            if stat is not None and rep is not None and use_input_stats:
                np.copyto(stat._data, rep._data.reshape(b, c).mean(axis=0), casting="unsafe")
                stat._version_counter.value += 1
    return out.reshape(shape)  # type: ignore[attr-defined,no-any-return]


@_checked
def rms_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None,
) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``eps`` None: the dtype's machine epsilon), composed as torch's."""
    ns = int_tuple((normalized_shape,), "rms_norm", "normalized_shape")
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != ns:
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*{', '.join(map(str, ns))}], but got "
            f"input of size{list(input.shape)}"
        )
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(
            f"Expected weight to be of same shape as normalized_shape, but got weight of shape {list(weight.shape)} "
            f"and normalized_shape = {list(ns)}"
        )
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    dims = tuple(range(-k, 0))
    rms = ((input * input).mean(dims, keepdim=True) + eps).rsqrt()  # type: ignore[attr-defined,operator]
    out = input * rms
    return out * weight if weight is not None else out  # type: ignore[no-any-return]


@_checked
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is not None:
        raise NotImplementedError("normalize(out=...) is not supported; use the returned tensor")
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)  # type: ignore[attr-defined]
    return input / denom  # type: ignore[no-any-return]


# ----- embedding ---------------------------------------------------------------------------------


def _renorm_rows(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: rows used by ``idx`` whose norm exceeds ``max_norm`` are scaled to it, in place."""
    rows = np.unique(idx)
    if rows.size == 0:
        return
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        r = rows[big]
        w[r] = (w[r] * (max_norm / (norms[big] + 1e-7))[:, None]).astype(w.dtype)
        weight._version_counter.value += 1


@_checked
def embedding(
    input: Any, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
    norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by integer ``input`` (gradients add over repeated indices).
    ``max_norm`` renormalizes the rows used, in place (as torch); ``sparse`` gradients are not supported."""
    if sparse:
        raise NotImplementedError("embedding(sparse=True): aiograd has no sparse gradients; use sparse=False")
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0 and padding_idx >= n or padding_idx < 0 and padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if max_norm is not None:
        idx = input._data if isinstance(input, Tensor) else np.asarray(input)
        with no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    return _nn.embedding(input, weight, padding_idx, scale_grad_by_freq)


# ----- distances -----------------------------------------------------------------------------------


@_checked
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (the operands broadcast), as torch:
    the clamp holds the values, not the gradient."""
    n1 = x1.norm(2, dim, keepdim=True)  # type: ignore[attr-defined]
    n2 = x2.norm(2, dim, keepdim=True)  # type: ignore[attr-defined]
    n1 = n1 + Tensor._wrap(np.maximum(n1._data, eps) - n1._data, n1.device)
    n2 = n2 + Tensor._wrap(np.maximum(n2._data, eps) - n2._data, n2.device)
    return ((x1 / n1) * (x2 / n2)).sum(dim)  # type: ignore[no-any-return]


@_checked
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    diff = x1 - x2 + eps  # type: ignore[operator]
    dim = max(x1.ndim, x2.ndim) - 1
    return diff.norm(p, dim if dim >= 0 else None, keepdim=keepdim)  # type: ignore[no-any-return]
