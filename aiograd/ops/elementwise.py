"""Elementwise ops and their derivative rules: arithmetic, unary math, clamp, where, comparisons.

Binary ops broadcast like numpy; each rule reduces its gradient back to the
input's shape with ``sum_to``. Rules are written once in numpy terms and also
serve create_graph passes (see NOTE [One rule for both modes] in _common.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.graph import Node, save, save_output, sum_to, unpack
from ..tensor import Tensor
from ._common import (
    as_tensor_operand,
    common_device,
    implements_function,
    implements_ufunc,
    needs_grad,
    promote_float,
    record,
    tensor_method,
    wrap,
)

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "exp", "log", "log1p", "sqrt", "abs",
    "sin", "cos", "tanh", "sigmoid", "relu", "clamp", "clip", "where", "sign", "square", "reciprocal",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor",
    "isnan", "isinf", "isfinite",
]


def _saved_value(node: Node, s: Any, graph: bool) -> Any:
    """A saved operand: a saved tensor (unpacked with checks) or a Python scalar kept as is."""
    if s.__class__ is tuple:
        return unpack(node, s, graph)
    if s is None:
        return unpack(node, None, graph)  # raises the "backward through the graph a second time" error
    return s


def _prep(a: Any, b: Any) -> tuple[Any, Any, Any, Any, Any]:
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        raise TypeError(f"expected at least one Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    a = as_tensor_operand(a, like)
    b = as_tensor_operand(b, like)
    device = common_device(a, b)
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    return a, b, ad, bd, device


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


def _grad_enabled_for(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


# ----- add / sub ---------------------------------------------------------------------


class AddBackward0(Node):
    __slots__ = ("a_shape", "b_shape", "alpha")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        e = self.next_edges
        ga = sum_to(g, self.a_shape) if e[0] is not None else None
        gb = None
        if e[1] is not None:
            gb = sum_to(g, self.b_shape)
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
    a, b, ad, bd, device = _prep(input, other)
    out = wrap(promote_float(np.add(ad, bd) if alpha == 1 else ad + alpha * bd, a, b), device)
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
    a, b, ad, bd, device = _prep(input, other)
    out = wrap(promote_float(np.subtract(ad, bd) if alpha == 1 else ad - alpha * bd, a, b), device)
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
        if e[0] is not None:
            ga = sum_to(g * _saved_value(self, self.b, graph), self.a_shape)
        if e[1] is not None:
            gb = sum_to(g * _saved_value(self, self.a, graph), self.b_shape)
        return ga, gb


@implements_ufunc(np.multiply)
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product with broadcasting."""
    a, b, ad, bd, device = _prep(input, other)
    out = wrap(promote_float(np.multiply(ad, bd), a, b), device)
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
    """Elementwise true division (``rounding_mode`` "trunc"/"floor" give integer-valued, non-differentiable results)."""
    a, b, ad, bd, device = _prep(input, other)
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
        q = np.true_divide(ad, bd)
        q = np.trunc(q) if rounding_mode == "trunc" else np.floor(q)
        ad_is_int = np.asarray(ad).dtype.kind in "iu" and np.asarray(bd).dtype.kind in "iu"
        return wrap(q.astype(np.asarray(ad).dtype) if ad_is_int else promote_float(q, a, b), device)
    res = np.true_divide(ad, bd)
    if res.dtype == np.float64 and not any(
        isinstance(x, Tensor) and x._data.dtype == np.float64 for x in (a, b)
    ):
        res = promote_float(res, a, b)
    out = wrap(res, device)
    if needs_grad(a, b):
        node = DivBackward0()
        node.a = (save(a) if isinstance(a, Tensor) else a) if _grad_enabled_for(b) else 0
        node.b = save(b) if isinstance(b, Tensor) else b
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
    return out


true_divide = div


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
            return (g * 0,)
        return (g * (c * x ** (c - 1)),)


