"""Contractions and products of tensors: einsum, tensordot, outer, inner, kron.

einsum is one op with its own rule (NOTE [Einsum gradients]); the others are composites
of primitives (permute, reshape, matmul, mul), whose last op gives the node name torch's
own composites end with.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..autograd.graph import Node, record
from ..autograd.saved import Saved, save, unpack
from ..tensor import Tensor, new_tensor
from ._common import common_device, is_operand, needs_grad
from ._table import OpTable
from .pointwise.elementwise import ELEMENTWISE, mul
from .linalg import matmul
from .movement.shape import UnsafeViewBackward0, ViewBackward0, _index, _wrap_dim, expand, int_tuple, permute, reshape
from .._dtypes import torch_dtype_name as _torch_dtype_name

CONTRACT = OpTable("contract")

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch's label order: sublist ints 0..51
_ELLIPSIS = "."


# ----- einsum: parsing ---------------------------------------------------------------------------


def _einsum_args(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """torch's three call forms as (equation, operands): ``einsum(eq, a, b)``, ``einsum(eq, [a, b])``
    and the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    if not args or (isinstance(args[0], str) and len(args) < 2):
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least one operand and "
            "its subscripts list"
        )
    if isinstance(args[0], str):
        ops = args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
        return args[0], list(ops)
    pairs = list(args)
    out_sub = pairs.pop() if len(pairs) % 2 == 1 else None

    def term(sub: Any) -> str:
        text = ""
        for s in sub:
            if s is Ellipsis:
                text += "..."
                continue
            s = _index(s, "subscript")
            if not 0 <= s < 52:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
            text += _LETTERS[s]
        return text

    terms = [term(pairs[i + 1]) for i in range(0, len(pairs), 2)]
    equation = ",".join(terms) + ("" if out_sub is None else "->" + term(out_sub))
    return equation, [pairs[i] for i in range(0, len(pairs), 2)]


def _parse_term(text: str, start: int, operand: int | None) -> list[str]:
    """Labels of one term, ``.`` standing for its ellipsis; torch's errors name the position in the equation."""
    labels: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == ".":
            if _ELLIPSIS in labels:
                who = f"operand {operand}" if operand is not None else "the output"
                raise RuntimeError(f"einsum(): found '.' for {who} for which an ellipsis was already found")
            if text[i : i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {operand} that is not part of any ellipsis")
            labels.append(_ELLIPSIS)
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {start + i} in the equation string, subscripts must be "
                "in [a-zA-Z]"
            )
        labels.append(c)
        i += 1
    return labels


