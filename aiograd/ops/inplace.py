"""In-place ops: ``add_ sub_ mul_ div_ pow_ neg_ exp_ ... clamp_ zero_ fill_ copy_
masked_fill_ index_put_ scatter_ index_copy_ tril_ ...``, ``+= -= *= /=`` and ``__setitem__``.

NOTE [In-place ops]: every in-place op writes into the tensor's existing array (so
its views see the change) and bumps the version counter it shares with its views,
so a node that saved it raises at backward ("...modified by an inplace
operation"). When autograd is involved, the rules follow torch:

* grad mode on and the tensor is a leaf that requires grad (or a view of one):
  RuntimeError. Under ``no_grad`` the write is allowed (optimizer updates).
* grad mode on and the tensor or an operand requires grad: the history is
  rebased. The op is computed out of place by the ordinary differentiable op
  (so it has the same backward rule and node name, ``MulBackward0`` for
  ``mul_``) on an operand standing for the old value, the result is written
  into the array, and the tensor takes the result's ``grad_fn``. An op whose
  rule needs the old value (``mul_``, ``div_``, ``pow_``...) gets a copy of it
  that keeps the tensor's old ``grad_fn``, so nothing saved is overwritten.
* the tensor is a view of a base (``y[0].mul_(2)``, ``y[:, 1] = v``): as torch's
  CopySlices. The view's old value is a strided view of the base's old
  history; the op runs on it out of place; the base's new ``grad_fn`` is
  ``CopySlices`` (the gradient outside the view goes to the old base, inside it
  to the op's result), and the view becomes an ``AsStridedBackward0`` view of the
  new base. Other live views of the base that overlap the write are
  regenerated the same way (NOTE [Live views] in movement/shape.py).
* nothing requires grad (or grad mode is off): write and bump the version.

An expanded tensor (``expand``/``broadcast_to``) has several elements in one
memory location and is read-only: writing to it raises and says to clone().
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.graph import Node, Shape, record, sum_to
from ..tensor import Tensor
from .pointwise import elementwise as _ew
from . import linalg as _linalg
from .reduction import scan as _scan
from .pointwise import special as _special
from ._common import check_operand, common_device, needs_grad
from ._table import OpTable
from .movement.diagonal import DIAGONAL
from .indexing.index import (
    IndexPutBackward0,
    _put,
    _values,
    getitem,
    normalize_index,
    _ADVANCED,
)
from .indexing.scatter import SCATTER, MaskedFillBackward0, MaskedFillBackward1, masked_fill
from .movement.shape import live_views

INPLACE = OpTable("inplace")


# ----- errors ----------------------------------------------------------------------------


def _check_writable(t: Tensor) -> None:
    d = t._data
    if not d.flags.writeable:
        if any(s == 0 and n > 1 for s, n in zip(d.strides, d.shape)):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location (it is an expanded view). Please clone() the tensor before performing the "
                "operation."
            )
        raise RuntimeError("the tensor's memory is read-only; clone() it before writing to it in place")


def _check_leaf(t: Tensor) -> None:
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. Wrap the update "
            "in `with ag.no_grad():` (as an optimizer does), or use an out-of-place op."
        )
    base = t._base
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation. Wrap the "
            "update in `with ag.no_grad():`, or use an out-of-place op."
        )


def _dtype_name(dt: np.dtype) -> str:
    return {"f": "Float", "i": "Long", "u": "Byte", "b": "Bool", "c": "ComplexFloat"}.get(dt.kind, str(dt))


def _write(t: Tensor, rd: np.ndarray, casting: str = "same_kind") -> None:
    """Write an op's result into ``t``'s array (after checking it fits) and bump the version."""
    d = t._data
    if rd.shape != d.shape:
        raise RuntimeError(
            f"output with shape {list(d.shape)} doesn't match the broadcast shape {list(rd.shape)}"
        )
    if casting == "same_kind" and not np.can_cast(rd.dtype, d.dtype, casting="same_kind"):
        raise RuntimeError(
            f"result type {_dtype_name(rd.dtype)} can't be cast to the desired output type {_dtype_name(d.dtype)}"
        )
    np.copyto(d, rd, casting="unsafe")
    t._bump_version()


def _nograd_call(t: Tensor, fn: Callable[[np.ndarray], Any]) -> None:
    d = t._data
    try:
        fn(d)
    except TypeError as e:  # numpy's UFuncTypeError: float result into an int tensor
        raise RuntimeError(
            f"result type can't be cast to the desired output type {_dtype_name(d.dtype)} of this in-place "
            f"operation ({e})"
        ) from None
    except ValueError as e:  # non-broadcastable output
        raise RuntimeError(f"in-place operation on a tensor of shape {list(d.shape)}: {e}") from None
    t._bump_version()


# ----- views of a base: AsStridedBackward0 / CopySlices ------------------------------------


def view_positions(base: np.ndarray, view: np.ndarray) -> np.ndarray:
    """For each element of ``view`` (an array inside ``base``'s memory), its position in
    ``base.reshape(-1)`` (C order). Works for any strides (transposed, negative steps)."""
    item = base.itemsize

    def offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
        o = np.zeros((), np.intp)
        for n, s in zip(shape, strides):
            o = o[..., None] + np.arange(n, dtype=np.intp) * (s // item)
        return o

    start = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    voff = start + offsets(view.shape, view.strides)
    if base.flags.c_contiguous:
        return voff
    boff = offsets(base.shape, base.strides).reshape(-1)
    lo = int(boff.min())
    lut = np.full(int(boff.max()) - lo + 1, -1, np.intp)
    lut[boff - lo] = np.arange(base.size, dtype=np.intp)
    ids = lut[voff - lo]
    if ids.size and ids.min() < 0:  # pragma: no cover - a view always lies in its base's memory
        raise RuntimeError("in-place operation on a view whose memory is not inside its base's memory")
    return ids


class AsStridedBackward0(Node):
    """Gradient of a view of a base, given by the positions of its elements in the flat base."""

    __slots__ = ("ids", "base_shape")
    ids: np.ndarray
    base_shape: Shape

    def __init__(self, ids: np.ndarray, base_shape: Shape) -> None:
        self._init_node()
        self.ids = ids
        self.base_shape = base_shape

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        size = int(np.prod(self.base_shape))
        if g.__class__ is Tensor:
            zeros = Tensor._wrap(np.zeros((size,), g._data.dtype), g._device)
            return (_put(zeros, (self.ids,), g, False, IndexPutBackward0).reshape(self.base_shape),)
        gi = np.zeros(size, g.dtype)
        gi[self.ids] = g
        return (gi.reshape(self.base_shape),)


class CopySlices(Node):
    """The base after an in-place op on one of its views: ``base[view] = result``.
    Edge 0 is the old base (its gradient is zero inside the view), edge 1 the result."""

    __slots__ = ("ids", "base_shape")
    ids: np.ndarray
    base_shape: Shape

    def __init__(self, ids: np.ndarray, base_shape: Shape) -> None:
        self._init_node()
        self.ids = ids
        self.base_shape = base_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        gb: Any = None
        gr: Any = None
        if g.__class__ is Tensor:
            flat = g.reshape(-1)
            if self.should_compute_output(0):
                gb = _put(flat, (self.ids,), 0.0, False, IndexPutBackward0).reshape(self.base_shape)
            if self.should_compute_output(1):
                gr = getitem(flat, (self.ids,))
            return gb, gr
        flat = g.reshape(-1)
        if self.should_compute_output(1):
            gr = flat[self.ids]
        if self.should_compute_output(0):
            gb = np.array(flat)
            gb[self.ids] = 0
            gb = gb.reshape(self.base_shape)
        return gb, gr


def _as_view_of(view: Tensor, base: Tensor, ids: np.ndarray | None = None) -> None:
    """Make ``view``'s grad_fn a strided view of ``base``'s current history."""
    node = AsStridedBackward0(view_positions(base._data, view._data) if ids is None else ids, base._data.shape)
    record(node, (base,), (view,))


def _regenerate_views(base: Tensor, written: Tensor | None) -> None:
    """Re-point the live views of ``base`` that overlap ``written`` (all, if None) at its new history."""
    for v in live_views(base):
        if v is written or (written is not None and not np.may_share_memory(v._data, written._data)):
            continue
        _as_view_of(v, base)


def _inplace_view(t: Tensor, base: Tensor, outofplace: Callable[[Tensor], Tensor]) -> Tensor:
    ids = view_positions(base._data, t._data)
    old = Tensor._wrap(t._data.copy(), t._device)
    if base._requires_grad:
        _as_view_of(old, base, ids)
    r = outofplace(old)
    _write(t, r._data)
    if not (base._requires_grad or r._requires_grad):
        return t
    record(CopySlices(ids, base._data.shape), (base, r), (base,))
    _as_view_of(t, base, ids)
    _regenerate_views(base, t)
    return t


def _alias(t: Tensor) -> Tensor:
    """A copy of ``t``'s current value that keeps ``t``'s place in the graph (the operand of
    an op that saves the old value)."""
    a = Tensor._wrap(t._data.copy(), t._device)
    a.grad_fn = t.grad_fn
    a._output_nr = t._output_nr
    a._requires_grad = t._requires_grad
    if t.grad_fn is None and t._requires_grad:  # pragma: no cover - leaves are refused before
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    return a


def _inplace(
    t: Tensor,
    others: tuple[Any, ...],
    outofplace: Callable[[Tensor], Tensor],
    nograd: Callable[[np.ndarray], Any],
    saves_self: bool = False,
    op: str | None = None,
    names: tuple[str, ...] = ("other",),
    optional: bool = False,
) -> Tensor:
    """Run an in-place op (see NOTE [In-place ops]). ``outofplace(a)`` computes the
    result differentiably from ``a`` standing for ``t``'s old value; ``nograd(d)``
    writes it into the array ``d`` when no graph is needed. With ``op``, ``others``
    (named ``names``; None allowed if ``optional``) must be operands (NOTE [Operands] in _common.py)."""
    if op is not None:
        for position, (name, o) in enumerate(zip(names, others), 1):
            if not (optional and o is None):
                check_operand(o, op, name, position)
    _check_writable(t)
    if not needs_grad(t, *others):
        _nograd_call(t, nograd)
        return t
    _check_leaf(t)
    base = t._base
    if base is not None:
        return _inplace_view(t, base, outofplace)
    r = outofplace(_alias(t) if saves_self else t)
    _write(t, r._data)
    fn = r.grad_fn
    t.grad_fn = fn
    t._output_nr = 0
    t._requires_grad = fn is not None
    _regenerate_views(t, None)
    return t


def _other(o: Any, t: Tensor) -> Any:
    return o._data if isinstance(o, Tensor) else o


def _requires(o: Any) -> bool:
    return isinstance(o, Tensor) and o._requires_grad


# ----- arithmetic -----------------------------------------------------------------------------


def _add_like(ufunc: Any, op: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        def nograd(d: np.ndarray) -> None:
            o = _other(other, self)
            ufunc(d, o if alpha == 1 else np.multiply(o, alpha), out=d, casting="same_kind")

        return _inplace(
            self, (other,), lambda a: op(a, a if other is self else other, alpha=alpha), nograd, op=name
        )

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``self {'+' if ufunc is np.add else '-'}= alpha * other`` in place."
    return method


def _nodes(*names: str) -> tuple[type[Node], ...]:
    """The Node classes of elementwise ops: an in-place op records its out-of-place op's."""
    return tuple(cls for n in names for cls in _ew.ELEMENTWISE[n].nodes)


add_ = INPLACE.op(nodes=_nodes("add", "mul"), operators=("__iadd__",), export=False)(
    _add_like(np.add, _ew.add, "add_"))
sub_ = INPLACE.op(nodes=_nodes("sub", "mul"), aliases=("subtract_",), operators=("__isub__",), export=False)(
    _add_like(np.subtract, _ew.sub, "sub_"))


@INPLACE.op(nodes=_nodes("mul"), aliases=("multiply_",), operators=("__imul__",), export=False)
def mul_(self: Tensor, other: Any) -> Tensor:
    """``self *= other`` in place."""

    def nograd(d: np.ndarray) -> None:
        np.multiply(d, _other(other, self), out=d, casting="same_kind")

    return _inplace(
        self, (other,), lambda a: _ew.mul(a, a if other is self else other), nograd,
        saves_self=_requires(other), op="mul_",
    )


def _rounded_inplace(self: Tensor, other: Any, op: str, outofplace: Callable[[Any, Any], Tensor]) -> Tensor:
    """An in-place op whose rule does not read the old value (div_ with a rounding mode, //=, %=)."""
    return _computed_inplace(self, (other,), op, outofplace)


def _computed_inplace(self: Tensor, operands: tuple[Any, ...], op: str, outofplace: Callable[..., Tensor],
                      saves_self: bool = False, names: tuple[str, ...] = ("other",), **kwargs: Any) -> Tensor:
    """``self = outofplace(self, *operands, **kwargs)`` in place: without a graph the result is computed
    out of place and copied in (a float result refused for an integer tensor); with one, the
    out-of-place op's node is the tensor's new ``grad_fn`` (NOTE [In-place ops])."""

    def nograd(d: np.ndarray) -> None:
        me = Tensor._wrap(d)
        res = outofplace(me, *(me if o is self else _other(o, self) for o in operands), **kwargs)._data
        if not np.can_cast(res.dtype, d.dtype, casting="same_kind"):
            raise TypeError(f"result type {res.dtype} can't be cast to the desired output type {d.dtype}")
        np.copyto(d, res, casting="same_kind")

    def graph(a: Tensor) -> Tensor:
        return outofplace(a, *(a if o is self else o for o in operands), **kwargs)

    return _inplace(self, operands, graph, nograd, saves_self=saves_self, op=op, names=names[: len(operands)])


def _binary_inplace(name: str, op: Callable[..., Tensor], saves_self: bool,
                    names: tuple[str, ...] = ("other",)) -> Callable[..., Tensor]:
    """The in-place method ``name`` of the op ``op(self, *operands, **kwargs)``."""

    def method(self: Tensor, *operands: Any, **kwargs: Any) -> Tensor:
        return _computed_inplace(self, operands, name, op, saves_self, names, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}: ``self`` becomes ``{name[:-1]}(self, ...)``."
    return method


@INPLACE.op(nodes=_nodes("div"), aliases=("divide_", "true_divide_"), operators=("__itruediv__",), export=False)
def div_(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``self /= other`` in place."""
    if rounding_mode is not None:
        return _rounded_inplace(self, other, "div_", lambda a, b: _ew.div(a, b, rounding_mode=rounding_mode))

    def nograd(d: np.ndarray) -> None:
        np.true_divide(d, _other(other, self), out=d, casting="same_kind")

    return _inplace(
        self, (other,), lambda a: _ew.div(a, a if other is self else other), nograd, saves_self=_requires(other),
        op="div_",
    )


@INPLACE.op(nodes=_nodes("floor_divide"), operators=("__ifloordiv__",), export=False)
def floor_divide_(self: Tensor, other: Any) -> Tensor:
    """``self //= other`` in place."""
    return _rounded_inplace(self, other, "floor_divide_", _ew.floor_divide)


@INPLACE.op(nodes=_nodes("remainder"), operators=("__imod__",), export=False)
def remainder_(self: Tensor, other: Any) -> Tensor:
    """``self %= other`` in place."""
    # a tensor ``other``'s gradient reads the old value (floor(self / other)): saved as a copy
    return _computed_inplace(self, (other,), "remainder_", _ew.remainder, saves_self=_requires(other))


@INPLACE.op(nodes=_nodes("pow"), operators=("__ipow__",), export=False)
def pow_(self: Tensor, exponent: Any) -> Tensor:
    """``self **= exponent`` in place."""

    def nograd(d: np.ndarray) -> None:
        np.power(d, _other(exponent, self), out=d, casting="same_kind")

    return _inplace(
        self, (exponent,), lambda a: _ew.pow(a, a if exponent is self else exponent), nograd, saves_self=True,
        op="pow_", names=("exponent",),
    )


@INPLACE.op(nodes=_nodes("clamp"), aliases=("clip_",), export=False)
def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp to ``[min, max]`` in place."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")

    def nograd(d: np.ndarray) -> None:
        np.copyto(d, _ew.clamp(Tensor._wrap(d), min, max)._data, casting="same_kind")

    return _inplace(
        self, (min, max), lambda a: _ew.clamp(a, min, max), nograd, saves_self=True, op="clamp_", names=("min", "max"),
        optional=True,
    )


@INPLACE.op(nodes=_nodes("clamp_min"), export=False)
def clamp_min_(self: Tensor, min: Any) -> Tensor:
    """``self = max(self, min)`` in place."""
    return clamp_(self, min, None)


@INPLACE.op(nodes=_nodes("clamp_max"), export=False)
def clamp_max_(self: Tensor, max: Any) -> Tensor:
    """``self = min(self, max)`` in place."""
    return clamp_(self, None, max)


def _unary_inplace(name: str, op: Callable[[Tensor], Tensor], saves_self: bool) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        def nograd(d: np.ndarray) -> None:
            res = op(Tensor._wrap(d))._data
            if not np.can_cast(res.dtype, d.dtype, casting="same_kind"):
                raise TypeError(f"result type {res.dtype} can't be cast to the desired output type {d.dtype}")
            np.copyto(d, res, casting="same_kind")

        return _inplace(self, (), op, nograd, saves_self=saves_self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}."
    return method


# The in-place twin of each elementwise op whose row asks for one (``inplace=True``), and of
# its aliases (``arcsin_``); "copy": its rule reads the input, so the old value is copied first.
for _op in (*_ew.ELEMENTWISE, *_special.SPECIAL):
    if _op.inplace:
        INPLACE.op(nodes=_op.nodes, aliases=tuple(a + "_" for a in _op.aliases), export=False)(
            _unary_inplace(_op.name + "_", _op.fn, _op.inplace == "copy"))
square_ = INPLACE.op(nodes=_nodes("square"), export=False)(_unary_inplace("square_", _ew.square, True))


def _register_binary_inplace(op: Any, saves_self: bool, names: tuple[str, ...] = ("other",)) -> Any:
    """Register ``<op>_`` (and ``<alias>_``) for a two- or three-operand op of the elementwise families."""
    name = op.__name__ + "_"
    row = _ew.ELEMENTWISE[op.__name__] if op.__name__ in _ew.ELEMENTWISE else _special.SPECIAL[op.__name__]
    return INPLACE.op(nodes=row.nodes, aliases=tuple(a + "_" for a in row.aliases), export=False)(
        _binary_inplace(name, row.fn, saves_self, names))


# saves_self: the op's rule reads the old value (atan2's, xlogy's), so it is copied first
atan2_ = _register_binary_inplace(_ew.atan2, True)
hypot_ = _register_binary_inplace(_ew.hypot, True)
copysign_ = _register_binary_inplace(_ew.copysign, True)
fmod_ = _register_binary_inplace(_ew.fmod, True)
heaviside_ = _register_binary_inplace(_ew.heaviside, False, ("values",))
lerp_ = _register_binary_inplace(_ew.lerp, True, ("end", "weight"))
addcmul_ = _register_binary_inplace(_ew.addcmul, False, ("tensor1", "tensor2"))
addcdiv_ = _register_binary_inplace(_ew.addcdiv, False, ("tensor1", "tensor2"))
nan_to_num_ = _register_binary_inplace(_ew.nan_to_num, True, ())
xlogy_ = _register_binary_inplace(_special.xlogy, True)
logit_ = _register_binary_inplace(_special.logit, True, ())


@INPLACE.op(nodes=_scan.SCAN["cumsum"].nodes, export=False)
def cumsum_(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """In-place ``cumsum(self, dim)``, in this tensor's dtype (an integer one too, as torch)."""
    dt = self._data.dtype if dtype is None else dtype
    return _computed_inplace(self, (), "cumsum_", lambda a: _scan.cumsum(a, dim, dtype=dt), False, ())


@INPLACE.op(nodes=_scan.SCAN["cumprod"].nodes, export=False)
def cumprod_(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """In-place ``cumprod(self, dim)``, in this tensor's dtype (an integer one too, as torch)."""
    dt = self._data.dtype if dtype is None else dtype
    return _computed_inplace(self, (), "cumprod_", lambda a: _scan.cumprod(a, dim, dtype=dt), True, ())


@INPLACE.op(nodes=_special.SPECIAL["polygamma"].nodes, export=False)
def polygamma_(self: Tensor, n: int) -> Tensor:
    """In-place ``polygamma(n, self)``."""
    return _computed_inplace(self, (), "polygamma_", _special.polygamma_inplace_op(n), True, ())
# ----- fused matrix products: addmm_ addmv_ baddbmm_ addbmm_ ------------------------------------------


def _add_product_(self: Tensor, left: Any, right: Any, beta: Any, alpha: Any, name: str,
                  names: tuple[str, str]) -> Tensor:
    """``self = beta * self + alpha * product(left, right)`` through the out-of-place op (its rule does
    not read ``self``'s old value); the product must have ``self``'s shape."""
    op = getattr(_linalg, name[:-1])

    def outofplace(a: Tensor) -> Tensor:
        r: Tensor = op(a, left, right, beta=beta, alpha=alpha)
        if r.shape != self.shape:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output tensor size "
                               f"{list(r.shape)} should match")
        return r

    def nograd(d: np.ndarray) -> None:
        np.copyto(d, outofplace(Tensor._wrap(d))._data, casting="same_kind")

    return _inplace(self, (left, right), outofplace, nograd, op=name, names=names)


@INPLACE.op(nodes=_linalg.LINALG["addmm"].nodes, export=False)
def addmm_(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``self = beta * self + alpha * (mat1 @ mat2)`` in place."""
    return _add_product_(self, mat1, mat2, beta, alpha, "addmm_", ("mat1", "mat2"))


@INPLACE.op(nodes=_linalg.LINALG["addmv"].nodes, export=False)
def addmv_(self: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``self = beta * self + alpha * (mat @ vec)`` in place."""
    return _add_product_(self, mat, vec, beta, alpha, "addmv_", ("mat", "vec"))


@INPLACE.op(nodes=_linalg.LINALG["baddbmm"].nodes, export=False)
def baddbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``self = beta * self + alpha * bmm(batch1, batch2)`` in place."""
    return _add_product_(self, batch1, batch2, beta, alpha, "baddbmm_", ("batch1", "batch2"))


@INPLACE.op(nodes=_linalg.LINALG["addbmm"].nodes, export=False)
def addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``self = beta * self + alpha * sum_i batch1[i] @ batch2[i]`` in place."""
    return _add_product_(self, batch1, batch2, beta, alpha, "addbmm_", ("batch1", "batch2"))


# ----- fill / zero / copy ------------------------------------------------------------------


class FillBackward0(Node):
    """``self.fill_(number)`` / ``zero_()``: the old value gets a zero gradient."""

    __slots__ = ("value_shape",)
    value_shape: Shape

    def __init__(self, value_shape: Shape) -> None:
        self._init_node()
        self.value_shape = value_shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        ga = _ew.zeros_like_grad(g) if self.should_compute_output(0) else None
        gv = g.sum().reshape(self.value_shape) if self.should_compute_output(1) else None
        return ga, gv


class ZeroBackward0(FillBackward0):
    __slots__ = ()


class FillBackward1(FillBackward0):
    __slots__ = ()


class CopyBackwards(Node):
    """``self.copy_(src)``: the old value gets zeros; ``src`` gets the gradient reduced to
    its shape and cast to its dtype."""

    __slots__ = ("src_shape", "src_dtype")
    src_shape: Shape
    src_dtype: np.dtype

    def __init__(self, src_shape: Shape, src_dtype: np.dtype) -> None:
        self._init_node()
        self.src_shape = src_shape
        self.src_dtype = src_dtype

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        ga = _ew.zeros_like_grad(g) if self.should_compute_output(0) else None
        gs = None
        if self.should_compute_output(1):
            gs = sum_to(g, self.src_shape)
            if gs.dtype != self.src_dtype:
                gs = gs.to(self.src_dtype) if gs.__class__ is Tensor else gs.astype(self.src_dtype)
        return ga, gs


def _fill_op(a: Tensor, value: Any, node_cls: type[FillBackward0]) -> Tensor:
    vd = value._data if isinstance(value, Tensor) else value
    out = Tensor._wrap(np.full(a._data.shape, vd, dtype=a._data.dtype), a._device)
    if needs_grad(a, value):
        record(node_cls(np.shape(vd)), (a, value), (out,))
    return out


@INPLACE.op(nodes=(ZeroBackward0,), export=False)
def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return _inplace(self, (), lambda a: _fill_op(a, 0, ZeroBackward0), lambda d: d.fill(0))


@INPLACE.op(nodes=(FillBackward0, FillBackward1), export=False, same_device=False)
def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with ``value`` (a number or a 0-d tensor) in place."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    cls = FillBackward1 if isinstance(value, Tensor) else FillBackward0
    return _inplace(
        self, (value,), lambda a: _fill_op(a, value, cls), lambda d: d.fill(_other(value, self)), op="fill_",
        names=("value",),
    )


def _copy_op(a: Tensor, src: Tensor) -> Tensor:
    sd = src._data
    try:
        res = np.array(np.broadcast_to(sd, a._data.shape), dtype=a._data.dtype)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({list(a.shape)}) must match the size of tensor b ({list(sd.shape)})"
        ) from None
    out = Tensor._wrap(res, a._device)
    if needs_grad(a, src):
        record(CopyBackwards(sd.shape, sd.dtype), (a, src), (out,))
    return out


@INPLACE.op(nodes=(CopyBackwards,), export=False, same_device=False)
def copy_(self: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast, cast to this tensor's dtype) into this tensor."""
    check_operand(src, "copy_", "src", 1)
    if not isinstance(src, Tensor):
        src = Tensor._wrap(np.asarray(src), self._device)

    def nograd(d: np.ndarray) -> None:
        try:
            np.copyto(d, src._data, casting="unsafe")
        except ValueError:
            raise RuntimeError(
                f"The size of tensor a ({list(d.shape)}) must match the size of tensor b ({list(src.shape)})"
            ) from None

    return _inplace(self, (src,), lambda a: _copy_op(a, src), nograd)


# ----- indexed writes ---------------------------------------------------------------------


class _SetitemCopySlices(IndexPutBackward0):
    """``y[basic index] = v`` on a tensor with history (torch names it CopySlices)."""

    __slots__ = ()

    def name(self) -> str:
        return "CopySlices"


def _assign(d: np.ndarray, idx: tuple[Any, ...], vd: Any) -> None:
    try:
        d[idx] = vd
    except ValueError as e:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(np.shape(vd))} cannot be broadcast to indexing "
            f"result of shape {list(d[idx].shape)} ({e})"
        ) from None


@INPLACE.op(name="__setitem__", nodes=(IndexPutBackward0, _SetitemCopySlices), method=False,
            operators=("__setitem__",), export=False)
def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value`` in place (see NOTE [In-place ops])."""
    idx, kind = normalize_index(index)
    _check_writable(self)
    v, vd = _values(value, self)
    if not needs_grad(self, v):
        _assign(self._data, idx, vd)
        self._bump_version()
        return
    _check_leaf(self)
    base = self._base
    if base is not None:
        _inplace_view(self, base, lambda a: _put(a, idx, v, False, IndexPutBackward0))
        return
    _assign(self._data, idx, vd)
    self._bump_version()
    node_cls = IndexPutBackward0 if kind == _ADVANCED else _SetitemCopySlices
    record(node_cls(idx, np.shape(vd), False), (self, v), (self,))
    _regenerate_views(self, None)


@INPLACE.op(nodes=(IndexPutBackward0,), export=False)
def index_put_(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """Write (or with ``accumulate`` add, repeats adding up) ``values`` at ``indices`` in place."""
    idx, _ = normalize_index(indices)
    if not accumulate:
        setitem(self, idx, values)
        return self
    v, vd = _values(values, self)
    return _inplace(self, (v,), lambda a: _put(a, idx, v, True, IndexPutBackward0), lambda d: np.add.at(d, idx, vd))


@INPLACE.op(nodes=(MaskedFillBackward0, MaskedFillBackward1), export=False)
def masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
    """Fill with ``value`` where ``mask`` (broadcastable to this tensor) is true, in place."""
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)

    def nograd(d: np.ndarray) -> None:
        if m.dtype != np.bool_:
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
        np.copyto(d, _other(value, self), where=np.broadcast_to(m, d.shape), casting="unsafe")

    return _inplace(self, (value,), lambda a: masked_fill(a, m, value), nograd)


def _rewrite_inplace(name: str, outofplace: Callable[..., Tensor], saves_self: bool) -> Callable[..., Tensor]:
    """The in-place twin of an op that writes a copy (scatter, index_copy, tril, ...): the op runs
    out of place on the old value (NOTE [In-place ops]), so it records the op's own node (torch's
    name: ``scatter_`` records ScatterBackward0), and its result is written back. ``saves_self``:
    the op's rule reads its input, which must then be a copy of the old value."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        def run(a: Tensor) -> Tensor:
            return outofplace(a, *args, **kwargs)

        def nograd(d: np.ndarray) -> None:
            np.copyto(d, run(Tensor._wrap(d, self._device))._data, casting="unsafe")

        others = tuple(v for v in (*args, *kwargs.values()) if isinstance(v, Tensor))
        if others:
            common_device(self, *others)  # NOTE [One device per op]
        return _inplace(self, others, run, nograd, saves_self=saves_self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: ``self.copy_(self.{name[:-1]}(...))``, keeping this tensor's storage."
    return method


for _table, _name in ((SCATTER, "scatter"), (SCATTER, "scatter_add"), (SCATTER, "scatter_reduce"),
                      (SCATTER, "index_add"), (SCATTER, "index_copy"), (SCATTER, "index_fill"),
                      (SCATTER, "masked_scatter"), (DIAGONAL, "tril"), (DIAGONAL, "triu")):
    _op = _table[_name]
    INPLACE.op(nodes=_op.nodes, export=False)(_rewrite_inplace(_name + "_", _op.fn, _name == "scatter_reduce"))


__all__ = INPLACE.exports(__name__)
