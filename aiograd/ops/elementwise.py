"""Elementwise ops and their derivative rules: arithmetic, unary math, clamp, where, comparisons.

Binary ops broadcast like numpy; each rule reduces its gradient back to the
input's shape with ``sum_to``. Rules are written once in numpy terms and also
serve create_graph passes (see NOTE [One rule for both modes] in _common.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.graph import Node, save, save_output, sole_owner, sum_to, unpack
from ..tensor import Tensor, get_default_dtype
from ._common import (
    as_tensor_operand,
    broadcast_shapes,
    check_operand,
    common_device,
    dunder,
    implements_function,
    implements_ufunc,
    needs_grad,
    operand_error,
    record,
    tensor_method,
    wrap,
)

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "neg", "exp", "log",
    "log1p", "sqrt", "abs", "sin", "cos", "tanh", "sigmoid", "relu", "clamp", "clip", "clamp_min",
    "clamp_max", "where", "sign", "square", "reciprocal",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor",
    "isnan", "isinf", "isfinite", "maximum", "minimum", "gelu", "softplus", "erf", "tan", "log2",
    "log10", "rsqrt", "floor", "ceil", "trunc", "round", "result_type",
]


def _saved_value(node: Node, s: Any, graph: bool) -> Any:
    """A saved operand: a saved tensor (unpacked with checks) or a Python scalar kept as is."""
    if s.__class__ is tuple:
        return unpack(node, s, graph)
    if s is None:
        return unpack(node, None, graph)  # raises the "backward through the graph a second time" error
    return s


def _prep(a: Any, b: Any, op: str, second: str = "other") -> tuple[Any, Any, Any, Any, Any]:
    """The operands of binary op ``op`` checked and coerced (NOTE [Operands]), their arrays and device."""
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        raise operand_error(op, "input", 1, a)
    if a.__class__ is not Tensor:
        a = as_tensor_operand(a, like, op, "input", 1)
    if b.__class__ is not Tensor:
        b = as_tensor_operand(b, like, op, second, 2)
    device = common_device(a, b)
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    if a.__class__ is Tensor and b.__class__ is Tensor and ad.shape != bd.shape:
        broadcast_shapes(ad.shape, bd.shape)
    return a, b, ad, bd, device


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


def _grad_enabled_for(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


# ----- type promotion ----------------------------------------------------------------
# NOTE [Type promotion]: torch's rule, not numpy's. Operands fall in three tiers:
# tensors with dims, 0-d tensors, Python numbers ("wrapped numbers": a float
# counts as the default dtype, an int as int64). Each tier promotes within
# itself, and a lower tier only matters when it is of a higher category
# (bool < integer < floating < complex): float32[3] + float64 0-d is float32,
# int64[3] + 2.5 is the default dtype, int32[3] + float32[3] is float32
# (numpy would say float64). The op computes with numpy and casts to this dtype.

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def _promote_types(d1: Any, d2: Any) -> Any:
    """torch.promote_types: across categories the higher one wins (int + float16 -> float16)."""
    if d1 is None:
        return d2
    if d2 is None or d1 == d2:
        return d1
    c1, c2 = _CATEGORY[d1.kind], _CATEGORY[d2.kind]
    if c1 == c2:
        return np.promote_types(d1, d2)
    if c1 < c2:
        d1, d2, c1, c2 = d2, d1, c2, c1
    if c1 == 3 and c2 == 2:
        return np.promote_types(d1, np.result_type(d2, np.complex64))
    return d1


def _combine_categories(higher: Any, lower: Any) -> Any:
    if higher is None:
        return lower
    if lower is None:
        return higher
    ch, cl = _CATEGORY[higher.kind], _CATEGORY[lower.kind]
    if ch == 3:
        return higher
    if cl == 3:
        return _promote_types(higher, lower) if ch == 2 else lower
    if ch == 2:
        return higher
    if ch == 0 or cl == 2:
        return _promote_types(higher, lower)
    return higher


def result_type(*operands: Any) -> np.dtype:
    """The dtype torch gives an elementwise op on ``operands`` (Tensors, arrays, Python numbers)."""
    from ..tensor import get_default_dtype

    dim = zero = wrapped = None
    for x in operands:
        if isinstance(x, Tensor):
            d = x._data.dtype
            if x._data.ndim:
                dim = _promote_types(dim, d)
            else:
                zero = _promote_types(zero, d)
        elif isinstance(x, np.ndarray):
            if x.ndim:
                dim = _promote_types(dim, x.dtype)
            else:
                zero = _promote_types(zero, x.dtype)
        elif isinstance(x, bool):
            wrapped = _promote_types(wrapped, _BOOL)
        elif isinstance(x, int):
            wrapped = _promote_types(wrapped, _INT64)
        elif isinstance(x, float):
            wrapped = _promote_types(wrapped, get_default_dtype())
        elif isinstance(x, complex):
            wrapped = _promote_types(wrapped, np.dtype(np.complex128 if get_default_dtype() == np.float64 else np.complex64))
        elif x is not None:
            zero = _promote_types(zero, np.asarray(x).dtype)
    return _combine_categories(dim, _combine_categories(zero, wrapped))  # type: ignore[no-any-return]


def _result_dtype(a: Any, b: Any, floating: bool = False) -> np.dtype:
    """torch's promoted dtype of ``a`` and ``b`` (``floating``: int -> default float)."""
    if a.__class__ is Tensor and b.__class__ is Tensor:
        want = a._data.dtype
        if b._data.dtype != want:
            want = result_type(a, b)
    elif a.__class__ is Tensor and b.__class__ is float and a._data.dtype.kind == "f":
        want = a._data.dtype  # the common case: float tensor with a Python float
    else:
        want = result_type(a, b)
    if floating and want.kind in "biu":
        from ..tensor import get_default_dtype

        want = get_default_dtype()
    return want  # type: ignore[no-any-return]


