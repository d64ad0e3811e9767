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


# ----- view: torch's stride rule (NOTE [View compatibility]) ---------------------------------

_VIEW_MSG = (
    r"view size is not compatible with input tensor's size and stride \(at least one dimension spans across "
    r"two contiguous subspaces\)\. Use \.reshape\(\.\.\.\) instead\."
)

# (make the input from a module m, new shape, whether torch 2.13 allows the view)
VIEW_CASES = [
    (lambda m: m.arange(6).reshape(2, 3).T, (6,), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (3, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (3, 1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (1, 3, 2, 1), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (6, 1), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (2, 3), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (-1,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 8), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (6, 4), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 2, 2, 2), True),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 2, 4, 1), True),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (24,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (2, 6), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (12,), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (2, 3, 2, 1), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (4, 3), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (2, 8), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (16,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (4, 4), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (2, 2, 2, 2), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (12,), False),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (3, 2, 2), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (3, 4, 1), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (1, 3, 4), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (4, 3), False),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (2,), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (2, 1, 1), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (2, 1), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (2,), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (4,), False),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (2, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (2, 1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (3, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (6,), False),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (3, 1, 1, 2), True),
    (lambda m: m.zeros(0, 3).T, (0,), True),
    (lambda m: m.zeros(0, 3).T, (-1,), True),
    (lambda m: m.zeros(0, 3).T, (3, 0, 1), True),
    (lambda m: m.zeros(0, 3).T, (0, 5), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (3, 0), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (0,), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (6, 0), True),
    (lambda m: m.tensor(5.0), (1, 1), True),
    (lambda m: m.tensor(5.0), (), True),
    (lambda m: m.tensor(5.0), (1,), True),
    (lambda m: m.tensor(5.0), (-1,), True),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (2, 4), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (4, 2), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (2, 2, 2), True),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (8,), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (4, 2), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (2, 4), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (8,), False),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (4,), False),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (2, 2), True),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (2, 1, 2), True),
]


@pytest.mark.parametrize("make, shape, allowed", VIEW_CASES)
def test_view_is_allowed_exactly_where_torch_allows_it(make, shape, allowed) -> None:
    x = make(ag)
    expected = np.reshape(np.array(x.numpy()), shape)
    if not allowed:
        with pytest.raises(RuntimeError, match=_VIEW_MSG):
            x.view(shape)
        assert x.reshape(shape).tolist() == expected.tolist()  # reshape copies instead
        return
    v = x.view(*shape) if shape else x.view(())
    assert v.shape == expected.shape and v.tolist() == expected.tolist()
    assert v.numel() == 0 or np.shares_memory(v.numpy(), x.numpy())
    assert v._version_counter is x._version_counter


def test_writes_through_a_view_reach_the_base() -> None:
    x = ag.arange(24.0).reshape(2, 3, 4)[:, :, ::2]
    v = x.view(12)
    v.mul_(-1)
    assert (x.numpy() <= 0).all() and x._version == v._version == 1
    y = ag.arange(6.0).reshape(2, 3).T
    y.view(3, 1, 2)[1, 0, 1] = 100.0
    assert y[1, 1].item() == 100.0


def test_transpose_then_view_raises_and_contiguous_view_works() -> None:
    x = ag.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=_VIEW_MSG):
        x.T.view(6)
    with pytest.raises(RuntimeError, match=_VIEW_MSG):
        x.T.view_as(ag.zeros(6))
    c = x.T.contiguous()
    assert c.is_contiguous() and not x.T.is_contiguous()
    assert c.view(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert x.contiguous() is x


async def test_contiguous_records_clone_backward_and_reshape_names_follow_torch() -> None:
    w = ag.arange(6.0).reshape(2, 3).requires_grad_()
    c = w.T.contiguous()
    assert c.grad_fn.name() == "CloneBackward0"
    assert w.T.reshape(6).grad_fn.name() == "UnsafeViewBackward0"  # a copy
    assert w.T.reshape(3, 1, 2).grad_fn.name() == "ReshapeAliasBackward0"  # a strided view
    assert w.reshape(3, 2).grad_fn.name() == "ViewBackward0"
    assert w.T.view(3, 1, 2).grad_fn.name() == "ViewBackward0"
    await (c * ag.arange(6.0).reshape(3, 2)).sum().backward()
    assert w.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4),
    data=st.data(),
)
def test_view_agrees_with_numpys_no_copy_reshape(shape: tuple[int, ...], data: st.DataObject) -> None:
    """A view exists exactly when numpy can reshape without a copy (two implementations of one rule)."""
    base = np.arange(int(np.prod(shape)) * 2, dtype=np.float64)[::2].reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    arr = base.transpose(perm)
    x = ag.from_numpy(arr)
    n = arr.size
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=3))
    if n == 0:
        new = tuple(sizes) + (0,)
    else:
        new = tuple(sizes) + (-1,) if n % int(np.prod(sizes)) == 0 else (n,)
    numpy_views = np.shares_memory(arr.reshape(new), arr) or n == 0
    try:
        v = x.view(new)
    except RuntimeError as e:
        assert "view size is not compatible" in str(e)
        assert not numpy_views
    else:
        assert numpy_views
        assert v.tolist() == arr.reshape(new).tolist()


def test_view_and_reshape_shape_errors_follow_torch() -> None:
    x = ag.zeros(2, 3)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[4, -1\]' is invalid for input of size 6"):
        x.view(4, -1)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape \[-2, 3\]"):
        x.reshape(-2, 3)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape \[-1, 0\] because the "
                       "unspecified dimension size -1 can be any value and is ambiguous"):
        ag.zeros(0, 3).view(-1, 0)
    assert ag.zeros(0, 3).view(3, -1).shape == (3, 0)


def test_split_size_zero_follows_torch() -> None:
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0, but got dimension size of 6"):
        ag.arange(6).split(0)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative, but got split_size=-1"):
        ag.arange(6).split(-1)
    assert [t.shape for t in ag.arange(0).split(0)] == [(0,)]
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes have only non-negative entries, "
                       r"but got split_sizes=\[2, -1, 5\]"):
        ag.arange(6).split([2, -1, 5])
