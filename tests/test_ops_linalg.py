"""The linalg family's products: matmul (values against numpy, gradients of first and second order
over 1-D, 2-D, batched and broadcast-batch shapes, torch's node names, errors), mv, vdot and the
fused addmm family with its in-place forms. The rest of the family: tests/test_linalg.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import aiograd as ag
from helpers import c64, rnd, t64 as _t


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
    assert ag.gradcheck(ag.matmul, (x, y))
    assert ag.gradgradcheck(ag.matmul, (x, y))


@given(shapes=matmul_shapes(), seed=st.integers(0, 2**32 - 1))
async def test_matmul_gradcheck_on_every_loop(shapes, seed):
    rng = np.random.default_rng(seed)
    x, y = _t(rng.standard_normal(shapes[0])), _t(rng.standard_normal(shapes[1]))
    assert await ag.gradcheck(lambda p, q: (p @ q).tanh(), (x, y))


@pytest.mark.parametrize(
    "a_shape, b_shape, name",
    [((3,), (3,), "DotBackward0"), ((2, 3), (3,), "MvBackward0"), ((2, 3), (3, 4), "MmBackward0"),
     ((3,), (3, 4), "SqueezeBackward4"), ((5, 2, 3), (5, 3, 4), "UnsafeViewBackward0"),
     ((2, 3), (5, 3, 4), "UnsafeViewBackward0")],
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
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ag.mm(ag.ones(3), ag.ones(3, 3))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ag.bmm(ag.ones(3, 3), ag.ones(3, 3))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        ag.dot(ag.ones(2, 2), ag.ones(2))


# ----- mv, vdot and the fused products (addmm family) -----------------------------------------------


def test_product_errors_are_torchs():
    with pytest.raises(RuntimeError, match=r"^vector \+ matrix @ vector expected, got 1, 1, 1$"):
        ag.mv(ag.ones(3), ag.ones(3))
    with pytest.raises(RuntimeError, match=r"^size mismatch, got input \(2\), mat \(2x3\), vec \(2\)$"):
        ag.mv(ag.ones(2, 3), ag.ones(2))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and src \[2\]"):
        ag.vdot(ag.ones(3), ag.ones(2))
    with pytest.raises(RuntimeError, match=r"^dot : expected both vectors to have same dtype, but found Double and Float$"):
        ag.dot(ag.ones(3, dtype=ag.float64), ag.ones(3))
    with pytest.raises(RuntimeError, match=r"^mat1 must be a matrix, got 1-D tensor$"):
        ag.addmm(ag.ones(2), ag.ones(3), ag.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size \(3\) at "
                                           r"non-singleton dimension 1\.  Target sizes: \[2, 2\]\.  Tensor sizes: \[3, 3\]"):
        ag.addmm(ag.ones(3, 3), ag.ones(2, 3), ag.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"^Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but "
                                           r"got: \[3, 3\]\.$"):
        ag.baddbmm(ag.ones(2, 2, 2), ag.ones(2, 2, 3), ag.ones(3, 3, 2))
    with pytest.raises(RuntimeError, match=r"^batch1 and batch2 must have same number of batches, got 2 and 3$"):
        ag.addbmm(ag.ones(2, 2), ag.ones(2, 2, 3), ag.ones(3, 3, 2))
    with pytest.raises(TypeError, match=r"^mv\(\): argument 'vec' \(position 2\) must be Tensor, not list$"):
        ag.mv(ag.ones(2, 2), [1.0, 2.0])


def test_fused_products_broadcast_input_and_ignore_it_at_beta_0():
    a, b = rnd(2, 3), rnd(3, 4, seed=1)
    out = ag.addmm(ag.tensor(np.full(4, np.nan)), c64(a), c64(b), beta=0, alpha=2.0)
    np.testing.assert_allclose(out.numpy(), 2 * a @ b)  # NaN in input is not propagated, as torch
    batch1, batch2 = rnd(3, 2, 3, seed=2), rnd(3, 3, 4, seed=3)
    np.testing.assert_allclose(ag.addbmm(c64(np.ones(4)), c64(batch1), c64(batch2)).numpy(),
                               1 + np.einsum("bij,bjk->ik", batch1, batch2))
    np.testing.assert_allclose(ag.baddbmm(c64(np.ones(4)), c64(batch1), c64(batch2)).numpy(), 1 + batch1 @ batch2)
    assert ag.addmm(ag.ones(2, 2, dtype=ag.int64), ag.ones(2, 3, dtype=ag.int64), ag.ones(3, 2, dtype=ag.int64),
                    alpha=2).tolist() == [[7, 7], [7, 7]]


async def test_in_place_fused_products():
    x = _t(rnd(2, 4))
    y = x * 1
    y.addmm_(c64(rnd(2, 3)), c64(rnd(3, 4)), beta=0.5)
    assert y.grad_fn.name() == "AddmmBackward0"
    await y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 4), 0.5))
    with pytest.raises(RuntimeError, match=r"^Bad in-place call: input tensor size \[2\] and output tensor size \[2, 2\] "
                                           r"should match$"):
        ag.zeros(2).addmm_(ag.ones(2, 3), ag.ones(3, 2))
    v = ag.zeros(2)
    assert v.addmv_(ag.ones(2, 3), ag.ones(3)) is v and v.tolist() == [3.0, 3.0]
