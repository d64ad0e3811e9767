"""What the neural-network op families share: float-only
inputs, int-tuple arguments (kernel sizes, strides), loss reductions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor import Tensor
from .._common import torch_dtype_name

__all__ = ["torch_dtype_name", "float_data", "ntuple", "check_reduction", "reduce_loss", "REDUCTIONS"]


def float_data(x: Tensor, op: str) -> np.ndarray:
    """``x``'s array, or torch's error for a non-floating input: ``"silu_cpu" not implemented for 'Long'``
    (a NotImplementedError, as torch's; it is a RuntimeError too)."""
    d = x._data
    if d.dtype.kind not in "fc":
        raise NotImplementedError(f"\"{op}\" not implemented for '{torch_dtype_name(d.dtype)}'")
    return d


def ntuple(v: Any, n: int, name: str) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints (or one, repeated), as torch's ``_ntuple`` arguments."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) != n:
            raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, got {tuple(v)}")
        return tuple(int(x) for x in v)
    if isinstance(v, Tensor):
        v = v.item()
    return (int(v),) * n


REDUCTIONS = ("none", "mean", "sum")


def check_reduction(reduction: str) -> None:
    """torch's error for an unknown ``reduction``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def reduce_loss(loss: Any, reduction: str) -> Any:
    """A pointwise loss (array or Tensor) reduced as ``reduction`` says."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
