"""aiograd.nn.functional: the functional neural-network API, as torch.nn.functional.

The differentiable primitives live in aiograd/ops/nn/ with their derivative rules
(every activation in activation.py, every loss op in loss.py; layers, conv, pool,
resample, pad, normalization, attention); this module gives them torch's signatures (``inplace=``, the legacy loss
keywords, unbatched inputs) and composes what torch composes (softmin, softsign,
tanhshrink, l1_loss, kl_div, cosine_similarity, pairwise_distance, normalize,
instance_norm, rms_norm, multi_head_attention_forward), so each result's node
is the one torch records. Losses: _losses.py; attention: _attention.py; distances: _distance.py.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .._warn import user_stacklevel
from ..autograd.grad_mode import no_grad
from ..ops._common import checked as _checked
from ..ops.inplace import _inplace
from ..ops.linalg import matmul
from ..ops.movement.shape import int_tuple
from ..ops.nn import activation as _act
from ..ops.nn import conv as _conv
from ..ops.nn import layers as _nn
from ..ops.nn import normalization as _norm
from ..ops.nn import pool as _pool
from ..ops.nn import resample as _resample
from ..ops.nn.pad import pad as _pad_op
from ..ops.pointwise import elementwise as _ew
from .._generator import default_stream
from ..tensor import Tensor
from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._distance import cosine_similarity, pairwise_distance
from ._losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
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
    "cosine_similarity", "pairwise_distance", "pdist", "nll_loss", "cross_entropy", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "scaled_dot_product_attention", "multi_head_attention_forward",
    # reshuffling, deprecated resampling names, bilinear, channel dropout
    "pixel_shuffle", "pixel_unshuffle", "upsample", "upsample_nearest", "upsample_bilinear", "adaptive_avg_pool3d",
    "bilinear", "dropout1d", "dropout2d", "dropout3d",
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
pad = _checked(_pad_op)
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
    return _act.gelu(input, approximate=approximate)


@_checked
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``)."""
    return _act.softplus(input, beta=beta, threshold=threshold)


@_checked
def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


@_checked
def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - input.tanh()


@_checked
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: an N-d input is viewed as 2-D around one fused product, as torch
    composes it (its nodes: ViewBackward0 over AddmmBackward0; NOTE [Linear layout] in ops/nn/layers.py)."""
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
    return _act.softmax(input, dim, dtype=dtype)


@_checked
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Softmax of ``-input`` along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim)
    return _act.softmax(-input, dim, dtype=dtype)


@_checked
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Log of softmax along ``dim``, computed stably."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim)
    return _act.log_softmax(input, dim, dtype=dtype)


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
    view = input.reshape(1, b * c, *shape[2:])

    def tiled(t: Tensor | None) -> Tensor | None:
        if t is None:
            return None
        return t.repeat(b) if t.requires_grad else Tensor._wrap(np.tile(t._data, b), t.device)

    rm, rv = tiled(running_mean), tiled(running_var)
    out = _norm.batch_norm(view, rm, rv, tiled(weight), tiled(bias), use_input_stats, momentum, eps)
    with no_grad():
        for stat, rep in ((running_mean, rm), (running_var, rv)):
            if stat is not None and rep is not None and use_input_stats:
                np.copyto(stat._data, rep._data.reshape(b, c).mean(axis=0), casting="unsafe")
                stat._bump_version()
    return out.reshape(shape)


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
    rms = ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    out = input * rms
    return out * weight if weight is not None else out


@_checked
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is not None:
        raise NotImplementedError("normalize(out=...) is not supported; use the returned tensor")
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    return input / denom


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
        weight._bump_version()


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


# ----- reshuffling, deprecated resampling names, bilinear, pdist, channel dropout ----------------


def _at_least_3d(name: str, input: Tensor) -> None:
    if input.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )


@_checked
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    _at_least_3d("pixel_shuffle", input)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


@_checked
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    _at_least_3d("pixel_unshuffle", input)
    *lead, c, h, w = input.shape
    for side, dim, size in (("height", -2, h), ("width", -1, w)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {side} to be divisible by downscale_factor, but input.size({dim})={size} is "
                f"not divisible by {r}"
            )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())


@_checked
def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated: ``interpolate``."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


@_checked
def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


@_checked
def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


adaptive_avg_pool3d = _checked(_resample.adaptive_avg_pool3d)


@_checked
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]`` with weight (out, in1, in2)."""
    o, i1, i2 = weight.shape
    lead = input1.shape[:-1]
    if input1.ndim != input2.ndim:
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}"
        )
    for d, (a, b) in enumerate(zip(lead, input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {a} and {b}")
    for name, got, want in (("input1", input1.shape[-1], i1), ("input2", input2.shape[-1], i2)):
        if got != want:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {got} but expected {want}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[-1] if bias.ndim else 1} but "
            f"expected {o}"
        )
    x1 = input1.reshape(-1, i1)
    x2 = input2.reshape(-1, i2)
    t = (x1 @ weight.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, o)


@_checked
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between each pair of rows of (N, M) ``input``, i < j (N*(N-1)/2 values)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    i, j = np.triu_indices(input.shape[0], 1)
    return (input[i] - input[j]).norm(p, 1)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """Zero whole channels with probability ``p``, scaling the rest by 1/(1-p): the channel is dim 1 of a
    batched input, dim 0 of an unbatched one."""
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    shape = input.shape[:lead] + (1,) * (input.ndim - lead)
    keep = (default_stream().random(shape) >= p).astype(input.dtype) / (1.0 - p) if p < 1.0 else \
        np.zeros(shape, dtype=input.dtype)
    return _maybe_inplace(input, inplace, lambda x: x * Tensor._wrap(keep, x.device))


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _warn_channel_ndim(name: str, ndim: int, spatial: int) -> None:
    """torch's deprecation warning for a channel dropout given other than (N, C, *spatial) or (C, *spatial)."""
    if ndim not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a "
            f"future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            f"that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a "
            f"channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            UserWarning, stacklevel=user_stacklevel(),
        )


@_checked
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, L) or (C, L) input."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


@_checked
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, H, W) input. As torch, any input is read as batched (dims 0 and 1: a
    3-D input is (N, C, L), with torch's warning) and other ranks than 3 or 4 warn."""
    _check_p(p)
    _warn_channel_ndim("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=user_stacklevel(),
        )
    return _feature_dropout(input, p, training, inplace, batched=True)


@_checked
def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) input (other ranks warn, read as unbatched)."""
    _check_p(p)
    _warn_channel_ndim("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)
