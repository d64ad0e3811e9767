"""Pointwise ops made from formulas: the templates of the elementwise family, and torch's
type promotion.

``PointwiseTable`` is an ``OpTable`` (NOTE [Op tables]) with one method per kind of
pointwise op; each call makes the op's forward (and its Node class) and registers it:

* ``unary(name, kernel, rule, saves=...)``: ``kernel(x)`` with the derivative
  ``rule``, an expression of ``g`` (the output's gradient) and ``v`` (the saved
  input or output);
* ``binary(name, kernel, da=..., db=...)``: ``kernel(a, b)`` with broadcasting and
  torch's type promotion; ``da``/``db`` are expressions of ``g``, ``a``, ``b`` and
  ``out`` giving each operand's gradient before it is summed back to its shape;
* ``compare(name, kernel)`` / ``predicate(name, kernel)``: boolean results, no gradient.

NOTE [Formulas]: as in torch's derivatives.yaml, an operand is saved only when the
formula of an operand that requires grad reads it (``mul``: ``b`` is saved if ``a``
requires grad). Each row's formula is written out as the ``apply`` of its Node class
in ops/_pointwise_nodes.py, which ``python -m aiograd.ops._gen_pointwise`` generates
from the rows (``SPECS``) and a test keeps current; so a backward step is one Python
call, and the class is code a reader (and a tool) can open. A formula runs on ndarrays
in an ordinary pass and on Tensors in a create_graph pass (NOTE [One rule for both
modes] in _common.py). Names a formula may use: ``np``, ``Tensor``, ``graph``
(whether this is a create_graph pass), and what the row passes as ``env`` (bound to
the Node class as static attributes when the row is made).

NOTE [Fast path]: the forward a template makes first tries the common case, all
operands Tensors of one dtype and device, or a float Tensor with a Python number
(a weak scalar, which keeps the tensor's dtype as in torch), and records with the
fewest objects (graph.py NOTE [Cheap recording]); anything else (arrays, mixed
dtypes, integer promotion, errors) takes the general path below it, which
coerces the operands and applies NOTE [Type promotion].
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from .._sparse import SparseCOO
from ..autograd.graph import Node, Shape
from . import _pointwise_nodes
from ..tensor import Tensor, get_default_dtype, new_tensor, tensor
from ._common import (
    _NUMBERS,
    as_tensor_operand,
    broadcast_shapes,
    is_operand,
    common_device,
    grad_enabled,
    operand_error,
    torch_dtype_name,
)
from ._table import OpDef, OpTable

if TYPE_CHECKING:
    from ..device import Device

__all__ = ["PointwiseTable", "UnaryOp", "BinaryOp", "result_type", "result_dtype", "prep_operands", "cast_result",
           "make_unary", "make_binary"]

_ndarray = np.ndarray


class UnaryOp(Protocol):
    def __call__(self, input: Tensor) -> Tensor: ...


class BinaryOp(Protocol):
    def __call__(self, input: Any, other: Any) -> Tensor: ...


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
    return _combine_categories(dim, _combine_categories(zero, wrapped))


def result_dtype(a: Any, b: Any, floating: bool = False) -> np.dtype:
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
        want = get_default_dtype()
    return want


def cast_result(res: Any, a: Any, b: Any, floating: bool = False) -> np.ndarray:
    """Cast a numpy result to torch's promoted dtype of ``a`` and ``b`` (``floating``: int -> default float)."""
    want = result_dtype(a, b, floating)
    if res.__class__ is not np.ndarray and res.__class__ is not SparseCOO:  # NOTE [Sparse payload]
        res = np.asarray(res)
    if res.dtype != want:
        res = res.astype(want)
    return res


def prep_operands(a: Any, b: Any, op: str, second: str = "other") -> tuple[Any, Any, Any, Any, Device]:
    """The operands of binary op ``op`` checked and coerced (NOTE [Operands] in _common.py): (a, b, a's
    data, b's data, device), Tensors or Python numbers."""
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        if not isinstance(a, _NUMBERS):
            raise operand_error(op, "input", 1, a)
        a = like = tensor(a)  # a number as ``input``: a 0-d tensor of its own dtype, as torch's
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