def _cast_result(res: Any, a: Any, b: Any, floating: bool = False) -> np.ndarray:
    """Cast a numpy result to torch's promoted dtype of ``a`` and ``b`` (``floating``: int -> default float)."""
    want = _result_dtype(a, b, floating)
    if res.__class__ is not np.ndarray:
        res = np.asarray(res)
    if res.dtype != want:
        res = res.astype(want)
    return res  # type: ignore[no-any-return]


# ----- add / sub ---------------------------------------------------------------------


class AddBackward0(Node):
    __slots__ = ("a_shape", "b_shape", "alpha")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        shape = g.shape
        ga = gb = None
        if e[0] is not None:
            ga = g if shape == self.a_shape else sum_to(g, self.a_shape)
        if e[1] is not None:
            gb = g if shape == self.b_shape else sum_to(g, self.b_shape)
            if self.alpha != 1:
                gb = gb * self.alpha
        return ga, gb


class SubBackward0(AddBackward0):
    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        ga = sum_to(g, self.a_shape) if e[0] is not None else None
        gb = None
        if e[1] is not None:
            gb = sum_to(g, self.b_shape) * (-self.alpha)
        return ga, gb


@implements_ufunc(np.add)
def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    a, b, ad, bd, device = _prep(input, other, "add")
    out = wrap(_cast_result(np.add(ad, bd) if alpha == 1 else ad + alpha * bd, a, b), device)
    if needs_grad(a, b):
        node = AddBackward0()
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        node.alpha = alpha
        record(node, (a, b), (out,))
    return out


@implements_ufunc(np.subtract)
def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    a, b, ad, bd, device = _prep(input, other, "sub")
    out = wrap(_cast_result(np.subtract(ad, bd) if alpha == 1 else ad - alpha * bd, a, b), device)
    if needs_grad(a, b):
        node = SubBackward0()
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        node.alpha = alpha
        record(node, (a, b), (out,))
    return out


# ----- mul / div ---------------------------------------------------------------------


class MulBackward0(Node):
    __slots__ = ("a", "b", "a_shape", "b_shape")
    _saved_fields = ("a", "b")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        ga = gb = None
        # _saved_value() inlined for the common case (a plain scalar, or an unmodified
        # saved tensor in an ordinary pass): this rule runs once per node of a chain.
        if e[0] is not None:
            b = self.b
            if b.__class__ is tuple:
                b = b[0] if (not graph and b[1].value == b[2]) else unpack(self, b, graph)
            elif b is None:
                unpack(self, None, graph)
            ga = g * b
            if ga.shape != self.a_shape:
                ga = sum_to(ga, self.a_shape)
        if e[1] is not None:
            a = self.a
            if a.__class__ is tuple:
                a = a[0] if (not graph and a[1].value == a[2]) else unpack(self, a, graph)
            elif a is None:
                unpack(self, None, graph)
            gb = g * a
            if gb.shape != self.b_shape:
                gb = sum_to(gb, self.b_shape)
        return ga, gb


@implements_ufunc(np.multiply)
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product with broadcasting."""
    a, b, ad, bd, device = _prep(input, other, "mul")
    out = wrap(_cast_result(np.multiply(ad, bd), a, b), device)
    if needs_grad(a, b):
        node = MulBackward0()
        # Save each operand only if the other one needs its gradient (as torch does).
        node.a = (save(a) if isinstance(a, Tensor) else a) if _grad_enabled_for(b) else 0
        node.b = (save(b) if isinstance(b, Tensor) else b) if _grad_enabled_for(a) else 0
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
    return out


class DivBackward0(Node):
    __slots__ = ("a", "b", "a_shape", "b_shape")
    _saved_fields = ("a", "b")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        b = _saved_value(self, self.b, graph)
        ga = gb = None
        if e[0] is not None:
            ga = sum_to(g / b, self.a_shape)
        if e[1] is not None:
            a = _saved_value(self, self.a, graph)
            gb = sum_to(-g * a / (b * b), self.b_shape)
        return ga, gb


@implements_ufunc(np.true_divide)
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise true division; ``rounding_mode`` "trunc"/"floor" round the exact quotient
    toward zero/down (their gradient is zero, as torch's DivBackward2)."""
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
        return _rounded_division(input, other, rounding_mode, "div", DivBackward2)
    a, b, ad, bd, device = _prep(input, other, "div")
    out = wrap(_cast_result(np.true_divide(ad, bd), a, b, floating=True), device)
    if needs_grad(a, b):
        node = DivBackward0()
        node.a = (save(a) if isinstance(a, Tensor) else a) if _grad_enabled_for(b) else 0
        node.b = save(b) if isinstance(b, Tensor) else b
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
    return out


