"""Elementwise ops: float32 results, ties, large inputs, rounding, dtype promotion, errors. Each op's
gradients (first and second order, over shapes and broadcasting) are its rows in tests/op_rows.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import aiograd as ag
from helpers import t64 as _t
from op_rows import ROWS, UNARY

_math_erf = np.vectorize(math.erf, otypes=[np.float64])


_FLOAT_ROWS = [r for r in ROWS if r.cases == UNARY and r.ref is not None]


@pytest.mark.parametrize("row", _FLOAT_ROWS, ids=lambda r: r.op + ("-" + r.variant if r.variant else ""))
def test_unary_keeps_float32(row):
    data = row.sample(np.random.default_rng(0), (4,)).astype(np.float32)
    fn = row.fn or getattr(ag, row.op)
    out = fn(ag.tensor(data))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), row.ref(data.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op", [lambda a: a + 1.5, lambda a: 2 * a, lambda a: a / 4, lambda a: a - 1,
                                lambda a: 1 - a, lambda a: a ** 3])
async def test_ops_with_python_numbers(op):
    x = _t([0.5, 1.5, 2.5])
    assert await ag.gradcheck(op, (x,))
    assert await ag.gradgradcheck(op, (x,))


async def test_maximum_and_minimum_split_the_gradient_on_ties():
    a = _t([1.0, 2.0, 3.0])
    b = _t([1.0, 0.0, 5.0])
    await ag.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0, 1.0])
    a.grad = b.grad = None
    await ag.minimum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 1.0, 0.0])


async def test_maximum_with_a_broadcast_scalar_tie():
    a = _t([[0.0, 1.0], [2.0, 0.0]])
    z = _t(0.0)
    await ag.maximum(a, z).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0.5, 1.0], [1.0, 0.5]])
    assert z.grad.item() == 1.0


def test_maximum_propagates_nan_and_method_names():
    a = ag.tensor([1.0, np.nan])
    assert np.isnan(ag.maximum(a, ag.tensor([2.0, 0.0])).numpy()[1])
    m = a.maximum(ag.tensor(0.5)).numpy()
    assert m[0] == 1.0 and np.isnan(m[1])
    assert np.maximum(ag.tensor([1.0, 3.0]), ag.tensor([2.0, 2.0])).tolist() == [2.0, 3.0]


# ----- erf, gelu, softplus, sigmoid details -----------------------------------------------------


def test_erf_matches_math_erf_to_double_precision():
    x = np.concatenate([
        np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1, 400), -np.geomspace(1e-300, 1, 400),
        [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 5.9, 26.5, -27.0, 1e10, np.inf, -np.inf],
    ])
    got = ag.erf(ag.tensor(x, dtype=ag.float64)).numpy()
    want = _math_erf(x)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    assert np.isnan(ag.erf(ag.tensor([np.nan], dtype=ag.float64)).item())
    assert math.copysign(1.0, ag.erf(ag.tensor([-0.0], dtype=ag.float64)).item()) == -1.0


def test_erf_keeps_float32_and_float16():
    for dt in (ag.float32, ag.float16):
        x = ag.tensor([-1.0, 0.25, 2.0], dtype=dt)
        assert ag.erf(x).dtype == dt
        assert ag.gelu(x).dtype == dt


def test_large_inputs_are_stable_without_warnings():
    x = ag.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=ag.float64)
    np.testing.assert_allclose(ag.sigmoid(x).numpy(), [0.0, 1 / (1 + math.exp(50)), 0.5, 1.0, 1.0])
    np.testing.assert_allclose(ag.softplus(x).numpy(), [0.0, math.log1p(math.exp(-50)), math.log(2), 50.0, 1000.0])
    np.testing.assert_allclose(ag.gelu(x).numpy(), [0.0, 0.0, 0.0, 50.0, 1000.0])
    np.testing.assert_allclose(ag.gelu(x, approximate="tanh").numpy(), [0.0, 0.0, 0.0, 50.0, 1000.0])
    np.testing.assert_allclose(ag.log1p(ag.tensor([1e-20], dtype=ag.float64)).numpy(), [1e-20])
    assert ag.erf(x).tolist() == [-1.0, -1.0, 0.0, 1.0, 1.0]


async def test_softplus_and_sigmoid_gradients_at_large_inputs():
    x = _t([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    await ag.softplus(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1 / (1 + math.exp(30)), 0.5, 1.0, 1.0])
    x.grad = None
    await ag.sigmoid(x).sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_softplus_is_linear_above_threshold_like_torch():
    x = ag.tensor([10.0, 25.0], dtype=ag.float64)
    np.testing.assert_allclose(ag.softplus(x, beta=1, threshold=20).numpy(), [math.log1p(math.exp(10)), 25.0])
    np.testing.assert_allclose(ag.softplus(x, beta=3, threshold=20).numpy(), [10.0, 25.0])


async def test_exact_gelu_in_float32_is_as_accurate_as_float32_allows():
    # NOTE [Fast Phi]: float32 computes Phi with its own erfc approximation, not scipy's ndtr
    x = np.concatenate([np.linspace(-12, 12, 24001), [0.0, -0.0, 1e-30, -1e-30, 40.0, -40.0]]).astype(np.float32)
    x64 = x.astype(np.float64)
    phi = 0.5 * (1 + _math_erf(x64 / math.sqrt(2)))
    phi_low = 0.5 * np.vectorize(math.erfc)(-x64 / math.sqrt(2))  # Phi(x) without cancellation below 0
    want = x64 * np.where(x64 < 0, phi_low, phi)
    t = ag.tensor(x, requires_grad=True)
    y = ag.gelu(t)
    assert y.dtype == ag.float32
    got = y.detach().numpy().astype(np.float64)
    assert np.max(np.abs(got - want)) < 6e-7  # torch's float32 GELU: 1.1e-6
    core = np.abs(x64) < 4
    assert np.max(np.abs(got - want)[core] / np.abs(want)[core].clip(1e-30)) < 2e-6
    lower = (x64 < 0) & (x64 > -9)  # the lower tail keeps its relative accuracy (1 + erf would cancel)
    assert np.max(np.abs(got - want)[lower] / np.abs(want)[lower]) < 1e-5
    await y.sum().backward()
    dwant = np.where(x64 < 0, phi_low, phi) + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    assert t.grad.dtype == ag.float32
    np.testing.assert_allclose(t.grad.numpy(), dwant, rtol=2e-6, atol=6e-7)
    for dt in (ag.float32, ag.float16):  # a 0-d input, and float16 through float32
        s = ag.gelu(ag.tensor(1.5, dtype=dt))
        assert s.dtype == dt and s.shape == () and abs(s.item() - 1.5 * 0.5 * (1 + math.erf(1.5 / math.sqrt(2)))) < 2e-3
    assert np.isnan(ag.gelu(ag.tensor([np.nan], dtype=ag.float32)).item())


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="none or tanh"):
        ag.gelu(ag.tensor([1.0]), approximate="fast")


# ----- rounding ------------------------------------------------------------------------------


async def test_rounding_ops_have_zero_gradient():
    x = _t([-1.5, -0.4, 0.4, 2.5, 3.7])
    for op in (ag.floor, ag.ceil, ag.round, ag.trunc):
        (g,) = await ag.grad(op(x).sum(), x)
        assert g.tolist() == [0.0] * 5


def test_rounding_values_like_torch():
    x = ag.tensor([-1.5, -0.5, 0.5, 1.5, 2.5, 2.567])
    assert ag.round(x).tolist() == [-2.0, -0.0, 0.0, 2.0, 2.0, 3.0]  # half to even
    np.testing.assert_allclose(ag.round(x, decimals=1).numpy(), np.round(x.numpy(), 1))
    assert round(ag.tensor([2.567]), 2).tolist() == pytest.approx([2.57])
    i = ag.tensor([1, -2, 3])
    assert ag.floor(i).dtype == np.int64 and ag.floor(i).tolist() == [1, -2, 3]
    assert np.floor(ag.tensor([1.5])).tolist() == [1.0]


# ----- dtype promotion (torch's rules) -------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (ag.ones(2, dtype=ag.float32), ag.ones(2, dtype=ag.float64), np.float64),
        (ag.ones(2, dtype=ag.int64), ag.ones(2, dtype=ag.float32), np.float32),
        (ag.tensor(np.ones(2, np.int32)), ag.ones(2, dtype=ag.float32), np.float32),
        (ag.ones(2, dtype=ag.int64), 2.5, np.float32),
        (ag.ones(2, dtype=ag.int64), 2, np.int64),
        (ag.tensor(np.ones(2, np.int32)), 2, np.int32),
        (ag.ones(2, dtype=ag.float32), 2.5, np.float32),
        (ag.ones(2, dtype=ag.float32), ag.tensor(1.0, dtype=ag.float64), np.float32),  # 0-d does not promote
        (ag.ones(2, dtype=ag.int64), ag.tensor(1.0, dtype=ag.float64), np.float64),  # higher category does
        (ag.tensor(np.ones(2, np.int32)), ag.tensor(5), np.int32),
        (ag.tensor([True, False]), 1, np.int64),
        (ag.tensor([True, False]), 1.5, np.float32),
        (ag.tensor(np.ones(2, np.float16)), ag.ones(2, dtype=ag.int64), np.float16),
    ],
)
def test_add_and_mul_follow_torch_type_promotion(a, b, expected):
    assert (a + b).dtype == expected
    assert (b * a).dtype == expected
    assert ag.result_type(a, b) == expected


def test_true_division_of_integers_gives_the_default_dtype():
    assert (ag.tensor([1, 2]) / ag.tensor([2, 2])).dtype == np.float32
    assert (ag.tensor([1, 2]) / 2).tolist() == [0.5, 1.0]
    assert ag.div(ag.tensor([7, -7]), 2, rounding_mode="floor").tolist() == [3, -4]
    assert ag.div(ag.tensor([7, -7]), 2, rounding_mode="floor").dtype == np.int64


def test_unary_ops_on_integers_give_the_default_dtype():
    assert ag.exp(ag.tensor([0, 1])).dtype == np.float32
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.sqrt(ag.tensor([4])).dtype == np.float64
        assert (ag.tensor([1]) + 0.5).dtype == np.float64
    finally:
        ag.set_default_dtype(ag.float32)


async def test_mixed_dtype_gradients_come_back_in_each_inputs_dtype():
    a = ag.tensor([1.0, 2.0], dtype=ag.float32, requires_grad=True)
    b = ag.tensor([3.0, 4.0], dtype=ag.float64, requires_grad=True)
    out = a * b
    assert out.dtype == np.float64
    await out.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])


# ----- errors ------------------------------------------------------------------------------------


def test_integer_to_negative_integer_power_is_refused():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ag.tensor([1, 2]) ** -1


def test_shape_mismatch_names_the_sizes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        ag.ones(2, 3) + ag.ones(4)


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ag.clamp(ag.ones(2))


def test_comparisons_are_not_differentiable():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    for out in (x > 1, x == 1, x <= 2, ag.isnan(x)):
        assert out.grad_fn is None and not out.requires_grad


# ----- clamp with tensor bounds (torch's clamp_backward_min_max) -------------------------------


async def test_clamp_with_tensor_bounds_gives_the_whole_gradient_to_x_at_the_bound():
    x, lo, hi = _t([1.0, 2.0, 3.0]), _t([1.0, 1.0, 1.0]), _t([3.0, 3.0, 2.0])
    out = ag.clamp(x, lo, hi)
    assert out.grad_fn.name() == "ClampBackward0"
    await out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0]  # x == min and x == max: all of it to x
    assert lo.grad.tolist() == [0.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 1.0]


async def test_clamp_min_and_clamp_max_with_tensor_bounds():
    for op, node, gx, gb in (
        (ag.clamp_min, "ClampMinBackward1", [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        (ag.clamp_max, "ClampMaxBackward1", [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]),
    ):
        x, b = _t([1.0, 2.0, 3.0]), _t([1.0, 2.5, 3.0])
        out = op(x, b)
        assert out.grad_fn.name() == node
        await out.sum().backward()
        assert x.grad.tolist() == gx and b.grad.tolist() == gb
    x = _t([0.0, 1.0, 2.0])
    assert ag.clamp_min(x, 1.0).grad_fn.name() == "ClampMinBackward0"
    assert x.clamp_max(1.0).grad_fn.name() == "ClampMaxBackward0"
    assert x.clamp_min(1.0).tolist() == [1.0, 1.0, 2.0] and x.clamp_max(1.0).tolist() == [0.0, 1.0, 1.0]
    (g,) = await ag.grad(ag.clamp_min(x, 1.0).sum(), x)
    assert g.tolist() == [0.0, 1.0, 1.0]


async def test_clamp_with_min_above_max_gives_max_and_its_gradient():
    x, lo, hi = _t([1.0]), _t([3.0]), _t([2.0])
    out = ag.clamp(x, lo, hi)
    assert out.tolist() == [2.0]
    await out.sum().backward()
    assert (x.grad.item(), lo.grad.item(), hi.grad.item()) == (0.0, 0.0, 1.0)


async def test_clamp_with_tensor_bounds_broadcasts_and_gradchecks():
    rng = np.random.default_rng(0)
    x = _t(rng.uniform(-2, 2, (2, 3)))
    lo = _t(rng.uniform(-1.5, -0.5, (3,)))
    hi = _t(rng.uniform(0.5, 1.5, (2, 1)))
    assert ag.clamp(x, lo, hi).shape == (2, 3)
    assert ag.clamp(x[0], ag.zeros(2, 1, dtype=ag.float64)).shape == (2, 3)
    assert await ag.gradcheck(lambda a, b, c: ag.clamp(a, b, c), (x, lo, hi))
    assert await ag.gradgradcheck(lambda a, b, c: ag.clamp(a, b, c), (x, lo, hi))
    assert await ag.gradcheck(lambda a, b: ag.clamp_max(a, b), (x, hi))


# ----- pow at its edges (torch's pow_backward_self / pow_backward_exponent) --------------------


def _grads(fn, *values):
    xs = [_t(v) for v in values]
    with np.errstate(all="ignore"):  # the forward of 0 ** -1 and (-2) ** 0.5 (numpy would warn)
        out = fn(*xs)
    out.sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


_NAN, _INF = float("nan"), float("inf")


def test_pow_gradients_at_zero_and_negative_bases_match_torch():
    out, (ga, gb) = _grads(lambda a, b: a ** b, [0.0, 0.0, 0.0, -2.0, -2.0, 0.0, 2.0, -2.0],
                           [0.0, -1.0, 2.0, 2.0, 3.0, 0.5, 0.0, 0.5])
    np.testing.assert_array_equal(out, [1.0, _INF, 0.0, 4.0, -8.0, 0.0, 1.0, _NAN])
    np.testing.assert_array_equal(ga, [0.0, -_INF, 0.0, -4.0, 12.0, _INF, 0.0, _NAN])
    np.testing.assert_array_equal(gb, [0.0, -_INF, 0.0, _NAN, _NAN, 0.0, math.log(2.0), _NAN])


def test_pow_gradients_at_nan_match_torch():
    out, (ga, gb) = _grads(lambda a, b: a ** b, [_NAN, 1.0, 0.0], [0.0, _NAN, _NAN])
    np.testing.assert_array_equal(out, [1.0, 1.0, _NAN])
    np.testing.assert_array_equal(ga, [0.0, _NAN, _NAN])  # exponent 0: gradient 0 whatever the base
    np.testing.assert_array_equal(gb, [_NAN, 0.0, _NAN])


@pytest.mark.parametrize(
    "exponent, base, grad",
    [(0, [0.0, 1.0, _NAN], [0.0, 0.0, 0.0]), (-1, [0.0, 1.0], [-_INF, -1.0]), (0.5, [0.0, 1.0], [_INF, 0.5]),
     (2.0, [0.0, -1.0], [0.0, -2.0]), (3, [0.0, -2.0], [0.0, 12.0]), (1.5, [0.0, -2.0], [0.0, _NAN])],
)
def test_pow_with_a_number_exponent_at_its_edges(exponent, base, grad):
    _, (g,) = _grads(lambda a: a ** exponent, base)
    np.testing.assert_array_equal(g, grad)


@pytest.mark.parametrize(
    "base, exponent, grad",
    [(0.0, [0.0, 1.0, -1.0, 2.0], [0.0, 0.0, -_INF, 0.0]), (-2.0, [0.0, 1.0, 2.0, 0.5], [_NAN] * 4),
     (2.0, [0.0, 1.0], [math.log(2.0), 2 * math.log(2.0)])],
)
def test_pow_with_a_number_base_at_its_edges(base, exponent, grad):
    _, (g,) = _grads(lambda b: base ** b, exponent)
    np.testing.assert_array_equal(g, grad)


async def test_pow_edge_rules_hold_in_create_graph_passes():
    a, b = _t([0.0, 0.0, 2.0]), _t([0.0, 2.0, 3.0])
    ga, gb = await ag.grad((a ** b).sum(), (a, b), create_graph=True)
    np.testing.assert_array_equal(ga.detach().numpy(), [0.0, 0.0, 12.0])
    np.testing.assert_array_equal(gb.detach().numpy(), [0.0, 0.0, 8 * math.log(2.0)])
    assert await ag.gradgradcheck(lambda x, y: x ** y, (_t([0.5, 1.5]), _t([-1.0, 2.0])))


# ----- rounding division, floor_divide and remainder ---------------------------------------------

_DIV_A = [0.25, -0.25, 5.0, -5.0, 5.0, 0.0, 1.0, -1.0, 0.0, _NAN, _INF]
_DIV_B = [0.001, 0.001, 0.0, 0.0, -0.0, 0.0, _INF, _INF, -3.0, 1.0, 2.0]


def test_floor_division_is_exact_like_torch_python_and_numpy():
    q = ag.div(ag.tensor([0.25]), ag.tensor([0.001]), rounding_mode="floor")
    assert q.tolist() == [249.0] and q.dtype == np.float32
    assert 0.25 // 0.001 == 249.0
    a, b = ag.tensor(_DIV_A, dtype=ag.float64), ag.tensor(_DIV_B, dtype=ag.float64)
    floor = ag.div(a, b, rounding_mode="floor").numpy()
    np.testing.assert_array_equal(floor, [249, -250, _INF, -_INF, -_INF, _NAN, 0, -1, -0.0, _NAN, _NAN])
    assert np.signbit(floor[8])  # 0 / -3 floors to -0 (as torch)
    np.testing.assert_array_equal(ag.floor_divide(a, b).numpy(), floor)
    np.testing.assert_array_equal((a // b).numpy(), floor)


def test_trunc_division_matches_torch_and_is_exact_on_integers():
    a, b = ag.tensor(_DIV_A, dtype=ag.float64), ag.tensor(_DIV_B, dtype=ag.float64)
    trunc = ag.div(a, b, rounding_mode="trunc").numpy()
    np.testing.assert_array_equal(trunc, [250, -250, _INF, -_INF, -_INF, _NAN, 0, -0.0, -0.0, _NAN, _INF])
    i, j = ag.tensor([7, -7, 7, -7]), ag.tensor([2, 2, -2, -2])
    assert ag.div(i, j, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert ag.div(i, j, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    big = ag.tensor([2**62 + 1, -(2**62) - 1])
    assert ag.div(big, 1, rounding_mode="trunc").tolist() == [2**62 + 1, -(2**62) - 1]
    assert ag.div(big, 3, rounding_mode="trunc").tolist() == [(2**62 + 1) // 3, -((2**62 + 1) // 3)]


def test_integer_division_by_zero_raises_like_torch():
    for f in (lambda: ag.div(ag.tensor([7]), ag.tensor([0]), rounding_mode="floor"),
              lambda: ag.div(ag.tensor([7]), 0, rounding_mode="trunc"),
              lambda: ag.tensor([7]) // 0, lambda: ag.tensor([7]) % 0, lambda: 7 // ag.tensor([0])):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f()


def test_floor_divide_and_remainder_values_and_dtypes_like_torch():
    i = ag.tensor([5, -5])
    assert (i // 2).tolist() == [2, -3] and (i // 2).dtype == np.int64
    assert (i % 3).tolist() == [2, 1]
    assert (ag.tensor([5.0, -5.0]) % -3).tolist() == [-1.0, -2.0]
    assert (17 // ag.tensor([5, -5])).tolist() == [3, -4] and (17 % ag.tensor([5, -5])).tolist() == [2, -3]
    r = ag.remainder(ag.tensor([5.0, -5.0, 0.0]), ag.tensor([_INF, _INF, -3.0])).numpy()
    np.testing.assert_array_equal(r, [5.0, _INF, 0.0])
    assert not np.signbit(r[2])  # torch: fmod-based, 0 % -3 is +0
    assert (i // 2.5).dtype == np.float32 and (ag.tensor([5, -4]) % 2.5).tolist() == [0.0, 1.0]
    assert (ag.tensor(np.array([5], np.int32)) // ag.tensor(2)).dtype == np.int32
    assert ag.tensor([7.0]).floor_divide(2).tolist() == [3.0] and ag.tensor([7]).remainder(4).tolist() == [3]
    x = ag.tensor([7, 8])
    alias = x[:]
    x //= 3
    x %= 2
    assert alias.tolist() == [0, 0]  # in place, seen through a view
    x = _t([1.0, 2.0, 3.0], requires_grad=False)
    x.clamp_min_(1.5).clamp_max_(2.5)
    assert x.tolist() == [1.5, 2.0, 2.5]


async def test_rounding_division_has_a_zero_gradient_like_torch():
    x, y = _t([1.0, 2.0]), _t([1.0, 3.0])
    out = ag.div(x, y, rounding_mode="floor")
    assert out.grad_fn.name() == "DivBackward2"
    await out.backward(ag.tensor([_INF, 1.0], dtype=ag.float64))
    assert x.grad.tolist() == [0.0, 0.0] and y.grad.tolist() == [0.0, 0.0]
    assert ag.div(x, 2, rounding_mode="trunc").grad_fn.name() == "DivBackward2"


async def test_floor_divide_is_not_differentiable_and_remainder_is():
    x = _t([1.0, 2.0])
    for out, op in ((x // 2, "floor_divide"), (5 // x, "floor_divide"), (5 % x, "remainder")):
        assert out.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
            await out.sum().backward()
    assert x.grad is None
    out = x % 1.5
    assert out.grad_fn.name() == "RemainderBackward0"
    await out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    x.grad = None
    b = _t([1.5, 1.5])
    out = x % b
    assert out.grad_fn.name() == "RemainderBackward1"
    await out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, -1.0]
    assert await ag.gradcheck(lambda p, q: ag.remainder(p, q), (_t([1.2, -2.3, 3.4]), _t([0.7, 0.9, -1.1])))


# ----- NaN inputs (torch's rules) -------------------------------------------------------------------


async def test_sign_of_nan_is_zero_and_sign_has_a_zero_gradient():
    x = _t([_NAN, 0.0, -0.0, 2.0, -3.0])
    out = ag.sign(x)
    assert out.tolist() == [0.0, 0.0, 0.0, 1.0, -1.0]
    assert out.grad_fn.name() == "SignBackward0"
    await out.sum().backward()
    assert x.grad.tolist() == [0.0] * 5
    assert ag.sign(ag.tensor([-3, 0, 2])).tolist() == [-1, 0, 1]
    assert ag.sign(ag.tensor([True, False])).tolist() == [True, False]


@pytest.mark.parametrize(
    "op, grad",
    [(ag.abs, [0.0, 0.0, -1.0]), (ag.relu, [1.0, 0.0, 0.0])],
)
async def test_unary_gradients_at_nan_match_torch(op, grad):
    x = _t([_NAN, 0.0, -1.0])
    await op(x).sum().backward()
    assert x.grad.tolist() == grad
    (g2,) = await ag.grad(op(x).sum(), x, create_graph=True)
    assert g2.tolist() == grad


async def test_relu_gradient_mask_at_zeros_and_infinities():
    # the mask is "output != 0" (NOTE [NaN in derivative rules]): the same as torch's
    # "output <= 0" zeroing, signed zeros and infinities included; it multiplies the gradient
    x = _t([-0.0, 0.0, _INF, -_INF, 1e-300, -1e-300, _NAN])
    await ag.relu(x).backward(_t([1.0, _INF, 1.0, 1.0, 2.0, 1.0, 3.0]))
    got = x.grad.numpy()
    np.testing.assert_array_equal(got, [0.0, _NAN, 1.0, 0.0, 2.0, 0.0, 3.0])
    assert not np.signbit(got[[0, 3, 5]]).any()


def test_formulas_read_numpy_names_as_bound_globals():
    # NOTE [Bound numpy names]: no module attribute lookup per backward call
    node = ag.sin(_t([1.0], requires_grad=True)).grad_fn
    assert node.name() == "SinBackward0"
    names = node.apply.__code__.co_names
    assert "np_cos" in names and "np" not in names
    assert node.apply.__globals__["np_cos"] is np.cos


@pytest.mark.parametrize("op", [ag.maximum, ag.minimum, ag.max, ag.min])
async def test_binary_extrema_give_nan_gradient_to_both_operands_like_torch(op):
    a, b = _t([_NAN, 1.0, 1.0, _NAN]), _t([1.0, _NAN, 1.0, _NAN])
    out = op(a, b)
    assert np.isnan(out.detach().numpy()).tolist() == [True, True, False, True]
    await out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 0.5, 1.0]
    assert b.grad.tolist() == [1.0, 1.0, 0.5, 1.0]


async def test_clamp_gradients_at_nan_match_torch():
    x = _t([_NAN, 0.0, 2.0])
    await ag.clamp(x, 0.0, 2.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]
    x, lo, hi = _t([_NAN, 1.0, 1.0, 1.0, 1.0]), _t([0.0, _NAN, 1.0, 1.0, 2.0]), _t([2.0, 2.0, _NAN, 1.0, 1.0])
    out = ag.clamp(x, lo, hi)
    assert np.isnan(out.detach().numpy()).tolist() == [True, True, True, False, False]
    await out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert lo.grad.tolist() == [0.0] * 5
    assert hi.grad.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    for op in (ag.clamp_min, ag.clamp_max):
        x, b = _t([_NAN, 1.0, 1.0]), _t([0.0, _NAN, 1.0])
        await op(x, b).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 1.0] and b.grad.tolist() == [0.0, 0.0, 0.0]


# ----- issue 13: elementwise math (values at the edges as torch 2.13 gives them) -----------------------


def test_atan2_gradient_at_the_origin_is_zero_like_torch():
    a, b = _t([0.0, np.inf, 1.0]), _t([0.0, 1.0, 1.0])
    ga, gb = ag.grad_sync(ag.atan2(a, b).sum(), [a, b])
    np.testing.assert_array_equal(ga.numpy(), [0.0, 0.0, 0.5])
    np.testing.assert_array_equal(gb.numpy(), [0.0, np.nan, -0.5])
    assert ag.arctan2 is ag.atan2 and ag.atan2(ag.tensor([1]), ag.tensor([1])).dtype == np.float32


@pytest.mark.parametrize("op", [ag.hypot, ag.logaddexp, ag.logaddexp2])
def test_float_only_binary_ops_refuse_integers_like_torch(op):
    with pytest.raises(NotImplementedError, match=f'"{op.__name__}_cpu" not implemented for \'Long\''):
        op(ag.tensor([1, 2]), ag.tensor([3, 4]))
    assert op(ag.tensor([1, 2]), ag.tensor([3.0, 4.0])).dtype == np.float32


@pytest.mark.parametrize("op", [ag.atan2, ag.hypot, ag.logaddexp, ag.logaddexp2])
def test_ops_without_a_number_overload_refuse_numbers_like_torch(op):
    x = ag.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=rf"{op.__name__}\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        op(x, 2.0)
    with pytest.raises(TypeError, match=rf"{op.__name__}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        op(2, x)


def test_logaddexp_is_stable():
    out = ag.logaddexp(ag.tensor([1000.0, -1000.0, -np.inf]), ag.tensor([1000.0, -1000.0, -np.inf]))
    np.testing.assert_allclose(out.numpy(), [1000 + math.log(2), -1000 + math.log(2), -np.inf])


def test_fmod_has_the_sign_of_the_dividend():
    a, b = ag.tensor([-3.0, 3.0, -3.0, 3.0]), ag.tensor([2.0, -2.0, -2.0, 2.0])
    assert ag.fmod(a, b).tolist() == [-1.0, 1.0, -1.0, 1.0] and ag.remainder(a, b).tolist() == [1.0, -1.0, -1.0, 1.0]
    assert ag.fmod(ag.tensor([5, -5]), 3).tolist() == [2, -2]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ag.fmod(ag.tensor([1, 2]), ag.tensor([1, 0]))
    with pytest.raises(NotImplementedError, match="fmod_cpu"):
        ag.fmod(ag.tensor([True]), ag.tensor([True]))


def test_remainder_in_place_with_a_tensor_divisor_keeps_the_old_value():
    """The divisor's gradient reads floor(self / other) of the value before the write."""
    x, d = _t([2.5, -1.5]), _t([2.0, 1.0])
    y = x * 1
    y.remainder_(d)
    gx, gd = ag.grad_sync(y.sum(), [x, d])
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(gd.numpy(), [-1.0, 2.0])


