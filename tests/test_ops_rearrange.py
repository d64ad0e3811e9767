"""Copies that move or repeat elements (aiograd/ops/movement/rearrange.py): roll, rot90, flips,
repeat_interleave, diff against numpy and torch's rules; gradients are in tests/op_rows.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiograd as ag
from helpers import check_grads, t64

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)


@given(shape=shapes, data=st.data())
def test_roll_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a = np.arange(float(np.prod(shape))).reshape(shape)
    dims = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    shifts = data.draw(st.lists(st.integers(-6, 6), min_size=len(dims), max_size=len(dims)))
    np.testing.assert_array_equal(ag.tensor(a).roll(shifts, dims).numpy(), np.roll(a, shifts, dims))
    np.testing.assert_array_equal(ag.roll(ag.tensor(a), shifts[0]).numpy(), np.roll(a, shifts[0]))
    np.testing.assert_array_equal(np.roll(ag.tensor(a), shifts, dims).numpy(), np.roll(a, shifts, dims))


@given(k=st.integers(-5, 5), dims=st.sampled_from([(0, 1), (1, 0), (2, 0), (-1, 1)]))
def test_rot90_matches_numpy(k: int, dims: tuple[int, int]) -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ag.tensor(a).rot90(k, dims).numpy(), np.rot90(a, k, dims))
    np.testing.assert_array_equal(np.rot90(ag.tensor(a), k, dims).numpy(), np.rot90(a, k, dims))


@given(shape=shapes, data=st.data())
def test_repeat_interleave_matches_numpy_repeat(shape: tuple[int, ...], data: st.DataObject) -> None:
    a = np.arange(float(np.prod(shape))).reshape(shape)
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    r = data.draw(st.integers(0, 3))
    np.testing.assert_array_equal(ag.tensor(a).repeat_interleave(r, d).numpy(), np.repeat(a, r, d))
    counts = data.draw(st.lists(st.integers(0, 3), min_size=shape[d], max_size=shape[d]))
    got = ag.tensor(a).repeat_interleave(ag.tensor(counts, dtype=ag.int64), dim=d)
    np.testing.assert_array_equal(got.numpy(), np.repeat(a, counts, d))
    np.testing.assert_array_equal(np.repeat(ag.tensor(a), r).numpy(), np.repeat(a, r))


def test_repeat_interleave_forms_and_node_names() -> None:
    assert ag.repeat_interleave(ag.tensor([1, 0, 2])).tolist() == [0, 2, 2]
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.repeat_interleave(2).grad_fn.name() == "ViewBackward0"  # an expanded copy, viewed (as torch)
    assert x.repeat_interleave(ag.tensor(2), dim=0).grad_fn.name() == "IndexSelectBackward0"
    assert x.repeat_interleave(ag.tensor([2]), dim=1).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
    assert x.repeat_interleave(2, 0, output_size=4).shape == (4, 2)
    with pytest.raises(RuntimeError, match="repeat_interleave: Invalid output_size, expected 4 but got 3"):
        x.repeat_interleave(2, 0, output_size=3)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda x: x.roll((1, 2), 0), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
        (lambda x: x.roll((1, 2)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:0"),
        (lambda x: ag.tensor(1.0).roll(1, 0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
        (lambda x: x.rot90(1, (0, 0)), RuntimeError, "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
        (lambda x: x[0].rot90(), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
        (lambda x: x.rot90(1, (0, 1, 2)), RuntimeError, "expected total rotation dims == 2, but got dims = 3"),
        (lambda x: x.flip((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
        (lambda x: x[0].fliplr(), RuntimeError, "Input must be >= 2-d."),
        (lambda x: ag.tensor(1.0).flipud(), RuntimeError, "Input must be >= 1-d."),
        (lambda x: x.repeat_interleave(-1), RuntimeError, "Repeats must be non-negative"),
        (lambda x: x.repeat_interleave(ag.tensor([1, -1, 1]), 0), RuntimeError, "repeats can not be negative"),
        (lambda x: x.repeat_interleave(ag.tensor([1, 2]), 0), RuntimeError,
         "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(0) = 3"),
        (lambda x: x.repeat_interleave(ag.tensor([1.0, 2.0, 1.0]), 0), NotImplementedError,
         "\"repeat_interleave_cpu\" not implemented for 'Float'"),
        (lambda x: x.repeat(-1, 1), RuntimeError, "Trying to create tensor with negative dimension -3: [-3, 4]"),
        (lambda x: ag.tensor(1.0).diff(), RuntimeError, "diff expects input to be at least one-dimensional"),
        (lambda x: x.diff(-1), RuntimeError, "order must be non-negative but got -1"),
        (lambda x: x.diff(prepend=x[0]), RuntimeError, "diff expects prepend or append to be the same dimension as input"),
        (lambda x: x.diff(dim=0, prepend=x[:, :2]), RuntimeError,
         "diff expects the shape of tensor to prepend or append to match that of input except along the differencing "
         "dimension; input.size(1) = 4, but got tensor.size(1) = 2"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call(ag.zeros(3, 4))
    assert phrase in str(info.value)


@given(n=st.integers(0, 5), data=st.data())
def test_diff_matches_numpy(n: int, data: st.DataObject) -> None:
    a = np.random.default_rng(n).standard_normal((3, 4))
    d = data.draw(st.integers(-2, 1))
    np.testing.assert_allclose(ag.tensor(a).diff(n, d).numpy(), np.diff(a, n, d))
    pre, app = a[:1] if d in (0, -2) else a[:, :1], a[:2] if d in (0, -2) else a[:, :2]
    got = ag.diff(ag.tensor(a), n, d, ag.tensor(pre), ag.tensor(app))
    np.testing.assert_allclose(got.numpy(), np.diff(a, n, d, prepend=pre, append=app))
    np.testing.assert_allclose(np.diff(ag.tensor(a), n, d, prepend=0.5).numpy(), np.diff(a, n, d, prepend=0.5))


def test_diff_of_bool_and_int_as_torch() -> None:
    assert ag.tensor([True, True, False]).diff().tolist() == [False, True]  # exclusive or
    d = ag.arange(5).diff()
    assert d.dtype == ag.int64 and d.tolist() == [1, 1, 1, 1]


def test_flips_match_numpy_and_second_derivatives() -> None:
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.fliplr(ag.tensor(a)).numpy(), np.fliplr(a))
    np.testing.assert_array_equal(np.flipud(ag.tensor(a)).numpy(), np.flipud(a))
    check_grads(lambda x: (x.roll(1, 0).rot90() * x.T).fliplr(), [t64(a)])


def test_flip_repeat_tile_forward() -> None:
    a = np.random.default_rng(0).standard_normal((2, 3))
    x = ag.tensor(a)
    np.testing.assert_array_equal(x.flip(1).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(ag.flip(x, (0, 1)).numpy(), a[::-1, ::-1])
    np.testing.assert_array_equal(x.repeat(2, 1, 3).numpy(), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(x.tile((2,)).numpy(), np.tile(a, 2))
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.repeat(2)


async def test_flip_repeat_tile_gradcheck() -> None:
    x = t64(np.random.default_rng(0).standard_normal((2, 3)))
    assert await ag.gradcheck(lambda x: x.flip(1) * x, (x,))
    assert await ag.gradcheck(lambda x: x.repeat(2, 1, 2), (x,))
    assert await ag.gradcheck(lambda x: ag.tile(x, (3,)), (x,))