# NOTE [Nodes made without type.__call__]: on Python 3.11 calling a class whose __init__ is
# Python code is not specialized: ``MulBackward0(...)`` packs its arguments into a tuple and
# goes through type_call and slot_tp_init. A generated pointwise node is made by its class's
# ``record`` as ``object.__new__(cls)`` with its slots stored after it: about 400 machine
# instructions less per recorded op (benchmarks/callgrind_chain.py: ``h * w`` 21,845 -> 21,423).
#
# NOTE [Recorded by the node class]: each generated pointwise Node class has a static
# ``record`` (ops/_pointwise_nodes.py) that makes an op's result and its node in one
# call: Node._init_node's stores, the saving of what the formulas read, tensor.new_tensor
# and graph.link_one / link_pair, copied in by the generator (the link's slots stored
# once, NOTE [Slots the link sets] in graph.py). The forward calls it in place of
# ``new_tensor`` when the result needs a node. Two reasons:
#   - one Python frame per recorded op, where ``new_tensor``, a shared ``make_node``, the
#     node's initializer and a shared link took four;
#   - every attribute store sees one node class: a link shared by all ops specializes for
#     the class it saw last, and misses on every op of a graph that mixes two (``h * 1.0001
#     + 0.5``: Mul, Add, Mul, ...).
# A binary forward also passes the result's shape, which it has in hand (the operands'
# shape, when neither was broadcast): the node's ``grad_shape`` then makes no tuple.
# Measured (benchmarks/callgrind_chain.py KIND 3000 record, instructions per op): ``h * w``
# 20,798 -> 18,226; ``h * 1.0001 + 0.5`` (2 ops) 42,143 -> 35,071; ``sin`` 14,945 -> 13,882
# (benchmarks/README.md). The generated module repeats the copied lines in each class; the
# freshness test keeps every copy what the copied functions say.
# Hand-written ops make their nodes with the constructor and link with graph.py's functions.


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


def reduced_shapes(a_shape: Shape, b_shape: Shape, out_shape: Shape) -> tuple[Shape | None, Shape | None]:
    """What a binary pointwise node keeps of its operands' shapes: each one that differs from the
    result's (that operand was broadcast, its gradient is summed back to it), else None (no tuple
    kept per node: graph.py NOTE [Cheap recording])."""
    return (None if a_shape == out_shape else a_shape), (None if b_shape == out_shape else b_shape)


# ----- the Node classes (NOTE [Formulas]) --------------------------------------------

#: What each pointwise row's Node needs, by Node name: read by ``_gen_pointwise`` to write
#: ops/_pointwise_nodes.py.
SPECS: dict[str, dict[str, Any]] = {}


class _NotGenerated(Node):
    """Stands in for a row's Node class that ops/_pointwise_nodes.py does not have yet."""

    __slots__ = ("args",)

    def __init__(self, *args: Any) -> None:
        self._init_node()
        self.args = args

    @staticmethod
    def record(*args: Any) -> Tensor:
        raise RuntimeError("this op's node class is not generated yet: run python -m aiograd.ops._gen_pointwise")

    def apply(self, grads: list[Any]) -> Any:
        raise RuntimeError(f"{self.name()} is not generated yet: run python -m aiograd.ops._gen_pointwise")


def _node_class(spec: dict[str, Any], env: dict[str, Any] | None) -> type[Node]:
    """The generated class of a row (its env bound as static attributes), after registering its spec."""
    node = spec["node"]
    if node in SPECS and SPECS[node] != spec:
        raise ValueError(f"two pointwise rows name the Node class {node} differently")
    SPECS[node] = spec
    cls: type[Node] | None = getattr(_pointwise_nodes, node, None)
    if cls is None:
        cls = type(node, (_NotGenerated,), {"__slots__": ()})
    for k, v in (env or {}).items():
        setattr(cls, k, staticmethod(v))
    return cls


