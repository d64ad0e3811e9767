"""``assert_close``: torch.testing's comparison of tensors, numbers and nests of them.

The inputs are walked together: two sequences (lists, tuples; not strings) item by
item, two mappings key by key, and every pair of leaves is compared by the first of
four comparisons that takes it (NOTE [Comparison pairs]). A failure is an
``AssertionError`` whose message is torch's, word for word, so that what users know
(and what their tests match) carries over.
"""

from __future__ import annotations

import cmath
import collections.abc
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np

from ..ops._pointwise import _promote_types  # torch's promotion rule, not numpy's
from ..tensor import Tensor, as_tensor, get_default_dtype

__all__ = ["assert_close", "assert_allclose"]

Msg = Union[str, Callable[[str], str], None]

# torch.testing's default tolerances, (rtol, atol) by dtype; other dtypes compare exactly.
# For a pair of different dtypes (check_dtype=False), the larger of each is used.
_DTYPE_PRECISIONS: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (0.001, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}

# assert_allclose's older, looser table (torch's, kept with its deprecated function).
_ALLCLOSE_PRECISIONS: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-5, 1e-8),
}

# A Python number compares with the tolerances of the dtype it would become.
_NUMBER_DTYPES: dict[type, np.dtype] = {
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


class _Failure(Exception):
    """A failed comparison on its way out: the exception type, the message, and where
    in the nested inputs it happened (a path of sequence indices and mapping keys)."""

    def __init__(self, kind: type[Exception], message: str, path: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.path = path

    def to_error(self, msg: Msg = None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.message
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{key!r}]" for key in self.path)
        return self.kind(msg(text) if msg is not None else text)


class _Unsupported(Exception):
    """A comparison does not take this pair of inputs; the next one is tried."""


def _default_tolerances(
    dtypes: tuple[np.dtype, ...], table: dict[np.dtype, tuple[float, float]] = _DTYPE_PRECISIONS
) -> tuple[float, float]:
    rtols, atols = zip(*(table.get(d, (0.0, 0.0)) for d in dtypes))
    return max(rtols), max(atols)


def _tolerances(
    rtol: float | None, atol: float | None, dtypes: tuple[np.dtype, ...], path: tuple[Any, ...]
) -> tuple[float, float]:
    if rtol is None and atol is None:
        return _default_tolerances(dtypes)
    if rtol is None or atol is None:
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.", path)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not value >= 0:
            raise _Failure(ValueError, f"{name} must be greater than or equal to zero, but got {value}", path)
    return float(rtol), float(atol)


def _diff_line(kind: str, diff: Any, index: tuple[int, ...] | None, tol: float, show_tol: bool) -> str:
    if index is None:  # two scalars
        line = f"{kind} difference: {diff}"
    else:  # the greatest of a tensor's differences, and where it is
        line = f"Greatest {kind.lower()} difference: {diff} at index {index}"
    if show_tol:
        line += f" (up to {tol} allowed)"
    return line


def _mismatch_message(
    what: str, extra: str, rtol: float, atol: float,
    abs_diff: Any, rel_diff: Any,
    abs_index: tuple[int, ...] | None = None, rel_index: tuple[int, ...] | None = None,
) -> str:
    # "equal" when no tolerance is allowed; then the lines name no allowance either
    close = bool(rtol or atol)
    return (
        f"{what} are not {'close' if close else 'equal'}!\n\n{extra}\n"
        + _diff_line("Absolute", abs_diff, abs_index, atol, close) + "\n"
        + _diff_line("Relative", rel_diff, rel_index, rtol, close)
    )


def _scalar_mismatch(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message(
        "Scalars", f"Expected {expected} but got {actual}.", rtol, atol, abs_diff, rel_diff
    )


# NOTE [Comparison pairs]: leaves are compared by the first of these four that takes
# both inputs, in this order (torch's): None with anything; two bools (Python or
# numpy); two numbers (int, float, complex or numpy scalars, bools excluded); two
# tensor-likes, which must be of related types (one an instance of the other's type,
# the same type with allow_subclasses=False) that as_tensor accepts: two Tensors, two
# numpy arrays. A Tensor and an array, or a Tensor and a number, is a TypeError, as
# in torch: convert one side on purpose.


@dataclass(frozen=True)
class _Options:
    """assert_close's keyword arguments, as every leaf comparison reads them."""

    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_device: bool
    check_dtype: bool
    check_stride: bool


class _Leaf:
    """A pair of leaves that one comparison took (``take`` raises _Unsupported if it does
    not); ``compare`` raises a _Failure."""

    def __init__(self, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> None:
        self.actual = actual
        self.expected = expected
        self.path = path
        self.options = options

    @classmethod
    def take(cls, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> "_Leaf":
        raise NotImplementedError

    def compare(self) -> None:
        raise NotImplementedError

    def fail(self, message: str) -> _Failure:
        return _Failure(AssertionError, message, self.path)


class _NoneLeaf(_Leaf):
    @classmethod
    def take(cls, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> "_Leaf":
        if actual is not None and expected is not None:
            raise _Unsupported
        return cls(actual, expected, path, options)

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            raise self.fail(f"None mismatch: {self.actual} is not {self.expected}")


class _BoolLeaf(_Leaf):
    @classmethod
    def take(cls, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> "_Leaf":
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        return cls(bool(actual), bool(expected), path, options)

    def compare(self) -> None:
        if self.actual is not self.expected:
            raise self.fail(f"Booleans mismatch: {self.actual} is not {self.expected}")


def _number(x: Any) -> Any:
    """A Python int, float or complex (numpy scalars by ``item()``); not a bool."""
    if isinstance(x, (bool, np.bool_)):
        raise _Unsupported
    if isinstance(x, np.number):
        return x.item()
    for base in _NUMBER_DTYPES:  # an int subclass (an IntEnum) compares as an int
        if isinstance(x, base):
            return base(x)
    raise _Unsupported


class _NumberLeaf(_Leaf):
    @classmethod
    def take(cls, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> "_Leaf":
        return cls(_number(actual), _number(expected), path, options)

    def __init__(self, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> None:
        super().__init__(actual, expected, path, options)
        dtypes = (_NUMBER_DTYPES[type(actual)], _NUMBER_DTYPES[type(expected)])
        self.rtol, self.atol = _tolerances(options.rtol, options.atol, dtypes, path)

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        if self.options.check_dtype and type(actual) is not type(expected):
            raise self.fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
        if actual == expected:
            return
        if self.options.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        raise self.fail(_scalar_mismatch(actual, expected, self.rtol, self.atol))


class _TensorLeaf(_Leaf):
    actual: Tensor
    expected: Tensor

    @classmethod
    def take(cls, actual: Any, expected: Any, path: tuple[Any, ...], options: _Options) -> "_Leaf":
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not options.allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        return cls(_as_tensor(actual), _as_tensor(expected), path, options)

    def __init__(self, actual: Tensor, expected: Tensor, path: tuple[Any, ...], options: _Options) -> None:
        super().__init__(actual, expected, path, options)
        self.rtol, self.atol = _tolerances(options.rtol, options.atol, (actual.dtype, expected.dtype), path)

    def _attribute(self, name: str, a: Any, e: Any) -> None:
        if a != e:
            raise self.fail(f"The values for attribute '{name}' do not match: {a} != {e}.")

    def compare(self) -> None:
        actual, expected, options = self.actual, self.expected, self.options
        self._attribute("shape", actual.shape, expected.shape)
        if options.check_device:
            self._attribute("device", actual.device, expected.device)
        if options.check_dtype:
            self._attribute("dtype", actual.dtype, expected.dtype)
        if options.check_stride:
            self._attribute("stride()", _stride(actual._data), _stride(expected._data))
        a, e = actual._data, expected._data
        if a.dtype != e.dtype:  # check_dtype=False: compare in the promoted dtype
            common = _promote_types(a.dtype, e.dtype)
            a, e = a.astype(common), e.astype(common)
        matches = _isclose(a, e, self.rtol, self.atol, options.equal_nan)
        if matches.all():
            return
        if a.ndim == 0:
            raise self.fail(_scalar_mismatch(a.item(), e.item(), self.rtol, self.atol))
        raise self.fail(_tensor_mismatch(a, e, matches, self.rtol, self.atol))


def _as_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    try:
        return as_tensor(x)
    except Exception:
        raise _Unsupported from None


def _stride(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """torch.isclose: equal (infinities included), or a finite difference within
    ``atol + rtol * |expected|``, or both NaN when ``equal_nan``."""
    with np.errstate(invalid="ignore", over="ignore"):
        close = a == e
        if a.dtype.kind in "fc":
            if equal_nan:
                close |= np.isnan(a) & np.isnan(e)
            if rtol or atol:
                # in the inputs' own precision, as torch computes it
                error = np.abs(a - e)
                close |= np.isfinite(error) & (error <= atol + np.abs(rtol * e))
        elif rtol or atol:  # integers and bools: exact differences, float allowances
            error = np.abs(a.astype(np.int64) - e.astype(np.int64))
            close |= error <= atol + rtol * np.abs(e.astype(np.float64))
    return np.asarray(close)


def _tensor_mismatch(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, m = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype.kind not in "fc":
        # integers and bools: differences as int64 (no wrap-around), the relative one
        # in the default dtype, as a true division of integers gives
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0  # the greatest differences are looked for among mismatches only
        rel_diff = abs_diff / np.abs(e)
        if a.dtype.kind not in "fc":
            rel_diff = rel_diff.astype(get_default_dtype())
        rel_diff[m] = 0
    abs_at, rel_at = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))  # NaN counts as the greatest
    return _mismatch_message(
        "Tensor-likes", extra, rtol, atol,
        abs_diff[abs_at].item(), rel_diff[rel_at].item(),
        tuple(int(i) for i in np.unravel_index(abs_at, matches.shape)),
        tuple(int(i) for i in np.unravel_index(rel_at, matches.shape)),
    )


_LEAVES = (_NoneLeaf, _BoolLeaf, _NumberLeaf, _TensorLeaf)  # tried in this order: NOTE [Comparison pairs]


def _is_sequence(x: Any) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pair_up(actual: Any, expected: Any, path: tuple[Any, ...], out: list[_Leaf], options: _Options) -> None:
    """Walk the two nests together, appending one _Leaf per pair of leaves."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _pair_up(a, e, path + (i,), out, options)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, additional = _sorted(expected_keys - actual_keys), _sorted(actual_keys - expected_keys)
            raise _Failure(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {missing}\n"
                f"Additional keys in the actual mapping: {additional}",
                path,
            )
        for key in _sorted(actual_keys):  # the first failure reported is the same every run
            _pair_up(actual[key], expected[key], path + (key,), out, options)
        return
    for kind in _LEAVES:
        try:
            out.append(kind.take(actual, expected, path, options))
            return
        except _Unsupported:
            continue
    raise _Failure(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.",
        path,
    )


def _sorted(keys: set[Any]) -> list[Any]:
    try:
        return sorted(keys)
    except TypeError:
        return list(keys)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: Msg = None,
) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and numpy arrays, compared with each other) must have the same shape,
    and by default the same device and dtype; then every element must satisfy
    ``|actual - expected| <= atol + rtol * |expected|`` (equal infinities count as
    close; NaNs only with ``equal_nan=True``). Without ``rtol`` and ``atol`` (give both
    or neither) the tolerances come from the dtype: float16 ``1e-3``/``1e-5``, float32
    and complex64 ``1.3e-6``/``1e-5``, float64 and complex128 ``1e-7``/``1e-7``,
    integers and bools exactly. Python numbers compare as the dtype they would become
    (a float as float64), bools by identity, ``None`` only with ``None``.

    Sequences and mappings are compared item by item, recursively. A Tensor is not
    compared with a list, an array or a number (that is a ``TypeError``, as in torch):
    convert one side, e.g. ``ag.tensor(expected)``.

    On failure it raises ``AssertionError`` with torch's message: how many elements
    mismatch, the greatest absolute and relative differences and where they are, and
    for nested inputs which item failed. ``msg`` replaces that message (a string) or
    edits it (a callable taking the message). ``check_stride`` also compares strides;
    ``check_layout`` is accepted for torch's signature (aiograd tensors are all strided).
    """
    del check_layout  # every aiograd tensor is dense and strided
    options = _Options(
        allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
        check_device=check_device, check_dtype=check_dtype, check_stride=check_stride,
    )
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    leaves: list[_Leaf] = []
    try:
        # torch's order: every pair is formed (a type or structure error wins), then compared
        _pair_up(actual, expected, (), leaves, options)
    except _Failure as failure:
        raise failure.to_error() from None
    for leaf in leaves:
        try:
            leaf.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    msg: str = "",
) -> None:
    """Deprecated, as in torch: use ``assert_close``.

    Kept for code written against torch's older function: ``expected`` is converted
    to ``actual``'s dtype, dtypes are not checked, NaNs are equal by default, and the
    default tolerances are the older, looser ones (float32 ``1e-4``/``1e-5``).
    """
    warnings.warn(
        "`aiograd.testing.assert_allclose()` is deprecated (as torch's is). "
        "Please use `aiograd.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances((actual.dtype, expected.dtype), _ALLCLOSE_PRECISIONS)
    __tracebackhide__ = True
    assert_close(
        actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
        check_device=True, check_dtype=False, check_stride=False, msg=msg or None,
    )
