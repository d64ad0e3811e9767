"""In-place array arithmetic for optimizer updates: the one way optimizers write numbers.

NOTE [Optimizer arrays]
numpy returns a numpy *scalar*, not an array, from a ufunc whose inputs are all
0-d and that has no ``out=``; Python's augmented operators (``buf *= m``) on such
a scalar rebind the name and write nothing, and ``buf[...] = x`` raises a
TypeError. An optimizer keeps state between steps (momentum buffers, moment
estimates) and updates parameters in place, so on a 0-d parameter every one of
those idioms silently drops an update or fails deep inside numpy. The rule:

1. every state array is made by ``zeros_state``, ``copy_state`` or
   ``step_state`` (an ndarray also when 0-d, wrapped in a Tensor as torch's
   optimizer state is);
2. parameters and state arrays are written only by the functions below, which
   pass ``out=`` explicitly: writing into a scalar by mistake raises instead of
   being lost (their temporaries go to a ``scratch`` array shaped like the
   destination when the caller gives one, so an update allocates once);
3. anything else (maximize's ``-g``, weight decay's ``g + wd * p``, a square
   root) is a read-only temporary and may be a scalar.

Hyperparameters reach these functions as Python floats (``scalar``), never as
numpy float64 scalars, so a float32 parameter is updated in float32 as torch
updates it (a Python float does not promote a float32 array, a float64 scalar
does). Complex parameters are updated through ``real_view``, the pairs of
(real, imaginary) numbers torch's ``view_as_real`` gives, as torch does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, get_default_dtype

__all__ = [
    "scalar", "real_view", "zeros_state", "copy_state", "step_state", "scratch_like",
    "add_", "mul_", "lerp_", "addcmul_", "addcdiv_", "maximum_", "copy_",
]


def scalar(value: Any) -> Any:
    """A hyperparameter as a Python number (a 1-element Tensor or numpy scalar is read out)."""
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, (np.generic, np.ndarray)):
        return value.item()
    return value


def real_view(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or for a complex array a writable real view with a trailing axis of 2."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


def zeros_state(like: np.ndarray, fill: Any = 0) -> Tensor:
    """A new state Tensor shaped and typed as ``like`` (a parameter's array), filled with ``fill``."""
    return Tensor._wrap(np.full_like(like, fill))


def copy_state(value: Any, like: np.ndarray) -> Tensor:
    """A new state Tensor shaped and typed as ``like`` holding a copy of ``value``.

    ``value`` (an array or a scalar) is given as the optimizers compute: in ``real_view(like)``'s terms.
    """
    out = np.empty_like(like)
    np.copyto(real_view(out), value, casting="unsafe")
    return Tensor._wrap(out)


def step_state(value: float = 0.0) -> Tensor:
    """A 0-d step counter as torch keeps it: float32, or float64 when that is the default dtype."""
    dtype = np.float64 if get_default_dtype() == np.float64 else np.float32
    return Tensor._wrap(np.array(value, dtype=dtype))


def scratch_like(a: np.ndarray) -> np.ndarray:
    """An uninitialised array to hold the temporaries of one parameter's update (0-d stays an array)."""
    return np.empty_like(a)


def add_(dst: np.ndarray, src: Any, alpha: Any = 1, scratch: np.ndarray | None = None) -> np.ndarray:
    """``dst += alpha * src``."""
    if alpha == 1:
        np.add(dst, src, out=dst)
    else:
        np.add(dst, np.multiply(src, alpha, out=_tmp(dst, scratch)), out=dst)
    return dst


def mul_(dst: np.ndarray, factor: Any) -> np.ndarray:
    """``dst *= factor``."""
    np.multiply(dst, factor, out=dst)
    return dst


def lerp_(dst: np.ndarray, end: Any, weight: float, scratch: np.ndarray | None = None) -> np.ndarray:
    """``dst += weight * (end - dst)``, evaluated from the nearer end as torch's lerp is."""
    diff = np.subtract(end, dst, out=_tmp(dst, scratch))
    if weight < 0.5:
        np.multiply(diff, weight, out=diff)
        np.add(dst, diff, out=dst)
    else:
        np.multiply(diff, 1 - weight, out=diff)
        np.subtract(end, diff, out=dst)
    return dst


def addcmul_(dst: np.ndarray, t1: Any, t2: Any, value: Any = 1, scratch: np.ndarray | None = None) -> np.ndarray:
    """``dst += value * t1 * t2``."""
    tmp = np.multiply(t1, value, out=_tmp(dst, scratch))
    np.multiply(tmp, t2, out=tmp)
    np.add(dst, tmp, out=dst)
    return dst


def addcdiv_(dst: np.ndarray, t1: Any, t2: Any, value: Any = 1, scratch: np.ndarray | None = None) -> np.ndarray:
    """``dst += value * t1 / t2``."""
    tmp = np.multiply(t1, value, out=_tmp(dst, scratch))
    np.divide(tmp, t2, out=tmp)
    np.add(dst, tmp, out=dst)
    return dst


def maximum_(dst: np.ndarray, other: Any) -> np.ndarray:
    """``dst = max(dst, other)`` elementwise (NaN propagates, as torch.maximum)."""
    np.maximum(dst, other, out=dst)
    return dst


def copy_(dst: np.ndarray, src: Any) -> np.ndarray:
    """``dst[...] = src``."""
    np.copyto(dst, src, casting="unsafe")
    return dst


def _tmp(dst: np.ndarray, scratch: np.ndarray | None) -> np.ndarray:
    """Where a function above computes its temporary: the caller's scratch array, or a new one like ``dst``."""
    return np.empty_like(dst) if scratch is None else scratch