true_divide = div


# ----- rounding division, floor_divide, remainder --------------------------------------------


def zeros_like_grad(g: Any, shape: tuple[int, ...] | None = None) -> Any:
    """Zeros of ``g``'s dtype (a Tensor in a create_graph pass) and of ``shape`` (default ``g``'s)."""
    shape = g.shape if shape is None else shape
    if g.__class__ is Tensor:
        return Tensor._wrap(np.zeros(shape, g._data.dtype), g._device)
    return np.zeros(shape, g.dtype)


class DivBackward2(Node):
    """Backward of ``div`` with a rounding mode: zero for both operands (not ``g * 0``, so an
    infinite gradient still gives 0, as torch)."""

    __slots__ = ("a_shape", "b_shape")
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        return (
            zeros_like_grad(g, self.a_shape) if e[0] is not None else None,
            zeros_like_grad(g, self.b_shape) if e[1] is not None else None,
        )


class NotImplementedBackward(Node):
    """The grad_fn of an op that torch gives no derivative (``floor_divide``, ``number % tensor``):
    the forward records it, as torch does, and a backward through it raises."""

    __slots__ = ("op",)
    op: str

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, grads: list[Any]) -> Any:
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


def _in_dtype(x: Any, dtype: np.dtype) -> np.ndarray:
    return np.asarray(x).astype(dtype, copy=False)


def _refuse_zero_divisor(bd: np.ndarray, dtype: np.dtype) -> None:
    if dtype.kind in "iu" and not np.all(bd):
        raise RuntimeError("ZeroDivisionError")
    if dtype.kind == "b":
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")


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
        return q  # type: ignore[no-any-return]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if mode == "floor":
            return np.floor_divide(a, b)  # type: ignore[no-any-return]
        return np.trunc(np.true_divide(a, b))  # type: ignore[no-any-return]


def remainder_values(ad: Any, bd: Any, dtype: np.dtype) -> np.ndarray:
    """``a - b * floor(a / b)`` in ``dtype``, as torch: the sign of ``b``, from ``fmod`` (so 0 % -3 is +0)."""
    a, b = _in_dtype(ad, dtype), _in_dtype(bd, dtype)
    if dtype.kind in "biu":
        _refuse_zero_divisor(b, dtype)
        return np.remainder(a, b)  # type: ignore[no-any-return]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmod(a, b)
        return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)  # type: ignore[no-any-return]


def _rounded_division(input: Any, other: Any, mode: str, op: str, node_cls: type[Node]) -> Tensor:
    a, b, ad, bd, device = _prep(input, other, op)
    out = wrap(rounded_quotient(ad, bd, mode, _result_dtype(a, b)), device)
    if needs_grad(a, b):
        node: Any = node_cls()
        if node_cls is NotImplementedBackward:
            node.op = op
        else:
            node.a_shape, node.b_shape = _shape(a), _shape(b)
        record(node, (a, b), (out,))
    return out


@implements_ufunc(np.floor_divide)
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
    _saved_fields = ("a", "b")
    a: Any
    b: Any
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    dtype: np.dtype

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        ga = sum_to(g, self.a_shape) if e[0] is not None else None
        gb = None
        if e[1] is not None:
            q: Any = rounded_quotient(
                _saved_value(self, self.a, False), _saved_value(self, self.b, False), "floor", self.dtype
            )
            if g.__class__ is Tensor:
                q = Tensor._wrap(q, g._device)
            gb = sum_to(-g * q, self.b_shape)
        return ga, gb


@implements_ufunc(np.remainder)
def remainder(input: Any, other: Any) -> Tensor:
    """``input % other``: ``input - other * floor(input / other)``, with the sign of ``other`` (as torch)."""
    a, b, ad, bd, device = _prep(input, other, "remainder")
    dtype = _result_dtype(a, b)
    out = wrap(remainder_values(ad, bd, dtype), device)
    if needs_grad(a, b):
        node: Any
        if not isinstance(a, Tensor):
            node = NotImplementedBackward()
            node.op = "remainder"
        elif not isinstance(b, Tensor):
            node = RemainderBackward0()
        else:
            node = RemainderBackward1()
            node.a = save(a) if _grad_enabled_for(b) else 0
            node.b = save(b) if _grad_enabled_for(b) else 0
            node.a_shape = _shape(a)
            node.b_shape = _shape(b)
            node.dtype = dtype
        record(node, (a, b), (out,))
    return out


