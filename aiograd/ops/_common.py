"""What every op family's forward shares: the grad-mode check, operand coercion and
checks, device checks, and making the result tensor.

NOTE [One rule for both modes]: backward rules are written with numpy
operators and functions (``g * np.cos(x)``). In an ordinary pass ``g`` and
the saved values are ndarrays and the rule runs as plain numpy. In a pass
with ``create_graph=True`` they are Tensors; numpy then hands ``np.cos(x)``
to ``Tensor.__array_ufunc__`` and ``np.sum(x)`` to ``Tensor.__array_function__``
(bound from the op tables, _table.py), which call the differentiable aiograd op, so the same rule records a graph
and higher-order gradients need no second implementation.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, TypeVar

import numpy as np

from .._dtypes import torch_dtype_name  # noqa: F401  (re-exported: the ops import it from here)
from .._sparse import SparseCOO
from ..autograd import grad_mode as _gm
from ..device import Device
from ..tensor import Tensor, get_default_dtype, new_tensor
from . import _checked
from ._errors import common_device, operand_error

__all__ = [
    "as_tensor_operand",
    "is_operand",
    "operand_error",
    "check_operand",
    "checked",
    "dunder",
    "broadcast_shapes",
    "common_device",
    "wrap",
    "promote_float",
    "needs_grad",
    "grad_enabled",
    "graph_mode",
    "torch_dtype_name",
]

F = TypeVar("F", bound=Callable[..., Any])

#: whether the current context records ops (a contextvar read: the one per-op context lookup)
grad_enabled = _gm.is_grad_enabled_fast


def needs_grad(*inputs: Any) -> bool:
    """Whether an op on ``inputs`` must record a node (grad mode on and some input requires grad)."""
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            return grad_enabled()
    return False


def graph_mode(g: Any) -> bool:
    """Whether a backward rule runs in a create_graph pass (its gradients are Tensors)."""
    return g.__class__ is Tensor or isinstance(g, Tensor)


# NOTE [Operands]: what an op accepts where torch wants a Tensor, and the one
# error it gives otherwise. An elementwise operand may be a Tensor, a Python
# number (a "weak" scalar for type promotion), or a numpy array or scalar of a
# numeric dtype (numpy interop: ``np.add(array, tensor)`` lands here). Anything
# else (a str, None, a list, an object) is refused with torch's TypeError
# "add(): argument 'other' (position 2) must be Tensor, not str" before numpy
# sees it. Ops that torch gives no overload for a number (atan2, hypot,
# logaddexp) refuse a Python number the same way (``numbers=False`` of the
# pointwise templates). The rule is applied once per kind of entry point, not per op:
# * ``checked`` wraps each public function (``ag.exp``, ``ag.sum``,
#   ``F.cross_entropy``): every parameter annotated ``Tensor`` (or
#   ``Tensor | None``) must get one. The op tables apply it to every exported op
#   (its ``public`` form, NOTE [Op tables]); Tensor methods need no check on
#   ``self``. An op made by a pointwise template checks its operands itself, on
#   its slow path (``checks_operands``), so its public form is the op itself.
# * ``as_tensor_operand``/``check_operand``: the operands of binary ops
#   (``_prep`` in elementwise.py), which may also be numbers (aiograd accepts
#   ``ag.sub(1.0, x)``, torch only a Tensor first), so method forms
#   (``x.add(None)``) are checked too; in-place ops check theirs in
#   ``_inplace`` (inplace.py), written values in ``_values`` (index.py).
# * ``dunder``: the binary operators return NotImplemented for a non-operand,
#   so Python raises its own "unsupported operand type(s) for +: 'Tensor' and
#   'str'" (as torch) and ``x == None`` is False (the op tables bind every
#   binary operator through it).
# Integer arguments (sizes, dims) have their own single check, ``int_tuple`` and
# ``_wrap_dim`` in shape.py.

_NUMBERS = (bool, int, float, complex)


def is_operand(x: Any) -> bool:
    """Whether ``x`` may stand for a tensor in an elementwise op (NOTE [Operands])."""
    if isinstance(x, (Tensor, bool, int, float, complex)):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "biufc"
    return False


def check_operand(x: Any, op: str, name: str, position: int | None) -> None:
    """Raise ``operand_error`` unless ``x`` is an operand (NOTE [Operands])."""
    if x.__class__ is not Tensor and not is_operand(x):
        raise operand_error(op, name, position, x)


def as_tensor_operand(x: Any, like: Tensor, op: str = "", name: str = "other", position: int | None = None) -> Any:
    """Coerce an operand of a binary op: Tensors stay, Python numbers stay (weak scalars), numeric arrays wrap.

    Anything else raises torch's TypeError for ``op`` (NOTE [Operands])."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _NUMBERS):
        return x
    if not is_operand(x):
        raise operand_error(op or "operator", name, position, x)
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and not isinstance(x, np.ndarray) and not isinstance(x, np.generic):
        arr = arr.astype(like._data.dtype if like._data.dtype.kind == "f" else get_default_dtype())
    return Tensor._wrap(arr, like._device)


