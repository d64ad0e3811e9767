"""gradcheck / gradgradcheck: they pass correct gradients and name the broken ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import aiograd as ag
from helpers import t64 as _t


class _WrongBackward(ag.Function):
    """forward 2x, backward claims 3."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


class _DetachedBackward(ag.Function):
    """x**2 with a first derivative that is right but not itself differentiable (built on detached data)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.detach() * 2)


class _NotReentrant(ag.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        _NotReentrant.calls += 1
        return g * (1 + 1e-3 * _NotReentrant.calls)


async def test_gradcheck_passes_a_correct_function_of_two_inputs():
    x = _t(np.random.default_rng(0).uniform(0.5, 1.5, (3, 4)))
    y = _t(np.random.default_rng(1).uniform(0.5, 1.5, (4,)))
    assert await ag.gradcheck(lambda a, b: (a * b).sin() / b, (x, y)) is True


async def test_gradcheck_accepts_async_functions_and_tuple_outputs():
    x = _t([0.3, 0.7, 1.1])

    async def f(a):
        return a.exp(), (a * a).sum()

    assert await ag.gradcheck(f, x) is True
    assert await ag.gradgradcheck(f, (x,)) is True


async def test_gradcheck_names_output_and_input_and_shows_both_jacobians():
    x = _t([1.0, 2.0])
    y = _t([3.0, 4.0])
    with pytest.raises(ag.GradcheckError) as ei:
        await ag.gradcheck(lambda a, b: (a + b, _WrongBackward.apply(b)), (x, y))
    msg = str(ei.value)
    assert "Jacobian mismatch for output 1 with respect to input 1" in msg
    assert "numerical:" in msg and "analytical:" in msg
    assert "2." in msg and "3." in msg
    assert isinstance(ei.value, RuntimeError)


async def test_gradcheck_returns_false_without_raise_exception():
    x = _t([1.0, 2.0])
    assert await ag.gradcheck(_WrongBackward.apply, (x,), raise_exception=False) is False
    assert await ag.gradcheck(_WrongBackward.apply, (x,), raise_exception=False, fast_mode=True) is False


async def test_gradcheck_fast_mode_passes_correct_and_catches_wrong():
    x = _t(np.linspace(0.1, 1.0, 6).reshape(2, 3))
    assert await ag.gradcheck(lambda a: (a.exp() * a).sum(1), (x,), fast_mode=True)
    with pytest.raises(ag.GradcheckError, match="fast mode"):
        await ag.gradcheck(_WrongBackward.apply, (x,), fast_mode=True)


async def test_gradcheck_refuses_float32_inputs_that_require_grad():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="float64"):
        await ag.gradcheck(lambda a: a * 2, (x,))


async def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        await ag.gradcheck(lambda a: a * 2, (_t([1.0], requires_grad=False),))


async def test_gradcheck_skips_inputs_that_do_not_require_grad():
    x = _t([1.0, 2.0])
    c = ag.tensor([5.0, 6.0], dtype=ag.float32)  # float32 is fine: it is not checked

    assert await ag.gradcheck(lambda a, k, n: a * k.double() ** n, (x, c, 2))


async def test_gradcheck_detects_a_backward_that_is_not_reentrant():
    x = _t([1.0, 2.0])
    with pytest.raises(ag.GradcheckError, match="not reentrant"):
        await ag.gradcheck(_NotReentrant.apply, (x,), atol=1e-1, rtol=1e-1)
    # a tolerance for nondeterminism lets it through
    assert await ag.gradcheck(_NotReentrant.apply, (x,), atol=1e-1, rtol=1e-1, nondet_tol=1.0)


async def test_gradcheck_checks_that_non_differentiable_outputs_do_not_depend_on_inputs():
    x = _t([1.0, 2.0])
    with pytest.raises(ag.GradcheckError, match="expected to be zero"):
        await ag.gradcheck(lambda a: (a * 2, (a * 3).detach()), (x,))
    # an integer output that does not depend on x is fine
    assert await ag.gradcheck(lambda a: (a * 2, ag.tensor([1, 2])), (x,))


async def test_gradcheck_restores_the_inputs_exactly():
    data = np.random.default_rng(3).standard_normal((2, 3))
    x = _t(data)
    before = x._version
    await ag.gradcheck(lambda a: a.tanh(), (x,))
    await ag.gradgradcheck(lambda a: a.tanh(), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), data)
    assert x._version == before
    assert x.grad is None


async def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = _t([0.5, -1.5, 2.0])
    assert await ag.gradcheck(_DetachedBackward.apply, (x,))
    with pytest.raises(ag.GradcheckError, match="Jacobian mismatch"):
        await ag.gradgradcheck(_DetachedBackward.apply, (x,))
    assert await ag.gradgradcheck(_DetachedBackward.apply, (x,), raise_exception=False) is False


async def test_gradgradcheck_with_given_and_non_contiguous_grad_outputs():
    x = _t([[0.5, -1.5], [2.0, 0.25]])
    go = _t([[1.0, -2.0], [0.5, 3.0]])
    assert await ag.gradgradcheck(lambda a: a.sin() * a, (x,), (go,))
    assert await ag.gradgradcheck(lambda a: a.sin() * a, (x,), gen_non_contig_grad_outputs=True)


def test_gradcheck_runs_from_sync_code():
    x = _t([0.1, 0.2])
    assert ag.gradcheck(lambda a: a.exp(), (x,))


@given(shape=array_shapes(min_dims=0, max_dims=3, max_side=3), seed=st.integers(0, 2**32 - 1))
async def test_gradcheck_agrees_on_random_shapes_on_every_loop(shape, seed):
    rng = np.random.default_rng(seed)
    x = _t(rng.uniform(0.5, 1.5, shape))
    y = _t(rng.uniform(0.5, 1.5, shape[-1:] if shape else ()))
    assert await ag.gradcheck(lambda a, b: (a * b).log() + a / b, (x, y))
    assert not await ag.gradcheck(
        lambda a, b: _WrongBackward.apply(a) + b, (x, y), raise_exception=False
    )


class _WrongSparseSum(ag.Function):
    """sparse.sum whose backward doubles the gradient of each entry."""

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return ag.sparse.sum(s)

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return ag.sparse_coo_tensor(s._indices(), ag.full((s._nnz(),), 2.0, dtype=ag.float64) * g, s.shape)


async def test_gradcheck_moves_the_values_of_a_sparse_input():
    rng = np.random.default_rng(0)
    # (0, 2) twice: the entries of an uncoalesced input are checked one by one
    s = ag.sparse_coo_tensor([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]], rng.standard_normal(5), (3, 3), requires_grad=True)
    d = _t(rng.standard_normal((3, 2)))
    before = s._values().numpy().copy()
    for fn in (lambda s, d: ag.sparse.mm(s, d), lambda s, d: (s @ d).tanh(), lambda s, d: ag.sparse.softmax(s, 0),
               lambda s, d: s.t().to_dense() * ag.sparse.sum(s)):
        assert await ag.gradcheck(fn, (s, d))  # sparse and dense gradients, sparse and dense outputs
        assert await ag.gradcheck(fn, (s, d), fast_mode=True)
    assert await ag.gradgradcheck(lambda s, d: ag.sparse.mm(s, d), (s, d))
    assert not await ag.gradcheck(lambda s: _WrongSparseSum.apply(s), (s,), raise_exception=False)
    np.testing.assert_array_equal(s._values().numpy(), before)  # the input is left as it was
