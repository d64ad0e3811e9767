"""The loss functions of aiograd.nn.functional, with torch's signatures.

The pointwise losses and nll_loss are fused ops (aiograd/ops/nn/loss.py, NOTE [Pointwise losses]);
cross_entropy is log_softmax + nll_loss (both fused); torch composes l1_loss,
kl_div and the weighted variants of mse/l1/huber from other ops, and so do we
(the result's node names are torch's). The legacy ``size_average``/``reduce``
keywords map to ``reduction`` with torch's deprecation warning.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._warn import user_stacklevel
from ..ops._common import checked as _checked
from ..ops.nn import activation as _act
from ..ops.nn import loss as _loss
from ..ops.nn._nn_common import check_reduction, reduce_loss, torch_dtype_name
from ..ops.nn.activation import logsigmoid
from ..ops.pointwise import elementwise as _ew
from ..tensor import Tensor
from ._distance import pairwise_distance

__all__ = [
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss",
]


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """``reduction`` from torch's deprecated ``size_average``/``reduce`` keywords, with torch's warning
    (they win over ``reduction`` when either is given)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return ret


def _warn_size(input: Tensor, target: Any) -> None:
    tshape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if tshape != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({_size(tshape)}) that is different to the input size ({_size(input.shape)}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _size(shape: Any) -> str:
    return f"torch.Size({list(shape)})"


def _check_weight(input: Tensor, weight: Tensor | None) -> None:
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _weighted(loss: Tensor, weight: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    """torch's weighted losses: ``loss * weight``, reduced (``'mean'``: over the weight's sum, or the count)."""
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        if mean_by_weight:
            return weighted.sum() / weight.sum()
        return weighted.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


@_checked
def nll_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
    ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood loss on log-probabilities, class-index targets."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


def _class_weight_view(weight: Tensor, ndim: int) -> Tensor:
    if ndim > 1:
        shape = [1] * ndim
        shape[1] = weight.shape[0]
        return weight.reshape(shape)
    return weight


@_checked
def cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
    ignore_index: int = -100, reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits ``input`` (C,), (N, C) or (N, C, d1, ...) and ``target``:
    class indices, or class probabilities of the input's shape. As torch, including
    ``weight``, ``ignore_index`` (indices only) and ``label_smoothing``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least one dimension (the classes)")
    n_classes = input.shape[class_dim]
    tshape = target.shape if isinstance(target, Tensor) else np.shape(target)
    if tuple(tshape) == tuple(input.shape):
        return _cross_entropy_prob_target(input, target, weight, reduction, label_smoothing, class_dim, n_classes)
    logp = _act.log_softmax(input, class_dim)
    nll = _loss.nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0.0:
        return nll
    td = target._data if isinstance(target, Tensor) else np.asarray(target)
    ignore = td == ignore_index
    if weight is not None:
        smooth = -(logp * _class_weight_view(weight, input.ndim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
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
            f"{torch_dtype_name(target.dtype)}"
        )
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}"
        )
    logp = _act.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight_view(weight, input.ndim)
    if reduction == "mean":
        if input.numel() == 0:
            return -(prod.sum() * float("nan"))
        return -prod.sum() / (input.numel() // n_classes)
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum(class_dim)


@_checked
def mse_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error (``reduction`` none/mean/sum; ``weight`` per element, a weighted mean)."""
    _warn_size(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        _check_weight(input, weight)
        diff = input - target
        return _weighted(diff * diff, weight, reduction, True)
    return _loss.mse_loss(input, target, reduction)


@_checked
def l1_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error (``reduction`` none/mean/sum; ``weight`` per element, a weighted mean)."""
    _warn_size(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    err = (input - target).abs()
    if weight is not None:
        _check_weight(input, weight)
        return _weighted(err, weight, reduction, True)
    return reduce_loss(err, reduction)


@_checked
def smooth_l1_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Squared error below ``beta``, absolute error (less ``beta / 2``) above; ``beta=0`` is l1_loss."""
    _warn_size(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta == 0.0:
        check_reduction(reduction)
        return reduce_loss((input - target).abs(), reduction)
    return _loss.smooth_l1_loss(input, target, reduction, beta)


@_checked
def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None,
) -> Tensor:
    """Squared error (halved) below ``delta``, ``delta * (|d| - delta / 2)`` above; ``weight`` per element."""
    _warn_size(input, target)
    if weight is None:
        return _loss.huber_loss(input, target, reduction, delta)
    _check_weight(input, weight)
    return _weighted(_loss.huber_loss(input, target, "none", delta), weight, reduction, False)


@_checked
def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy between probabilities ``input`` and ``target`` (logs clamped at -100, as torch)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({_size(target.shape)}) that is different to the input size ({_size(input.shape)}) "
            "is deprecated. Please ensure they have the same size."
        )
    return _loss.binary_cross_entropy(input, target, weight, reduction)


@_checked
def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean", pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy on logits (sigmoid inside, computed stably); ``pos_weight`` weighs the positives."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target.shape)}) must be the same as input size ({_size(input.shape)})")
    return _loss.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def _xlogx(t: Tensor) -> Tensor:
    """``t * log(t)`` with 0 where ``t == 0`` (torch's ``xlogy(t, t)``)."""
    if not t.requires_grad:
        td = t._data
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(td == 0, 0, td * np.log(np.where(td == 0, 1, td)))
        return Tensor._wrap(np.asarray(v, dtype=td.dtype), t.device)
    zero = t._data == 0
    return _ew.where(zero, 0.0, t * _ew.where(zero, 1.0, t).log())


@_checked
def kl_div(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """The Kullback-Leibler divergence of ``target`` from ``input`` (log-probabilities);
    ``log_target``: the target is given as log-probabilities too. ``'batchmean'`` divides by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' "
            "divides only by the batch size, and aligns with the KL div math definition.'mean' will be changed to "
            "behave the same as 'batchmean' in the next major release.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    if reduction != "batchmean":
        check_reduction(reduction)
    if input.dtype.kind != "f" or target.dtype.kind != "f":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        pointwise = _xlogx(target) - target * input
    if reduction == "batchmean":
        total = pointwise.sum()
        return total / input.shape[0] if input.ndim else total
    return reduce_loss(pointwise, reduction)


# ----- the margin, embedding and likelihood losses (composed, as torch's) -------------------------


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    check_reduction(reduction)
    return reduce_loss(loss, reduction)


@_checked
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: "
            f"torch.Size({list(input1.shape)}), input2: torch.Size({list(input2.shape)}), target: "
            f"torch.Size({list(target.shape)}) "
        )
    return _reduced((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@_checked
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    td = target._data
    hidden = _ew.where(td != 1, (margin - input).clamp_min(0), 0.0)
    shown = _ew.where(td != -1, input, 0.0)
    return _reduced(hidden + shown, reduction)


@_checked
def soft_margin_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``log(1 + exp(-target * input))``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduced(_act.softplus(-target * input), reduction)


@_checked
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where the target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise RuntimeError(
            f"cosine_embedding_loss: Expected 1D or 2D inputs of the same dimension, but got input1: "
            f"{input1.ndim}D and input2: {input2.ndim}D"
        )
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    td = target._data
    pos = _ew.where(td == 1, 1 - cos, 0.0)
    neg = _ew.where(td == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduced(pos + neg, reduction)


@_checked
def triplet_margin_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
    swap: bool = False, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the pairwise p-distance
    (``swap``: the smaller of d(anchor, negative) and d(positive, negative))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
            f"got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs"
        )
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ew.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduced((d_pos - d_neg + margin).clamp_min(0), reduction)


@_checked
def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """The binary cross entropy of each label on logits, averaged over the labels (the last dim)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduced(loss, reduction)


@_checked
def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average: Any = None,
    eps: float = 1e-8, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """The Poisson negative log likelihood: ``exp(input) - target * input`` (``log_input``), else
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term where the target exceeds 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        td = target._data
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = np.where(td > 1, td * np.log(td) - td + 0.5 * np.log(2 * np.pi * td), 0.0)
        if target.requires_grad:
            safe = _ew.where(td > 1, target, 2.0)
            term = safe * safe.log() - safe + 0.5 * (safe * (2 * np.pi)).log()
            loss = loss + _ew.where(td > 1, term, 0.0)
        else:
            loss = loss + Tensor._wrap(stirling.astype(input.dtype), input.device)
    return _reduced(loss, reduction)


@_checked
def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Any, full: bool = False, eps: float = 1e-6, reduction: str = "mean",
) -> Tensor:
    """``0.5 * (log(var) + (input - target)^2 / var)`` with ``var`` clamped below at ``eps`` (for the
    value only, as torch); ``full`` adds ``0.5 * log(2 pi)``."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = Tensor._wrap(np.full(input.shape, float(var), dtype=input.dtype), input.device)
    elif (var._data < 0).any():
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + Tensor._wrap(np.maximum(var._data, eps) - var._data, var.device)  # clamp the value, not the grad
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * float(np.log(2 * np.pi))
    return reduce_loss(loss, reduction)
