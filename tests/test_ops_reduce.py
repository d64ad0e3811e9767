"""Reductions: forward against numpy and first derivatives over hypothesis-drawn shapes, dims and
keepdim (second derivatives: the rows in tests/op_rows.py); tie rules, zeros in prod, torch's names,
errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import aiograd as ag
from helpers import check_grads as check
from helpers import distinct as _distinct
from helpers import t64 as _t
from op_rows import REDUCE, ROWS


@st.composite
def shape_and_dims(draw, allow_tuple=True, allow_none=True, min_dims=0):
    shape = draw(array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=3))
    n = len(shape)
    choices = []
    if allow_none:
        choices.append(st.none())
    if n:
        choices.append(st.integers(-n, n - 1))
        if allow_tuple:
            choices.append(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).map(tuple))
    elif not allow_none:
        choices.append(st.sampled_from([0, -1]))
    dim = draw(st.one_of(*choices)) if choices else None
    return shape, dim, draw(st.booleans())


def _np_axis(dim, shape):
    if dim is None or not shape:
        return None
    return dim


_DIM_ROWS = [r for r in ROWS if r.cases[:4] == REDUCE[:4] and r.fn is None and r.ref is not None]


@pytest.mark.parametrize("row", _DIM_ROWS, ids=lambda r: r.op)
@given(sd=shape_and_dims(), seed=st.integers(0, 2**32 - 1))
def test_reductions_over_drawn_shapes_dims_and_keepdim(row, sd, seed):
    """The reduction rows of tests/op_rows.py once more, on drawn (shape, dim, keepdim): forward
    against numpy and first derivatives (their rows check second derivatives)."""
    shape, dim, keepdim = sd
    if row.op == "norm":  # torch.norm's default "fro" is a matrix norm over at most two dims
        assume(not (isinstance(dim, tuple) and len(dim) > 2))
    if row.op in ("var", "std"):
        n = int(np.prod([shape[d] for d in (range(len(shape)) if dim is None else np.atleast_1d(dim))]))
        assume(n >= 2)
    a = row.sample(np.random.default_rng(seed), shape)
    x = _t(a)
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    op = getattr(ag, row.op)
    out = op(x, **kw)
    want = np.asarray(row.ref(a, _np_axis(dim, shape), keepdim if dim is not None else False))
    assert out.shape == want.shape
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12, atol=1e-14)
    assert out.grad_fn.name() == row.node
    check(lambda t: op(t, **kw), (x,), second=False)


@given(sd=shape_and_dims(allow_tuple=False, allow_none=False), seed=st.integers(0, 2**32 - 1),
       which=st.sampled_from(["max", "min"]))
async def test_max_min_with_dim_on_every_loop(sd, seed, which):
    shape, dim, keepdim = sd
    a = _distinct(np.random.default_rng(seed), shape)
    x = _t(a)
    res = getattr(x, which)(dim, keepdim)
    values, indices = res
    assert res.values is values and res.indices is indices
    ax = dim if shape else None
    np_val = (np.max if which == "max" else np.min)(a, axis=ax, keepdims=keepdim)
    np_idx = (np.argmax if which == "max" else np.argmin)(a, axis=ax, keepdims=keepdim) if shape else 0
    np.testing.assert_array_equal(values.detach().numpy(), np_val)
    np.testing.assert_array_equal(indices.numpy(), np_idx)
    assert indices.dtype == np.int64 and not indices.requires_grad
    assert values.grad_fn.name() == ("MaxBackward0" if which == "max" else "MinBackward0")
    f = lambda t: getattr(t, which)(dim, keepdim).values  # noqa: E731
    assert await ag.gradcheck(f, (x,))
    assert await ag.gradgradcheck(f, (x,))


async def test_max_without_dim_splits_the_gradient_evenly_among_ties():
    x = _t([[1.0, 3.0], [3.0, 3.0]])
    await x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 1 / 3], [1 / 3, 1 / 3]])
    x.grad = None
    await (x.min() * 2).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0], [0.0, 0.0]])


async def test_amax_with_dims_splits_among_ties_per_group():
    x = _t([[1.0, 5.0, 5.0], [2.0, 0.0, 1.0]])
    await x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    x.grad = None
    await ag.amin(x, (0, 1), keepdim=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


async def test_max_with_dim_sends_the_gradient_to_the_index():
    x = _t([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    values, indices = x.max(1)
    assert indices.tolist() == [1, 0]  # the first maximal element, as torch on CPU
    await values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def test_max_and_argmax_treat_nan_as_the_maximum():
    x = ag.tensor([1.0, np.nan, 3.0, np.nan])
    assert np.isnan(x.max().item()) and np.isnan(x.amax().item())
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert x.max(0).indices.item() == 1


async def test_max_gradient_goes_to_nan():
    x = _t([1.0, np.nan, 3.0])
    await x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])


def test_max_with_a_tensor_is_maximum():
    a, b = ag.tensor([1.0, 4.0]), ag.tensor([3.0, 2.0])
    assert ag.max(a, b).tolist() == [3.0, 4.0] and a.min(b).tolist() == [1.0, 2.0]


# ----- prod with zeros ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dim",
    [
        ([2.0, 0.0, 3.0], None),
        ([0.0, 0.0, 3.0], None),
        ([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [2.0, 5.0, 0.5]], None),
        ([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [2.0, 5.0, 0.5]], 1),
        ([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [2.0, 5.0, 0.5]], 0),
        ([[[0.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [1.5, 2.0]]], (0, 2)),
        (0.0, None),
    ],
)
async def test_prod_gradient_is_exact_with_zeros(data, dim):
    x = _t(data)
    f = (lambda t: t.prod()) if dim is None else (lambda t: t.prod(dim))
    assert await ag.gradcheck(f, (x,))
    assert await ag.gradgradcheck(f, (x,))


async def test_prod_gradient_values_with_one_and_two_zeros():
    x = _t([2.0, 0.0, 3.0])
    await x.prod().backward()
    assert x.grad.tolist() == [0.0, 6.0, 0.0]
    y = _t([2.0, 0.0, 0.0])
    await y.prod().backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]


# ----- dtypes, non-differentiable reductions ---------------------------------------------------


def test_sum_and_prod_of_integers_and_bools_give_int64():
    assert ag.tensor([True, True, False]).sum().dtype == np.int64
    assert ag.tensor(np.array([1, 2], np.int32)).sum().dtype == np.int64
    assert ag.tensor(np.array([2, 3], np.int8)).prod().item() == 6
    assert ag.tensor(np.array([2, 3], np.int8)).prod().dtype == np.int64
    assert ag.ones(2, 2).sum(dtype=ag.float64).dtype == np.float64
    assert ag.tensor([1, 2]).sum(dtype=ag.float32).dtype == np.float32


def test_sum_over_an_empty_dim_list_reduces_everything_like_torch():
    x = ag.ones(2, 3)
    assert x.sum(dim=()).item() == 6.0 and x.amax(()).item() == 1.0
    assert ag.tensor(3.0).sum(0).item() == 3.0 and ag.tensor(3.0).mean(-1).item() == 3.0


async def test_reductions_keep_the_gradient_dtype():
    x = ag.ones(2, 3, requires_grad=True)
    for out in (x.sum(1), x.mean(), x.prod(0), x.amax(), x.var(1), x.std(), ag.logsumexp(x, 1), x.norm()):
        (g,) = await ag.grad(out.sum(), x)
        assert g.dtype == np.float32 and g.shape == (2, 3)


def test_mean_of_integers_is_refused():
    with pytest.raises(RuntimeError, match="Input dtype must be either a floating point"):
        ag.tensor([1, 2]).mean()
    assert ag.tensor([1, 2]).mean(dtype=ag.float64).item() == 1.5


@given(sd=shape_and_dims(allow_tuple=False), seed=st.integers(0, 2**32 - 1))
def test_argmax_argmin_match_numpy(sd, seed):
    shape, dim, keepdim = sd
    a = np.random.default_rng(seed).integers(0, 5, shape).astype(np.float64)
    x = ag.tensor(a)
    for ours, ref in ((ag.argmax, np.argmax), (ag.argmin, np.argmin)):
        got = ours(x, dim, keepdim)
        assert got.dtype == np.int64
        if dim is None:
            want = ref(a)
            if keepdim:
                want = np.reshape(want, (1,) * a.ndim)
        else:
            want = ref(a, axis=dim if shape else None, keepdims=keepdim) if shape else 0
        np.testing.assert_array_equal(got.numpy(), want)


def test_all_any():
    x = ag.tensor([[True, False], [True, True]])
    assert x.all().item() is False and x.any().item() is True
    assert ag.all(x, 1).tolist() == [False, True]
    assert ag.any(x, 0, keepdim=True).tolist() == [[True, True]]
    assert ag.tensor([1.0, 0.0]).all().dtype == np.bool_
    assert np.all(ag.tensor([1, 2])).item() is True


def test_var_std_keywords_like_torch():
    a = np.array([[1.0, 2.0, 4.0], [0.0, 3.0, 9.0]])
    x = ag.tensor(a, dtype=ag.float64)
    np.testing.assert_allclose(x.var().item(), np.var(a, ddof=1))
    np.testing.assert_allclose(ag.var(x, False).item(), np.var(a))  # legacy positional unbiased
    np.testing.assert_allclose(x.var(1, unbiased=False).numpy(), np.var(a, axis=1))
    np.testing.assert_allclose(x.std(1, correction=2, keepdim=True).numpy(), np.std(a, 1, ddof=2, keepdims=True))
    np.testing.assert_allclose(x.var(dim=(0, 1), correction=0).item(), np.var(a))
    assert np.isnan(ag.tensor([1.0]).var().item())
    with pytest.raises(RuntimeError, match="both"):
        x.var(1, unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="floating point"):
        ag.tensor([1, 2]).var()


async def test_std_gradient_is_zero_where_std_is_zero():
    x = _t([[2.0, 2.0], [1.0, 3.0]])
    await x.std(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [-1 / np.sqrt(2), 1 / np.sqrt(2)]])


def test_logsumexp_is_stable():
    x = ag.tensor([[1000.0, 1000.0], [-1000.0, -1000.0]], dtype=ag.float64)
    np.testing.assert_allclose(ag.logsumexp(x, 1).numpy(), [1000 + np.log(2), -1000 + np.log(2)])
    assert ag.logsumexp(ag.tensor([-np.inf, -np.inf]), 0).item() == -np.inf
    assert ag.logsumexp(ag.tensor([np.inf, 1.0]), 0).item() == np.inf


async def test_norm_gradient_at_zero_is_zero():
    x = _t([[0.0, 0.0], [3.0, 4.0]])
    await x.norm(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]])


@pytest.mark.parametrize("p", [1, 3, np.inf, -np.inf, 0])
def test_norm_other_orders_match_numpy(p):
    a = np.array([[1.0, -2.0, 0.0], [0.5, 3.0, -1.0]])
    got = ag.tensor(a, dtype=ag.float64).norm(p=p, dim=1).numpy()
    np.testing.assert_allclose(got, np.linalg.norm(a, ord=p, axis=1))


async def test_norm_p3_and_inf_gradcheck():
    x = _t([[1.0, -2.0, 0.5], [0.5, 3.0, -1.0]])
    assert await ag.gradcheck(lambda t: t.norm(p=3, dim=1), (x,))
    assert await ag.gradcheck(lambda t: t.norm(p=np.inf), (x,))


# ----- errors ------------------------------------------------------------------------------------


def test_dim_out_of_range():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        ag.ones(2, 3).sum(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.ones(2, 3).max(-3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.ones(2, 3).var((0, 5))


def test_repeated_dims_are_refused():
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ag.ones(2, 3).sum((1, -1))


def test_max_of_an_empty_tensor_needs_a_dim():
    with pytest.raises(IndexError, match="Specify the reduction dim"):
        ag.zeros(0).max()
    with pytest.raises(IndexError, match="non-zero size"):
        ag.zeros(2, 0).amax(1)
    assert ag.zeros(0, 3).amax(1).shape == (0,)


# ----- issue 13: var_mean, std_mean, nan-reductions, count_nonzero, aminmax, norm -----------------------


def test_var_mean_and_std_mean_return_a_plain_tuple_with_one_node():
    x = _t([[1.0, 2.0, 4.0], [0.5, 0.5, 3.0]])
    var, mean = ag.var_mean(x, 1)
    assert type(ag.var_mean(x)) is tuple and var.grad_fn is mean.grad_fn
    assert var.grad_fn.name() == "VarMeanBackward0"
    np.testing.assert_allclose(var.detach().numpy(), np.var(x.detach().numpy(), axis=1, ddof=1))
    np.testing.assert_allclose(mean.detach().numpy(), [7 / 3, 4 / 3])
    std, _ = ag.std_mean(x, 1, False, True)  # the legacy positional unbiased and keepdim
    assert std.shape == (2, 1) and std.grad_fn.name() == "StdMeanBackward0"
    assert np.allclose(ag.var_mean(x, False)[0].item(), np.var(x.detach().numpy()))
    with pytest.raises(RuntimeError, match="std_mean only support floating point and complex dtypes"):
        ag.std_mean(ag.tensor([1, 2]))
    assert not hasattr(x, "var_mean")  # a function only, as torch's


def test_nansum_and_nanmean():
    x = _t([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]])
    assert ag.nansum(x).item() == 3.0
    m = ag.nanmean(x, 1)
    assert m.tolist()[0] == 1.5 and np.isnan(m.tolist()[1]) and m.grad_fn.name() == "DivBackward0"
    (g,) = ag.grad_sync(ag.nansum(x), [x])
    np.testing.assert_array_equal(g.numpy(), [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    assert ag.nansum(ag.tensor([True, True])).dtype == np.int64
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        ag.nanmean(ag.tensor([1, 2]))
    assert np.nansum(x).item() == 3.0


def test_count_nonzero():
    x = ag.tensor([[0, 1, 2], [3, 0, 0]])
    assert ag.count_nonzero(x).item() == 3 and x.count_nonzero(1).tolist() == [2, 1]
    assert ag.count_nonzero(x, (0, 1)).dtype == np.int64
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ag.count_nonzero(x, (0, 0))


async def test_aminmax_ties_nan_and_errors_like_torch():
    x = _t([[1.0, 3.0, 3.0, 0.0], [1.0, np.nan, 2.0, np.nan]])
    lo, hi = ag.aminmax(x, dim=1)
    assert lo.grad_fn is hi.grad_fn and lo.grad_fn.name() == "AminmaxBackward0"
    await (hi.sum() + 2 * lo.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy()[0], [0.0, 0.5, 0.5, 2.0])
    assert np.isnan(x.grad.numpy()[1]).all()  # a NaN extremum: NaN for the row, as torch's amax
    with pytest.raises(TypeError, match="argument 'dim' must be int, not tuple"):
        ag.aminmax(x, dim=(0, 1))
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        ag.aminmax(ag.zeros(0))
    assert ag.aminmax(ag.rand(2, 3), keepdim=True).max.shape == (1, 1)


async def test_amax_gradient_at_nan_is_nan_like_torch_but_max_shares_it():
    x = _t([1.0, np.nan, 3.0, np.nan])
    await ag.amax(x).backward()
    assert np.isnan(x.grad.numpy()).all()
    x.grad = None
    await x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.0, 0.5])


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, -1, 0, np.inf, -np.inf])
def test_norm_vector_orders(p):
    a = np.array([[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]])
    out = ag.norm(ag.tensor(a), p, 1)
    np.testing.assert_allclose(out.numpy(), np.linalg.norm(a, ord=p, axis=1), rtol=1e-6)
    assert out.dtype == np.float64 and ag.tensor(a, requires_grad=True).norm(p).grad_fn.name() == \
        "LinalgVectorNormBackward0"


def test_norm_matrix_orders_dtype_and_errors():
    a = np.array([[3.0, -4.0], [1.0, 2.0], [0.5, 0.0]])
    np.testing.assert_allclose(ag.norm(ag.tensor(a), "nuc").item(), np.linalg.norm(a, "nuc"))
    np.testing.assert_allclose(ag.norm(ag.tensor(a), "fro", (0, 1)).item(), np.linalg.norm(a))
    assert ag.norm(ag.tensor(a, dtype=ag.float32), dtype=ag.float64).dtype == np.float64
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor"):
        ag.norm(ag.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
        ag.norm(ag.ones(2, 2, 2), "fro", (0, 1, 2))
    with pytest.raises(RuntimeError, match="Order foo not supported"):
        ag.norm(ag.ones(2, 2), "foo")
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ag.norm(ag.zeros(0), np.inf)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0$"):  # an int dim is a 1-list, as torch
        ag.norm(ag.ones(2, 2), "nuc", 0)
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(Double\) should be convertible without narrowing"):
        ag.norm(ag.ones(2, dtype=ag.float64), dtype=ag.float32)
    x = _t([1.0, 2.0])
    assert ag.grad_sync(ag.norm(x, 0), [x], allow_unused=True) == (None,)  # no gradient, as torch


def test_norm_of_float16_accumulates_in_float32():
    """torch's values: the sum and the squares are float32's, rounded to float16 once."""
    tenth = ag.full((1000,), 0.1, dtype=ag.float16)
    assert ag.norm(tenth, 1).item() == 100.0 and ag.norm(tenth, 1).dtype == np.float16
    assert ag.norm(ag.full((2, 3), 300.0, dtype=ag.float16)).item() == 735.0  # 300 ** 2 is past float16's range
    assert ag.norm(ag.full((30000,), 300.0, dtype=ag.float16)).item() == 51968.0
    assert ag.linalg.vector_norm(tenth, 0.5).item() == np.inf  # past float16's range: inf, without a warning


async def test_inf_norm_gradient_counts_nan_as_the_extreme():
    """torch's rule: a NaN norm shares its gradient among its NaN elements, whose sgn is 0: zeros, not
    NaN spread over the row by 0 / 0."""
    for p in (np.inf, -np.inf):
        x = _t([[1.0, np.nan, 3.0, np.nan], [1.0, -3.0, 3.0, 0.0]])
        out = ag.norm(x, p, 1)
        assert np.isnan(out.tolist()[0])
        await out.sum().backward()
        want = [[0.0] * 4, [0.0, -0.5, 0.5, 0.0] if p > 0 else [0.0, 0.0, 0.0, 0.0]]
        np.testing.assert_array_equal(x.grad.numpy(), want)


def test_all_and_any_keep_uint8():
    x = ag.tensor([1, 2], dtype=ag.uint8)
    assert ag.all(x).dtype == np.uint8 and ag.any(x, 0).dtype == np.uint8
    assert ag.all(ag.tensor([1.5, 0.0])).dtype == np.bool_
    assert ag.all(ag.ones(2, 3), dim=(0, 1)).item() is True


def test_float16_reductions_accumulate_in_float32():
    x = ag.full((1000,), 0.1, dtype=ag.float16)
    assert x.sum().item() == 100.0 and x.nansum().item() == 100.0
    assert x.sum().dtype == np.float16
