"""torch's other names for its dtypes, and its math constants.

NOTE [Builtin names]: ``float``, ``int`` and ``bool`` are dtypes here, as
``torch.float`` is; assigned in this module, they would hide Python's builtins
from any code below them, so this module holds nothing but the assignments,
and ``aiograd/__init__.py`` (which uses none of those builtins) imports them.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "float", "double", "half", "long", "int", "short", "bool", "cfloat", "cdouble", "complex64",
    "complex128", "inf", "nan", "pi", "e",
]

# the class of every dtype, so that ``isinstance(x, ag.dtype)`` asks what ``isinstance(x, torch.dtype)``
# asks (numpy's class: an attribute, out of ``__all__`` and the API reference)
dtype = np.dtype

complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
cfloat = complex64
cdouble = complex128
half = np.dtype("float16")
double = np.dtype("float64")
long = np.dtype("int64")
short = np.dtype("int16")
float = np.dtype("float32")  # noqa: A001  (NOTE [Builtin names])
int = np.dtype("int32")  # noqa: A001
bool = np.dtype("bool")  # noqa: A001

inf = math.inf
nan = math.nan
pi = math.pi
e = math.e