class _Plan:
    """An einsum call made explicit: one letter per dim of every operand (ellipsis dims get letters
    of their own, right-aligned), the output's letters, each letter's size, and the operands with
    their broadcast (size-1) dims squeezed out."""

    def __init__(self, equation: str, operands: list[Tensor]) -> None:
        eq = equation.replace(" ", "")
        lhs, arrow, rhs = eq.partition("->")
        texts = lhs.split(",")
        if len(texts) < len(operands):
            raise RuntimeError("einsum(): more operands were provided than specified in the equation")
        if len(texts) > len(operands):
            raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
        terms, pos = [], 0
        for k, text in enumerate(texts):
            terms.append(_parse_term(text, pos, k))
            pos += len(text) + 1
        out_labels = _parse_term(rhs, len(lhs) + 2, None) if arrow else None
        used = {c for t in terms for c in t} | set(out_labels or ())
        ell_dims = 0
        for k, (t, x) in enumerate(zip(terms, operands)):
            n = len(t) - (1 if _ELLIPSIS in t else 0)
            if (_ELLIPSIS not in t and n != x.ndim) or n > x.ndim:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({n}) does not match the number of "
                    f"dimensions ({x.ndim}) for operand {k}" + (" and no ellipsis was given" if _ELLIPSIS not in t
                                                                 else "")
                )
            if _ELLIPSIS in t:
                ell_dims = max(ell_dims, x.ndim - n)
        free = [c for c in _LETTERS if c not in used]
        ell = free[:ell_dims]
        self.spare = free[ell_dims:]  # letters for the gradient's helper operands
        self.terms: list[str] = []
        for t, x in zip(terms, operands):
            n_ell = x.ndim - (len(t) - 1) if _ELLIPSIS in t else 0
            self.terms.append("".join("".join(ell[ell_dims - n_ell :]) if c == _ELLIPSIS else c for c in t))
        self.out = ""
        if out_labels is None:
            counts = {c: sum(term.count(c) for term in self.terms) for c in used if c != _ELLIPSIS}
            self.out = "".join(ell) + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
        else:
            for c in out_labels:
                if c == _ELLIPSIS:
                    self.out += "".join(ell)
                    continue
                if c in self.out:
                    raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
                if not any(c in term for term in self.terms):
                    raise RuntimeError(
                        f"einsum(): output subscript {c} does not appear in the equation for any input operand"
                    )
                self.out += c
        self.sizes: dict[str, int] = {}
        for k, (term, x) in enumerate(zip(self.terms, operands)):
            own: dict[str, int] = {}
            for c, n in zip(term, x.shape):
                if c in own and own[c] != n:
                    raise RuntimeError(
                        f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                        f"{n} != {own[c]}"
                    )
                own[c] = n
                seen = self.sizes.get(c, 1)
                if n != 1 and seen != 1 and n != seen:
                    raise RuntimeError(
                        f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast with "
                        f"previously seen size {seen}"
                    )
                if seen == 1 or c not in self.sizes:
                    self.sizes[c] = n
        # a dim of size 1 against a larger size of its letter broadcasts: drop it from that operand
        self.operands: list[Tensor] = []
        for k, (term, x) in enumerate(zip(self.terms, operands)):
            keep = [i for i, c in enumerate(term) if not (x.shape[i] == 1 and self.sizes[c] != 1)]
            if len(keep) != len(term):
                x = reshape(x, tuple(x.shape[i] for i in keep))
                self.terms[k] = "".join(term[i] for i in keep)
            self.operands.append(x)


# ----- einsum: the op --------------------------------------------------------------------------
# NOTE [Einsum gradients]: the gradient for operand k of ``out = einsum(terms -> out_term)`` is
# itself an einsum: the output's gradient (out_term) and every other operand (its term)
# contracted to operand k's term. Two cases need helper operands: a letter of operand k that
# no other term has (summed out by the forward, so its gradient is broadcast along it) gets a
# vector of ones, and a letter repeated in operand k's term (the forward read a diagonal) is
# written through an identity matrix joining it with a fresh letter. The rule calls np.einsum,
# which in a create_graph pass is this op again (NOTE [One rule for both modes] in _common.py).


_SEARCH_PAYS = 32**3  # measured on numpy 2.4: a 32x32 by 32x32 product costs the same either way


def _optimize(equation: str, arrays: list[Any]) -> Any:
    """Whether numpy's contraction-order search (and its BLAS pairwise products) pays: it costs
    ~10 us, so only when the plain loop's work, the product of every letter's size, is large."""
    sizes: dict[str, int] = {}
    for term, a in zip(equation.split("->")[0].split(","), arrays):
        sizes.update(zip(term, a.shape))
    work = 1
    for n in sizes.values():
        work *= n
    return "greedy" if work > _SEARCH_PAYS else False


