"""torch's legacy typed tensor classes: ``FloatTensor([1, 2])``, ``LongTensor(3)``,
``isinstance(t, ag.FloatTensor)``.

They are not subclasses of ``Tensor``: each makes a plain ``Tensor`` of its dtype,
and ``isinstance`` asks for a tensor of that dtype (as torch's do), so no tensor
ever carries a second class and nothing on the per-op path changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .device import CPU, Device, DeviceLike
from .tensor import Tensor, _legacy_data

__all__ = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
    "ByteTensor", "BoolTensor",
]


if TYPE_CHECKING:
    # NOTE [Legacy classes for type checkers]: mypy types a call of a class by the class's
    # __init__, never by its metaclass's __call__; to it the legacy classes are what calling
    # one gives, a Tensor (whose __init__ takes the same arguments).
    _Base = Tensor
else:
    _Base = object


class _TensorType(type):
    """The metaclass of the legacy classes: calling one makes a ``Tensor`` of its dtype."""

    dtype: np.dtype

    def __call__(cls, *args: Any, device: DeviceLike | None = None) -> Tensor:
        data = _legacy_data(cls.__name__, args, cls.dtype, device)
        if isinstance(data, Tensor):
            return data
        return Tensor._wrap(data, Device(device) if device is not None else CPU)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj._data.dtype == cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'aiograd.{cls.__name__}'>"


class FloatTensor(_Base, metaclass=_TensorType):
    """float32 tensors: ``FloatTensor(2, 3)`` (uninitialised), ``FloatTensor([1, 2])`` (a copy)."""

    dtype = np.dtype("float32")


class DoubleTensor(_Base, metaclass=_TensorType):
    """float64 tensors, made as ``FloatTensor`` makes float32 ones."""

    dtype = np.dtype("float64")


class HalfTensor(_Base, metaclass=_TensorType):
    """float16 tensors, made as ``FloatTensor`` makes float32 ones."""

    dtype = np.dtype("float16")


class LongTensor(_Base, metaclass=_TensorType):
    """int64 tensors: ``LongTensor([1, 2])``, ``LongTensor(3)`` (uninitialised)."""

    dtype = np.dtype("int64")


class IntTensor(_Base, metaclass=_TensorType):
    """int32 tensors (data is truncated toward zero, as numpy casts it)."""

    dtype = np.dtype("int32")


class ShortTensor(_Base, metaclass=_TensorType):
    """int16 tensors."""

    dtype = np.dtype("int16")


class CharTensor(_Base, metaclass=_TensorType):
    """int8 tensors."""

    dtype = np.dtype("int8")


class ByteTensor(_Base, metaclass=_TensorType):
    """uint8 tensors."""

    dtype = np.dtype("uint8")


class BoolTensor(_Base, metaclass=_TensorType):
    """bool tensors."""

    dtype = np.dtype("bool")
