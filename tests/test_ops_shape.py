"""Shape ops (aiograd/ops/shape.py): cat/stack/split/chunk/unbind/flip/repeat/tile
forward against numpy, gradients against finite differences, views and versions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiograd as ag

ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


# ----- forward against numpy ------------------------------------------------------------


@given(shape=shapes, data=st.data())
def test_cat_matches_numpy_on_every_dim(shape: tuple[int, ...], data: st.DataObject) -> None:
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, 3))
    arrs = []
    for i in range(k):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        arrs.append(rand(*s, seed=i))
    out = ag.cat([ag.tensor(a) for a in arrs], dim)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(arrs, dim))
    assert ag.concat is ag.cat


@given(shape=shapes, data=st.data())
def test_stack_matches_numpy_on_every_dim(shape: tuple[int, ...], data: st.DataObject) -> None:
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    arrs = [rand(*shape, seed=i) for i in range(3)]
    np.testing.assert_array_equal(ag.stack([ag.tensor(a) for a in arrs], dim).numpy(), np.stack(arrs, dim))


@given(n=st.integers(0, 9), size=st.integers(1, 4), rest=st.integers(1, 3))
def test_split_by_size_matches_torch_rule_last_piece_smaller(n: int, size: int, rest: int) -> None:
    a = rand(rest, n)
    pieces = ag.tensor(a).split(size, dim=1)
    expected = [size] * (n // size) + ([n % size] if n % size else []) or [0]
    assert [p.shape[1] for p in pieces] == expected
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in pieces], 1), a)


def test_split_with_sizes_chunk_unbind_forward() -> None:
    a = rand(2, 7)
    x = ag.tensor(a)
    assert [p.shape for p in ag.split(x, [2, 0, 5], 1)] == [(2, 2), (2, 0), (2, 5)]
    assert [p.shape[1] for p in x.chunk(3, 1)] == [3, 3, 1]
    assert [p.shape[1] for p in x.chunk(7, 1)] == [1] * 7
    assert [p.shape for p in x.unbind(1)] == [(2,)] * 7
    np.testing.assert_array_equal(x.unbind(0)[1].numpy(), a[1])
    with pytest.raises(RuntimeError, match="sum exactly to 7"):
        ag.split(x, [3, 3], 1)


def test_flip_repeat_tile_forward() -> None:
    a = rand(2, 3)
    x = ag.tensor(a)
    np.testing.assert_array_equal(x.flip(1).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(ag.flip(x, (0, 1)).numpy(), a[::-1, ::-1])
    np.testing.assert_array_equal(x.repeat(2, 1, 3).numpy(), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(x.tile((2,)).numpy(), np.tile(a, 2))
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.repeat(2)


def test_cat_and_stack_errors_state_the_rule() -> None:
    x, y = ag.zeros(2, 3), ag.zeros(2, 4)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ag.cat([x, y], 0)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ag.stack([x, y])
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ag.cat([ag.tensor(1.0)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.cat([x, x], 2)


def test_numpy_concatenate_and_stack_dispatch_to_aiograd() -> None:
    x = leaf(rand(2))
    assert np.concatenate([x, x]).grad_fn.name() == "CatBackward0"
    assert np.stack([x, x], axis=1).grad_fn.name() == "StackBackward0"


# ----- views, versions, node names -------------------------------------------------------


def test_split_pieces_are_views_sharing_the_version_counter() -> None:
    x = ag.tensor(rand(6))
    a, b = x.split(3)
    assert a._version_counter is x._version_counter is b._version_counter
    with ag.no_grad():
        a.add_(1)
    assert x._version == 1
    np.testing.assert_array_equal(x.numpy()[:3], a.numpy())


def test_node_names_follow_torch() -> None:
    x = leaf(rand(4, 2))
    assert ag.cat([x, x]).grad_fn.name() == "CatBackward0"
    assert ag.stack([x, x]).grad_fn.name() == "StackBackward0"
    assert x.split(2)[0].grad_fn.name() == "SplitBackward0"
    assert x.split([1, 3])[0].grad_fn.name() == "SplitWithSizesBackward0"
    assert x.chunk(2)[1].grad_fn.name() == "SplitBackward0"
    assert x.unbind()[0].grad_fn.name() == "UnbindBackward0"
    pieces = x.split(2)
    assert pieces[0].grad_fn is pieces[1].grad_fn and pieces[1].output_nr == 1


def test_unused_split_outputs_get_zero_gradient() -> None:
    x = leaf(rand(5, 2))
    a, b, c = x.split(2)
    (b * 3).sum().backward_sync()
    expected = np.zeros((5, 2))
    expected[2:4] = 3
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_cat_gradient_skips_inputs_that_need_none() -> None:
    x = leaf(rand(2, 2))
    c = ag.tensor(rand(3, 2))
    out = ag.cat([c, x, c])
    assert out.grad_fn.next_functions[0] == (None, 0)
    (out * out).sum().backward_sync()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


# ----- gradients against finite differences ------------------------------------------------


@st.composite
def cat_case(draw: st.DrawFn) -> tuple[tuple[int, ...], int, int, int]:
    shape = draw(shapes)
    return (shape, draw(st.integers(-len(shape), len(shape) - 1)), draw(st.integers(1, 2)),
            draw(st.integers(-len(shape) - 1, len(shape))))


@st.composite
def split_case(draw: st.DrawFn) -> tuple[tuple[int, ...], int, int, set[int]]:
    shape = draw(shapes)
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, dim, draw(st.integers(1, shape[dim])), draw(st.sets(st.integers(0, shape[dim]), min_size=1))


# NOTE: async hypothesis tests take every input through @given (no st.data() draws
# inside the coroutine): an overrun draw inside it leaves a "Task exception was never
# retrieved" StopTest on the asyncio loop (anyio's plugin).
@ASYNCIO_ONLY
@given(case=cat_case())
async def test_cat_stack_gradcheck_over_dims(case: tuple[tuple[int, ...], int, int, int]) -> None:
    shape, dim, extra, sdim = case
    s2 = list(shape)
    s2[dim] = extra
    a, b = leaf(rand(*shape)), leaf(rand(*s2, seed=1))
    assert await ag.gradcheck(lambda a, b: ag.cat([a, b * b, a], dim), (a, b))
    c = leaf(rand(*shape, seed=2))
    assert await ag.gradcheck(lambda a, c: ag.stack([a, c * a], sdim), (a, c))


@ASYNCIO_ONLY
@given(case=split_case())
async def test_split_chunk_unbind_gradcheck_with_unused_pieces(case: tuple[tuple[int, ...], int, int, set[int]]) -> None:
    shape, dim, size, used = case
    x = leaf(rand(*shape))

    def pick(pieces: tuple[ag.Tensor, ...]) -> list[ag.Tensor]:
        return [p * (i + 1) for i, p in enumerate(pieces) if i in used] or [pieces[0]]

    assert await ag.gradcheck(lambda x: tuple(pick(x.split(size, dim))), (x,))
    assert await ag.gradcheck(lambda x: tuple(pick(x.chunk(size, dim))), (x,))
    assert await ag.gradcheck(lambda x: tuple(pick(x.unbind(dim))), (x,))


async def test_flip_repeat_tile_gradcheck() -> None:
    x = leaf(rand(2, 3))
    assert await ag.gradcheck(lambda x: x.flip(1) * x, (x,))
    assert await ag.gradcheck(lambda x: x.repeat(2, 1, 2), (x,))
    assert await ag.gradcheck(lambda x: ag.tile(x, (3,)), (x,))


async def test_second_derivatives_of_cat_stack_split() -> None:
    a, b = leaf(rand(2, 3)), leaf(rand(1, 3, seed=1))
    assert await ag.gradgradcheck(lambda a, b: ag.cat([a * a, b * a[:1]], 0), (a, b))
    assert await ag.gradgradcheck(lambda a: ag.stack([a * a, a], 1), (a,))
    assert await ag.gradgradcheck(lambda a: a.split([1, 2], 1)[1] ** 2, (a,))
    assert await ag.gradgradcheck(lambda a: a.unbind(1)[2] ** 3, (a,))


async def test_grad_of_grad_through_cat_twice() -> None:
    x = leaf(np.array([1.0, 2.0]))
    y = (ag.cat([x, x * x]) ** 2).sum()  # x^2 + x^4
    (g,) = await ag.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * x.detach().numpy() + 4 * x.detach().numpy() ** 3)
    (gg,) = await ag.grad(g.sum(), [x], create_graph=True)
    np.testing.assert_allclose(gg.detach().numpy(), 2 + 12 * x.detach().numpy() ** 2)
