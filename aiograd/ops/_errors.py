"""The two errors every public op raises for its arguments, in torch's words: a non-tensor
where a Tensor belongs (NOTE [Operands] in _common.py) and tensors on two devices (NOTE
[One device per op] in _common.py).

A leaf module (numpy and Tensor only), so that the generated public wrappers
(``_checked.py``) and ``_common.py``, which looks them up, can both import it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..device import Device
from ..tensor import Tensor

__all__ = ["common_device", "operand_error"]


def _describe(x: Any) -> str:
    if isinstance(x, (np.ndarray, np.generic)):
        return f"{type(x).__name__} of dtype {x.dtype}"
    return type(x).__name__


def operand_error(op: str, name: str, position: int | None, x: Any) -> TypeError:
    """torch's error for a non-tensor argument: ``exp(): argument 'input' (position 1) must be Tensor, not str``."""
    where = f" (position {position})" if position else ""
    return TypeError(f"{op}(): argument '{name}'{where} must be Tensor, not {_describe(x)}")


def common_device(*xs: Any) -> Device:
    """The device shared by the tensors among ``xs`` (others, None included, are skipped);
    raises torch's error if they differ (NOTE [One device per op] in _common.py)."""
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
    return dev  # type: ignore[return-value]
