"""matmul: values against numpy, gradients (first and second order) over 1-D, 2-D, batched and
broadcast-batch shapes, torch's node names, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import aiograd as ag
from helpers import t64 as _t
from aiograd._aio import run_sync


@st.composite
def matmul_shapes(draw):
    n, k, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched"]))
    if kind == "vv":
        return (k,), (k,)
    if kind == "mv":
        return (n, k), (k,)
    if kind == "vm":
        return (k,), (k, m)
    if kind == "mm":
        return (n, k), (k, m)
    batch = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3))
    a_shape = batch.input_shapes[0] + (n, k)
    b_shape = batch.input_shapes[1] + (k, m)
    if draw(st.booleans()):  # a vector on one side, batched on the other
        if draw(st.booleans()):
            a_shape = (k,)
        else:
            b_shape = (k,)
    return a_shape, b_shape


@given(shapes=matmul_shapes(), seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["both", "a", "b"]))
def test_matmul_values_and_gradients(shapes, seed, which):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    x, y = _t(a, which != "b"), _t(b, which != "a")
    out = x @ y
    np.testing.assert_allclose(out.detach().numpy(), a @ b, rtol=1e-12, atol=1e-14)
    assert run_sync(lambda: ag.gradcheck(ag.matmul, (x, y)))
    assert run_sync(lambda: ag.gradgradcheck(ag.matmul, (x, y)))


@given(shapes=matmul_shapes(), seed=st.integers(0, 2**32 - 1))
async def test_matmul_gradcheck_on_every_loop(shapes, seed):
    rng = np.random.default_rng(seed)
    x, y = _t(rng.standard_normal(shapes[0])), _t(rng.standard_normal(shapes[1]))
    assert await ag.gradcheck(lambda p, q: (p @ q).tanh(), (x, y))


@pytest.mark.parametrize(
    "a_shape, b_shape, name",
    [((3,), (3,), "DotBackward0"), ((2, 3), (3,), "MvBackward0"), ((2, 3), (3, 4), "MmBackward0"),
     ((5, 2, 3), (5, 3, 4), "BmmBackward0")],
)
def test_matmul_node_names(a_shape, b_shape, name):
    x = ag.ones(*a_shape, requires_grad=True)
    assert (x @ ag.ones(*b_shape)).grad_fn.name() == name


async def test_mm_bmm_dot_and_rmatmul():
    a = _t(np.arange(6.0).reshape(2, 3))
    b = _t(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(ag.mm(a, b).detach().numpy(), a.detach().numpy() @ b.detach().numpy())
    assert ag.dot(_t([1.0, 2.0]), _t([3.0, 4.0])).item() == 11.0
    assert ag.bmm(ag.ones(2, 2, 3), ag.ones(2, 3, 1)).shape == (2, 2, 1)
    r = np.ones((4, 2)) @ a
    assert isinstance(r, ag.Tensor) and r.shape == (4, 3)
    assert await ag.gradcheck(lambda p: np.ones((4, 2)) @ p, (a,))


async def test_matmul_gradients_to_broadcast_batch_dims_are_summed():
    a = _t(np.ones((1, 2, 3)))
    b = _t(np.ones((4, 3, 2)))
    await (a @ b).sum().backward()
    assert a.grad.shape == (1, 2, 3) and b.grad.shape == (4, 3, 2)
    np.testing.assert_array_equal(a.grad.numpy(), np.full((1, 2, 3), 8.0))


def test_matmul_shape_mismatch():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ag.ones(2, 3) @ ag.ones(4, 5)


def test_matmul_needs_at_least_1d():
    with pytest.raises(RuntimeError, match="at least 1D"):
        ag.matmul(ag.tensor(1.0), ag.ones(2))


def test_matmul_needs_equal_dtypes():
    with pytest.raises(RuntimeError, match="same dtype"):
        ag.ones(2, 2) @ ag.ones(2, 2, dtype=ag.float64)


def test_mm_bmm_dot_check_dims():
    with pytest.raises(RuntimeError, match="2D"):
        ag.mm(ag.ones(3), ag.ones(3, 3))
    with pytest.raises(RuntimeError, match="3D"):
        ag.bmm(ag.ones(3, 3), ag.ones(3, 3))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        ag.dot(ag.ones(2, 2), ag.ones(2))
