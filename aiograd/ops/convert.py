"""Copies and conversions: clone, contiguous, to(dtype|device), type casts. Differentiable where
the dtype is floating: the gradient is cast (or moved) back to the source.

Each takes ``memory_format`` with torch's default and meaning (aiograd/_memory_format.py): a
copy keeps the input's layout (``preserve_format``), or is laid out in C order
(``contiguous_format``) or channels-last order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtypes import UnsupportedDtype

from ..autograd.graph import Node, link_one, record
from ..device import Device
from .._memory_format import (
    check_format,
    contiguous_format,
    is_contiguous_in,
    layout_copy,
    memory_format,
    preserve_format,
    suggest_format,
)
from ..tensor import Tensor, _resolve_dtype, new_tensor
from ._common import grad_enabled, needs_grad
from ._table import OpTable

CONVERT = OpTable("convert")


class CloneBackward0(Node):
    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0],)


def _copy(input: Tensor, fmt: memory_format) -> Tensor:
    out = new_tensor(layout_copy(input._data, fmt), input._device)
    if input._requires_grad and grad_enabled():
        link_one(CloneBackward0(), input, out)
    return out


@CONVERT.op(nodes=(CloneBackward0,))
def clone(input: Tensor, *, memory_format: memory_format = preserve_format) -> Tensor:
    """A copy with its own storage, differentiable (gradient passes through); laid out as the
    input (``preserve_format``) unless ``memory_format`` says otherwise."""
    return _copy(input, memory_format)


@CONVERT.op(nodes=(CloneBackward0,), export=False)
def contiguous(input: Tensor, memory_format: memory_format = contiguous_format) -> Tensor:
    """``input`` itself when its memory is already in ``memory_format``'s order (C order by
    default), else a copy in that order (CloneBackward0, as torch)."""
    check_format(memory_format, input.ndim)
    if is_contiguous_in(input._data, memory_format):
        return input
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return _copy(input, memory_format)


class ToCopyBackward0(Node):
    """Gradient of a dtype/device change: cast (and move) it back to the source."""

    __slots__ = ("src_dtype", "src_device")
    src_dtype: np.dtype
    src_device: Device

    def __init__(self, src_dtype: np.dtype, src_device: Device) -> None:
        self._init_node()
        self.src_dtype = src_dtype
        self.src_device = src_device

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if isinstance(g, Tensor):
            return (to(g, device=self.src_device, dtype=self.src_dtype),)
        return (g.astype(self.src_dtype, copy=False),)


_DTYPE_TYPES = (float, int, bool, complex)


def _is_dtype(x: Any) -> bool:
    return (isinstance(x, (np.dtype, UnsupportedDtype))  # the latter refused where it is used, saying why
            or (isinstance(x, type) and (x in _DTYPE_TYPES or issubclass(x, np.generic))))


def _parse_to_args(args: tuple[Any, ...]) -> tuple[Any, Any, list[Any]]:
    """torch's three forms: ``to(device=None, dtype=None, non_blocking, copy)``,
    ``to(dtype, non_blocking, copy)``, ``to(other, non_blocking, copy)``: (dtype, device, flags)."""
    rest = list(args)
    dtype = device = None
    if rest and isinstance(rest[0], Tensor):
        other = rest.pop(0)
        dtype, device = other.dtype, other.device
    elif rest and (rest[0] is None or isinstance(rest[0], (str, Device))):
        device = rest.pop(0)
        if rest and (rest[0] is None or _is_dtype(rest[0])):
            dtype = rest.pop(0)
    elif rest and _is_dtype(rest[0]):
        dtype = rest.pop(0)
    if len(rest) > 2 or not all(isinstance(f, bool) for f in rest):
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"to() received an invalid combination of arguments - got ({got}), but expected one of: "
            "(device=None, dtype=None, non_blocking=False, copy=False), (dtype, non_blocking=False, copy=False), "
            "(Tensor other, non_blocking=False, copy=False)"
        )
    return dtype, device, rest


@CONVERT.op(nodes=(ToCopyBackward0,))
def to(input: Tensor, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False,
       non_blocking: bool = False, memory_format: memory_format = preserve_format) -> Tensor:
    """Convert to another dtype and/or device, in torch's forms: ``t.to("cpu:1")``, ``t.to(ag.float64)``,
    ``t.to(other)``, each optionally followed by ``non_blocking`` and ``copy`` (a copy even if nothing
    changes). ``input`` itself is returned when nothing changes; a copy is laid out as ``memory_format``
    says (the input's layout by default)."""
    if args:
        dtype_arg, device_arg, flags = _parse_to_args(args)
        dtype = dtype_arg if dtype_arg is not None else dtype
        device = device_arg if device_arg is not None else device
        if len(flags) > 1:
            copy = flags[1]
    new_dtype = _resolve_dtype(dtype) or input._data.dtype
    new_device = Device(device) if device is not None else input._device
    check_format(memory_format, input.ndim)
    keeps_layout = memory_format is preserve_format or suggest_format(input._data) is memory_format
    if new_dtype == input._data.dtype and new_device is input._device and not copy and keeps_layout:
        return input
    out = new_tensor(layout_copy(input._data, memory_format, new_dtype), new_device)
    if new_dtype.kind in "fc" and needs_grad(input):
        node = ToCopyBackward0(input._data.dtype, input._device)
        record(node, (input,), (out,))
        node.device = new_device  # the gradient arrives on the new device
    return out


def _cast_to(name: str, dtype: Any) -> Any:
    def cast(self: Tensor, memory_format: memory_format = preserve_format) -> Tensor:
        return to(self, dtype, memory_format=memory_format)

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"``self.to({np.dtype(dtype).name})``."
    return cast


for _name, _dtype in (("float", np.float32), ("double", np.float64), ("half", np.float16), ("long", np.int64),
                      ("int", np.int32), ("short", np.int16), ("char", np.int8), ("byte", np.uint8),
                      ("bool", np.bool_), ("cfloat", np.complex64), ("cdouble", np.complex128)):
    # a cast to an integer or bool dtype has no gradient (as torch)
    CONVERT.op(nodes=(ToCopyBackward0,) if np.dtype(_dtype).kind == "f" else (), export=False)(_cast_to(_name, _dtype))


@CONVERT.op(nodes=(ToCopyBackward0,), export=False)
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.to(other.dtype)``."""
    return to(self, other.dtype)


@CONVERT.op(nodes=(ToCopyBackward0,), export=False)
def cpu(self: Tensor) -> Tensor:
    """``self.to("cpu")``."""
    return to(self, "cpu")


__all__ = CONVERT.exports(__name__)
