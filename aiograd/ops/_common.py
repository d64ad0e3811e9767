"""What every op family shares: attaching Tensor methods, operand coercion,
device checks, dtype promotion, and numpy's dispatch protocols.

NOTE [One rule for both modes]: backward rules are written with numpy
operators and functions (``g * np.cos(x)``). In an ordinary pass ``g`` and
the saved values are ndarrays and the rule runs as plain numpy. In a pass
with ``create_graph=True`` they are Tensors; numpy then hands ``np.cos(x)``
to ``Tensor.__array_ufunc__`` and ``np.sum(x)`` to ``Tensor.__array_function__``,
which call the differentiable aiograd op, so the same rule records a graph
and higher-order gradients need no second implementation.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from ..autograd.graph import needs_grad, record
from ..device import Device
from ..tensor import Tensor, get_default_dtype

__all__ = [
    "tensor_method",
    "implements_ufunc",
    "implements_function",
    "as_tensor_operand",
    "common_device",
    "wrap",
    "promote_float",
    "needs_grad",
    "record",
    "graph_mode",
]

F = TypeVar("F", bound=Callable[..., Any])

_UFUNCS: dict[Any, Callable[..., Any]] = {}
_FUNCTIONS: dict[Any, Callable[..., Any]] = {}


def tensor_method(*names: str) -> Callable[[F], F]:
    """Attach the decorated function to Tensor under ``names`` (default: its own name)."""

    def deco(fn: F) -> F:
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn

    return deco


def implements_ufunc(*ufuncs: Any) -> Callable[[F], F]:
    """Route ``ufunc(tensor, ...)`` to the decorated aiograd function."""

    def deco(fn: F) -> F:
        for u in ufuncs:
            _UFUNCS[u] = fn
        return fn

    return deco


def implements_function(*funcs: Any) -> Callable[[F], F]:
    """Route ``np.func(tensor, ...)`` to the decorated aiograd function."""

    def deco(fn: F) -> F:
        for f in funcs:
            _FUNCTIONS[f] = fn
        return fn

    return deco


def _array_ufunc(self: Tensor, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if method != "__call__" or kwargs.get("out") is not None:
        return NotImplemented
    fn = _UFUNCS.get(ufunc)
    if fn is None:
        return NotImplemented
    kwargs.pop("out", None)
    if kwargs:
        return NotImplemented
    return fn(*inputs)


def _array_function(self: Tensor, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    fn = _FUNCTIONS.get(func)
    if fn is None:
        return NotImplemented
    return fn(*args, **kwargs)


Tensor.__array_ufunc__ = _array_ufunc  # type: ignore[attr-defined]
Tensor.__array_function__ = _array_function  # type: ignore[attr-defined]


def graph_mode(g: Any) -> bool:
    """Whether a backward rule runs in a create_graph pass (its gradients are Tensors)."""
    return g.__class__ is Tensor or isinstance(g, Tensor)


def as_tensor_operand(x: Any, like: Tensor) -> Any:
    """Coerce an operand of a binary op: Tensors stay, Python numbers stay (weak scalars), arrays wrap."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, complex):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and not isinstance(x, np.ndarray) and not isinstance(x, np.generic):
        arr = arr.astype(like._data.dtype if like._data.dtype.kind == "f" else get_default_dtype())
    return Tensor._wrap(arr, like._device)


def common_device(*xs: Any) -> Device:
    """The device shared by the tensors among ``xs``; raises if they differ."""
    dev = None
    for x in xs:
        if isinstance(x, Tensor):
            if dev is None:
                dev = x._device
            elif x._device is not dev:
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two devices, "
                    f"{dev} and {x._device}!"
                )
    assert dev is not None
    return dev


def data_of(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def promote_float(out: np.ndarray, *xs: Any) -> np.ndarray:
    """torch's rule for int tensor with Python float: the result takes the default dtype, not float64."""
    if out.dtype == np.float64:
        for x in xs:
            if isinstance(x, Tensor) and x._data.dtype == np.float64:
                return out
            if isinstance(x, np.ndarray) and x.dtype == np.float64:
                return out
        return out.astype(get_default_dtype())
    return out


def wrap(arr: Any, device: Device) -> Tensor:
    """A new Tensor for an op's result (numpy scalars become 0-d arrays)."""
    if arr.__class__ is not np.ndarray:
        arr = np.asarray(arr)
    return Tensor._wrap(arr, device)
