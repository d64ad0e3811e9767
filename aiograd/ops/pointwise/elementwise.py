"""Elementwise ops and their derivative rules: arithmetic, unary math, clamp, where, comparisons.

The table of this family (NOTE [Op tables] in _table.py) is a ``PointwiseTable``:
most ops here are one registration made from a numpy kernel and a derivative
formula (NOTE [Formulas] in _pointwise.py); the others (rounding division,
remainder, pow, clamp, where, gelu, softplus, round) have a hand-written forward
and Node, registered with ``@ELEMENTWISE.op``. Binary ops broadcast like numpy
and promote like torch (NOTE [Type promotion]); each rule reduces its gradient
back to the input's shape with ``sum_to``. Rules are written once in numpy
terms and also serve create_graph passes (NOTE [One rule for both modes] in
_common.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...autograd.graph import Node, Shape, link_one, record, sum_to
from ...autograd.saved import Saved, SavedOperand, SavedTensor, save, save_output, unpack
from ...tensor import Tensor, new_tensor
from .._common import (
    as_tensor_operand,
    broadcast_shapes,
    check_operand,
    common_device,
    grad_enabled,
    needs_grad,
    operand_error,
    torch_dtype_name,
    wrap,
)
from .._pointwise import PointwiseTable, cast_result, make_binary, make_unary, prep_operands, result_dtype
from .._pointwise import result_type as _result_type
from ._scipy import scipy_special as _scipy_special
from ..indexing.search import nonzero

ELEMENTWISE = PointwiseTable("pointwise.elementwise")


def _saved_value(node: Node, s: Any, graph: bool) -> Any:
    """A saved operand: a saved tensor (unpacked with checks) or a Python scalar kept as is."""
    if isinstance(s, SavedTensor):
        return unpack(node, s, graph)
    if s is None:
        return unpack(node, None, graph)  # raises the "backward through the graph a second time" error
    return s


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


def _grad_enabled_for(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def zeros_like_grad(g: Any, shape: tuple[int, ...] | None = None) -> Any:
    """Zeros of ``g``'s dtype (a Tensor in a create_graph pass) and of ``shape`` (default ``g``'s)."""
    shape = g.shape if shape is None else shape
    if g.__class__ is Tensor:
        return Tensor._wrap(np.zeros(shape, g._data.dtype), g._device)
    return np.zeros(shape, g.dtype)


# ----- arithmetic ------------------------------------------------------------------------

mul = ELEMENTWISE.binary(
    "mul", np.multiply, da="g * b", db="g * a", node="MulBackward0", ufuncs=(np.multiply,), aliases=("multiply",),
    operators=("__mul__", "__rmul__", ), doc="Elementwise product with broadcasting.",
)
multiply = mul
add = ELEMENTWISE.binary(
    "add", np.add, da="g", db="g", node="AddBackward0", alpha=mul, ufuncs=(np.add,),
    operators=("__add__", "__radd__"), doc="``input + alpha * other`` with broadcasting.",
)
sub = ELEMENTWISE.binary(
    "sub", np.subtract, da="g", db="-g", node="SubBackward0", alpha=mul, ufuncs=(np.subtract,),
    aliases=("subtract",), operators=("__sub__",), reflected=("__rsub__",),
    doc="``input - alpha * other`` with broadcasting.",
)
subtract = sub
_true_divide, DivBackward0 = make_binary(
    "div", np.true_divide, da="g / b", db="-g * a / (b * b)", node="DivBackward0", integers="float"
)


class DivBackward2(Node):
    """Backward of ``div`` with a rounding mode: zero for both operands (not ``g * 0``, so an
    infinite gradient still gives 0, as torch)."""

    __slots__ = ("a_shape", "b_shape")
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a_shape = a_shape
        self.b_shape = b_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        return (
            zeros_like_grad(g, self.a_shape) if self.should_compute_output(0) else None,
            zeros_like_grad(g, self.b_shape) if self.should_compute_output(1) else None,
        )


class NotImplementedBackward(Node):
    """The grad_fn of an op that torch gives no derivative (``floor_divide``, ``number % tensor``):
    the forward records it, as torch does, and a backward through it raises."""

    __slots__ = ("op",)
    op: str

    def __init__(self, op: str) -> None:
        self._init_node()
        self.op = op

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, grads: list[Any]) -> Any:
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


@ELEMENTWISE.op(nodes=(DivBackward0, DivBackward2), aliases=("divide", "true_divide"), operators=("__truediv__",),
                reflected=("__rtruediv__",), ufuncs=(np.true_divide,))
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division; ``rounding_mode`` "trunc"/"floor" round the exact quotient
    toward zero/down (their gradient is zero, as torch's DivBackward2)."""
    if rounding_mode is None:
        return _true_divide(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    return _rounded_division(input, other, rounding_mode, "div", DivBackward2)


divide = true_divide = div


# ----- rounding division, floor_divide, remainder --------------------------------------------


def _in_dtype(x: Any, dtype: np.dtype) -> np.ndarray:
    return np.asarray(x).astype(dtype, copy=False)


def _refuse_zero_divisor(bd: np.ndarray, dtype: np.dtype, op: str = "div_floor") -> None:
    """torch's errors for integer division ops: a zero integer divisor, and bool operands (``op``: its kernel)."""
    if dtype.kind in "iu" and not np.all(bd):
        raise RuntimeError("ZeroDivisionError")
    if dtype.kind == "b":
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")


def rounded_quotient(ad: Any, bd: Any, mode: str, dtype: np.dtype) -> np.ndarray:
    """``a / b`` rounded down ("floor") or toward zero ("trunc"), exactly, in ``dtype``.

    NOTE [Exact rounding division]: the quotient is not rounded to a float first
    (``floor(0.25 / 0.001)`` is 250, the exact quotient 249.99...). Floats use numpy's
    floor_divide, which is Python's and torch's algorithm (fmod, then correct), and
    trunc is ``trunc(a / b)`` as torch. Integers stay integers (exact beyond 2**53),
    and a zero integer divisor raises torch's ZeroDivisionError.
    """
    a, b = _in_dtype(ad, dtype), _in_dtype(bd, dtype)
    if dtype.kind in "biu":
        _refuse_zero_divisor(b, dtype)
        q = np.floor_divide(a, b)
        if mode == "trunc":  # floor + 1 where the exact quotient is negative and not whole
            q = q + ((q * b != a) & ((a < 0) != (b < 0)))
        return q
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if mode == "floor":
            return np.floor_divide(a, b)
        return np.trunc(np.true_divide(a, b))


def remainder_values(ad: Any, bd: Any, dtype: np.dtype) -> np.ndarray:
    """``a - b * floor(a / b)`` in ``dtype``, as torch: the sign of ``b``, from ``fmod`` (so 0 % -3 is +0)."""
    a, b = _in_dtype(ad, dtype), _in_dtype(bd, dtype)
    if dtype.kind in "biu":
        _refuse_zero_divisor(b, dtype, "remainder")
        return np.remainder(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmod(a, b)
        return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)


def _rounded_division(input: Any, other: Any, mode: str, op: str, node_cls: type[Node]) -> Tensor:
    a, b, ad, bd, device = prep_operands(input, other, op)
    out = wrap(rounded_quotient(ad, bd, mode, result_dtype(a, b)), device)
    if needs_grad(a, b):
        node = NotImplementedBackward(op) if node_cls is NotImplementedBackward else DivBackward2(_shape(a), _shape(b))
        record(node, (a, b), (out,))
    return out


@ELEMENTWISE.op(nodes=(NotImplementedBackward,), operators=("__floordiv__",), reflected=("__rfloordiv__",),
                ufuncs=(np.floor_divide,))
def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``: the quotient rounded down, exactly (as ``div(..., rounding_mode="floor")``).
    Not differentiable: as torch, a backward through it raises."""
    return _rounded_division(input, other, "floor", "floor_divide", NotImplementedBackward)


class RemainderBackward0(Node):
    """``x % c`` for a number c: the gradient passes to x."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any, None]:
        return grads[0], None


class RemainderBackward1(Node):
    """``a % b`` for two tensors: ``g`` to a, ``-g * floor(a / b)`` to b (the quotient is a constant
    of the pass: its own derivative is zero)."""

    __slots__ = ("a", "b", "a_shape", "b_shape", "dtype")
    a: SavedOperand
    b: SavedOperand
    a_shape: Shape
    b_shape: Shape
    dtype: np.dtype
    rounding: ClassVar[str] = "floor"  # how the quotient in b's gradient is rounded

    def __init__(self, a: SavedOperand, b: SavedOperand, a_shape: Shape, b_shape: Shape, dtype: np.dtype) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.a_shape = a_shape
        self.b_shape = b_shape
        self.dtype = dtype

    def release_variables(self) -> None:
        self.a = None
        self.b = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        ga = sum_to(g, self.a_shape) if self.should_compute_output(0) else None
        gb = None
        if self.should_compute_output(1):
            q: Any = rounded_quotient(
                _saved_value(self, self.a, False), _saved_value(self, self.b, False), self.rounding, self.dtype
            )
            if g.__class__ is Tensor:
                q = Tensor._wrap(q, g._device)
            gb = sum_to(-g * q, self.b_shape)
        return ga, gb


@ELEMENTWISE.op(nodes=(RemainderBackward0, RemainderBackward1, NotImplementedBackward), operators=("__mod__",),
                reflected=("__rmod__",), ufuncs=(np.remainder,))
def remainder(input: Any, other: Any) -> Tensor:
    """``input % other``: ``input - other * floor(input / other)``, with the sign of ``other`` (as torch)."""
    a, b, ad, bd, device = prep_operands(input, other, "remainder")
    dtype = result_dtype(a, b)
    out = wrap(remainder_values(ad, bd, dtype), device)
    if needs_grad(a, b):
        node: Node
        if not isinstance(a, Tensor):
            node = NotImplementedBackward("remainder")
        elif not isinstance(b, Tensor):
            node = RemainderBackward0()
        else:
            need = _grad_enabled_for(b)
            node = RemainderBackward1(save(a) if need else 0, save(b) if need else 0, _shape(a), _shape(b), dtype)
        record(node, (a, b), (out,))
    return out


class FmodBackward0(RemainderBackward0):
    """``fmod(x, c)`` for a number c: the gradient passes to x."""

    __slots__ = ()


class FmodBackward1(RemainderBackward1):
    """``fmod(a, b)`` for two tensors: ``g`` to a, ``-g * trunc(a / b)`` to b."""

    __slots__ = ()
    rounding: ClassVar[str] = "trunc"


def fmod_values(ad: Any, bd: Any, dtype: np.dtype) -> np.ndarray:
    """C's fmod in ``dtype``: ``a - b * trunc(a / b)``, with the sign of ``a`` (as torch)."""
    a, b = _in_dtype(ad, dtype), _in_dtype(bd, dtype)
    if dtype.kind in "biu":
        _refuse_zero_divisor(b, dtype, "fmod")
        return np.fmod(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b)


@ELEMENTWISE.op(nodes=(FmodBackward0, FmodBackward1), ufuncs=(np.fmod,))
def fmod(input: Tensor, other: Any) -> Tensor:
    """C's remainder ``input - other * trunc(input / other)``: the sign of ``input`` (``remainder`` takes
    the sign of ``other``). A zero integer divisor raises, as torch."""
    a, b, ad, bd, device = prep_operands(input, other, "fmod")
    dtype = result_dtype(a, b)
    out = wrap(fmod_values(ad, bd, dtype), device)
    if needs_grad(a, b):
        node: Node
        if not isinstance(b, Tensor):
            node = FmodBackward0()
        else:
            need = _grad_enabled_for(b)
            node = FmodBackward1(save(a) if need and isinstance(a, Tensor) else a if need else 0,
                                 save(b) if need else 0, _shape(a), _shape(b), dtype)
        record(node, (a, b), (out,))
    return out


# ----- pow ---------------------------------------------------------------------------------


class PowBackward0(Node):
    """``x ** c`` for a Python number c."""

    __slots__ = ("x", "exponent")
    x: Saved
    exponent: Any

    def __init__(self, x: Saved, exponent: Any) -> None:
        self._init_node()
        self.x = x
        self.exponent = exponent

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        x = unpack(self, self.x, g.__class__ is Tensor)
        c = self.exponent
        if c == 0:
            return (zeros_like_grad(g),)  # zeros even where x ** -1 is inf or x is NaN (as torch)
        return (g * (c * x ** (c - 1)),)


class PowBackward1(Node):
    """``a ** b`` for two tensors (or a number base).

    NOTE [pow at zero]: as torch. The base gets ``g * b * a ** (b - 1)`` except where
    ``b == 0``, where it gets 0 (``0 ** 0`` would give ``0 * inf``). The exponent gets
    ``g * a ** b * log(a)`` except where ``a == 0`` and ``b >= 0``, where it gets 0 (the
    one-sided limit); with ``b < 0`` that is ``inf * -inf = -inf``, and a negative base
    gives NaN (log of a negative number).
    """

    __slots__ = ("a", "b", "out", "a_shape", "b_shape")
    a: SavedOperand
    b: SavedOperand
    out: SavedOperand
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a: SavedOperand, b: SavedOperand, out: SavedOperand, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.out = out
        self.a_shape = a_shape
        self.b_shape = b_shape

    def release_variables(self) -> None:
        self.a = None
        self.b = None
        self.out = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        a = _saved_value(self, self.a, graph)
        b = _saved_value(self, self.b, graph)
        ga = gb = None
        # np.where and np.log reach aiograd's where/log in a create_graph pass (NOTE [One rule for both modes]).
        if self.should_compute_output(0):
            ga = sum_to(np.where(b == 0, 0, g * (b * a ** (b - 1))), self.a_shape)
        if self.should_compute_output(1):
            out = unpack(self, self.out, graph)
            log_a = np.log(np.float64(a) if isinstance(a, (int, float)) else a)
            gb = sum_to(np.where((b >= 0) & (a == 0), 0, g * (out * log_a)), self.b_shape)
        return ga, gb


class PowBackward2(PowBackward1):
    """``c ** b`` for a number base c (torch's pow.Scalar)."""

    __slots__ = ()


@ELEMENTWISE.op(nodes=(PowBackward0, PowBackward1, PowBackward2), operators=("__pow__",), reflected=("__rpow__",),
                ufuncs=(np.power,))
def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` with broadcasting."""
    if isinstance(input, Tensor) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = input
        xd = x._data
        if xd.dtype.kind in "biu" and isinstance(exponent, int) and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        res = xd * xd if exponent == 2 else np.power(xd, exponent)
        out = wrap(cast_result(res, x, exponent), x._device)
        if x._requires_grad and grad_enabled():
            link_one(PowBackward0(save(x), exponent), x, out)
        return out
    a, b, ad, bd, device = prep_operands(input, exponent, "pow", "exponent")
    out = wrap(cast_result(np.power(ad, bd), a, b), device)
    if needs_grad(a, b):
        cls = PowBackward1 if isinstance(a, Tensor) else PowBackward2
        node = cls(save(a) if isinstance(a, Tensor) else a, save(b) if isinstance(b, Tensor) else b,
                   save_output(out) if _grad_enabled_for(b) else 0, _shape(a), _shape(b))
        record(node, (a, b), (out,))
    return out


@ELEMENTWISE.op(nodes=(PowBackward0,), ufuncs=(np.square,))
def square(input: Tensor) -> Tensor:
    """``input ** 2`` (records PowBackward0, as torch)."""
    return pow(input, 2)


# ----- unary math --------------------------------------------------------------------------


def sign_numpy(x: np.ndarray) -> np.ndarray:
    """torch's sign: -1, 0 or 1, and 0 for NaN (numpy would give NaN); bools stay bools."""
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind == "f":
        return np.asarray((x > 0).astype(x.dtype) - (x < 0))  # comparisons with NaN are false
    return np.sign(x)


def _sign_any(v: Any) -> Any:
    return sign(v) if v.__class__ is Tensor else sign_numpy(v)


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


_unary = ELEMENTWISE.unary
exp = _unary("exp", np.exp, "g * v", saves="output", node="ExpBackward0", ufuncs=(np.exp,), inplace=True)
log = _unary("log", np.log, "g / v", saves="input", node="LogBackward0", ufuncs=(np.log,), inplace=True)
log1p = _unary("log1p", np.log1p, "g / (v + 1)", saves="input", node="Log1PBackward0", ufuncs=(np.log1p,),
               inplace=True)
log2 = _unary("log2", np.log2, "g / (v * 0.6931471805599453)", saves="input", node="Log2Backward0",
              ufuncs=(np.log2,))
log10 = _unary("log10", np.log10, "g / (v * 2.302585092994046)", saves="input", node="Log10Backward0",
               ufuncs=(np.log10,))
sqrt = _unary("sqrt", np.sqrt, "g / (v * 2)", saves="output", node="SqrtBackward0", ufuncs=(np.sqrt,), inplace=True)
rsqrt = _unary("rsqrt", _rsqrt, "g * (v * v * v * -0.5)", saves="output", node="RsqrtBackward0")
# NOTE [NaN in derivative rules]: torch's rules at NaN, kept by writing each rule's mask the
# way torch does: abs uses sign(NaN) = 0 (so 0), relu zeroes where "output <= 0" (so NaN
# passes the gradient; written "output != 0", the same mask since the output is never
# negative), maximum/minimum and clamp use comparisons, which are false at NaN.
# Masks multiply the gradient (a select would be 10x slower in numpy), so an infinite
# incoming gradient meets a 0 mask as NaN where torch's select gives 0.
abs = _unary("abs", np.abs, "g * sign_any(v)", saves="input", node="AbsBackward0", ufuncs=(np.absolute,),
             operators=("__abs__",), inplace=True, env={"sign_any": _sign_any})
neg = _unary("neg", np.negative, "-g", saves="none", node="NegBackward0", integers="keep", ufuncs=(np.negative,),
             aliases=("negative",), operators=("__neg__",), inplace=True, doc="``-input``.")
negative = neg
sin = _unary("sin", np.sin, "g * np.cos(v)", saves="input", node="SinBackward0", ufuncs=(np.sin,), inplace=True)
cos = _unary("cos", np.cos, "g * -np.sin(v)", saves="input", node="CosBackward0", ufuncs=(np.cos,), inplace=True)
tan = _unary("tan", np.tan, "g * (v * v + 1)", saves="output", node="TanBackward0", ufuncs=(np.tan,))
tanh = _unary("tanh", np.tanh, "g * (1 - v * v)", saves="output", node="TanhBackward0", ufuncs=(np.tanh,),
              inplace=True)
sigmoid = _unary("sigmoid", _stable_sigmoid, "g * (v * (1 - v))", saves="output", node="SigmoidBackward0",
                 inplace=True)
# relu's mask: ~(output <= 0) is output != 0, as the output max(x, 0) is never below 0 (NaN
# passes both ways): one pass over the output where the negation took a second one.
relu = _unary("relu", _relu, "g * (v != 0)", saves="output", node="ReluBackward0", inplace=True)
reciprocal = _unary("reciprocal", np.reciprocal, "g * -(v * v)", saves="output", node="ReciprocalBackward0",
                    ufuncs=(np.reciprocal,), inplace=True)

def erf_kernel(x: np.ndarray) -> np.ndarray:
    """scipy.special.erf of an array (NOTE [erf])."""
    return _scipy_special().erf(x)


erf = _unary("erf", erf_kernel, "g * (1.1283791670955126 * np.exp(-(v * v)))", saves="input", node="ErfBackward0",
             doc="The error function, elementwise, differentiable (scipy.special.erf).")

# ----- exponentials, hyperbolic and inverse trigonometric functions ------------------------------
# torch's derivative formulas (derivatives.yaml), written in numpy terms so that they also
# serve create_graph passes (NOTE [One rule for both modes]).

expm1 = _unary("expm1", np.expm1, "g * (v + 1)", saves="output", node="Expm1Backward0", ufuncs=(np.expm1,),
               inplace=True, doc="``exp(x) - 1``, accurate for small ``x``.")
exp2 = _unary("exp2", np.exp2, "g * (v * 0.6931471805599453)", saves="output", node="Exp2Backward0",
              ufuncs=(np.exp2,), inplace=True, doc="``2 ** x``, elementwise.")
sinh = _unary("sinh", np.sinh, "g * np.cosh(v)", saves="input", node="SinhBackward0", ufuncs=(np.sinh,),
              inplace=True)
cosh = _unary("cosh", np.cosh, "g * np.sinh(v)", saves="input", node="CoshBackward0", ufuncs=(np.cosh,),
              inplace=True)
asinh = _unary("asinh", np.arcsinh, "g / np.sqrt(v * v + 1)", saves="input", node="AsinhBackward0",
               ufuncs=(np.arcsinh,), aliases=("arcsinh",), inplace=True)
arcsinh = asinh
acosh = _unary("acosh", np.arccosh, "g / np.sqrt(v * v - 1)", saves="input", node="AcoshBackward0",
               ufuncs=(np.arccosh,), aliases=("arccosh",), inplace=True, doc="Elementwise acosh (NaN below 1).")
arccosh = acosh
atanh = _unary("atanh", np.arctanh, "g / (1 - v * v)", saves="input", node="AtanhBackward0", ufuncs=(np.arctanh,),
               aliases=("arctanh",), inplace=True)
arctanh = atanh
asin = _unary("asin", np.arcsin, "g / np.sqrt(1 - v * v)", saves="input", node="AsinBackward0",
              ufuncs=(np.arcsin,), aliases=("arcsin",), inplace=True)
arcsin = asin
acos = _unary("acos", np.arccos, "-g / np.sqrt(1 - v * v)", saves="input", node="AcosBackward0",
              ufuncs=(np.arccos,), aliases=("arccos",), inplace=True)
arccos = acos
atan = _unary("atan", np.arctan, "g / (v * v + 1)", saves="input", node="AtanBackward0", ufuncs=(np.arctan,),
              aliases=("arctan",), inplace=True)
arctan = atan
deg2rad = _unary("deg2rad", np.deg2rad, "g * 0.017453292519943295", saves="none", node="Deg2RadBackward0",
                 ufuncs=(np.deg2rad, np.radians), inplace=True, doc="Degrees to radians, elementwise.")
rad2deg = _unary("rad2deg", np.rad2deg, "g * 57.29577951308232", saves="none", node="Rad2DegBackward0",
                 ufuncs=(np.rad2deg, np.degrees), inplace=True, doc="Radians to degrees, elementwise.")


# ----- piecewise constant: zero gradient ---------------------------------------------------------

_ZERO = "zeros_like_grad(g)"  # zeros even where g is inf (as torch)
_ZENV = {"zeros_like_grad": zeros_like_grad}
floor = _unary("floor", np.floor, _ZERO, saves="none", node="FloorBackward0", integers="copy", ufuncs=(np.floor,),
               operators=("__floor__",), env=_ZENV, doc="Elementwise floor; its gradient is zero (as torch).")
ceil = _unary("ceil", np.ceil, _ZERO, saves="none", node="CeilBackward0", integers="copy", ufuncs=(np.ceil,),
              operators=("__ceil__",), env=_ZENV, doc="Elementwise ceil; its gradient is zero (as torch).")
trunc = _unary("trunc", np.trunc, _ZERO, saves="none", node="TruncBackward0", integers="copy", ufuncs=(np.trunc,),
               operators=("__trunc__",), env=_ZENV, doc="Elementwise trunc; its gradient is zero (as torch).")
sign = _unary("sign", sign_numpy, _ZERO, saves="none", node="SignBackward0", integers="keep", ufuncs=(np.sign,),
              env=_ZENV, doc="torch's sign (-1, 0 or 1; 0 for NaN); its gradient is zero (as torch).")
_round, RoundBackward0 = make_unary("round", np.round, _ZERO, saves="none", node="RoundBackward0", integers="copy",
                                    env=_ZENV)


@ELEMENTWISE.op(nodes=(RoundBackward0,))
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even (as torch), to ``decimals`` places; zero gradient."""
    if not decimals:
        return _round(input)
    xd = input._data
    if xd.dtype.kind in "biu":
        return new_tensor(xd.copy(), input._device)
    out = wrap(np.round(xd, decimals).astype(xd.dtype, copy=False), input._device)
    if input._requires_grad and grad_enabled():
        link_one(RoundBackward0(), input, out)
    return out


@ELEMENTWISE.op(name="__round__", method=False, operators=("__round__",), export=False)
def _dunder_round(self: Tensor, ndigits: int | None = None) -> Tensor:
    """``round(tensor, ndigits)``."""
    return round(self, decimals=ndigits or 0)


@ELEMENTWISE.op(name="__pos__", method=False, operators=("__pos__",), export=False)
def _pos(self: Tensor) -> Tensor:
    """``+tensor``: the tensor itself."""
    return self


# ----- no gradient ---------------------------------------------------------------------------

isnan = ELEMENTWISE.predicate("isnan", np.isnan, ufuncs=(np.isnan,))
isinf = ELEMENTWISE.predicate("isinf", np.isinf, ufuncs=(np.isinf,))
isfinite = ELEMENTWISE.predicate("isfinite", np.isfinite, ufuncs=(np.isfinite,))
logical_not = ELEMENTWISE.predicate("logical_not", np.logical_not, ufuncs=(np.logical_not,), operators=("__invert__",))

_compare = ELEMENTWISE.compare
eq = _compare("eq", np.equal, ufuncs=(np.equal,), operators=("__eq__",))
ne = _compare("ne", np.not_equal, ufuncs=(np.not_equal,), operators=("__ne__",))
lt = _compare("lt", np.less, ufuncs=(np.less,), operators=("__lt__",))
le = _compare("le", np.less_equal, ufuncs=(np.less_equal,), operators=("__le__",))
gt = _compare("gt", np.greater, ufuncs=(np.greater,), operators=("__gt__",))
ge = _compare("ge", np.greater_equal, ufuncs=(np.greater_equal,), operators=("__ge__",))
logical_and = _compare("logical_and", np.logical_and, ufuncs=(np.logical_and,), operators=("__and__",),
                       reflected=("__rand__",))
logical_or = _compare("logical_or", np.logical_or, ufuncs=(np.logical_or,), operators=("__or__",),
                      reflected=("__ror__",))
logical_xor = _compare("logical_xor", np.logical_xor, ufuncs=(np.logical_xor,), operators=("__xor__",),
                       reflected=("__rxor__",))


@ELEMENTWISE.op(method=False)
def result_type(*operands: Any) -> np.dtype:
    """The dtype torch gives an elementwise op on ``operands`` (Tensors, arrays, Python numbers)."""
    return _result_type(*operands)


# ----- maximum / minimum ---------------------------------------------------------------------


def _tie_weight(x: Any, y: Any, g: Any, loses: Any) -> Any:
    """0.5 where x == y (ties split the gradient), 0 where x loses to y, else 1: an operand gets
    none only where it loses, so where either is NaN both get all of it (as torch). A constant
    (a Tensor in a create_graph pass)."""
    xd = x._data if isinstance(x, Tensor) else x
    yd = y._data if isinstance(y, Tensor) else y
    w = np.where(xd == yd, 0.5, ~loses(xd, yd)).astype(g.dtype, copy=False)
    return Tensor._wrap(w, g._device) if isinstance(g, Tensor) else w


_ENV = {"tie_weight": _tie_weight, "less": np.less, "greater": np.greater}
maximum = ELEMENTWISE.binary(
    "maximum", np.maximum, da="g * tie_weight(a, b, g, less)", db="g * tie_weight(b, a, g, less)",
    node="MaximumBackward0", ufuncs=(np.maximum,), env=_ENV,
    doc="Elementwise maximum with broadcasting (NaN propagates); ties split the gradient evenly.",
)
minimum = ELEMENTWISE.binary(
    "minimum", np.minimum, da="g * tie_weight(a, b, g, greater)", db="g * tie_weight(b, a, g, greater)",
    node="MinimumBackward0", ufuncs=(np.minimum,), env=_ENV,
    doc="Elementwise minimum with broadcasting (NaN propagates); ties split the gradient evenly.",
)


# ----- two-operand math: atan2, hypot, logaddexp, copysign -----------------------------------------


def _sigmoid_any(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` without overflow: the weight logaddexp gives each operand."""
    return sigmoid(x) if isinstance(x, Tensor) else _stable_sigmoid(np.asarray(x))


def _copysign_ratio(a: Any, out: Any, g: Any) -> Any:
    """``copysign(a, b) / a`` (+-1), 0 where ``a`` is 0, NaN where it is NaN (torch's
    copysign_tensor_self_backward): a constant of the pass (a Tensor in a create_graph pass)."""
    ad = a._data if isinstance(a, Tensor) else np.asarray(a)
    od = out._data if isinstance(out, Tensor) else out
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ad == 0, 0, od / ad).astype(g.dtype, copy=False)
    return Tensor._wrap(r, g._device) if isinstance(g, Tensor) else r


def _atan2_recip(a: Any, b: Any) -> Any:
    """``1 / (a**2 + b**2)``, 0 where that is 0 (torch's atan2_backward: no NaN at the origin)."""
    denom = a * a + b * b
    if isinstance(denom, Tensor):
        zero = denom._data == 0
        return where(Tensor._wrap(zero, denom._device), 0.0, 1 / denom) if zero.any() else 1 / denom
    with np.errstate(divide="ignore"):
        return np.where(denom == 0, 0, 1 / denom).astype(np.result_type(denom), copy=False)


atan2 = ELEMENTWISE.binary(
    "atan2", np.arctan2, da="g * b * recip(a, b)", db="g * -a * recip(a, b)", node="Atan2Backward0",
    integers="float", numbers=False, ufuncs=(np.arctan2,), aliases=("arctan2",), env={"recip": _atan2_recip},
    doc="The angle of the point ``(other, input)``: ``atan(input / other)`` in the right quadrant.",
)
arctan2 = atan2
hypot = ELEMENTWISE.binary(
    "hypot", np.hypot, da="g * a / out", db="g * b / out", node="HypotBackward0", integers="refuse", numbers=False,
    ufuncs=(np.hypot,), doc="``sqrt(input ** 2 + other ** 2)`` without overflow; floating inputs only (as torch).",
)
logaddexp = ELEMENTWISE.binary(
    "logaddexp", np.logaddexp, da="g * sigmoid_any(a - b)", db="g * sigmoid_any(b - a)", node="LogaddexpBackward0",
    integers="refuse", numbers=False, ufuncs=(np.logaddexp,), env={"sigmoid_any": _sigmoid_any},
    doc="``log(exp(input) + exp(other))``, computed stably; floating inputs only (as torch).",
)
logaddexp2 = ELEMENTWISE.binary(
    "logaddexp2", np.logaddexp2, da="g * sigmoid_any((a - b) * 0.6931471805599453)",
    db="g * sigmoid_any((b - a) * 0.6931471805599453)", node="Logaddexp2Backward0", integers="refuse", numbers=False,
    ufuncs=(np.logaddexp2,), env={"sigmoid_any": _sigmoid_any},
    doc="``log2(2 ** input + 2 ** other)``, computed stably; floating inputs only (as torch).",
)
_COPYSIGN = {"copysign_ratio": _copysign_ratio, "zeros_like_grad": zeros_like_grad}
_copysign_tensor, CopysignBackward0 = make_binary(
    "copysign", np.copysign, da="g * copysign_ratio(a, out, g)", db="zeros_like_grad(g)", node="CopysignBackward0",
    integers="float", env=_COPYSIGN,
)
_copysign_number, CopysignBackward1 = make_binary(
    "copysign", np.copysign, da="g * copysign_ratio(a, out, g)", db="g", node="CopysignBackward1",
    integers="float", env=_COPYSIGN,
)


@ELEMENTWISE.op(nodes=(CopysignBackward0, CopysignBackward1), ufuncs=(np.copysign,))
def copysign(input: Tensor, other: Any) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other`` (-0.0 counts as negative); integer
    inputs give floats. ``other`` gets a zero gradient, as torch."""
    if isinstance(other, (bool, int, float)):
        return _copysign_number(input, other)
    return _copysign_tensor(input, other)


# ----- clamp -----------------------------------------------------------------------------------


class ClampBackward1(Node):
    """clamp with number bounds: the gradient passes where ``min <= x <= max`` (all of it at a bound)."""

    __slots__ = ("x", "min", "max")
    x: Saved
    min: Any
    max: Any

    def __init__(self, x: Saved, min: Any, max: Any) -> None:
        self._init_node()
        self.x = x
        self.min = min
        self.max = max

    def release_variables(self) -> None:
        self.x = None

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        xd = unpack(self, self.x, False)
        mask = np.ones(xd.shape, dtype=bool)
        if self.min is not None:
            mask &= xd >= self.min
        if self.max is not None:
            mask &= xd <= self.max
        return (g * mask,)


class ClampMinBackward0(ClampBackward1):
    __slots__ = ()


class ClampMaxBackward0(ClampBackward1):
    __slots__ = ()


class ClampBackward0(Node):
    """clamp with tensor bounds (torch's clamp_backward_min_max): x gets the gradient where
    ``min <= x <= max`` (all of it at a bound), min where ``x < min < max``, max where
    ``x > max`` or ``max < min`` (then the result is max). Comparisons with NaN are false,
    so a NaN anywhere gives no gradient there (NOTE [NaN in derivative rules])."""

    __slots__ = ("x", "min", "max", "has_min", "has_max", "shapes")
    x: Saved
    min: SavedOperand
    max: SavedOperand
    has_min: bool
    has_max: bool
    shapes: tuple[Shape, ...]

    def __init__(
        self,
        x: Saved,
        min: SavedOperand,
        max: SavedOperand,
        has_min: bool,
        has_max: bool,
        shapes: tuple[Shape, ...],
    ) -> None:
        self._init_node()
        self.x = x
        self.min = min
        self.max = max
        self.has_min = has_min
        self.has_max = has_max
        self.shapes = shapes

    def release_variables(self) -> None:
        self.x = None
        self.min = None
        self.max = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        x = _saved_value(self, self.x, False)
        lo = _saved_value(self, self.min, False) if self.has_min else None
        hi = _saved_value(self, self.max, False) if self.has_max else None
        if lo is not None and hi is not None:
            masks = ((x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo))
        elif lo is not None:
            masks = (x >= lo, x < lo, None)
        else:
            masks = (x <= hi, None, x > hi)
        return tuple(  # type: ignore[return-value]
            sum_to(g * m, shape) if m is not None and self.should_compute_output(i) else None
            for i, (m, shape) in enumerate(zip(masks, self.shapes))
        )


class ClampMinBackward1(ClampBackward0):
    __slots__ = ()


class ClampMaxBackward1(ClampBackward0):
    __slots__ = ()


def _is_number_bound(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


def _clamp(input: Tensor, min: Any, max: Any, op: str, scalar_node: type[ClampBackward1],
           tensor_node: type[ClampBackward0]) -> Tensor:
    if _is_number_bound(min) and _is_number_bound(max):
        xd = input._data
        res = np.clip(xd, min, max)
        out = wrap(res.astype(result_type(input, min, max), copy=False), input._device)
        if input._requires_grad and grad_enabled():
            link_one(scalar_node(save(input), min, max), input, out)
        return out
    lo = None if min is None else as_tensor_operand(min, input, op, "min", 2)
    hi = None if max is None else as_tensor_operand(max, input, op, "max", 3)
    operands = [t for t in (input, lo, hi) if t is not None]
    device = common_device(*operands)
    broadcast_shapes(*(_shape(t) for t in operands))
    res = input._data
    if lo is not None:
        res = np.maximum(res, lo._data if isinstance(lo, Tensor) else lo)
    if hi is not None:
        res = np.minimum(res, hi._data if isinstance(hi, Tensor) else hi)
    out = wrap(np.asarray(res).astype(result_type(*operands), copy=False), device)
    if needs_grad(input, lo, hi):
        node = tensor_node(
            save(input), save(lo) if isinstance(lo, Tensor) else lo, save(hi) if isinstance(hi, Tensor) else hi,
            lo is not None, hi is not None, (_shape(input), _shape(lo), _shape(hi)),
        )
        record(node, (input, lo, hi), (out,))
    return out


@ELEMENTWISE.op(nodes=(ClampBackward1, ClampBackward0), aliases=("clip",))
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]`` (numbers or tensors, broadcast); where ``min > max`` the
    result is ``max``. The gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, "clamp", ClampBackward1, ClampBackward0)


clip = clamp


@ELEMENTWISE.op(nodes=(ClampMinBackward0, ClampMinBackward1))
def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``max(input, min)`` with clamp's gradient (all of it to x where ``x == min``)."""
    if min is None:
        raise operand_error("clamp_min", "min", 2, min)
    return _clamp(input, min, None, "clamp_min", ClampMinBackward0, ClampMinBackward1)


@ELEMENTWISE.op(nodes=(ClampMaxBackward0, ClampMaxBackward1))
def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``min(input, max)`` with clamp's gradient (all of it to x where ``x == max``)."""
    if max is None:
        raise operand_error("clamp_max", "max", 2, max)
    return _clamp(input, None, max, "clamp_max", ClampMaxBackward0, ClampMaxBackward1)


# ----- where -----------------------------------------------------------------------------------


class WhereBackward0(Node):
    __slots__ = ("cond", "a_shape", "b_shape")
    cond: np.ndarray
    a_shape: Shape
    b_shape: Shape

    def __init__(self, cond: np.ndarray, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.cond = cond
        self.a_shape = a_shape
        self.b_shape = b_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        cond = self.cond
        zero: Any = np.zeros((), dtype=g.dtype)
        pick: Any = np.where
        if g.__class__ is Tensor:
            zero = Tensor._wrap(zero, g._device)
            pick = where
        ga = sum_to(pick(cond, g, zero), self.a_shape) if self.should_compute_output(1) else None
        gb = sum_to(pick(cond, zero, g), self.b_shape) if self.should_compute_output(2) else None
        return None, ga, gb


@ELEMENTWISE.op(nodes=(WhereBackward0,), method=False, functions=(np.where,))
def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (the three broadcast together);
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``."""
    check_operand(condition, "where", "condition", 1)
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if input is None and other is None:
        return nonzero(condition if isinstance(condition, Tensor) else Tensor._wrap(cond), as_tuple=True)
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else condition
    if not isinstance(like, Tensor):
        raise operand_error("where", "input", 2, input)
    a = as_tensor_operand(input, like, "where", "input", 2)
    b = as_tensor_operand(other, like, "where", "other", 3)
    device = common_device(a, b, condition)
    broadcast_shapes(cond.shape, _shape(a), _shape(b))
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    out = wrap(cast_result(np.where(cond, ad, bd), a, b), device)
    if needs_grad(a, b):
        record(WhereBackward0(cond, _shape(a), _shape(b)), (condition, a, b), (out,))
    return out


# ----- lerp, addcmul, addcdiv ----------------------------------------------------------------------


def _three_operands(op: str, names: tuple[str, str, str], *xs: Any) -> tuple[list[Any], Any]:
    """The operands of a three-operand op (Tensors, or numbers where allowed) and their device, with
    torch's errors for a non-operand and shapes that do not broadcast."""
    like = next(x for x in xs if isinstance(x, Tensor))
    ops = [x if isinstance(x, Tensor) else as_tensor_operand(x, like, op, n, i + 1) for i, (n, x) in
           enumerate(zip(names, xs))]
    device = common_device(*ops)
    broadcast_shapes(*(_shape(x) for x in ops))
    return ops, device


class LerpBackward0(Node):
    """``lerp(a, b, w)`` with a number ``w``: ``g * (1 - w)`` to a, ``g * w`` to b."""

    __slots__ = ("weight", "a_shape", "b_shape")
    weight: float
    a_shape: Shape
    b_shape: Shape

    def __init__(self, weight: float, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.weight = weight
        self.a_shape = a_shape
        self.b_shape = b_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        w = self.weight
        return (sum_to(g * (1 - w), self.a_shape) if self.should_compute_output(0) else None,
                sum_to(g * w, self.b_shape) if self.should_compute_output(1) else None)


class _ThreeOperandBackward(Node):
    """The node of an op of three broadcast operands: ``grad(i, g, graph)`` is operand i's gradient
    before it is summed back to the operand's shape (``shapes[i]``); an operand that does not
    require grad gets None."""

    __slots__ = ("shapes",)
    shapes: tuple[Shape, ...]

    def __init__(self, shapes: tuple[Shape, ...]) -> None:
        self._init_node()
        self.shapes = shapes

    def grad(self, i: int, g: Any, graph: bool) -> Any:
        raise NotImplementedError

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        graph = g.__class__ is Tensor
        return tuple(sum_to(self.grad(i, g, graph), self.shapes[i]) if self.should_compute_output(i) else None
                     for i in range(self.n_edges))


class LerpBackward1(_ThreeOperandBackward):
    """``lerp(a, b, w)`` with a tensor ``w``: ``g * (1 - w)`` to a, ``g * w`` to b, ``g * (b - a)`` to w."""

    __slots__ = ("a", "b", "w")
    a: SavedOperand
    b: SavedOperand
    w: SavedOperand

    def __init__(self, shapes: tuple[Shape, ...], a: SavedOperand, b: SavedOperand, w: SavedOperand) -> None:
        self._init_node()
        self.shapes = shapes
        self.a = a
        self.b = b
        self.w = w

    def release_variables(self) -> None:
        self.a = None
        self.b = None
        self.w = None

    def grad(self, i: int, g: Any, graph: bool) -> Any:
        if i == 2:
            return g * (_saved_value(self, self.b, graph) - _saved_value(self, self.a, graph))
        w = _saved_value(self, self.w, graph)
        return g * (1 - w) if i == 0 else g * w


def _lerp_values(a: np.ndarray, b: np.ndarray, w: Any) -> np.ndarray:
    """torch's lerp kernel: from ``a`` below ``w = 0.5``, from ``b`` above, so both ends are exact."""
    diff = b - a
    small = np.abs(w) < 0.5
    return np.where(small, a + w * diff, b - diff * (1 - w))


@ELEMENTWISE.op(nodes=(LerpBackward0, LerpBackward1))
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``, broadcast; ``weight`` is a number or a tensor (differentiable).
    ``input``, ``end`` (and a weight tensor with dims) must share one floating dtype, as torch."""
    number = isinstance(weight, (int, float)) and not isinstance(weight, bool)
    (a, b, *rest), device = _three_operands("lerp", ("input", "end", "weight"), input, end,
                                            *(() if number else (weight,)))
    dt = a._data.dtype
    checks = [(b, "end")] if number or not rest[0]._data.ndim else [(b, "end"), (rest[0], "weight")]
    for x, name in checks:  # a 0-d weight tensor may have another dtype, as in torch
        if x._data.dtype != dt:
            raise RuntimeError(
                f"expected dtype {_dtype_word(dt)} for `{name}` but got dtype {_dtype_word(x._data.dtype)}"
            )
    if dt.kind not in "fc":
        kind = "scalar" if number else "tensor"
        raise NotImplementedError(f'"lerp_kernel_{kind}" not implemented for \'{torch_dtype_name(dt)}\'')
    w = weight if number else rest[0]
    op = _opmath(dt)
    wd = w if number else w._data.astype(op, copy=False)
    res = _lerp_values(a._data.astype(op, copy=False), b._data.astype(op, copy=False), wd)
    out = wrap(np.asarray(res).astype(dt, copy=False), device)
    if needs_grad(a, b, w):
        node: Node
        if number:
            node = LerpBackward0(float(w), _shape(a), _shape(b))
            record(node, (a, b), (out,))
        else:
            node = LerpBackward1((_shape(a), _shape(b), _shape(w)), save(a) if w._requires_grad else 0,
                                 save(b) if w._requires_grad else 0,
                                 save(w) if a._requires_grad or b._requires_grad else 0)
            record(node, (a, b, w), (out,))
    return out


def _opmath(dt: np.dtype) -> np.dtype:
    """The dtype torch computes a fused pointwise op in: float32 for float16, else the dtype itself."""
    return np.dtype(np.float32) if dt == np.float16 else dt


def _dtype_word(dt: np.dtype) -> str:
    """torch's lower-case dtype word in some messages (``float``, ``double``, ``long``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long", "int32": "int",
            "bool": "bool"}.get(np.dtype(dt).name, str(dt))


class AddcmulBackward0(_ThreeOperandBackward):
    """``input + value * t1 * t2``: ``g`` to input, ``g * t2 * value`` to t1, ``g * t1 * value`` to t2."""

    __slots__ = ("t1", "t2", "value")
    t1: SavedOperand
    t2: SavedOperand
    value: Any

    def __init__(self, shapes: tuple[Shape, ...], t1: SavedOperand, t2: SavedOperand, value: Any) -> None:
        self._init_node()
        self.shapes = shapes
        self.t1 = t1
        self.t2 = t2
        self.value = value

    def release_variables(self) -> None:
        self.t1 = None
        self.t2 = None

    def grad(self, i: int, g: Any, graph: bool) -> Any:
        if i == 0:
            return g
        return g * (_saved_value(self, self.t2 if i == 1 else self.t1, graph) * self.value)


class AddcdivBackward0(AddcmulBackward0):
    """``input + value * t1 / t2``: ``g`` to input, ``g * value / t2`` to t1, ``-g * value * t1 / t2**2`` to t2."""

    __slots__ = ()

    def grad(self, i: int, g: Any, graph: bool) -> Any:
        if i == 0:
            return g
        t2 = _saved_value(self, self.t2, graph)
        if i == 1:
            return g * (self.value / t2)
        return -g * (self.value * _saved_value(self, self.t1, graph) / (t2 * t2))


def _addc(op: str, input: Any, tensor1: Any, tensor2: Any, value: Any, node_cls: type[AddcmulBackward0]) -> Tensor:
    (x, t1, t2), device = _three_operands(op, ("input", "tensor1", "tensor2"), input, tensor1, tensor2)
    dtype = _result_type(x, t1, t2)
    if op == "addcdiv" and t1._data.dtype.kind in "biu" and t2._data.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )
    if dtype.kind in "biu":
        if isinstance(value, float):
            value = int(value)  # torch converts the value to the integer type
    elif dtype.kind == "f" and isinstance(value, complex):
        raise RuntimeError(f"{op}: a complex value needs a complex result, got {dtype}")
    xd, d1, d2 = (t._data.astype(_opmath(dtype), copy=False) for t in (x, t1, t2))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        prod = d1 * d2 if op == "addcmul" else d1 / d2
        res = xd + (prod * value if value != 1 else prod)
    out = wrap(np.asarray(res).astype(dtype, copy=False), device)
    if needs_grad(x, t1, t2):
        t2_read = t1._requires_grad or (t2._requires_grad and node_cls is AddcdivBackward0)
        node = node_cls((_shape(x), _shape(t1), _shape(t2)), save(t1) if t2._requires_grad else 0,
                        save(t2) if t2_read else 0, value)
        record(node, (x, t1, t2), (out,))
    return out


@ELEMENTWISE.op(nodes=(AddcmulBackward0,))
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, broadcast, with torch's type promotion."""
    return _addc("addcmul", input, tensor1, tensor2, value, AddcmulBackward0)


@ELEMENTWISE.op(nodes=(AddcdivBackward0,))
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, broadcast; integer ``tensor1`` and ``tensor2`` are refused (as torch)."""
    return _addc("addcdiv", input, tensor1, tensor2, value, AddcdivBackward0)


# ----- nan_to_num, heaviside, isclose, allclose ------------------------------------------------------


class NanToNumBackward0(Node):
    """``g`` where the input was finite, 0 where it was NaN or infinite (a constant mask)."""

    __slots__ = ("finite",)
    finite: np.ndarray

    def __init__(self, finite: np.ndarray) -> None:
        self._init_node()
        self.finite = finite

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        mask = self.finite.astype(g.dtype)
        return (g * (Tensor._wrap(mask, g._device) if g.__class__ is Tensor else mask),)


def _np_nan_to_num(x: Tensor, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    return nan_to_num(x, nan, posinf, neginf)


@ELEMENTWISE.op(nodes=(NanToNumBackward0,), functions=((np.nan_to_num, _np_nan_to_num),))
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the dtype's
    largest and smallest finite values); integer inputs are copied. The gradient passes where the
    input was finite."""
    xd = input._data
    if xd.dtype.kind not in "fc":
        return wrap(xd.copy(), input._device)
    info = np.finfo(xd.dtype)
    res = np.nan_to_num(xd, nan=nan, posinf=info.max if posinf is None else posinf,
                        neginf=info.min if neginf is None else neginf)
    out = wrap(res, input._device)
    if input._requires_grad and grad_enabled():
        link_one(NanToNumBackward0(np.isfinite(xd)), input, out)
    return out


@ELEMENTWISE.op(nodes=(NotImplementedBackward,), ufuncs=(np.heaviside,))
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive
    (NaN gives 0, as torch). Both must have one dtype; no derivative (a backward through it raises)."""
    a, b, ad, bd, device = prep_operands(input, values, "heaviside", "values")
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise operand_error("heaviside", "values" if isinstance(a, Tensor) else "input",
                            2 if isinstance(a, Tensor) else 1, values if isinstance(a, Tensor) else input)
    if ad.dtype != bd.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    out = wrap(np.where(ad == 0, bd, ad > 0).astype(ad.dtype, copy=False), device)
    if needs_grad(a, b):
        record(NotImplementedBackward("heaviside"), (a, b), (out,))
    return out


def _close(op: str, input: Any, other: Any, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    check_operand(input, op, "input", 1)
    check_operand(other, op, "other", 2)
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        bad, name, pos = (input, "input", 1) if not isinstance(input, Tensor) else (other, "other", 2)
        raise operand_error(op, name, pos, bad)
    common_device(input, other)
    ad, bd = input._data, other._data
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"{torch_dtype_name(ad.dtype)} did not match {torch_dtype_name(bd.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    broadcast_shapes(ad.shape, bd.shape)
    close = ad == bd  # also infinities of one sign
    if ad.dtype.kind == "b":
        return close
    if equal_nan and ad.dtype.kind in "fc":
        close = close | (np.isnan(ad) & np.isnan(bd))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(ad - bd) if ad.dtype.kind in "fc" else np.abs(ad.astype(np.float64) - bd)
        allowed = atol + rtol * np.abs(bd)
        return close | (np.isfinite(err) & (err <= allowed))


@ELEMENTWISE.op(functions=(np.isclose,))
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Where ``|input - other| <= atol + rtol * |other|`` (equal values, infinities included, always;
    NaNs only with ``equal_nan``): a bool tensor. Both must have one dtype, as torch."""
    return wrap(_close("isclose", input, other, rtol, atol, equal_nan), input._device)


@ELEMENTWISE.op(functions=(np.allclose,))
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether ``isclose`` holds everywhere: a Python bool."""
    return bool(np.all(_close("allclose", input, other, rtol, atol, equal_nan)))


__all__ = ELEMENTWISE.exports(__name__)