class PowBackward1(Node):
    """``a ** b`` for two tensors (or a number base)."""

    __slots__ = ("a", "b", "out", "a_shape", "b_shape")
    _saved_fields = ("a", "b", "out")

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        a = _saved_value(self, self.a, graph)
        b = _saved_value(self, self.b, graph)
        ga = gb = None
        if e[0] is not None:
            ga = sum_to(g * (b * a ** (b - 1)), self.a_shape)
        if e[1] is not None:
            out = unpack(self, self.out, graph)
            # d/db a**b = a**b * log(a); where a == 0 and b >= 0 the limit is 0 (as torch).
            log_a = np.log(np.where(a == 0, 1, a)) if not graph else where(a == 0, 1.0, a).log()  # type: ignore[attr-defined]
            gb = sum_to(g * out * log_a, self.b_shape)
        return ga, gb


@implements_ufunc(np.power)
def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` with broadcasting."""
    if isinstance(input, Tensor) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = input
        xd = x._data
        if exponent == 2:
            res = xd * xd
        else:
            res = np.power(xd, exponent) if xd.dtype.kind == "f" or exponent >= 0 else np.power(xd.astype(np.float64), exponent)
        out = wrap(promote_float(np.asarray(res), x), x._device)
        if needs_grad(x):
            node = PowBackward0()
            node.x = save(x)
            node.exponent = exponent
            record(node, (x,), (out,))
        return out
    a, b, ad, bd, device = _prep(input, exponent)
    out = wrap(promote_float(np.power(ad, bd), a, b), device)
    if needs_grad(a, b):
        node = PowBackward1()
        node.a = save(a) if isinstance(a, Tensor) else a
        node.b = save(b) if isinstance(b, Tensor) else b
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (a, b), (out,))
        node.out = save_output(out) if _grad_enabled_for(b) else 0
    return out


# ----- unary ops -------------------------------------------------------------------------


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
    src = (
        "def apply(self, grads):\n"
        "    g = grads[0]\n"
        "    s = self.saved\n"
        "    if s is not None and g.__class__ is not Tensor and s[0]._version_counter.value == s[1]:\n"
        "        v = s[0]._data\n"
        "    else:\n"
        "        v = unpack(self, s, g.__class__ is Tensor)\n"
        f"    return ({rule},)\n"
    )
    ns: dict[str, Any] = {"np": np, "Tensor": Tensor, "unpack": unpack}
    exec(src, ns)
    node_cls = type(node_name, (Node,), {
        "__slots__": ("saved",), "_saved_fields": ("saved",), "apply": ns["apply"],
        "__doc__": f"Backward of {name}: grad_input = {rule} (v = saved {saves}).",
    })

    def op(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            input = Tensor._wrap(np.asarray(input, dtype=np.result_type(np.asarray(input), np.float32)))
        xd = input._data
        res = forward(xd if xd.dtype.kind in "fc" else xd.astype(np.float32))
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


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


exp = _unary("exp", "ExpBackward0", np.exp, "g * v", "output", (np.exp,))
log = _unary("log", "LogBackward0", np.log, "g / v", "input", (np.log,))
log1p = _unary("log1p", "Log1PBackward0", np.log1p, "g / (v + 1)", "input", (np.log1p,))
sqrt = _unary("sqrt", "SqrtBackward0", np.sqrt, "g / (v * 2)", "output", (np.sqrt,))
abs = _unary("abs", "AbsBackward0", np.abs, "g * np.sign(v)", "input", (np.absolute,))
sin = _unary("sin", "SinBackward0", np.sin, "g * np.cos(v)", "input", (np.sin,))
cos = _unary("cos", "CosBackward0", np.cos, "g * -np.sin(v)", "input", (np.cos,))
tanh = _unary("tanh", "TanhBackward0", np.tanh, "g * (1 - v * v)", "output", (np.tanh,))
sigmoid = _unary("sigmoid", "SigmoidBackward0", _stable_sigmoid, "g * (v * (1 - v))", "output")
relu = _unary(
    "relu", "ReluBackward0", lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
    "g * (v > 0)", "output",
)
square = _unary("square", "PowBackward0Square", np.square, "g * (v * 2)", "input", (np.square,))
reciprocal = _unary(
    "reciprocal", "ReciprocalBackward0", np.reciprocal, "g * -(v * v)", "output", (np.reciprocal,)
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


sign = _nondiff_unary("sign", np.sign, np.sign)
isnan = _nondiff_unary("isnan", np.isnan, np.isnan)
isinf = _nondiff_unary("isinf", np.isinf, np.isinf)
isfinite = _nondiff_unary("isfinite", np.isfinite, np.isfinite)
logical_not = _nondiff_unary("logical_not", np.logical_not, np.logical_not)


def _compare(name: str, fn: Any) -> Callable[[Any, Any], Tensor]:
    def op(input: Any, other: Any) -> Tensor:
        a, b, ad, bd, device = _prep(input, other)
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
    __slots__ = ("x", "min", "max")
    _saved_fields = ("x",)

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        x = unpack(self, self.x, g.__class__ is Tensor)
        xd = x._data if isinstance(x, Tensor) else x
        mask = np.ones(xd.shape, dtype=bool)
        if self.min is not None:
            mask &= xd >= self.min
        if self.max is not None:
            mask &= xd <= self.max
        return (g * mask,)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    xd = input._data
    res = np.clip(xd, min, max)
    out = wrap(res.astype(xd.dtype, copy=False) if xd.dtype.kind == "f" else res, input._device)
    if needs_grad(input):
        node = ClampBackward1()
        node.x = save(input)
        node.min = min
        node.max = max
        record(node, (input,), (out,))
    return out


clip = clamp


class WhereBackward0(Node):
    __slots__ = ("cond", "a_shape", "b_shape")

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        e = self.next_edges
        cond = self.cond
        zero = np.zeros((), dtype=g.dtype)
        if g.__class__ is Tensor:
            zero = Tensor._wrap(zero, g._device)
            cond = Tensor._wrap(cond, g._device)
        ga = sum_to(where(cond, g, zero), self.a_shape) if e[1] is not None else None
        gb = sum_to(where(cond, zero, g), self.b_shape) if e[2] is not None else None
        return None, ga, gb


@implements_function(np.where)
def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (broadcasting)."""
    if input is None and other is None:
        cd = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
        return tuple(Tensor._wrap(i) for i in np.nonzero(cd))
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else None
    if like is None:
        raise TypeError("where() expects input or other to be a Tensor")
    a = as_tensor_operand(input, like)
    b = as_tensor_operand(other, like)
    device = common_device(a, b, *( [condition] if isinstance(condition, Tensor) else []))
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    res = np.where(cond, ad, bd)
    out = wrap(promote_float(res, a, b), device)
    if needs_grad(a, b):
        node = WhereBackward0()
        node.cond = cond
        node.a_shape = _shape(a)
        node.b_shape = _shape(b)
        record(node, (condition, a, b), (out,))
    return out


# maximum/minimum are defined by the binary-extras module; imported lazily by clamp.
def maximum(input: Any, other: Any) -> Tensor:  # pragma: no cover - replaced below if available
    from .elementwise_extra import maximum as _maximum

    return _maximum(input, other)


def minimum(input: Any, other: Any) -> Tensor:  # pragma: no cover - replaced below if available
    from .elementwise_extra import minimum as _minimum

    return _minimum(input, other)


# ----- Tensor methods and operators -----------------------------------------------------


def _reflect(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    def r(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return r


for _name, _fn in {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div, "divide": div,
    "true_divide": div, "pow": pow, "neg": neg, "negative": neg, "exp": exp, "log": log, "log1p": log1p,
    "sqrt": sqrt, "abs": abs, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "relu": relu,
    "clamp": clamp, "clip": clip, "sign": sign, "square": square, "reciprocal": reciprocal,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "logical_and": logical_and, "logical_or": logical_or,
    "logical_not": logical_not, "logical_xor": logical_xor,
    "__add__": add, "__radd__": _reflect(add), "__sub__": sub, "__rsub__": _reflect(sub),
    "__mul__": mul, "__rmul__": _reflect(mul), "__truediv__": div, "__rtruediv__": _reflect(div),
    "__pow__": pow, "__rpow__": _reflect(pow), "__neg__": neg, "__abs__": abs,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__and__": logical_and, "__or__": logical_or, "__xor__": logical_xor, "__invert__": logical_not,
}.items():
    tensor_method(_name)(_fn)
Tensor.__pos__ = lambda self: self  # type: ignore[attr-defined]
Tensor.__hash__ = lambda self: id(self)  # type: ignore[method-assign]
