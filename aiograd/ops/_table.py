"""The op tables: one registration per op, from which everything else about it comes.

NOTE [Op tables]: each family module (pointwise/elementwise.py, reduction/reduce.py,
movement/shape.py, linalg/, nn/activation.py, convert.py...) keeps one ``OpTable``, whose
``family`` is the module's path under aiograd.ops (``"pointwise.elementwise"``, ``"linalg"``:
the ops made from formulas and the generated stubs name it as their module), and registers
each op in it once, next to the op's forward and its Node class:

    @REDUCE.op(functions=(np.sum,), nodes=(SumBackward0,))
    def sum(input, dim=None, keepdim=False, *, dtype=None): ...

or, for an op made from a formula (``_pointwise.py``), by the one call that makes it:

    sin = ELEMENTWISE.unary("sin", np.sin, "g * np.cos(v)", saves="input", node="SinBackward0",
                            ufuncs=(np.sin,), inplace=True)

From the row come:

* the public function ``aiograd.<name>`` (and its aliases): the forward behind
  ``checked`` (NOTE [Operands] in _common.py), whose wrapper is generated code in
  ``_checked.py`` (NOTE [Public wrappers]), which the registration returns for
  the module to bind, listed in the family's ``__all__ = TABLE.exports(__name__)``;
* the Tensor method of the same name and its aliases (the forward itself), its
  operators (``__mul__``) and reflected operators (``__rsub__``), which for a
  binary operator return NotImplemented on a non-operand (``dunder``): ``install``
  binds them, the only place that sets attributes on Tensor;
* numpy's dispatch: ``__array_ufunc__`` routes the row's ufuncs to the op and
  ``__array_function__`` its numpy functions (which is how backward rules written
  in numpy serve create_graph passes: NOTE [One rule for both modes] in _common.py);
* the typed view of Tensor for mypy and editors: ``aiograd/_tensor_methods.pyi``,
  generated from the tables by ``python -m aiograd.ops._stubgen`` (a test fails
  while it is out of date);
* the differentiable op's Node classes (``nodes``), which the per-op test rows
  cover (tests/op_rows.py: a test fails for a differentiable op without a row).

A newcomer adds an op in one place (its Node class, its forward and the row) plus
one test row; the stub files and the wrappers are regenerated, and the ``__all__`` snapshot test says
which line to add for a new public name.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, TypeVar

from ._common import checked, dunder

if TYPE_CHECKING:
    from ..autograd.graph import Node
    from ..tensor import Tensor

__all__ = ["OpDef", "OpTable", "install", "TABLES"]

F = TypeVar("F", bound=Callable[..., Any])


class OpDef(NamedTuple):
    """One op of a family table (NOTE [Op tables])."""

    name: str  #: the public name (``aiograd.<name>``; for a method-only op, the Tensor attribute)
    fn: Callable[..., Any]  #: the forward
    family: str  #: the table it belongs to: its module's path under aiograd.ops
    nodes: tuple[type[Node], ...] = ()  #: Node classes it records; () for an op without gradient
    method: bool = True  #: also ``Tensor.<name>`` (and ``Tensor.<alias>`` for each alias)
    aliases: tuple[str, ...] = ()  #: other names of the same op (``clip`` for ``clamp``)
    operators: tuple[str, ...] = ()  #: Tensor dunders bound to ``fn`` as is (``__mul__``, ``__rmul__``)
    reflected: tuple[str, ...] = ()  #: Tensor dunders bound with operands swapped (``__rsub__``)
    ufuncs: tuple[Any, ...] = ()  #: numpy ufuncs that ``__array_ufunc__`` routes to ``fn``
    functions: tuple[Any, ...] = ()  #: numpy functions routed to ``fn``, or ``(numpy function, adapter)`` pairs
    export: bool = True  #: a public function (in ``__all__``); False: a Tensor method or dispatch target only
    inplace: str = ""  #: an in-place method ``<name>_`` is made from it: "copy" (its rule reads the input) or "direct"
    public: Callable[..., Any] | None = None  #: ``aiograd.<name>``: ``checked(fn)``, set by ``OpTable.add``
    #: its tensors must share one device (NOTE [One device per op]); False for an op that only
    #: reads another tensor's shape (``view_as``) or copies across devices (``copy_``)
    same_device: bool = True

    @property
    def differentiable(self) -> bool:
        return bool(self.nodes)

    def tensor_attributes(self) -> list[str]:
        """The Tensor attributes this row binds (see ``install``)."""
        names = [self.name, *self.aliases] if self.method else []
        return names + list(self.operators) + list(self.reflected)


TABLES: list["OpTable"] = []


class OpTable:
    """The ops of one family, in registration order (NOTE [Op tables])."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._ops: dict[str, OpDef] = {}
        TABLES.append(self)

    # ----- registration -------------------------------------------------------------
    def op(
        self,
        *,
        name: str | None = None,
        nodes: tuple[type[Node], ...] = (),
        method: bool = True,
        aliases: tuple[str, ...] = (),
        operators: tuple[str, ...] = (),
        reflected: tuple[str, ...] = (),
        ufuncs: tuple[Any, ...] = (),
        functions: tuple[Any, ...] = (),
        export: bool = True,
        inplace: str = "",
        same_device: bool = True,
    ) -> Callable[[F], F]:
        """Decorator: register the decorated forward as an op (its own name unless ``name``)."""

        def deco(fn: F) -> F:
            op = self.add(OpDef(name or fn.__name__, fn, self.family, nodes, method, aliases, operators, reflected,
                                ufuncs, functions, export, inplace, same_device=same_device))
            return op.public  # type: ignore[return-value]

        return deco

    def add(self, op: OpDef) -> OpDef:
        """Register a row (templates call this; see also ``op``); returns it with its ``public`` function."""
        if op.name in self._ops:
            raise ValueError(f"{self.family}: the op {op.name!r} is registered twice")
        if op.inplace not in ("", "copy", "direct"):
            raise ValueError(f"{op.name}: inplace must be '', 'copy' or 'direct', got {op.inplace!r}")
        op = op._replace(family=self.family, public=checked(op.fn, op.same_device) if op.export else op.fn)
        self._ops[op.name] = op
        return op

    # ----- reading --------------------------------------------------------------------
    def __iter__(self) -> Iterator[OpDef]:
        return iter(self._ops.values())

    def __getitem__(self, name: str) -> OpDef:
        return self._ops[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def exports(self, module: str) -> list[str]:
        """The family module's ``__all__``: its public ops and their aliases.

        Checks that the module binds each name to the op's public function, so the
        names static tools read (module attributes) are the ones the table holds.
        """
        mod = sys.modules[module]
        names: list[str] = []
        for op in self:
            if not op.export:
                continue
            for n in (op.name, *op.aliases):
                if getattr(mod, n, None) is not op.public:
                    raise RuntimeError(
                        f"{module}: the op {op.name!r} is exported as {n!r}, but the module does not bind "
                        f"{n} to it: bind the registration's result, and `{n} = {op.name}` for an alias"
                    )
                names.append(n)
        return names


def all_ops() -> Iterator[OpDef]:
    """Every registered op of every family."""
    for table in TABLES:
        yield from table


# ----- binding: Tensor attributes and numpy dispatch ----------------------------------

_UFUNCS: dict[Any, Callable[..., Any]] = {}
_FUNCTIONS: dict[Any, Callable[..., Any]] = {}


#: Operators with an operand beside self: bound through ``dunder`` (NotImplemented for a
#: non-operand, so Python raises its own TypeError, and ``x == None`` is False)
BINARY_DUNDERS = frozenset(
    f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")
    for p in ("", "r", "i")
) | {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}


def _operator(fn: Callable[..., Any], name: str, reflected: bool) -> Callable[..., Any]:
    if name in BINARY_DUNDERS:
        make = getattr(fn, "make_operator", None)  # a pointwise op's own operator form (NOTE [Own operator form])
        method = make() if make is not None and not reflected else dunder(fn, reflected)
    elif reflected:

        def method(self: Any, other: Any) -> Any:
            return fn(other, self)

    else:
        return fn
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{fn.__name__}({'other, self' if reflected else 'self, other'})``."
    return method


def _array_ufunc(self: Tensor, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if method != "__call__" or kwargs.get("out") is not None:
        return NotImplemented
    fn = _UFUNCS.get(ufunc)
    if fn is None:
        return NotImplemented
    kwargs.pop("out", None)
    if kwargs:
        return NotImplemented
    return fn(*inputs)


def _array_function(self: Tensor, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    fn = _FUNCTIONS.get(func)
    if fn is None:
        return NotImplemented
    return fn(*args, **kwargs)


def tensor_bindings() -> dict[str, Callable[..., Any]]:
    """Every Tensor attribute the tables define, with its function (``install`` sets them)."""
    out: dict[str, Callable[..., Any]] = {
        "__array_ufunc__": _array_ufunc,
        "__array_function__": _array_function,
    }
    owner: dict[str, str] = {}
    for op in all_ops():
        for attr in op.tensor_attributes():
            if attr in owner:
                raise RuntimeError(f"Tensor.{attr} is bound by both {owner[attr]} and {op.family}.{op.name}")
            owner[attr] = f"{op.family}.{op.name}"
            if attr in op.operators or attr in op.reflected:
                out[attr] = _operator(op.fn, attr, attr in op.reflected)
            else:  # with its device check, if it has one (NOTE [One device per op])
                checked_fn = op.public if op.export else checked(op.fn, op.same_device)
                out[attr] = getattr(checked_fn, "method_form", op.fn)
    return out


def install(tensor_cls: type) -> None:
    """Bind every table's ops to ``tensor_cls`` and fill numpy's dispatch tables (once, at import)."""
    for attr, fn in tensor_bindings().items():
        if attr in tensor_cls.__dict__ and attr not in ("__array_ufunc__", "__array_function__"):
            raise RuntimeError(f"Tensor.{attr} is defined in tensor.py and bound by an op table: keep one")
        setattr(tensor_cls, attr, fn)
    for op in all_ops():
        for u in op.ufuncs:
            _UFUNCS[u] = op.fn
        for f in op.functions:
            np_func, adapter = f if isinstance(f, tuple) else (f, op.fn)
            _FUNCTIONS[np_func] = adapter