def make_unary(
    name: str,
    kernel: Callable[[np.ndarray], Any],
    rule: str,
    *,
    saves: str,
    node: str,
    integers: str = "float",
    env: dict[str, Any] | None = None,
    doc: str | None = None,
    module: str = "aiograd.ops.elementwise",
) -> tuple[UnaryOp, type[Node]]:
    """The forward and Node class of ``PointwiseTable.unary`` (without registering them)."""
    if saves not in ("input", "output", "none"):
        raise ValueError(f"{name}: saves must be 'input', 'output' or 'none', got {saves!r}")
    if integers not in ("float", "keep", "copy"):
        raise ValueError(f"{name}: integers must be 'float', 'keep' or 'copy', got {integers!r}")
    node_cls = _node_class({"kind": "unary", "name": name, "node": node, "rule": rule, "saves": saves,
                            "env": tuple(sorted(env or ())), "module": module}, env)
    record = getattr(node_cls, "record", _NotGenerated.record)  # NOTE [Recorded by the node class]
    cast_ints = integers == "float"
    copy_ints = integers == "copy"

    def forward(input: Tensor) -> Tensor:
        if input.__class__ is not Tensor:
            input = _unary_operand(input, name)
        xd = input._data
        dt = xd.dtype
        if dt.kind not in "fc":
            if copy_ints:
                return new_tensor(xd.copy(), input._device)
            if cast_ints:
                xd = xd.astype(get_default_dtype())
                dt = xd.dtype
        res = kernel(xd)
        if res.__class__ is not _ndarray:
            res = res if res.__class__ is SparseCOO else np.asarray(res)  # NOTE [Sparse payload]
        if res.dtype is not dt and res.dtype.kind == dt.kind:
            res = res.astype(dt)  # a kernel without a loop for this dtype (scipy on float16)
        if input._requires_grad and grad_enabled():
            return record(input, res, input._device)
        return new_tensor(res, input._device)

    _name(forward, name, doc or f"Elementwise {name}, differentiable.", module)
    return forward, node_cls


