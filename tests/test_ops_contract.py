"""Contractions (aiograd/ops/contract.py): einsum in torch's forms against np.einsum, with
gradients to second order over equations with repeated, summed-only, broadcast and ellipsis
letters; tensordot's dims forms; outer, inner, kron against numpy; torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
from helpers import check_grads, t64

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output: letters used once, sorted
    ("ii->i", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(3,), (2,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("b...,b...->...b", [(2, 3, 4), (2, 3, 4)]),
    ("ijk,ikl,lj->i", [(2, 3, 2), (2, 2, 4), (4, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 3)]),
    (",i->i", [(), (3,)]),
    ("Ba,a->B", [(2, 3), (3,)]),
    ("i->", [(0,)]),
]


@pytest.mark.parametrize("equation, shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_numpy_and_differentiates_twice(equation: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    got = ag.einsum(equation, *[ag.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ag.einsum(equation, [ag.tensor(a) for a in arrays]).numpy(), got.numpy())
    np.testing.assert_allclose(np.einsum(equation, *[ag.tensor(a) for a in arrays]).numpy(), got.numpy())  # dispatch
    if all(np.prod(s) > 0 for s in shapes):
        check_grads(lambda *ts: ag.einsum(equation, *ts), [t64(a) for a in arrays])


def test_einsum_broadcasts_dims_of_size_one_as_torch() -> None:
    a, b = np.arange(3.0), np.array([2.0])
    assert ag.einsum("i,i->i", ag.tensor(a), ag.tensor(b)).tolist() == (a * b).tolist()
    check_grads(lambda x, y: ag.einsum("ij,j->ij", x, y), [t64(np.ones((2, 3))), t64([2.0])])
    x, y = np.arange(6.0).reshape(2, 3, 1), np.arange(24.0).reshape(2, 3, 4)  # numpy refuses this one
    np.testing.assert_array_equal(ag.einsum("b...,b...->b", ag.tensor(x), ag.tensor(y)).numpy(), (x * y).sum((1, 2)))
    check_grads(lambda p, q: ag.einsum("b...,b...->b", p, q), [t64(x), t64(y)])


def test_einsum_sublist_form() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ag.einsum(ag.tensor(a), [0, 1], ag.tensor(b), [1, 2], [0, 2]).numpy(), a @ b)
    np.testing.assert_array_equal(ag.einsum(ag.tensor(a), [..., 1], ag.tensor(b[:, 0]), [1]).numpy(), a @ b[:, 0])
    np.testing.assert_array_equal(ag.einsum(ag.tensor(a), [1, 0]).numpy(), a.T)


def test_einsum_of_several_operands_saves_only_what_its_gradients_need() -> None:
    x = ag.ones(2, 3, requires_grad=True)
    y = ag.einsum("ij,jk->ik", x, ag.ones(3, 4))
    node = y.grad_fn
    assert node.name() == "EinsumBackward0"
    assert node.operands[0] is None and node.operands[1] is not None  # x's value is never needed


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda a: ag.einsum("i->i", a, a), RuntimeError, "einsum(): more operands were provided than specified"),
        (lambda a: ag.einsum("i,i->", a), RuntimeError, "einsum(): fewer operands were provided than specified"),
        (lambda a: ag.einsum("i1->", a), RuntimeError,
         "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
        (lambda a: ag.einsum("i->ii", a), RuntimeError, "einsum(): output subscript i appears more than once"),
        (lambda a: ag.einsum("i->j", a), RuntimeError,
         "einsum(): output subscript j does not appear in the equation for any input operand"),
        (lambda a: ag.einsum("ij->", a), RuntimeError,
         "einsum(): the number of subscripts in the equation (2) does not match the number of dimensions (1) for "
         "operand 0 and no ellipsis was given"),
        (lambda a: ag.einsum("i,i->", a, ag.zeros(4)), RuntimeError,
         "einsum(): subscript i has size 4 for operand 1 which does not broadcast with previously seen size 3"),
        (lambda a: ag.einsum("......", a), RuntimeError, "einsum(): found '.' for operand 0 for which an ellipsis"),
        (lambda a: ag.einsum("i,i", a, a.double()), RuntimeError, "expected scalar type Float but found Double"),
        (lambda a: ag.einsum("->"), ValueError, "einsum(): must specify the equation string and at least one operand"),
        (lambda a: ag.einsum(a, [0, 60]), ValueError, "einsum(): subscript in subscript list is not within the valid"),
        (lambda a: ag.einsum("ii->i", ag.zeros(3, 1)), RuntimeError,
         "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 1 != 3"),
    ],
)
def test_einsum_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call(ag.zeros(3))
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    "a, b, dims",
    [((2, 3), (3, 4), 1), ((2, 3, 4), (3, 4, 2), 2), ((2, 3), (2, 3), 0), ((2, 3), (4, 3), ([1], [1])),
     ((2, 3, 4), (4, 2, 3), ([1, 2], [2, 0])), ((), (2,), 0)],
)
def test_tensordot_matches_numpy(a: tuple[int, ...], b: tuple[int, ...], dims: object) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(a), rng.standard_normal(b)
    want = np.tensordot(x, y, dims)  # type: ignore[arg-type]
    np.testing.assert_allclose(ag.tensordot(ag.tensor(x), ag.tensor(y), dims).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(np.tensordot(ag.tensor(x), ag.tensor(y), dims).numpy(), want, rtol=1e-12)


def test_tensordot_dims_as_a_tensor_and_errors() -> None:
    x, y = ag.ones(2, 3), ag.ones(3, 4)
    assert ag.tensordot(x, y, ag.tensor(1)).shape == (2, 4)
    assert ag.tensordot(x, y.T, ag.tensor([[1], [1]])).shape == (2, 4)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        ag.tensordot(x, y, -1)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 3 in dim -1 and "
                                           "second has size 4 in dim 0"):
        ag.tensordot(x, y.T, 1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ag.tensordot(x, y.double(), 1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ag.tensordot(x, y, ([0, 1], [0]))


def test_outer_inner_kron_match_numpy_with_torch_node_names() -> None:
    rng = np.random.default_rng(0)
    v, w, m, n = rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(ag.outer(ag.tensor(v), ag.tensor(w)).numpy(), np.outer(v, w))
    np.testing.assert_allclose(ag.ger(ag.tensor(v), ag.tensor(w)).numpy(), np.outer(v, w))
    np.testing.assert_allclose(ag.inner(ag.tensor(m), ag.tensor(n.T)).numpy(), np.inner(m, n.T))
    np.testing.assert_allclose(np.kron(ag.tensor(m), ag.tensor(n)).numpy(), np.kron(m, n))
    np.testing.assert_allclose(ag.kron(ag.tensor(v), ag.tensor(m)).numpy(), np.kron(v, m))
    g = ag.tensor(m, requires_grad=True)
    assert ag.outer(g[0], g[1]).grad_fn.name() == "MulBackward0"
    assert ag.inner(g, g).grad_fn.name() == "ViewBackward0" and ag.inner(g[0, 0], g).grad_fn.name() == "MulBackward0"
    assert ag.kron(g, g).grad_fn.name() == "UnsafeViewBackward0"
    assert ag.outer(ag.ones(2), ag.ones(2, dtype=ag.float64)).dtype == ag.float64  # promotes, as torch
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        ag.outer(g, g[0])
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match on both input tensors but got "
                                           r"shapes \[2, 3\] and \[3, 2\]"):
        ag.inner(g, ag.tensor(n))