# ----- pow -----------------------------------------------------------------------------


class PowBackward0(Node):
    """``x ** c`` for a Python number c."""

    __slots__ = ("x", "exponent")
    _saved_fields = ("x",)

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
    _saved_fields = ("a", "b", "out")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        a = _saved_value(self, self.a, graph)
        b = _saved_value(self, self.b, graph)
        ga = gb = None
        # np.where and np.log reach aiograd's where/log in a create_graph pass (NOTE [One rule for both modes]).
        if e[0] is not None:
            ga = sum_to(np.where(b == 0, 0, g * (b * a ** (b - 1))), self.a_shape)
        if e[1] is not None:
            out = unpack(self, self.out, graph)
            log_a = np.log(np.float64(a) if isinstance(a, (int, float)) else a)
            gb = sum_to(np.where((b >= 0) & (a == 0), 0, g * (out * log_a)), self.b_shape)
        return ga, gb


class PowBackward2(PowBackward1):
    """``c ** b`` for a number base c (torch's pow.Scalar)."""

    __slots__ = ()


@implements_ufunc(np.power)
def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` with broadcasting."""
    if isinstance(input, Tensor) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = input
        xd = x._data
        if xd.dtype.kind in "biu" and isinstance(exponent, int) and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        res = xd * xd if exponent == 2 else np.power(xd, exponent)
        out = wrap(_cast_result(res, x, exponent), x._device)
        if needs_grad(x):
            node = PowBackward0()
            node.x = save(x)
            node.exponent = exponent
            record(node, (x,), (out,))
        return out
    a, b, ad, bd, device = _prep(input, exponent, "pow", "exponent")
    out = wrap(_cast_result(np.power(ad, bd), a, b), device)
    if needs_grad(a, b):
        node = PowBackward1() if isinstance(a, Tensor) else PowBackward2()
        node.a = save(a) if isinstance(a, Tensor) else a
        node.b = save(b) if isinstance(b, Tensor) else b
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
        node.out = save_output(out) if _grad_enabled_for(b) else 0
    return out


# ----- unary ops -------------------------------------------------------------------------


_IN_PLACE_MIN = 4096  # elements: below this the ownership check costs more than it saves


def _unary(
    name: str,
    node_name: str,
    forward: Callable[[np.ndarray], Any],
    rule: str,
    saves: str,
    ufuncs: tuple[Any, ...] = (),
) -> Callable[[Tensor], Tensor]:
    """Define a differentiable unary op from its forward and its derivative rule.

    ``rule`` is a numpy expression of ``g`` (the output's gradient) and ``v``
    (the saved value: the input when ``saves == "input"``, the output when
    ``saves == "output"``). It is compiled into the node's ``apply`` so a
    backward step costs one Python call, not two (the hot loop's budget).
    """
    save_out = saves == "output"
    # A rule "g * factor" may multiply into g itself when only the engine's input list
    # holds g (refs: that list, the local name g, the helper's argument): one allocation less per node, and
    # the memory of a hand-written in-place backward. Small arrays skip the check.
    in_place = (
        f"        if g.size >= {_IN_PLACE_MIN} and sole_owner(g, 3):\n"
        f"            return (np.multiply(g, {rule[4:]}, out=g),)\n"
        if rule.startswith("g * ") else ""
    )
    src = (
        "def apply(self, grads):\n"
        "    g = grads[0]\n"
        "    s = self.saved\n"
        "    if s is not None and g.__class__ is not Tensor and s[1].value == s[2]:\n"
        "        v = s[0]\n"
        + in_place
        + "    else:\n"
        "        v = unpack(self, s, g.__class__ is Tensor)\n"
        f"    return ({rule},)\n"
    )
    ns: dict[str, Any] = {
        "np": np, "Tensor": Tensor, "unpack": unpack, "sole_owner": sole_owner, "sign_any": _sign_any,
    }
    exec(src, ns)
    node_cls = type(node_name, (Node,), {
        "__slots__": ("saved",), "_saved_fields": ("saved",), "apply": ns["apply"],
        "__doc__": f"Backward of {name}: grad_input = {rule} (v = saved {saves}).",
    })

    def op(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            input = Tensor._wrap(np.asarray(input, dtype=np.result_type(np.asarray(input), np.float32)))
        xd = input._data
        res = forward(xd if xd.dtype.kind in "fc" else xd.astype(get_default_dtype()))
        out = wrap(res, input._device)
        if input._requires_grad and needs_grad(input):
            node = node_cls()
            record(node, (input,), (out,))
            node.saved = save_output(out) if save_out else save(input)
        return out

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = f"Elementwise {name}, differentiable."
    globals()[node_name] = node_cls
    for u in ufuncs:
        implements_ufunc(u)(op)
    return op


def sign_numpy(x: np.ndarray) -> np.ndarray:
    """torch's sign: -1, 0 or 1, and 0 for NaN (numpy would give NaN); bools stay bools."""
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind == "f":
        return np.asarray((x > 0).astype(x.dtype) - (x < 0))  # comparisons with NaN are false
    return np.sign(x)  # type: ignore[no-any-return]


def _sign_any(v: Any) -> Any:
    return sign(v) if v.__class__ is Tensor else sign_numpy(v)


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


exp = _unary("exp", "ExpBackward0", np.exp, "g * v", "output", (np.exp,))
log = _unary("log", "LogBackward0", np.log, "g / v", "input", (np.log,))
log1p = _unary("log1p", "Log1PBackward0", np.log1p, "g / (v + 1)", "input", (np.log1p,))
sqrt = _unary("sqrt", "SqrtBackward0", np.sqrt, "g / (v * 2)", "output", (np.sqrt,))
# NOTE [NaN in derivative rules]: torch's rules at NaN, kept by writing each rule's mask the
# way torch does: abs uses sign(NaN) = 0 (so 0), relu zeroes where "output <= 0" (so NaN
# passes the gradient), maximum/minimum and clamp use comparisons, which are false at NaN.
# Masks multiply the gradient (a select would be 10x slower in numpy), so an infinite
# incoming gradient meets a 0 mask as NaN where torch's select gives 0.
abs = _unary("abs", "AbsBackward0", np.abs, "g * sign_any(v)", "input", (np.absolute,))
sin = _unary("sin", "SinBackward0", np.sin, "g * np.cos(v)", "input", (np.sin,))
cos = _unary("cos", "CosBackward0", np.cos, "g * -np.sin(v)", "input", (np.cos,))
tanh = _unary("tanh", "TanhBackward0", np.tanh, "g * (1 - v * v)", "output", (np.tanh,))
sigmoid = _unary("sigmoid", "SigmoidBackward0", _stable_sigmoid, "g * (v * (1 - v))", "output")
relu = _unary(
    "relu", "ReluBackward0", lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
    "g * ~(v <= 0)", "output",
)
@implements_ufunc(np.square)
def square(input: Tensor) -> Tensor:
    """``input ** 2`` (records PowBackward0, as torch)."""
    return pow(input, 2)


reciprocal = _unary(
    "reciprocal", "ReciprocalBackward0", np.reciprocal, "g * -(v * v)", "output", (np.reciprocal,)
)
tan = _unary("tan", "TanBackward0", np.tan, "g * (v * v + 1)", "output", (np.tan,))
log2 = _unary("log2", "Log2Backward0", np.log2, "g / (v * 0.6931471805599453)", "input", (np.log2,))
log10 = _unary("log10", "Log10Backward0", np.log10, "g / (v * 2.302585092994046)", "input", (np.log10,))
rsqrt = _unary(
    "rsqrt", "RsqrtBackward0", lambda x: np.reciprocal(np.sqrt(x)), "g * (v * v * v * -0.5)", "output"
)


class NegBackward0(Node):
    __slots__ = ()

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (-grads[0],)


@implements_ufunc(np.negative)
def neg(input: Tensor) -> Tensor:
    """``-input``."""
    out = wrap(np.negative(input._data), input._device)
    if needs_grad(input):
        record(NegBackward0(), (input,), (out,))
    return out


# ----- non-differentiable elementwise ------------------------------------------------


def _nondiff_unary(name: str, fn: Callable[[np.ndarray], np.ndarray], ufunc: Any = None) -> Callable[[Tensor], Tensor]:
    def op(input: Tensor) -> Tensor:
        return wrap(fn(input._data), input._device)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (not differentiable)."
    if ufunc is not None:
        implements_ufunc(ufunc)(op)
    return op


isnan = _nondiff_unary("isnan", np.isnan, np.isnan)
isinf = _nondiff_unary("isinf", np.isinf, np.isinf)
isfinite = _nondiff_unary("isfinite", np.isfinite, np.isfinite)
logical_not = _nondiff_unary("logical_not", np.logical_not, np.logical_not)


def _compare(name: str, fn: Any) -> Callable[[Any, Any], Tensor]:
    def op(input: Any, other: Any) -> Tensor:
        a, b, ad, bd, device = _prep(input, other, name)
        return wrap(fn(ad, bd), device)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (not differentiable): a bool tensor."
    implements_ufunc(fn)(op)
    return op


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


# ----- clamp / where ---------------------------------------------------------------------


class ClampBackward1(Node):
    """clamp with number bounds: the gradient passes where ``min <= x <= max`` (all of it at a bound)."""

    __slots__ = ("x", "min", "max")
    _saved_fields = ("x",)

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
    _saved_fields = ("x", "min", "max")
    x: Any
    min: Any
    max: Any
    has_min: bool
    has_max: bool
    shapes: tuple[tuple[int, ...], ...]

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        e = self.next_edges
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
            sum_to(g * m, shape) if m is not None and edge is not None else None
            for m, edge, shape in zip(masks, e, self.shapes)
        )


class ClampMinBackward1(ClampBackward0):
    __slots__ = ()


class ClampMaxBackward1(ClampBackward0):
    __slots__ = ()


def _is_number_bound(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


def _clamp(input: Tensor, min: Any, max: Any, op: str, scalar_node: type[Node], tensor_node: type[Node]) -> Tensor:
    if _is_number_bound(min) and _is_number_bound(max):
        xd = input._data
        res = np.clip(xd, min, max)
        out = wrap(res.astype(result_type(input, min, max), copy=False), input._device)
        if needs_grad(input):
            node: Any = scalar_node()
            node.x = save(input)
            node.min = min
            node.max = max
            record(node, (input,), (out,))
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
        node = tensor_node()
        node.x = save(input)
        node.min = save(lo) if isinstance(lo, Tensor) else lo
        node.max = save(hi) if isinstance(hi, Tensor) else hi
        node.has_min = lo is not None
        node.has_max = hi is not None
        node.shapes = (_shape(input), _shape(lo), _shape(hi))
        record(node, (input, lo, hi), (out,))
    return out


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]`` (numbers or tensors, broadcast); where ``min > max`` the
    result is ``max``. The gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, "clamp", ClampBackward1, ClampBackward0)


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``max(input, min)`` with clamp's gradient (all of it to x where ``x == min``)."""
    if min is None:
        raise operand_error("clamp_min", "min", 2, min)
    return _clamp(input, min, None, "clamp_min", ClampMinBackward0, ClampMinBackward1)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``min(input, max)`` with clamp's gradient (all of it to x where ``x == max``)."""
    if max is None:
        raise operand_error("clamp_max", "max", 2, max)
    return _clamp(input, None, max, "clamp_max", ClampMaxBackward0, ClampMaxBackward1)


clip = clamp


class WhereBackward0(Node):
    __slots__ = ("cond", "a_shape", "b_shape")

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        e = self.next_edges
        cond = self.cond
        zero = np.zeros((), dtype=g.dtype)
        pick: Any = np.where
        if g.__class__ is Tensor:
            zero = Tensor._wrap(zero, g._device)
            pick = where
        ga = sum_to(pick(cond, g, zero), self.a_shape) if e[1] is not None else None
        gb = sum_to(pick(cond, zero, g), self.b_shape) if e[2] is not None else None
        return None, ga, gb


@implements_function(np.where)
def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (the three broadcast together)."""
    check_operand(condition, "where", "condition", 1)
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if input is None and other is None:
        return tuple(Tensor._wrap(i) for i in np.nonzero(cond))
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
    res = np.where(cond, ad, bd)
    out = wrap(_cast_result(res, a, b), device)
    if needs_grad(a, b):
        node = WhereBackward0()
        node.cond = cond
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (condition, a, b), (out,))
    return out


# ----- maximum / minimum ---------------------------------------------------------------


class MaximumBackward0(Node):
    """Gradient to the larger operand, split half/half where they tie; an operand gets
    none only where it loses, so where either is NaN both get all of it (as torch)."""

    __slots__ = ("a", "b", "a_shape", "b_shape")
    _saved_fields = ("a", "b")
    _loses = staticmethod(np.less)

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        a = _saved_value(self, self.a, False)
        b = _saved_value(self, self.b, False)
        eq = a == b
        e = self.next_edges
        ga = gb = None
        dt = g.dtype
        if e[0] is not None:
            w = np.where(eq, 0.5, ~self._loses(a, b)).astype(dt, copy=False)
            ga = sum_to(g * (Tensor._wrap(w, g._device) if graph else w), self.a_shape)
        if e[1] is not None:
            w = np.where(eq, 0.5, ~self._loses(b, a)).astype(dt, copy=False)
            gb = sum_to(g * (Tensor._wrap(w, g._device) if graph else w), self.b_shape)
        return ga, gb


class MinimumBackward0(MaximumBackward0):
    """Gradient to the smaller operand, split half/half where they tie (as torch)."""

    __slots__ = ()
    _loses = staticmethod(np.greater)


def _extremum(input: Any, other: Any, fn: Any, node_cls: type) -> Tensor:
    a, b, ad, bd, device = _prep(input, other, fn.__name__)
    out = wrap(_cast_result(fn(ad, bd), a, b), device)
    if needs_grad(a, b):
        node = node_cls()
        node.a = save(a) if isinstance(a, Tensor) else a
        node.b = save(b) if isinstance(b, Tensor) else b
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
    return out


@implements_ufunc(np.maximum)
def maximum(input: Any, other: Any) -> Tensor:
    """Elementwise maximum with broadcasting (NaN propagates); ties split the gradient evenly."""
    return _extremum(input, other, np.maximum, MaximumBackward0)


@implements_ufunc(np.minimum)
def minimum(input: Any, other: Any) -> Tensor:
    """Elementwise minimum with broadcasting (NaN propagates); ties split the gradient evenly."""
    return _extremum(input, other, np.minimum, MinimumBackward0)


# ----- erf, gelu, softplus ---------------------------------------------------------------
# NOTE [erf]: numpy has no erf and aiograd takes no scipy at runtime, so erf is
# W. J. Cody's rational Chebyshev approximation (Math. Comp. 23, 1969; the
# CALERF routine of SPECFUN), accurate to about 1e-16 relative in double
# precision: a rational function of x^2 on |x| <= 0.46875, of |x| for erfc on
# (0.46875, 4], of 1/x^2 for erfc beyond; exp(-x^2) is split as
# exp(-r^2) * exp(-(x-r)(x+r)) with r = x rounded to 1/16 to keep its accuracy.

_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
          2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
          2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
          1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
          3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
          1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
          6.05183413124413191e-2, 2.33520497626869185e-3)
_RSQRT_PI = 0.56418958354775628695
_TWO_OVER_SQRT_PI = 1.1283791670955125739
_SQRT1_2 = 0.70710678118654752440
_INV_SQRT_2PI = 0.39894228040143267794
_GELU_K = 0.79788456080286535588  # sqrt(2 / pi)


def erf_numpy(x: Any) -> np.ndarray:
    """Vectorized double-precision erf of an array (see NOTE [erf]); keeps a floating input's dtype."""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    xf = x.astype(np.float64, copy=False)
    y = np.abs(xf)
    out = np.empty_like(y)
    small = y <= 0.46875
    if small.any():
        ys = y[small]
        z = ys * ys
        num = _ERF_A[4] * z
        den = z
        for i in range(3):
            num = (num + _ERF_A[i]) * z
            den = (den + _ERF_B[i]) * z
        out[small] = xf[small] * (num + _ERF_A[3]) / (den + _ERF_B[3])
    rest = ~small
    if rest.any():
        yr = y[rest]
        erfc = np.empty_like(yr)
        mid = yr <= 4.0
        if mid.any():
            ym = yr[mid]
            num = _ERF_C[8] * ym
            den = ym
            for i in range(7):
                num = (num + _ERF_C[i]) * ym
                den = (den + _ERF_D[i]) * ym
            erfc[mid] = (num + _ERF_C[7]) / (den + _ERF_D[7])
        far = ~mid  # |x| > 4, and NaN
        if far.any():
            yf = yr[far]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                z = 1.0 / (yf * yf)
                num = _ERF_P[5] * z
                den = z
                for i in range(4):
                    num = (num + _ERF_P[i]) * z
                    den = (den + _ERF_Q[i]) * z
                erfc[far] = (_RSQRT_PI - z * (num + _ERF_P[4]) / (den + _ERF_Q[4])) / yf
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.trunc(yr * 16.0) / 16.0
            d = (yr - r) * (yr + r)
            erfc = np.exp(-r * r) * np.exp(-d) * erfc
            erfc = np.where(np.isinf(yr), 0.0, erfc)
        val = (0.5 - erfc) + 0.5
        out[rest] = np.where(xf[rest] < 0, -val, val)
    return out.astype(dtype, copy=False)


erf = _unary("erf", "ErfBackward0", erf_numpy, f"g * ({_TWO_OVER_SQRT_PI!r} * np.exp(-(v * v)))", "input")


def _erf_any(x: Any) -> Any:
    return erf(x) if x.__class__ is Tensor else erf_numpy(x)


class GeluBackward0(Node):
    __slots__ = ("x", "approximate")
    _saved_fields = ("x",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        x = unpack(self, self.x, g.__class__ is Tensor)
        if self.approximate == "tanh":
            x2 = x * x
            t = np.tanh((x + 0.044715 * x2 * x) * _GELU_K)
            d = (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * ((x2 * (3 * 0.044715) + 1) * _GELU_K)
        else:
            cdf = (_erf_any(x * _SQRT1_2) + 1) * 0.5
            d = cdf + x * (np.exp(x * x * -0.5) * _INV_SQRT_2PI)
        return (g * d,)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)``; ``approximate="tanh"`` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    xd = input._data
    if xd.dtype.kind not in "f":
        raise RuntimeError(f'"GeluKernelImpl" not implemented for {xd.dtype}: gelu needs a floating input')
    if approximate == "tanh":
        res = 0.5 * xd * (1 + np.tanh(_GELU_K * (xd + 0.044715 * xd * xd * xd)))
    else:
        res = 0.5 * xd * (1 + erf_numpy(xd * _SQRT1_2))
    out = wrap(res.astype(xd.dtype, copy=False), input._device)
    if needs_grad(input):
        node = GeluBackward0()
        node.x = save(input)
        node.approximate = approximate
        record(node, (input,), (out,))
    return out


class SoftplusBackward0(Node):
    __slots__ = ("x", "beta", "threshold")
    _saved_fields = ("x",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        x = unpack(self, self.x, graph)
        bx = x * self.beta
        if graph:
            linear = bx._data > self.threshold
            d = where(linear, 1.0, sigmoid(bx)) if linear.any() else sigmoid(bx)
        else:
            d = _stable_sigmoid(bx)
            d[bx > self.threshold] = 1
        return (g * d,)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, computed stably; linear where ``beta * x > threshold`` (as torch)."""
    xd = input._data
    if xd.dtype.kind != "f":
        raise RuntimeError(f'"softplus" not implemented for {xd.dtype}: softplus needs a floating input')
    bx = xd * beta
    with np.errstate(over="ignore"):
        res = (np.log1p(np.exp(-np.abs(bx))) + np.maximum(bx, 0)) / beta
    res = np.where(bx > threshold, xd, res).astype(xd.dtype, copy=False)
    out = wrap(res, input._device)
    if needs_grad(input):
        node = SoftplusBackward0()
        node.x = save(input)
        node.beta = beta
        node.threshold = threshold
        record(node, (input,), (out,))
    return out


# ----- rounding: zero gradient ---------------------------------------------------------


def _rounding(name: str, node_name: str, fn: Any, on_integers: Any = np.copy) -> Callable[..., Tensor]:
    """A piecewise-constant op: its gradient is zero (``on_integers``: its value on integer/bool inputs)."""

    class _Node(Node):
        __slots__ = ()

        def apply(self, grads: list[Any]) -> tuple[Any]:
            return (zeros_like_grad(grads[0]),)

    _Node.__name__ = _Node.__qualname__ = node_name
    _Node.__doc__ = f"Backward of {name}: zero almost everywhere (as torch)."

    def op(input: Tensor, **kwargs: Any) -> Tensor:
        xd = input._data
        if xd.dtype.kind in "biu":
            return wrap(on_integers(xd), input._device)
        out = wrap(np.asarray(fn(xd, **kwargs)).astype(xd.dtype, copy=False), input._device)
        if needs_grad(input):
            record(_Node(), (input,), (out,))
        return out

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name}; its gradient is zero (as torch)."
    globals()[node_name] = _Node
    return op


floor = _rounding("floor", "FloorBackward0", np.floor)
ceil = _rounding("ceil", "CeilBackward0", np.ceil)
trunc = _rounding("trunc", "TruncBackward0", np.trunc)
_round = _rounding("round", "RoundBackward0", np.round)
sign = _rounding("sign", "SignBackward0", sign_numpy, on_integers=sign_numpy)
implements_ufunc(np.sign)(sign)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even (as torch), to ``decimals`` places; zero gradient."""
    return _round(input, decimals=decimals) if decimals else _round(input)


implements_ufunc(np.floor)(floor)
implements_ufunc(np.ceil)(ceil)
implements_ufunc(np.trunc)(trunc)


# ----- Tensor methods and operators -----------------------------------------------------


for _name, _fn in {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div, "divide": div,
    "true_divide": div, "floor_divide": floor_divide, "remainder": remainder, "pow": pow, "neg": neg,
    "negative": neg, "exp": exp, "log": log, "log1p": log1p, "sqrt": sqrt, "abs": abs, "sin": sin, "cos": cos,
    "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clamp": clamp, "clip": clip, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "sign": sign, "maximum": maximum, "minimum": minimum, "gelu": gelu,
    "softplus": softplus, "erf": erf, "tan": tan, "log2": log2, "log10": log10, "rsqrt": rsqrt,
    "floor": floor, "ceil": ceil, "trunc": trunc, "round": round,
    "__floor__": floor, "__ceil__": ceil, "__trunc__": trunc, "square": square, "reciprocal": reciprocal,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "logical_and": logical_and, "logical_or": logical_or,
    "logical_not": logical_not, "logical_xor": logical_xor, "__neg__": neg, "__abs__": abs,
    "__invert__": logical_not,
}.items():
    tensor_method(_name)(_fn)
# Operators: NotImplemented for a non-operand, so Python raises its TypeError (NOTE [Operands]).
# name: (op, reflected)
_OPERATORS = {
    "__add__": (add, False), "__radd__": (add, True), "__sub__": (sub, False), "__rsub__": (sub, True),
    "__mul__": (mul, False), "__rmul__": (mul, True), "__truediv__": (div, False), "__rtruediv__": (div, True),
    "__floordiv__": (floor_divide, False), "__rfloordiv__": (floor_divide, True),
    "__mod__": (remainder, False), "__rmod__": (remainder, True), "__pow__": (pow, False), "__rpow__": (pow, True),
    "__and__": (logical_and, False), "__rand__": (logical_and, True), "__or__": (logical_or, False),
    "__ror__": (logical_or, True), "__xor__": (logical_xor, False), "__rxor__": (logical_xor, True),
    "__eq__": (eq, False), "__ne__": (ne, False), "__lt__": (lt, False), "__le__": (le, False),
    "__gt__": (gt, False), "__ge__": (ge, False),
}
for _name, (_fn, _reflected) in _OPERATORS.items():
    tensor_method(_name)(dunder(_fn, _reflected))
Tensor.__round__ = lambda self, ndigits=None: round(self, decimals=ndigits or 0)  # type: ignore[attr-defined]
Tensor.__pos__ = lambda self: self  # type: ignore[attr-defined]
Tensor.__hash__ = lambda self: id(self)  # type: ignore[method-assign]
