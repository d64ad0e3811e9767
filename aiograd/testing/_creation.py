"""``make_tensor``: a random tensor for tests, as ``torch.testing.make_tensor``.

Values are drawn from aiograd's default generator (so ``ag.manual_seed`` makes a test
reproducible), uniformly in ``[low, high)``: by default ``[-9, 9)`` for floating and
complex dtypes (real and imaginary parts each), ``[-9, 10)`` for integers (clamped to
what the dtype holds) and ``{False, True}`` for bool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._generator import default_generator
from .._memory_format import memory_format as _MemoryFormat
from ..device import DeviceLike
from ..tensor import DTypeLike, Tensor, _make, _resolve_dtype

__all__ = ["make_tensor"]


def _interval(
    dtype: np.dtype, low: float | None, high: float | None,
    lowest: float, highest: float, default_low: float, default_high: float,
) -> tuple[float, float]:
    """``[low, high)`` checked, then clamped to ``[lowest, highest)``; integer bounds rounded up."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low >= high:
        # torch still accepts low == high for floats (deprecated since 2.1, "to be
        # removed"); aiograd starts without it: ag.full is the tensor of one value
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), "
            f"but {dtype} only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype.kind in "biu":
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float, dtype: np.dtype) -> np.ndarray:
    real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype  # a complex's parts
    finfo = np.finfo(real)
    if high - low >= float(finfo.max):
        # the width itself overflows: draw in half the interval and double
        sample = rng.uniform(low / 2, high / 2, size=shape) * 2
    else:
        sample = rng.uniform(low, high, size=shape)
    # NOTE: a float64 sample just below ``high`` may round up to it in a narrower dtype,
    # as in torch; the interval is [low, high) up to that rounding.
    return sample.astype(real)


def make_tensor(
    *shape: int | Sequence[int],
    dtype: DTypeLike,
    device: DeviceLike,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: _MemoryFormat | None = None,
) -> Tensor:
    """A tensor of ``shape`` with random values in ``[low, high)``, as torch.testing's.

    ``shape`` is given as integers or one sequence (``make_tensor(2, 3, ...)`` or
    ``make_tensor((2, 3), ...)``); ``dtype`` and ``device`` are required. ``low`` and
    ``high`` default to ``-9`` and ``9`` (floating, complex) or ``-9`` and ``10``
    (integers), and are clamped to the dtype's range; asking for an interval outside
    it, or ``low >= high``, is a ``ValueError``. ``noncontiguous=True`` returns a view
    with a step in its last dim (when the tensor has more than one element);
    ``memory_format`` lays it out as that format instead (not both).
    ``exclude_zero=True`` replaces zeros by ``1`` (integers) or the smallest normal
    number of the dtype. ``requires_grad`` needs a floating or complex dtype.
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    dims = tuple(int(s) for s in shape)  # type: ignore[arg-type]
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
            f"noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    d = _resolve_dtype(dtype)
    if d is None or d.kind not in "biufc":
        raise TypeError(
            f"The requested dtype '{dtype}' is not supported by aiograd.testing.make_tensor(): "
            "it makes bool, integer, floating and complex tensors"
        )
    if requires_grad and d.kind in "biu":
        raise ValueError(
            f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={d}"
        )

    noncontiguous = noncontiguous and math.prod(dims) > 1
    if noncontiguous:  # twice the last dim; every other element is kept below
        dims = (*dims[:-1], 2 * dims[-1])

    rng = default_generator.numpy_generator
    if d.kind == "b":
        lo, hi = _interval(d, low, high, 0, 2, 0, 2)
        arr = rng.integers(int(lo), int(hi), size=dims).astype(d)
    elif d.kind in "iu":
        info = np.iinfo(d)
        # int64's highest value itself is excluded (the bound would not fit in an int64)
        highest = int(info.max) + (1 if d != np.int64 else 0)
        lo, hi = _interval(d, low, high, int(info.min), highest, -9, 10)
        arr = rng.integers(int(lo), int(hi), size=dims, dtype=np.uint64 if d == np.uint64 else np.int64).astype(d)
    else:
        real = np.dtype(d.char.lower()) if d.kind == "c" else d
        finfo = np.finfo(real)
        lo, hi = _interval(d, low, high, float(finfo.min), float(finfo.max), -9, 9)
        if d.kind == "c":
            arr = np.empty(dims, d)
            arr.real = _uniform(rng, dims, lo, hi, d)
            arr.imag = _uniform(rng, dims, lo, hi, d)
        else:
            arr = _uniform(rng, dims, lo, hi, d)

    if noncontiguous:
        arr = arr[..., 1::2]
    if exclude_zero:
        arr[arr == 0] = 1 if d.kind in "biu" else np.finfo(d).tiny
    result = _make(arr, device, False)
    if memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if requires_grad:
        result.requires_grad_(True)
    return result