def test_copysign_gradient_and_negative_zero():
    x = _t([0.0, -0.0, 2.0, -3.0])
    out = ag.copysign(x, ag.tensor([-1.0, 1.0, -1.0, -0.0], dtype=ag.float64))
    np.testing.assert_array_equal(np.signbit(out.detach().numpy()), [True, False, True, True])
    (g,) = ag.grad_sync(out.sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, -1.0, 1.0])
    assert ag.copysign(ag.tensor([1, 2]), -1).dtype == np.float32


def test_lerp_addcmul_addcdiv_dtypes_and_errors_like_torch():
    f, d = ag.tensor([0.5, 0.2]), ag.tensor([0.5, 0.2], dtype=ag.float64)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        ag.lerp(f, d, 0.5)
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):
        ag.lerp(ag.tensor([1, 2]), ag.tensor([3, 4]), 0.5)
    assert ag.lerp(d, d, ag.tensor(0.5)).dtype == np.float64  # a 0-d weight may differ
    i = ag.tensor([1, 2, 0])
    assert ag.addcmul(i, i, i, value=2.5).tolist() == [3, 10, 0]  # the value is cast to the integer type
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        ag.addcdiv(ag.tensor([0.5, 0.2, 1.0]), i, i)
    # float16 computed in float32 and rounded once, as torch
    h = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=ag.float16)
    assert ag.lerp(h * 1.37, h * -2.71, 0.37).tolist() == [-0.139892578125, -0.27978515625, -0.420166015625,
                                                          -0.5595703125]
    assert ag.addcmul(h * 1.37, h * -2.71, h * 0.77, value=3.14).tolist() == [-5.18359375, -23.484375, -54.90625,
                                                                                -99.375]