def dunder(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[Tensor, Any], Any]:
    """An operator method for the binary op ``fn``: NotImplemented for a non-operand (NOTE [Operands])."""
    # The common operand classes are tested first: this runs on every ``a + b``.
    if reflected:

        def method(self: Tensor, other: Any) -> Any:
            cls = other.__class__
            if cls is not Tensor and cls is not float and cls is not int and not is_operand(other):
                return NotImplemented
            return fn(other, self)

    else:

        def method(self: Tensor, other: Any) -> Any:
            cls = other.__class__
            if cls is not Tensor and cls is not float and cls is not int and not is_operand(other):
                return NotImplemented
            return fn(self, other)

    method.__name__ = method.__qualname__ = getattr(fn, "__name__", "op")
    method.__doc__ = fn.__doc__
    return method


_TENSOR_HINTS = {"Tensor": False, "Tensor | None": True, Tensor: False}


def tensor_hint(annotation: Any) -> bool | None:
    """Whether a parameter so annotated must hold a Tensor: False for ``Tensor``, True for
    ``Tensor | None`` (None allowed), None for any other annotation (NOTE [Operands])."""
    return _TENSOR_HINTS.get(annotation) if isinstance(annotation, (str, type)) else None


# NOTE [Public wrappers]: the public form of an op (``ag.sum``, ``F.cross_entropy``) is its
# forward behind a wrapper with the same parameters that raises torch's TypeError for a
# non-tensor in a parameter annotated ``Tensor`` (NOTE [Operands]) and, when the op reads
# two or more tensors, torch's error for two devices (NOTE [One device per op]); a Tensor
# method gets a second form with the device check alone (``method_form``). The wrappers
# are plain functions in the generated, checked-in module ``_checked.py``, one factory per
# forward (``ops_reduce__sum(fn)`` returns ``sum``, closing over ``fn``), written by
# ``python -m aiograd.ops._stubgen`` from the forwards ``checked`` was given (``WRAPPED``);
# tests/test_op_tables.py fails while the file differs from what they give. So the
# wrapper's parameter list is the forward's own, and a call costs one plain Python call
# more, not an ``*args``/``**kwargs`` repack. The generated module imports only Tensor and
# the two errors (``_errors.py``) and receives each forward as the factory's argument: the
# family modules import ``checked``, so importing them from it would be a cycle.

#: every forward given to ``checked``, by the name of its factory in ``_checked.py``, with
#: its ``same_device``: what the generator writes a wrapper for
WRAPPED: dict[str, tuple[Callable[..., Any], bool]] = {}


def wrapper_name(fn: Callable[..., Any], same_device: bool = True) -> str:
    """The name of ``fn``'s factory in ``_checked.py``: its module and name,
    ``aiograd.ops.reduce.sum`` -> ``ops_reduce__sum`` (NOTE [Public wrappers])."""
    parts = [p.lstrip("_") for p in fn.__module__.split(".")[1:]]
    name = "_".join(parts) + "__" + fn.__qualname__.replace(".", "_")
    return name if same_device else name + "__any_device"


