"""Joining and splitting (aiograd/ops/movement/join.py): cat/stack/split/chunk/unbind forward against numpy,
gradients against finite differences, views and versions; the numpy-style stacks and splits,
tensor_split, broadcast_tensors and meshgrid against numpy and torch's rules (their gradients are
in tests/op_rows.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiograd as ag

ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _arr(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 1)], [(), ()], [(2, 3, 2), (2, 3, 1)], [(2, 1), (2,)]])
def test_stacks_match_numpy(name: str, shapes: list[tuple[int, ...]]) -> None:
    arrays = [_arr(*s, seed=i) for i, s in enumerate(shapes)]
    try:
        want = getattr(np, name)(arrays)
    except ValueError:
        with pytest.raises(RuntimeError):
            getattr(ag, name)([ag.tensor(a) for a in arrays])
        return
    got = getattr(ag, name)([ag.tensor(a) for a in arrays])
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(getattr(np, name)([ag.tensor(a) for a in arrays]).numpy(), want)  # numpy dispatch


def test_atleast_nd_follows_torch_one_in_one_out() -> None:
    s, v, m = ag.tensor(1.0), ag.zeros(3), ag.zeros(2, 3)
    assert ag.atleast_1d(s).shape == (1,) and ag.atleast_2d(v).shape == (1, 3) and ag.atleast_3d(m).shape == (2, 3, 1)
    assert ag.atleast_3d(v).shape == (1, 3, 1) and ag.atleast_2d(m) is m
    both = ag.atleast_2d(s, v)
    assert isinstance(both, tuple) and [t.shape for t in both] == [(1, 1), (1, 3)]
    assert [t.shape for t in ag.atleast_1d([s, v])] == [(1,), (3,)] and ag.atleast_1d() == ()
    assert [a.shape for a in np.atleast_2d(s, v)] == [(1, 1), (1, 3)]


@given(n=st.integers(0, 7), sections=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_tensor_split_sections_match_numpy_array_split(n: int, sections: int, seed: int) -> None:
    a = _arr(2, n, seed=seed)
    pieces = ag.tensor(a).tensor_split(sections, 1)
    want = np.array_split(a, sections, 1)
    assert len(pieces) == len(want)
    for p, w in zip(pieces, want):
        np.testing.assert_array_equal(p.numpy(), w)


@given(indices=st.lists(st.integers(-7, 7), max_size=4), seed=st.integers(0, 2**16))
def test_tensor_split_indices_slice_as_python_does(indices: list[int], seed: int) -> None:
    a = _arr(5, 2, seed=seed)
    pieces = ag.tensor_split(ag.tensor(a), indices)
    bounds = list(zip([0, *indices], [*indices, None]))
    assert [p.tolist() for p in pieces] == [a[s:e].tolist() for s, e in bounds]
    tensor_form = ag.tensor_split(ag.tensor(a), ag.tensor(indices, dtype=ag.int64))
    assert [p.shape for p in tensor_form] == [p.shape for p in pieces]


def test_tensor_split_forms_and_errors() -> None:
    x = ag.arange(12.0).reshape(3, 4)
    assert [p.shape for p in x.tensor_split(ag.tensor(2), 1)] == [(3, 2), (3, 2)]
    assert [p.shape for p in ag.tensor_split(x, sections=2)] == [(2, 4), (1, 4)]
    assert [p.shape for p in ag.tensor_split(x, indices=[1])] == [(1, 4), (2, 4)]
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        x.tensor_split(0)
    with pytest.raises(RuntimeError, match="tensor_split expected at least a 1-dimensional tensor, but got a tensor"):
        ag.tensor(1.0).tensor_split(2)
    with pytest.raises(RuntimeError, match="to have dtype of long, but got Float"):
        x.tensor_split(ag.tensor([1.0]))
    with pytest.raises(RuntimeError, match="to be a zero-dimensional or one-dimensional tensor, but got a tensor with 2"):
        x.tensor_split(ag.tensor([[1]]))
    assert [p.tolist() for p in np.array_split(x, 2)] == [p.tolist() for p in x.tensor_split(2)]
    with pytest.raises(ValueError, match="equal division"):
        np.split(x, 2)


def test_hsplit_vsplit_dsplit_follow_torch() -> None:
    x = ag.arange(24.0).reshape(2, 3, 4)
    assert [p.shape for p in x.hsplit(3)] == [(2, 1, 4)] * 3
    assert [p.shape for p in x.vsplit([1])] == [(1, 3, 4), (1, 3, 4)]
    assert [p.shape for p in x.dsplit(2)] == [(2, 3, 2)] * 2
    assert [p.shape for p in ag.arange(4.0).hsplit(2)] == [(2,), (2,)]  # 1-d: along dim 0
    with pytest.raises(RuntimeError, match="torch.hsplit attempted to split along dimension 1, but the size of the "
                                           "dimension 3 is not divisible by the split_size 2!"):
        x.hsplit(2)
    with pytest.raises(RuntimeError, match="torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                                           "with 2 dimensions!"):
        ag.zeros(2, 2).dsplit(1)
    for p, w in zip(np.hsplit(x, 3), np.hsplit(x.numpy(), 3)):
        np.testing.assert_array_equal(p.numpy(), w)


def test_splits_are_views_with_one_slice_node_each() -> None:
    w = ag.zeros(4, 2, requires_grad=True)
    pieces = (w * 1).tensor_split([1, 3])
    assert [p.grad_fn.name() for p in pieces] == ["SliceBackward0"] * 3
    assert len({id(p.grad_fn) for p in pieces}) == 3


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing: str) -> None:
    a, b, c = _arr(3), _arr(2, seed=1), _arr(4, seed=2)
    got = ag.meshgrid(ag.tensor(a), ag.tensor(b), ag.tensor(c), indexing=indexing)
    for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
        np.testing.assert_array_equal(g.numpy(), w)
        assert g._data.base is not None  # an expanded view, as torch's
    for g, w in zip(np.meshgrid(ag.tensor(a), ag.tensor(b)), np.meshgrid(a, b)):  # numpy dispatch, "xy"
        np.testing.assert_array_equal(g.numpy(), w)


def test_meshgrid_without_indexing_warns_as_torch_and_uses_ij() -> None:
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        x, y = ag.meshgrid(ag.zeros(3), ag.zeros(2))
    assert x.shape == (3, 2)
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: foo'):
        ag.meshgrid(ag.zeros(3), indexing="foo")
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same dtype"):
        ag.meshgrid(ag.zeros(3), ag.arange(2), indexing="ij")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor in the tensor list"):
        ag.meshgrid(ag.zeros(2, 2), indexing="ij")


def test_broadcast_tensors_expands_and_returns_tensors_already_of_the_shape() -> None:
    a, b = ag.zeros(3), ag.ones(2, 1)
    x, y = ag.broadcast_tensors(a, b)
    assert x.shape == y.shape == (2, 3) and x._data.base is not None
    same = ag.zeros(2, 3)
    assert ag.broadcast_tensors(same, a)[0] is same
    assert [t.shape for t in np.broadcast_arrays(a, b)] == [(2, 3), (2, 3)]
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ag.broadcast_tensors(ag.zeros(3), ag.zeros(2))


def test_empty_lists_are_refused_as_torch() -> None:
    with pytest.raises(ValueError, match=r"torch.cat\(\): expected a non-empty list of Tensors"):
        ag.cat([])
    for name in ("stack", "hstack", "vstack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match=f"{name} expects a non-empty TensorList"):
            getattr(ag, name)([])


# ----- cat / stack / split / chunk / unbind ---------------------------------------------------


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


def test_split_size_zero_follows_torch() -> None:
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0, but got dimension size of 6"):
        ag.arange(6).split(0)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative, but got split_size=-1"):
        ag.arange(6).split(-1)
    assert [t.shape for t in ag.arange(0).split(0)] == [(0,)]
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes have only non-negative entries, "
                       r"but got split_sizes=\[2, -1, 5\]"):
        ag.arange(6).split([2, -1, 5])
