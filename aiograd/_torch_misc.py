"""torch's everyday helpers that are names rather than operations: dtype limits, dtype
predicates, and the precision and determinism switches device-agnostic code sets.

aiograd computes with numpy on the CPU: float32 matmuls are always computed in float32
("highest"), and its kernels are deterministic, so the switches are kept and change
nothing.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ._dtypes import bfloat16
from .tensor import Tensor, get_default_dtype

__all__ = [
    "finfo", "iinfo", "is_floating_point", "is_complex", "numel", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "compile", "bfloat16",
]

_settings: dict[str, Any] = {"matmul_precision": "highest", "deterministic": False}


def finfo(type: Any = None) -> np.finfo:
    """Limits of a floating dtype (the default dtype if none): ``eps``, ``max``, ``min``,
    ``tiny``, ``resolution``, ``bits``, as ``torch.finfo`` (numpy's ``finfo``)."""
    d = get_default_dtype() if type is None else np.dtype(type)
    if d.kind not in "fc":
        raise TypeError("finfo() requires a floating point input type. Use ag.iinfo to handle 'finfo'")
    return np.finfo(d)


def iinfo(type: Any) -> np.iinfo:
    """Limits of an integer dtype: ``max``, ``min``, ``bits``, as ``torch.iinfo`` (numpy's ``iinfo``)."""
    d = np.dtype(type)
    if d.kind not in "iub":
        raise TypeError("iinfo() requires an integer input type. Use ag.finfo to handle 'iinfo'")
    return np.iinfo(np.uint8 if d.kind == "b" else d)


def _tensor_arg(op: str, input: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input``'s dtype is a floating one."""
    return _tensor_arg("is_floating_point", input)._data.dtype.kind == "f"


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is a complex one."""
    return _tensor_arg("is_complex", input)._data.dtype.kind == "c"


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    return int(_tensor_arg("numel", input)._data.size)


def set_float32_matmul_precision(precision: str) -> None:
    """Kept, and changes nothing: numpy multiplies float32 matrices in float32 (torch's "highest")."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _settings["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """What ``set_float32_matmul_precision`` was last given ("highest" at first)."""
    return str(_settings["matmul_precision"])


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Kept, and changes nothing: aiograd's kernels give the same results run after run."""
    _settings["deterministic"] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """What ``use_deterministic_algorithms`` was last given (False at first)."""
    return bool(_settings["deterministic"])


def compile(model: Callable[..., Any] | None = None, **kwargs: Any) -> Any:  # noqa: A001  (torch's name)
    """``model`` itself: aiograd has no compiler, so ``model = ag.compile(model)`` (torch's
    ``torch.compile``, with any of its keywords) leaves the model as it runs, as
    ``torch.compile(model, disable=True)`` does. Without ``model``, a decorator that does
    the same."""
    if model is None:
        return lambda fn: fn
    return model