def checked(fn: F, same_device: bool = True) -> F:
    """The public form of op ``fn``: the same signature, and a TypeError in torch's words when a
    parameter annotated ``Tensor`` (or ``Tensor | None``) gets something else (NOTE [Operands]),
    and torch's error when its tensors are on two devices (NOTE [One device per op]).

    The wrapper is the generated function in ``_checked.py`` (NOTE [Public wrappers]).
    Functions with no such parameter are returned unchanged.
    """
    if getattr(fn, "checks_operands", False):  # an op that checks its own (the pointwise templates')
        return fn
    name = wrapper_name(fn, same_device)
    if WRAPPED.setdefault(name, (fn, same_device))[0] is not fn:
        raise RuntimeError(f"{fn.__module__}.{fn.__qualname__}: another forward has the public wrapper name {name!r}")
    make = getattr(_checked, name, None)
    if make is None:
        if any(tensor_hint(p.annotation) is not None for p in inspect.signature(fn).parameters.values()):
            warnings.warn(
                f"{fn.__module__}.{fn.__qualname__} has no public wrapper in aiograd/ops/_checked.py, so its "
                "operands are not checked: run `python -m aiograd.ops._stubgen`",
                RuntimeWarning,
                stacklevel=2,
            )
        return fn
    public = _named(make(fn), fn)
    make_method = getattr(_checked, name + "__method", None)
    if make_method is not None:
        public.method_form = _named(make_method(fn), fn)
    return public


def _named(public: Any, fn: Callable[..., Any]) -> Any:
    """``public`` named and documented as ``fn``, with ``fn`` as ``__wrapped__`` (what
    ``inspect.signature`` and the docs read)."""
    public.__doc__ = fn.__doc__
    public.__module__ = fn.__module__
    public.__qualname__ = fn.__qualname__
    public.__wrapped__ = fn
    public.__annotations__ = getattr(fn, "__annotations__", {})
    return public


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to, or torch's error naming the first mismatch."""
    out = shapes[0]
    for shape in shapes[1:]:
        if shape == out:
            continue
        n = len(out) if len(out) > len(shape) else len(shape)
        pa = (1,) * (n - len(out)) + out
        pb = (1,) * (n - len(shape)) + shape
        dims = []
        for i, (x, y) in enumerate(zip(pa, pb)):
            if x != y and x != 1 and y != 1:
                raise RuntimeError(
                    f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                )
            dims.append(y if x == 1 else x)
        out = tuple(dims)
    return out


# NOTE [One device per op]: every tensor an op reads must be on one device, else torch's
# "Expected all tensors to be on the same device" (a model on cpu:1 fed a cpu input is an
# error, never a result on one of them). Binary pointwise ops check in ``prep_operands``;
# every other public op checks in its ``checked`` wrapper, which compares the devices of
# its Tensor parameters (one identity test each: devices are interned) and calls
# ``common_device`` for the message. Ops taking a sequence of tensors (cat, stack) check
# the sequence themselves.


def data_of(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def promote_float(out: np.ndarray, *xs: Any) -> np.ndarray:
    """torch's rule for int tensor with Python float: the result takes the default dtype, not float64."""
    if out.dtype == np.float64:
        for x in xs:
            if isinstance(x, Tensor) and x._data.dtype == np.float64:
                return out
            if isinstance(x, np.ndarray) and x.dtype == np.float64:
                return out
        return out.astype(get_default_dtype())
    return out


def wrap(arr: Any, device: Device) -> Tensor:
    """A new Tensor for an op's result (numpy scalars become 0-d arrays)."""
    if arr.__class__ is not np.ndarray and arr.__class__ is not SparseCOO:  # NOTE [Sparse payload]
        arr = np.asarray(arr)
    return new_tensor(arr, device)
