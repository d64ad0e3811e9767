"""Write tests/data/assert_close_cases.json: torch.testing.assert_close's verdicts and messages.

Run with torch installed (the ``bench`` extra): ``python tests/data/make_assert_close_cases.py``.
Each case is an input pair in a small JSON encoding that both torch and aiograd can
decode (``tests/test_testing.py`` decodes it for aiograd), the keyword arguments, and
what torch did: passed, or raised which exception with which message. The cases whose
message names a torch type (``torch.Size``, ``torch.float32``) are not here: aiograd
words those its own way, and tests/test_testing.py spells them out.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

OUT = Path(__file__).with_name("assert_close_cases.json")

NAN, INF = math.nan, math.inf


def T(data: Any, dtype: str = "float32", **how: Any) -> dict[str, Any]:
    """A tensor: nested lists, a dtype name, optionally transposed (``t=True``)."""
    return {"tensor": data, "dtype": dtype, **how}


def A(data: Any, dtype: str) -> dict[str, Any]:
    """A numpy array."""
    return {"array": data, "dtype": dtype}


def C(re: float, im: float) -> dict[str, Any]:
    return {"complex": [re, im]}


def NP(value: float, dtype: str) -> dict[str, Any]:
    """A numpy scalar."""
    return {"npscalar": value, "dtype": dtype}


CASES: list[tuple[str, Any, Any, dict[str, Any]]] = [
    # tensors: values, tolerances by dtype, where the greatest differences are
    ("float32 one mismatch", T([[1.0, 2.0], [3.0, 4.0]]), T([[1.0, 2.0], [3.0, 4.5]]), {}),
    ("float32 within default", T([1.0, 2.0]), T([1.0, 2.0 + 1e-6]), {}),
    ("float32 all mismatch, first greatest", T([1.0, 2.0, 3.0]), T([2.0, 3.0, 4.0]), {}),
    ("float32 one element", T([1.0]), T([1.5]), {}),
    ("float32 0-d is a scalar", T(1.0), T(1.5), {}),
    ("float32 2x1", T([[1.0]]), T([[2.0]]), {}),
    ("float32 3-d index", T([[[0.0] * 4] * 3] * 2), T([[[0.0] * 4] * 3, [[0.0] * 4, [0.0] * 4, [0.0, 0.0, 0.0, 1.0]]]), {}),
    ("float32 expected zero", T([1.0, 1.0]), T([0.0, 0.0]), {}),
    ("float32 near zero", T([0.0, 1.0]), T([1e-3, 1.0]), {}),
    ("float32 tiny vs zero passes atol", T([1e-40]), T([0.0]), {}),
    ("float64 one mismatch", T([1.0, 2.0], "float64"), T([1.0, 2.5], "float64"), {}),
    ("float64 within default", T([1.0, 2.0], "float64"), T([1.0, 2.0 + 1e-8], "float64"), {}),
    ("float16 mismatch", T([1.0, 2.0], "float16"), T([1.0, 2.01], "float16"), {}),
    ("float16 within default", T([1.0, 2.0], "float16"), T([1.0, 2.001], "float16"), {}),
    ("complex64 mismatch", T([C(1, 1), C(2, 0)], "complex64"), T([C(1, 0), C(2, 0.01)], "complex64"), {}),
    ("complex128 close", T([C(1, 1)], "complex128"), T([C(1, 1 + 1e-9)], "complex128"), {}),
    ("int64 mismatch", T([1, 2], "int64"), T([1, 3], "int64"), {}),
    ("int64 equal", T([1, 2], "int64"), T([1, 2], "int64"), {}),
    ("int8 no wrap-around", T([-128], "int8"), T([127], "int8"), {}),
    ("uint8 mismatch", T([2, 1], "uint8"), T([1, 3], "uint8"), {}),
    ("bool mismatch", T([True, False], "bool"), T([True, True], "bool"), {}),
    ("bool 0-d", T(True, "bool"), T(False, "bool"), {}),
    ("int64 0-d", T(1, "int64"), T(2, "int64"), {}),
    ("empty", T([]), T([]), {}),
    ("all zero vs one", T([0.0, 0.0, 0.0]), T([1.0, 1.0, 1.0]), {}),
    # NaN and infinities
    ("nan not equal by default", T([NAN]), T([NAN]), {}),
    ("nan equal_nan", T([NAN]), T([NAN]), {"equal_nan": True}),
    ("nan in actual", T([[1.0, NAN]]), T([[2.0, 2.0]]), {}),
    ("nan in expected", T([[1.0, 2.0]]), T([[2.0, NAN]]), {}),
    ("inf equal", T([1.0, INF]), T([1.0, INF]), {}),
    ("inf opposite", T([1.0, INF]), T([1.0, -INF]), {}),
    ("complex nan equal_nan", T([C(NAN, 0)], "complex64"), T([C(0, NAN)], "complex64"), {"equal_nan": True}),
    # explicit tolerances
    ("rtol and atol pass", T([1.0, 2.0]), T([1.0, 2.0]), {"rtol": 1.0, "atol": 1e-3}),
    ("atol only allowance", T([1.0, 5.0]), T([1.0, 2.0]), {"rtol": 0.0, "atol": 1.0}),
    ("rtol only allowance", T([1.0, 5.0]), T([1.0, 2.0]), {"rtol": 0.1, "atol": 0.0}),
    ("both allowances", T([10.0]), T([12.0]), {"rtol": 0.1, "atol": 0.5}),
    ("both allowances pass", T([10.0]), T([12.0]), {"rtol": 0.1, "atol": 1.0}),
    ("int with tolerance", T([1, 2], "int64"), T([1, 3], "int64"), {"check_dtype": False, "rtol": 0.1, "atol": 0.0}),
    ("int with tolerance pass", T([10, 20], "int64"), T([10, 21], "int64"), {"rtol": 0.1, "atol": 0.0}),
    ("no atol", T([1.0]), T([1.0]), {"rtol": 1e-3}),
    ("no rtol", T([1.0]), T([1.0]), {"atol": 1e-3}),
    # check_dtype=False: promoted, the larger default tolerances
    ("int vs float32 unchecked", T([1, 2], "int64"), T([1.0, 2.5]), {"check_dtype": False}),
    ("float32 vs float64 unchecked", T([1.0, 2.0]), T([1.0, 2.5], "float64"), {"check_dtype": False}),
    ("float16 vs float32 unchecked pass", T([1.0, 2.0], "float16"), T([1.0, 2.0]), {"check_dtype": False}),
    # strides
    ("stride unchecked by default", T([[1.0, 3.0], [2.0, 4.0]], t=True), T([[1.0, 2.0], [3.0, 4.0]]), {}),
    # numpy arrays (with each other)
    ("arrays float64", A([1.0], "float64"), A([2.0], "float64"), {}),
    ("arrays float32", A([1.0], "float32"), A([1.5], "float32"), {}),
    # numbers
    ("floats", 1.0, 1.5, {}),
    ("floats within", 1.0, 1.0 + 1e-8, {}),
    ("ints", 1, 2, {}),
    ("int vs float", 1, 1.0, {}),
    ("int vs float unchecked", 1, 1.0, {"check_dtype": False}),
    ("int vs float unchecked mismatch", 1, 1.5, {"check_dtype": False}),
    ("float expected zero", 1.0, 0.0, {}),
    ("float nan", NAN, NAN, {}),
    ("float nan equal_nan", NAN, NAN, {"equal_nan": True}),
    ("float inf equal", INF, INF, {}),
    ("float inf vs 1", INF, 1.0, {}),
    ("complex numbers", C(1, 1), C(1, 2), {}),
    ("numpy float32 scalar", NP(1.0, "float32"), NP(1.5, "float32"), {}),
    ("numpy float32 vs float", NP(1.0, "float32"), 1.0, {}),
    ("numpy float32 vs float64", NP(1.0, "float32"), NP(1.0, "float64"), {}),
    # bools and None
    ("bools", True, False, {}),
    ("bools equal", True, True, {}),
    ("numpy bool vs bool", {"npbool": True}, True, {}),
    ("none", None, None, {}),
    ("none vs 1", None, 1, {}),
    # nests
    ("list of floats", [1.0, 2.0], [1.0, 2.5], {}),
    ("tuple vs list", {"tuple": [1.0]}, [1.0], {}),
    ("tuple of ints", {"tuple": [1, 2]}, {"tuple": [1, 3]}, {}),
    ("sequence lengths", [1.0, 2.0], [1.0, 2.0, 3.0], {}),
    ("sequence lengths ignore msg", [1.0], [1.0, 2.0], {"msg": "custom"}),
    ("mapping keys", {"dict": {"a": 1.0, "b": 2.0}}, {"dict": {"a": 1.0, "c": 2.0}}, {}),
    ("mapping missing key", {"dict": {"a": 1}}, {"dict": {"a": 1, "b": 2}}, {}),
    ("mapping order", {"dict": {"b": 1, "a": 2}}, {"dict": {"a": 2, "b": 1}}, {}),
    ("nested tensor", {"dict": {"a": [T([1.0, 2.0])]}}, {"dict": {"a": [T([1.0, 3.0])]}}, {}),
    # msg
    ("msg replaces", T([1.0, 2.0]), T([1.0, 2.5]), {"msg": "custom"}),
    ("msg callable", T([1.0, 2.0]), T([1.0, 2.5]), {"msg": ["prefix", "X"]}),
    ("msg callable nested", [T([1.0, 2.0])], [T([1.0, 2.5])], {"msg": ["prefix", "X"]}),
    # what no comparison takes
    ("strings", "a", "a", {}),
    ("tensor vs list", T([1.0]), [1.0], {}),
    ("list vs tensor", [1.0], T([1.0]), {}),
    ("tensor vs float", T(1.0), 1.0, {}),
    ("tensor vs string", T([1.0]), "a", {}),
    ("array vs tensor", A([1.0], "float32"), T([1.0]), {}),
]


def decode(x: Any) -> Any:
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "tensor" in x:
        t = torch.tensor(_values(x["tensor"]), dtype=getattr(torch, x["dtype"]))
        return t.t() if x.get("t") else t
    if "array" in x:
        return np.array(_values(x["array"]), dtype=x["dtype"])
    if "complex" in x:
        return complex(*x["complex"])
    if "npscalar" in x:
        return np.dtype(x["dtype"]).type(x["npscalar"])
    if "npbool" in x:
        return np.bool_(x["npbool"])
    if "tuple" in x:
        return tuple(decode(v) for v in x["tuple"])
    if "dict" in x:
        return {k: decode(v) for k, v in x["dict"].items()}
    raise ValueError(x)


def _values(data: Any) -> Any:
    if isinstance(data, list):
        return [_values(v) for v in data]
    if isinstance(data, dict):
        return complex(*data["complex"])
    return data


def kwargs_of(raw: dict[str, Any]) -> dict[str, Any]:
    kwargs = dict(raw)
    if isinstance(kwargs.get("msg"), list):  # ["prefix", text]: a callable that prefixes
        text = kwargs["msg"][1]
        kwargs["msg"] = lambda m: text + m
    return kwargs


def main() -> None:
    out = []
    for name, actual, expected, kwargs in CASES:
        try:
            torch.testing.assert_close(decode(actual), decode(expected), **kwargs_of(kwargs))
            outcome: dict[str, Any] = {"raises": None}
        except Exception as e:  # noqa: BLE001 - recorded
            outcome = {"raises": type(e).__name__, "message": str(e)}
        out.append({"name": name, "actual": actual, "expected": expected, "kwargs": kwargs, **outcome})
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": out}, indent=1) + "\n")
    print(f"wrote {len(out)} cases to {OUT}")


if __name__ == "__main__":
    main()