class EinsumBackward0(Node):
    """The gradient of each operand as one einsum (NOTE [Einsum gradients])."""

    __slots__ = ("operands", "terms", "out_term", "sizes", "spare")
    operands: list[Saved]
    terms: list[str]
    out_term: str
    sizes: dict[str, int]
    spare: list[str]

    _saves = True  # its saved tensors are in a list: released here, not by a generated release_variables

    def __init__(
        self,
        operands: list[Saved],
        terms: list[str],
        out_term: str,
        sizes: dict[str, int],
        spare: list[str],
    ) -> None:
        self._init_node()
        self.operands = operands
        self.terms = terms
        self.out_term = out_term
        self.sizes = sizes
        self.spare = spare

    def release_variables(self) -> None:
        self.operands = [None] * len(self.operands)

    def _grad_equation(self, k: int, dtype: Any) -> tuple[str, list[Any]]:
        term = self.terms[k]
        others = "".join(t for j, t in enumerate(self.terms) if j != k) + self.out_term
        extra_terms: list[str] = []
        extras: list[Any] = []
        spare = iter(self.spare)
        target = ""
        for c in term:
            if c in target:  # a repeated letter: joined to a fresh one through an identity
                f = next(spare)
                extra_terms.append(c + f)
                extras.append(np.eye(self.sizes[c], dtype=dtype))
                target += f
                continue
            target += c
            if c not in others:
                extra_terms.append(c)
                extras.append(np.ones(self.sizes[c], dtype=dtype))
        inputs = [self.out_term] + [t for j, t in enumerate(self.terms) if j != k] + extra_terms
        return ",".join(inputs) + "->" + target, extras

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        out: list[Any] = []
        values: list[Any] = [None] * len(self.terms)
        for k in range(self.n_edges):
            if not self.should_compute_output(k):
                out.append(None)
                continue
            for j in range(len(self.terms)):
                if j != k and values[j] is None:
                    values[j] = unpack(self, self.operands[j], graph)
            eq, extras = self._grad_equation(k, (g._data if graph else g).dtype)
            arrays = [g] + [values[j] for j in range(len(self.terms)) if j != k] + extras
            res = np.einsum(eq, *arrays, optimize=_optimize(eq, arrays))
            out.append(res if graph else np.asarray(res))
        return out


def _as_operand(x: Any, i: int) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray) and is_operand(x):  # np.einsum dispatch: arrays beside tensors
        return Tensor._wrap(x)
    raise TypeError(f"einsum(): expected Tensor as element {i} in argument 1, but got {type(x).__name__}")


def _np_einsum(*operands: Any, out: Any = None, optimize: Any = False, **kwargs: Any) -> Any:
    if out is not None or kwargs.get("dtype") is not None:
        return NotImplemented
    return einsum(*operands)


@CONTRACT.op(nodes=(EinsumBackward0,), method=False, functions=((np.einsum, _np_einsum),))
def einsum(*args: Any) -> Tensor:
    """Einstein summation, in torch's forms: ``einsum("ij,jk->ik", a, b)``, ``einsum("ij,jk", [a, b])``
    (implicit output: the letters used once, sorted) and ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    ``...`` stands for broadcast dims; a dim of size 1 broadcasts against its letter's size.
    Computed by np.einsum (with its contraction-order search where that pays) and
    differentiable to any order (NOTE [Einsum gradients])."""
    equation, raw = _einsum_args(args)
    operands = [_as_operand(x, i) for i, x in enumerate(raw)]
    for x in operands[1:]:
        if x.dtype != operands[0].dtype:
            raise RuntimeError(
                f"expected scalar type {_torch_dtype_name(operands[0].dtype)} but found {_torch_dtype_name(x.dtype)}"
            )
    device = common_device(*operands)
    plan = _Plan(equation, operands)
    arrays = [x._data for x in plan.operands]
    eq = ",".join(plan.terms) + "->" + plan.out
    res = np.asarray(np.einsum(eq, *arrays, optimize=_optimize(eq, arrays)))
    if res.dtype != arrays[0].dtype:
        res = res.astype(arrays[0].dtype)
    result = new_tensor(res, device)
    if needs_grad(*plan.operands):
        grads_needed = [x._requires_grad for x in plan.operands]
        saved = [
            save(x) if any(g for j, g in enumerate(grads_needed) if j != k) else None
            for k, x in enumerate(plan.operands)
        ]
        node = EinsumBackward0(saved, plan.terms, plan.out, plan.sizes, plan.spare)
        record(node, tuple(plan.operands), (result,))
    return result


