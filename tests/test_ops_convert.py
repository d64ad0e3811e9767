"""clone, to(dtype|device), casts: values, gradients and their dtypes, node names."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import aiograd as ag
from helpers import t64 as _t


@given(shape=array_shapes(min_dims=0, max_dims=3, max_side=3), seed=st.integers(0, 2**32 - 1))
async def test_clone_and_copying_to_gradcheck(shape, seed):
    x = _t(np.random.default_rng(seed).standard_normal(shape))
    assert await ag.gradcheck(lambda t: t.clone() * 2, (x,))
    assert await ag.gradgradcheck(lambda t: t.clone() * t, (x,))
    assert await ag.gradcheck(lambda t: t.to(ag.float64, copy=True) ** 2, (x,))
    assert await ag.gradgradcheck(lambda t: t.to(dtype=ag.float64, copy=True) ** 2, (x,))


def test_clone_copies_storage_and_records_clonebackward():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    assert not np.shares_memory(c._data, x._data)
    assert c.tolist() == [1.0, 2.0]


async def test_cast_gradient_comes_back_in_the_source_dtype():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    d = x.double()
    assert d.dtype == np.float64 and d.grad_fn.name() == "ToCopyBackward0"
    await (d * d).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


async def test_cast_chain_double_backward():
    x = ag.tensor([0.5, 1.5], requires_grad=True)
    y = (x.double() ** 3).float().sum()
    (g,) = await ag.grad(y, x, create_graph=True)
    assert g.dtype == np.float32
    (gg,) = await ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.5, 1.5]), rtol=1e-6)


def test_to_same_dtype_returns_self_unless_copy():
    x = ag.ones(2)
    assert x.to(ag.float32) is x
    assert x.to(ag.float32, copy=True) is not x
    assert x.to(x) is x
    assert x.to(ag.ones(1, dtype=ag.float64)).dtype == np.float64


def test_integer_and_bool_casts_are_not_differentiable():
    x = ag.tensor([1.7, -0.2], requires_grad=True)
    for out in (x.long(), x.int(), x.bool()):
        assert out.grad_fn is None and not out.requires_grad
    assert x.long().tolist() == [1, 0] and x.long().dtype == np.int64
    assert x.bool().tolist() == [True, True]
    assert x.half().dtype == np.float16 and x.half().grad_fn.name() == "ToCopyBackward0"


def test_type_as_and_cpu():
    x = ag.tensor([1, 2])
    assert x.type_as(ag.ones(1)).dtype == np.float32
    y = ag.ones(2)
    assert y.cpu() is y


def test_to_string_dtype_and_unknown_dtype():
    assert ag.ones(2).to(dtype="float64").dtype == np.float64
    with pytest.raises((TypeError, ValueError, RuntimeError)):
        ag.ones(2).to(dtype="not_a_dtype")


def test_to_takes_torchs_positional_forms():
    x = ag.ones(2)
    y = x.to(ag.float64, False, True)  # to(dtype, non_blocking, copy)
    assert y.dtype == np.float64 and y is not x
    assert x.to(ag.float64, True).dtype == np.float64
    assert x.to("cpu", ag.float64, False, True).dtype == np.float64  # to(device, dtype, non_blocking, copy)
    assert x.to("cpu", ag.float64).dtype == np.float64
    assert x.to("cpu", None) is x
    assert x.to(ag.float32, False, False) is x
    assert x.to(ag.float32, False, True) is not x
    z = x.to(x, True, True)  # to(other, non_blocking, copy)
    assert z is not x and z.dtype == np.float32
    assert x.to() is x
    assert x.to(ag.float64, non_blocking=True).dtype == np.float64


@pytest.mark.parametrize(
    "args",
    [(ag.float32, "cpu"), ("cpu", "cpu"), (ag.float32, False, False, 4), (3.5,), (ag.float32, "yes")],
)
def test_to_with_an_invalid_combination_says_so(args):
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments"):
        ag.ones(2).to(*args)
