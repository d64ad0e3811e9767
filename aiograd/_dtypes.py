"""dtype helpers every layer uses: torch's names of dtypes, and the dtypes aiograd names but cannot
hold (a leaf module: imports nothing of aiograd, so tensor.py and the ops both import it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["UnsupportedDtype", "bfloat16", "torch_dtype_name"]


class UnsupportedDtype:
    """A torch dtype that aiograd cannot hold because numpy, which holds its tensors, has no
    such dtype (``bfloat16``). The name exists, so code that only lists dtypes runs
    (nanoGPT's ``{'float32': torch.float32, 'bfloat16': torch.bfloat16, ...}[dtype]`` on a
    machine where ``cuda.is_bf16_supported()`` is False); any use as a dtype raises a
    TypeError that says so: numpy reads a dtype-like object's ``dtype`` attribute, which
    raises it, wherever aiograd converts a dtype."""

    __slots__ = ("name", "itemsize")
    is_floating_point = True
    is_complex = False
    is_signed = True

    def __init__(self, name: str, itemsize: int) -> None:
        self.name = name
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return f"aiograd.{self.name}"

    @property
    def dtype(self) -> np.dtype:
        raise TypeError(
            f"aiograd has no {self.name}: numpy, which holds aiograd's tensors, has no such dtype; "
            "use float32 (or float16)"
        )


bfloat16 = UnsupportedDtype("bfloat16", 2)


def torch_dtype_name(dt: Any) -> str:
    """torch's name of a dtype in its error messages: ``Float``, ``Long``, ``Bool``..."""
    return {
        "float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
        "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
        "complex128": "ComplexDouble",
    }.get(np.dtype(dt).name, str(dt))