def test_nan_to_num_defaults_integers_and_gradient():
    x = _t([np.nan, np.inf, -np.inf, 1.5])
    out = ag.nan_to_num(x)
    info = np.finfo(np.float64)
    np.testing.assert_array_equal(out.detach().numpy(), [0.0, info.max, info.min, 1.5])
    (g,) = ag.grad_sync(out.sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0, 1.0])
    assert ag.nan_to_num(ag.tensor([1, 2]), nan=3.0).dtype == np.int64
    assert np.nan_to_num(ag.tensor([np.nan]), nan=2.0).tolist() == [2.0]


def test_heaviside_values_dtype_rule_and_no_derivative():
    x = ag.tensor([-1.0, 0.0, 2.0, np.nan], requires_grad=True)
    out = ag.heaviside(x, ag.tensor(0.5))
    np.testing.assert_array_equal(out.detach().numpy(), [0.0, 0.5, 1.0, 0.0])
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        ag.backward_sync(out.sum())
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
        ag.heaviside(x, ag.tensor(0.5, dtype=ag.float64))


def test_isclose_and_allclose_like_torch():
    a = ag.tensor([np.inf, -np.inf, np.nan, 1.0, 1.0])
    b = ag.tensor([np.inf, np.inf, np.nan, 1.0 + 1e-7, 1.1])
    assert ag.isclose(a, b).tolist() == [True, False, False, True, False]
    assert ag.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True, False]
    assert a.isclose(b, rtol=0.2).tolist()[4] is True
    assert ag.allclose(a[3:4], b[3:4]) is True and isinstance(ag.allclose(a, b), bool)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ag.isclose(a, b.double())
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ag.isclose(a, b, rtol=-1.0)
    assert ag.isclose(ag.tensor([1, 5]), ag.tensor([2, 5]), atol=1).tolist() == [True, True]
    assert np.isclose(a, b).tolist() == ag.isclose(a, b).tolist()