def make_binary(
    name: str,
    kernel: Callable[[Any, Any], Any],
    *,
    da: str,
    db: str,
    node: str,
    integers: str = "promote",
    numbers: bool = True,
    alpha: Callable[[Any, Any], Any] | None = None,
    env: dict[str, Any] | None = None,
    doc: str | None = None,
    module: str = "aiograd.ops.elementwise",
) -> tuple[Any, type[Node]]:
    """The forward and Node class of ``PointwiseTable.binary`` (without registering them)."""
    if integers not in ("promote", "float", "refuse"):
        raise ValueError(f"{name}: integers must be 'promote', 'float' or 'refuse', got {integers!r}")
    floating = integers == "float"
    refuse = integers == "refuse"
    fast_ints = integers == "promote"  # an integer dtype shared by both operands is the result's
    node_cls = _node_class({"kind": "binary", "name": name, "node": node, "da": da, "db": db,
                            "env": tuple(sorted(env or ())), "module": module}, env)
    record = getattr(node_cls, "record", _NotGenerated.record)  # NOTE [Recorded by the node class]

    def general(input: Any, other: Any) -> Tensor:
        if not numbers:  # torch has no overload taking a Python number for this op
            for x, arg, position in ((input, "input", 1), (other, "other", 2)):
                if isinstance(x, (bool, int, float, complex)):
                    raise operand_error(name, arg, position, x)
        a, b, ad, bd, device = prep_operands(input, other, name)
        if refuse and (dt := result_dtype(a, b)).kind not in "fc":
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_dtype_name(dt)}\'')
        res = cast_result(kernel(ad, bd), a, b, floating)
        ra = isinstance(a, Tensor) and a._requires_grad
        rb = isinstance(b, Tensor) and b._requires_grad
        if (ra or rb) and grad_enabled():
            shape = res.shape
            return record(a, b, ra, rb, *reduced_shapes(_shape(a), _shape(b), shape), res, device, shape)
        return new_tensor(res, device)

    scale = alpha

    def make_forward(operator: bool) -> Callable[..., Any]:
        # NOTE [Own operator form]: one body, two closures: the op (``operator`` False) and its
        # Tensor operator (``__mul__``), which returns NotImplemented for a non-operand instead
        # of raising (what ``dunder`` in _common.py does as a wrapper: one Python call more per
        # ``a * b``). The operator form takes ``alpha`` too; Python never passes it.
        def forward(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
            if alpha != 1:
                if scale is None:
                    raise TypeError(f"{name}() got an unexpected keyword argument 'alpha'")
                other = scale(other, alpha)
            if input.__class__ is Tensor:
                ad = input._data
                oc = other.__class__
                if oc is Tensor:
                    bd = other._data
                    dt = ad.dtype
                    if dt is bd.dtype and input._device is other._device and (dt.kind == "f" or fast_ints):
                        shape = ad.shape
                        sa: Shape | None
                        sb: Shape | None
                        if shape == bd.shape:  # the result's shape too
                            res = kernel(ad, bd)
                            sa = sb = None  # no operand was broadcast: nothing to sum back to
                        else:
                            res = _broadcasting(kernel, ad, bd)
                            out_shape = res.shape
                            sa, sb = reduced_shapes(shape, bd.shape, out_shape)
                            shape = out_shape
                        if res.__class__ is not _ndarray and res.__class__ is not SparseCOO:  # NOTE [Sparse payload]
                            res = np.asarray(res)
                        ra = input._requires_grad
                        rb = other._requires_grad
                        if (ra or rb) and grad_enabled():
                            return record(input, other, ra, rb, sa, sb, res, input._device, shape)
                        return new_tensor(res, input._device)
                elif (oc is float or oc is int) and ad.dtype.kind == "f" and numbers:
                    res = kernel(ad, other)
                    if res.__class__ is not _ndarray and res.__class__ is not SparseCOO:
                        res = np.asarray(res)
                    if input._requires_grad and grad_enabled():
                        return record(input, other, True, False, None, None, res, input._device, res.shape)
                    return new_tensor(res, input._device)
            if operator and not is_operand(other):
                return NotImplemented
            return general(input, other)

        return forward

    def make_operator() -> Callable[..., Any]:
        """A Tensor operator method of this op (the op table names it, NOTE [Own operator form])."""
        method = make_forward(True)
        method.__signature__ = inspect.signature(_plain_binary)  # type: ignore[attr-defined]
        return method

    forward = make_forward(False)
    if scale is None:  # what inspect (and the stub generator) shows: no alpha keyword
        forward.__signature__ = inspect.signature(_plain_binary)  # type: ignore[attr-defined]
    _name(forward, name, doc or f"Elementwise {name} with broadcasting, differentiable.", module)
    forward.make_operator = make_operator  # type: ignore[attr-defined]
    return forward, node_cls


def _plain_binary(input: Any, other: Any) -> Tensor:
    """The signature of a binary op without ``alpha`` (see ``make_binary``)."""
    raise NotImplementedError


# ----- the table ------------------------------------------------------------------------


class PointwiseTable(OpTable):
    """An ``OpTable`` that can also make pointwise ops from kernels and formulas."""

    @property
    def module(self) -> str:
        """The family module, which the ops and Node classes it makes name as theirs."""
        return f"aiograd.ops.{self.family}"

    def unary(
        self,
        name: str,
        kernel: Callable[[np.ndarray], Any],
        rule: str,
        *,
        saves: str,
        node: str,
        integers: str = "float",
        ufuncs: tuple[Any, ...] = (),
        aliases: tuple[str, ...] = (),
        operators: tuple[str, ...] = (),
        inplace: bool = False,
        env: dict[str, Any] | None = None,
        doc: str | None = None,
    ) -> UnaryOp:
        """A differentiable elementwise ``kernel`` with derivative ``rule`` (an expression of
        ``g`` and ``v``, the saved ``"input"`` or ``"output"``; ``"none"``: the rule reads neither).

        ``integers``: what an integer input does: ``"float"`` computes in the default
        float dtype, ``"keep"`` in its own dtype, ``"copy"`` returns a copy (rounding).
        ``inplace``: also make the method ``<name>_`` (ops/inplace.py).
        """
        forward, node_cls = make_unary(name, kernel, rule, saves=saves, node=node, integers=integers, env=env,
                                       doc=doc, module=self.module)
        self.add(OpDef(name, forward, self.family, (node_cls,), True, aliases, operators, (), ufuncs, (), True,
                       ("copy" if saves == "input" else "direct") if inplace else ""))
        return forward

    def binary(
        self,
        name: str,
        kernel: Callable[[Any, Any], Any],
        *,
        da: str,
        db: str,
        node: str,
        integers: str = "promote",
        numbers: bool = True,
        alpha: Callable[[Any, Any], Any] | None = None,
        ufuncs: tuple[Any, ...] = (),
        aliases: tuple[str, ...] = (),
        operators: tuple[str, ...] = (),
        reflected: tuple[str, ...] = (),
        env: dict[str, Any] | None = None,
        doc: str | None = None,
    ) -> BinaryOp:
        """A differentiable ``kernel(a, b)`` with broadcasting and torch's promotion; ``da``/``db``
        give each operand's gradient (NOTE [Formulas]). ``integers``: what integer (and bool)
        operands give: ``"promote"`` torch's promoted dtype, ``"float"`` the default float dtype
        (true division, atan2), ``"refuse"`` torch's NotImplementedError (hypot, logaddexp).
        ``numbers=False``: a Python number operand is refused with torch's TypeError (ops that
        torch has no number overload for, NOTE [Operands] in _common.py).
        ``alpha``: the op takes torch's ``alpha=`` keyword (``kernel(a, alpha * b)``), and this
        function scales ``b`` by it (differentiably)."""
        forward, node_cls = make_binary(name, kernel, da=da, db=db, node=node, integers=integers, numbers=numbers,
                                        alpha=alpha, env=env, doc=doc, module=self.module)
        self.add(OpDef(name, forward, self.family, (node_cls,), True, aliases, operators, reflected, ufuncs))
        return forward

    def compare(
        self,
        name: str,
        kernel: Callable[[Any, Any], Any],
        *,
        ufuncs: tuple[Any, ...] = (),
        operators: tuple[str, ...] = (),
        reflected: tuple[str, ...] = (),
        doc: str | None = None,
    ) -> BinaryOp:
        """A boolean ``kernel(a, b)`` with broadcasting (comparisons, logical and/or/xor): no gradient."""

        def forward(input: Any, other: Any) -> Tensor:
            if input.__class__ is Tensor and other.__class__ is Tensor and input._device is other._device:
                ad = input._data
                bd = other._data
                res = kernel(ad, bd) if ad.shape == bd.shape else _broadcasting(kernel, ad, bd)
                device = input._device
            else:
                a, b, ad, bd, device = prep_operands(input, other, name)
                res = kernel(ad, bd)
            return new_tensor(res if res.__class__ is _ndarray else np.asarray(res), device)

        _name(forward, name, doc or f"Elementwise {name} (not differentiable): a bool tensor.", self.module)
        self.add(OpDef(name, forward, self.family, (), True, (), operators, reflected, ufuncs, (), True))
        return forward

    def predicate(
        self,
        name: str,
        kernel: Callable[[np.ndarray], Any],
        *,
        ufuncs: tuple[Any, ...] = (),
        operators: tuple[str, ...] = (),
        doc: str | None = None,
    ) -> UnaryOp:
        """An elementwise ``kernel(x)`` without gradient (isnan, sign, logical_not, ...)."""

        def forward(input: Tensor) -> Tensor:
            if input.__class__ is not Tensor:
                input = _unary_operand(input, name)
            res = kernel(input._data)
            return new_tensor(res if res.__class__ is _ndarray else np.asarray(res), input._device)

        _name(forward, name, doc or f"Elementwise {name} (not differentiable).", self.module)
        self.add(OpDef(name, forward, self.family, (), True, (), operators, (), ufuncs, (), True))
        return forward


def _name(fn: Callable[..., Any], name: str, doc: str, module: str) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = doc
    fn.checks_operands = True  # type: ignore[attr-defined]  # on its slow path: its public form is itself


def _broadcasting(kernel: Callable[[Any, Any], Any], ad: np.ndarray, bd: np.ndarray) -> Any:
    """``kernel(ad, bd)`` for operands of different shapes, with torch's error when they do not broadcast."""
    try:
        return kernel(ad, bd)
    except ValueError:
        broadcast_shapes(ad.shape, bd.shape)
        raise


def _unary_operand(x: Any, op: str) -> Tensor:
    """The operand of a unary op when it is not exactly a Tensor: a subclass (Parameter), else torch's
    TypeError (NOTE [Operands] in _common.py)."""
    if isinstance(x, Tensor):
        return x
    raise operand_error(op, "input", 1, x)
