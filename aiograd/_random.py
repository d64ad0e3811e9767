"""The random creation functions: ``rand``, ``randn``, ``randint``, ``randperm`` and their
``_like`` forms. Each draws from a ``generator=`` argument (the default generator for None).

tensor.py's creation functions that draw from a Generator: they live above both tensor.py
and _generator.py (whose ``get_state`` makes a Tensor), so neither of those imports the
other's layer back (NOTE [Layers] in autograd/__init__.py).
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from ._dtypes import torch_dtype_name as _torch_dtype_name
from ._generator import Generator, rng_of
from ._memory_format import memory_format, preserve_format
from .device import DeviceLike
from .tensor import (
    DTypeLike,
    Tensor,
    _float_or,
    _like,
    _like_result,
    _make,
    _resolve_dtype,
    _shape_args,
    _size_arg,
    float16,
    int64,
)

__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"]


def _random_float(dtype: DTypeLike, op: str) -> np.dtype:
    """The floating dtype of a uniform or normal sample (torch's error for another dtype)."""
    d = _float_or(dtype)
    if d.kind not in "fc":
        raise NotImplementedError(f"\"{op}\" not implemented for '{_torch_dtype_name(d)}'")
    return d


def rand(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: DTypeLike = None,
         device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    d = _random_float(dtype, "check_uniform_bounds")
    rng = rng_of(generator, "rand")
    return _make(rng.random(_size_arg("rand", sizes, size)).astype(d, copy=False), device, requires_grad)


def randn(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: DTypeLike = None,
          device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    d = _random_float(dtype, "normal_kernel_cpu")
    rng = rng_of(generator, "randn")
    return _make(rng.standard_normal(_size_arg("randn", sizes, size)).astype(d, copy=False), device, requires_grad)


def randint(
    *args: Any, size: Any = None, low: int | None = None, high: int | None = None, generator: Generator | None = None,
    dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False,
) -> Tensor:
    """Random integers in ``[low, high)``, in torch's two forms: ``randint(high, size)`` (low 0)
    and ``randint(low, high, size)``; each argument may also be given by name."""
    if len(args) > 3:
        raise TypeError(f"randint() takes from 1 to 3 positional arguments but {len(args)} were given")
    if size is None:
        if len(args) < 2:
            raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
        size, args = args[-1], args[:-1]
        size_position: int | None = len(args) + 1
    else:
        size_position = None
    positions: dict[str, int] = {}
    if len(args) == 2:
        (low, high), positions = args, {"low": 1, "high": 2}
    elif len(args) == 1 and high is None:
        high, positions = args[0], {"high": 1}
    elif len(args) == 1:
        low, positions = args[0], {"low": 1}
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low = 0 if low is None else low
    for name, value in (("low", low), ("high", high)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            where = f" (position {positions[name]})" if name in positions else ""
            raise TypeError(f"randint(): argument '{name}'{where} must be int, not {type(value).__name__}")
    if not isinstance(size, (tuple, list, Tensor)):
        where = f" (position {size_position})" if size_position else ""
        raise TypeError(f"randint(): argument 'size'{where} must be tuple of ints, not {type(size).__name__}")
    return _make(_integers(int(low), int(high), _shape_args((size,)), generator, "randint",
                           _resolve_dtype(dtype) or int64), device, requires_grad)


def _integers(low: int, high: int, shape: tuple[int, ...], generator: Any, op: str, dtype: np.dtype) -> np.ndarray:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return rng_of(generator, op).integers(low, high, size=shape).astype(dtype)


def randperm(
    n: int, *, generator: Generator | None = None, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of ``0..n-1`` (int64 unless ``dtype`` says otherwise)."""
    if isinstance(n, bool) or not isinstance(n, (numbers.Integral, Tensor)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = _resolve_dtype(dtype) or int64
    if d.kind in "iu" and n > 0 and n - 1 > np.iinfo(d).max:
        raise RuntimeError(f"value cannot be converted to type {d.name}_t without overflow")
    if d == float16 and n > 2049:
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    return _make(rng_of(generator, "randperm").permutation(n).astype(d), device, requires_grad)


def rand_like(t: Tensor, *, generator: Generator | None = None, dtype: DTypeLike = None,
              device: DeviceLike | None = None, requires_grad: bool = False,
              memory_format: memory_format = preserve_format) -> Tensor:
    """Uniform samples in [0, 1) in a tensor of ``t``'s shape (and dtype, device, layout unless given)."""
    d = _random_float(_like(t, dtype, "rand_like", memory_format)[1], "check_uniform_bounds")
    values = rng_of(generator, "rand_like").random(t.shape)
    return _like_result(t, values, d, memory_format, device, requires_grad)


def randn_like(t: Tensor, *, generator: Generator | None = None, dtype: DTypeLike = None,
               device: DeviceLike | None = None, requires_grad: bool = False,
               memory_format: memory_format = preserve_format) -> Tensor:
    """Standard normal samples in a tensor of ``t``'s shape (and dtype, device, layout unless given)."""
    d = _random_float(_like(t, dtype, "randn_like", memory_format)[1], "normal_kernel_cpu")
    values = rng_of(generator, "randn_like").standard_normal(t.shape)
    return _like_result(t, values, d, memory_format, device, requires_grad)


def randint_like(
    t: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None, dtype: DTypeLike = None,
    device: DeviceLike | None = None, requires_grad: bool = False, memory_format: memory_format = preserve_format,
) -> Tensor:
    """Random integers in ``[low, high)`` in a tensor of ``t``'s shape (and dtype, device, layout unless
    given): ``randint_like(t, high)`` or ``randint_like(t, low, high)``."""
    if high is None:
        low, high = 0, low
    shape, d = _like(t, dtype, "randint_like", memory_format)
    values = _integers(operator.index(low), operator.index(high), shape, generator, "randint_like", d)
    return _like_result(t, values, d, memory_format, device, requires_grad)