def test_in_place_variants_and_aliases():
    x = ag.tensor([0.25, 0.5])
    assert x.arcsin_() is x and np.allclose(x.numpy(), np.arcsin([0.25, 0.5]))
    y = ag.tensor([1.0, 2.0])
    y.atan2_(ag.tensor([1.0, 1.0]))
    np.testing.assert_allclose(y.numpy(), np.arctan2([1.0, 2.0], 1.0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ag.tensor([1, 2]).expm1_()
    assert ag.arccosh is ag.acosh and hasattr(ag.Tensor, "arctanh_")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "true_divide", "floor_divide"])
def test_a_number_as_input_gives_a_0d_tensor_as_torch(op: str) -> None:
    """torch wraps a number given as ``input`` in a 0-d tensor of its own dtype (float: the default)."""
    fn = getattr(ag, op)
    out = fn(-4.8, -7.5)
    assert isinstance(out, ag.Tensor) and out.shape == () and out.dtype == ag.float32
    expected = {"add": -12.3, "sub": 2.7, "mul": 36.0, "div": 0.64, "true_divide": 0.64, "floor_divide": 0.0}
    np.testing.assert_allclose(out.item(), expected[op], rtol=1e-6)
    ints = fn(7, 2)
    assert ints.dtype == (ag.float32 if op in ("div", "true_divide") else ag.int64)
    with pytest.raises(TypeError, match=rf"{op if op != 'true_divide' else 'div'}\(\): argument 'input' \(position 1\) must be Tensor, not str"):
        fn("x", 2)


async def test_div_gradient_with_respect_to_both_operands():
    """d(a/b) = g/b and -g*a/b**2, with broadcasting and a number on either side (also
    checked by div's rows in op_rows.py; here so that this file catches a wrong formula)."""
    a = _t([[0.5, -1.5, 2.5], [1.0, 3.0, -0.25]])
    b = _t([0.8, -1.2, 2.0])
    assert await ag.gradcheck(lambda p, q: p / q, (a, b))
    assert await ag.gradgradcheck(lambda p, q: ag.div(p, q), (a, b))
    assert await ag.gradcheck(lambda q: 3.0 / q, (b,))
    y = (a / b).sum()
    ga, gb = await ag.grad(y, [a, b])
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(ga.numpy(), np.broadcast_to(1 / bn, an.shape))
    np.testing.assert_allclose(gb.numpy(), (-an / bn**2).sum(0))
