"""dtypes aiograd names but cannot hold (a leaf module: imports nothing of aiograd)."""

from __future__ import annotations

import numpy as np

__all__ = ["UnsupportedDtype", "bfloat16"]


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
