"""aiograd.nn.functional: the functional neural-network API, as torch.nn.functional.

The fused primitives (softmax, log_softmax, nll_loss, conv2d, max_pool2d,
embedding, layer_norm, dropout) live in ``aiograd.ops.nn`` with their
derivative rules; the losses built on them (cross_entropy with label
smoothing and probability targets, mse_loss, l1_loss) are composed here
exactly as torch defines them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..ops import elementwise as _ew
from ..ops._common import checked as _checked
from ..ops import nn as _nn
from ..ops.linalg import matmul
from ..tensor import Tensor

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "gelu", "softplus", "softmax", "log_softmax",
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "dropout", "conv2d", "max_pool2d",
    "embedding", "layer_norm",
]

# The public functions check their Tensor arguments (NOTE [Operands] in ops/_common.py): the
# ops' public forms do, and each function defined here is decorated with ``_checked``.
relu = _ew.relu
tanh = _ew.tanh
sigmoid = _ew.sigmoid
conv2d = _nn.conv2d
max_pool2d = _nn.max_pool2d
layer_norm = _nn.layer_norm


@_checked
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit (``approximate='tanh'`` for the tanh form); from aiograd.ops.elementwise."""
    fn = getattr(_ew, "gelu", None)
    if fn is None:  # pragma: no cover - the elementwise family provides it
        raise NotImplementedError("gelu is not available in this build of aiograd.ops.elementwise")
    return fn(input, approximate=approximate)


@_checked
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``); from aiograd.ops.elementwise."""
    fn = getattr(_ew, "softplus", None)
    if fn is None:  # pragma: no cover - the elementwise family provides it
        raise NotImplementedError("softplus is not available in this build of aiograd.ops.elementwise")
    return fn(input, beta=beta, threshold=threshold)


@_checked
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``."""
    out = matmul(input, weight.T if weight.ndim == 2 else weight)
    if bias is not None:
        out = out + bias
    return out


def _get_softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


@_checked
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Softmax along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim)
    return _nn.softmax(input, dim, dtype=dtype)


@_checked
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Log of softmax along ``dim``, computed stably."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim)
    return _nn.log_softmax(input, dim, dtype=dtype)


@_checked
def nll_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
    ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood loss on log-probabilities, class-index targets."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _nn.nll_loss(input, target, weight, ignore_index, reduction)


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _class_weight_view(weight: Tensor, ndim: int) -> Tensor:
    if ndim > 1:
        shape = [1] * ndim
        shape[1] = weight.shape[0]
        return weight.reshape(shape)  # type: ignore[attr-defined]
    return weight


@_checked
def cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
    ignore_index: int = -100, reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits ``input`` (C,), (N, C) or (N, C, d1, ...) and ``target``:
    class indices, or class probabilities of the input's shape. As torch, including
    ``weight``, ``ignore_index`` (indices only) and ``label_smoothing``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _nn._check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least one dimension (the classes)")
    n_classes = input.shape[class_dim]
    tshape = target.shape if isinstance(target, Tensor) else np.shape(target)
    if tuple(tshape) == tuple(input.shape):
        return _cross_entropy_prob_target(input, target, weight, reduction, label_smoothing, class_dim, n_classes)
    logp = _nn.log_softmax(input, class_dim)
    nll = _nn.nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0.0:
        return nll
    td = target._data if isinstance(target, Tensor) else np.asarray(target)
    ignore = td == ignore_index
    if weight is not None:
        smooth = -(logp * _class_weight_view(weight, input.ndim)).sum(class_dim)  # type: ignore[attr-defined]
    else:
        smooth = -logp.sum(class_dim)  # type: ignore[attr-defined]
    if ignore.any():
        # a fill, not a product: an ignored row gets no gradient even when the mean divides by 0 (as torch)
        smooth = _ew.where(ignore, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            wd = weight._data
            denom = wd[td[~ignore]].sum()
        else:
            denom = (~ignore).sum()
        with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored: nan, as torch
            ret = smooth.sum() / float(denom)
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / n_classes)


def _cross_entropy_prob_target(
    input: Tensor, target: Any, weight: Tensor | None, reduction: str, label_smoothing: float, class_dim: int,
    n_classes: int,
) -> Tensor:
    if not isinstance(target, Tensor):
        target = Tensor._wrap(np.asarray(target), input.device)
    if target.dtype.kind != "f":
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{_nn._torch_dtype_name(target.dtype)}"
        )
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}"
        )
    logp = _nn.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight_view(weight, input.ndim)
    if reduction == "mean":
        if input.numel() == 0:
            return -(prod.sum() * float("nan"))  # type: ignore[attr-defined]
        return -prod.sum() / (input.numel() // n_classes)  # type: ignore[attr-defined]
    if reduction == "sum":
        return -prod.sum()  # type: ignore[attr-defined]
    return -prod.sum(class_dim)  # type: ignore[attr-defined]


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _nn._check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()  # type: ignore[attr-defined]
    if reduction == "sum":
        return loss.sum()  # type: ignore[attr-defined]
    return loss


def _warn_size(input: Tensor, target: Any) -> None:
    tshape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if tshape != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({tshape}) that is different to the input size ({tuple(input.shape)}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


@_checked
def mse_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """Mean squared error (``reduction`` none/mean/sum)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    diff = input - target  # type: ignore[operator]
    return _reduce(diff * diff, reduction)


@_checked
def l1_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """Mean absolute error (``reduction`` none/mean/sum)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    return _reduce((input - target).abs(), reduction)  # type: ignore[attr-defined,operator]


@_checked
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` while training."""
    if inplace:
        raise NotImplementedError("dropout(inplace=True) is not supported; use inplace=False")
    return _nn.dropout(input, p, training)


@_checked
def embedding(
    input: Any, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
    norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by integer ``input`` (gradients add over repeated indices)."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    return _nn.embedding(input, weight, padding_idx)