# ----- tensordot, outer, inner, kron ------------------------------------------------------------


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")


def _tensordot_dims(a: Tensor, b: Tensor, dims: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.ndim else int(dims.item())
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of dimension lists")
        da = int_tuple((dims[0],), "tensordot", "dims_self")
        db = int_tuple((dims[1],), "tensordot", "dims_other")
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        return da, db
    n = _index(dims, "dims")
    if n < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
    if n > a.ndim or n > b.ndim:
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
    return tuple(range(-n, 0)), tuple(range(n))


def _np_tensordot(a: Any, b: Any, axes: Any = 2) -> Tensor:
    return tensordot(a, b, axes)


@CONTRACT.op(nodes=(ViewBackward0,), method=False, functions=((np.tensordot, _np_tensordot),))
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum the products over dims ``dims`` of ``a`` and ``b``: an int n (a's last n with b's first n),
    a pair of dim lists, or a tensor of either. A permute, a reshape and one matrix product."""
    _same_dtype(a, b)
    da, db = _tensordot_dims(a, b, dims)
    ca = [_wrap_dim(d, a.ndim) for d in da]
    cb = [_wrap_dim(d, b.ndim) for d in db]
    for i, (x, y) in enumerate(zip(ca, cb)):
        sa, sb = a.shape[x], b.shape[y]
        if sa != sb:
            if sa != 1 and sb != 1:
                raise RuntimeError(
                    f"contracted dimensions need to match, but first has size {sa} in dim {da[i]} and second has "
                    f"size {sb} in dim {db[i]}"
                )
            if sa == 1:
                a = expand(a, a.shape[:x] + (sb,) + a.shape[x + 1 :])
            else:
                b = expand(b, b.shape[:y] + (sa,) + b.shape[y + 1 :])
    fa = [d for d in range(a.ndim) if d not in ca]
    fb = [d for d in range(b.ndim) if d not in cb]
    k = int(np.prod([a.shape[d] for d in ca]))
    out_shape = tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb)
    a2 = reshape(permute(a, fa + ca), (-1, k)) if a.ndim else reshape(a, (1, 1))
    b2 = reshape(permute(b, cb + fb), (k, -1)) if b.ndim else reshape(b, (1, 1))
    return reshape(matmul(a2, b2), out_shape)


@CONTRACT.op(nodes=tuple(ELEMENTWISE["mul"].nodes), aliases=("ger",))
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two vectors: ``out[i, j] = input[i] * vec2[j]`` (dtypes promote)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return mul(reshape(input, (-1, 1)), vec2)


@CONTRACT.op(nodes=(ViewBackward0, *ELEMENTWISE["mul"].nodes), functions=(np.inner,))
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dims (``input * other`` when either is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes {list(input.shape)} and "
            f"{list(other.shape)}"
        )
    return tensordot(input, other, ([-1], [-1]))


def _unsafe_view(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """torch's _unsafe_view: a reshape of a fresh (contiguous) result, recorded as UnsafeViewBackward0."""
    out = new_tensor(input._data.reshape(shape), input._device)
    if needs_grad(input):
        record(UnsafeViewBackward0(input._data.shape), (input,), (out,))
    return out


@CONTRACT.op(nodes=(UnsafeViewBackward0,), functions=(np.kron,))
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block (i, j, ...) is ``input[i, j, ...] * other`` (dims aligned from the right)."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + input.shape
    sb = (1,) * (nd - other.ndim) + other.shape
    a = reshape(input, tuple(v for s in sa for v in (s, 1)))
    b = reshape(other, tuple(v for s in sb for v in (1, s)))
    return _unsafe_view(mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


ger = outer

__all__ = CONTRACT.exports(__name__)
