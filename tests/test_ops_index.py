"""Indexing ops (aiograd/ops/indexing/index.py): __getitem__ (basic, advanced, masks, mixed),
gather, index_select, index_put, scatter/scatter_add, index_add, masked_fill,
take_along_dim, masked_select, nonzero; forward against numpy, gradients against
finite differences, repeated indices adding up, second derivatives."""

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


@st.composite
def basic_case(draw: st.DrawFn) -> tuple[tuple[int, ...], object]:
    shape = draw(shapes)
    idx = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return shape, idx


@st.composite
def advanced_case(draw: st.DrawFn) -> tuple[tuple[int, ...], object]:
    shape = draw(shapes)
    kind = draw(st.sampled_from(["int", "mask", "mixed", "list"]))
    if kind == "int":
        idx = draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5)))
    elif kind == "mask":
        k = draw(st.integers(1, len(shape)))
        idx = draw(hnp.arrays(np.bool_, shape[:k]))
    elif kind == "list":
        idx = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=6))
    else:
        arr = draw(hnp.arrays(np.int64, draw(st.integers(1, 4)), elements=st.integers(-shape[0], shape[0] - 1)))
        rest: list[object] = [arr]
        if len(shape) > 1:
            rest.append(draw(st.sampled_from([slice(None), slice(None, None, -1), 0, Ellipsis])))
        idx = tuple(rest)
    as_tensor = draw(st.booleans())
    if as_tensor and isinstance(idx, np.ndarray):
        idx = ag.tensor(idx)
    return shape, idx


def _np_index(idx: object) -> object:
    if isinstance(idx, ag.Tensor):
        return idx.numpy()
    if isinstance(idx, tuple):
        return tuple(_np_index(i) for i in idx)
    return idx


def reference_grad(shape: tuple[int, ...], idx: object, g: np.ndarray) -> np.ndarray:
    """The gradient of x[idx] with incoming g, by one unit of each input element (slow and obvious)."""
    out = np.zeros(shape)
    flat_ids = np.arange(int(np.prod(shape))).reshape(shape)[_np_index(idx)]
    for pos, gi in zip(np.ravel(flat_ids), np.ravel(g)):
        out.reshape(-1)[pos] += gi
    return out


# ----- getitem --------------------------------------------------------------------------------


@given(case=basic_case())
def test_basic_indexing_is_a_view_with_numpy_values_and_gradient(case: tuple[tuple[int, ...], object]) -> None:
    shape, idx = case
    a = rand(*shape)
    x = leaf(a)
    y = x[idx]
    np.testing.assert_array_equal(y.detach().numpy(), a[idx])
    assert y._version_counter is x._version_counter
    assert y._base is x
    g = rand(*y.shape, seed=1)
    (y * ag.tensor(g)).sum().backward_sync()
    np.testing.assert_allclose(x.grad.numpy(), reference_grad(shape, idx, g))


@given(case=advanced_case())
def test_advanced_indexing_copies_and_adds_repeated_indices(case: tuple[tuple[int, ...], object]) -> None:
    shape, idx = case
    a = rand(*shape)
    x = leaf(a)
    y = x[idx]
    np.testing.assert_array_equal(y.detach().numpy(), a[_np_index(idx)])
    assert y.grad_fn.name() == "IndexBackward0"
    assert y._version_counter is not x._version_counter
    g = rand(*y.shape, seed=1)
    (y * ag.tensor(g)).sum().backward_sync()
    np.testing.assert_allclose(x.grad.numpy(), reference_grad(shape, idx, g))


@ASYNCIO_ONLY
@given(case=st.one_of(basic_case(), advanced_case()))
async def test_getitem_gradcheck_and_gradgradcheck(case: tuple[tuple[int, ...], object]) -> None:
    shape, idx = case
    x = leaf(rand(*shape))
    assert await ag.gradcheck(lambda x: x[idx] * x[idx], (x,))
    assert await ag.gradgradcheck(lambda x: x[idx] ** 2, (x,))


def test_repeated_indices_add_up() -> None:
    x = leaf(np.arange(4.0))
    x[[0, 0, 0, 2, -1, 3]].sum().backward_sync()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 0, 1, 2])


def test_bool_tensor_mask_and_node_names() -> None:
    a = rand(3, 4)
    x = leaf(a)
    np.testing.assert_array_equal(x[x > 0].detach().numpy(), a[a > 0])
    assert x[1].grad_fn.name() == "SelectBackward0"
    assert x[1, 2].grad_fn.name() == "SelectBackward0"
    assert x[1:, ::2].grad_fn.name() == "SliceBackward0"
    assert x[ag.tensor([0, 2])].grad_fn.name() == "IndexBackward0"
    assert x[ag.tensor(1)].shape == (4,)  # a 0-d integer tensor indexes like an int
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        x[np.array([0.5])]
    with pytest.raises(IndexError):
        x[5]


def test_iteration_yields_rows() -> None:
    x = leaf(rand(3, 2))
    rows = list(x)
    assert len(rows) == 3 and rows[2].shape == (2,)
    ag.stack(rows[::-1]).sum().backward_sync()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 2)))


async def test_second_derivative_of_getitem_twice() -> None:
    x = leaf(np.array([1.0, 2.0, 3.0]))
    y = (x[[0, 0, 2]] ** 3).sum() + (x[1:] ** 2).sum()
    (g,) = await ag.grad(y, [x], create_graph=True)
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), [6 * xv[0] ** 2, 2 * xv[1], 3 * xv[2] ** 2 + 2 * xv[2]])
    (gg,) = await ag.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), [12 * xv[0], 2, 6 * xv[2] + 2])


# ----- gather / index_select / take_along_dim ----------------------------------------------------


@st.composite
def gather_case(draw: st.DrawFn) -> tuple[tuple[int, ...], int, np.ndarray]:
    shape = draw(shapes)
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    ishape = tuple(draw(st.integers(1, s)) if k != dim % len(shape) else draw(st.integers(1, 5))
                   for k, s in enumerate(shape))
    index = draw(hnp.arrays(np.int64, ishape, elements=st.integers(0, shape[dim] - 1)))
    return shape, dim, index


def gather_reference(a: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    d = dim % a.ndim
    out = np.empty(index.shape)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[d] = index[pos]
        out[pos] = a[tuple(src)]
    return out


@given(case=gather_case())
def test_gather_matches_reference_and_scatters_back(case: tuple[tuple[int, ...], int, np.ndarray]) -> None:
    shape, dim, index = case
    a = rand(*shape)
    x = leaf(a)
    y = ag.gather(x, dim, ag.tensor(index))
    np.testing.assert_array_equal(y.detach().numpy(), gather_reference(a, dim, index))
    assert y.grad_fn.name() == "GatherBackward0"
    y.sum().backward_sync()
    counts = np.zeros(shape)
    d = dim % len(shape)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[d] = index[pos]
        counts[tuple(src)] += 1
    np.testing.assert_array_equal(x.grad.numpy(), counts)


@ASYNCIO_ONLY
@given(case=gather_case())
async def test_gather_scatter_add_gradcheck_over_random_dims(case: tuple[tuple[int, ...], int, np.ndarray]) -> None:
    shape, dim, index = case
    x = leaf(rand(*shape))
    src = leaf(rand(*index.shape, seed=3))
    assert await ag.gradcheck(lambda x: x.gather(dim, index) ** 2, (x,))
    assert await ag.gradgradcheck(lambda x: x.gather(dim, index) ** 2, (x,))
    assert await ag.gradcheck(lambda x, s: ag.scatter_add(x, dim, index, s * s), (x, src))


async def test_index_select_index_add_take_along_dim() -> None:
    a = rand(3, 4)
    x = leaf(a)
    idx = ag.tensor([2, 0, 2])
    y = ag.index_select(x, 1, idx)
    np.testing.assert_array_equal(y.detach().numpy(), a[:, [2, 0, 2]])
    assert y.grad_fn.name() == "IndexSelectBackward0"
    assert await ag.gradcheck(lambda x: x.index_select(0, idx) ** 2, (x,))
    assert await ag.gradgradcheck(lambda x: x.index_select(1, idx) ** 2, (x,))
    src = leaf(rand(3, 3, seed=1))
    assert await ag.gradcheck(lambda x, s: ag.index_add(x, 1, idx, s, alpha=2.0), (x, src))
    ia = np.argsort(a, axis=1)
    np.testing.assert_array_equal(ag.take_along_dim(x, ag.tensor(ia), 1).detach().numpy(),
                                  np.take_along_axis(a, ia, 1))
    assert await ag.gradcheck(lambda x: ag.take_along_dim(x, ia[:, :1], 1), (x,))


async def test_scatter_and_index_put() -> None:
    a = rand(3, 4)
    x = leaf(a)
    index = np.array([[1, 0, 2, 0]])
    src = leaf(rand(2, 4, seed=2))
    y = ag.scatter(x, 0, index, src)
    expected = a.copy()
    expected[index[0], np.arange(4)] = src.detach().numpy()[0]
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    assert y.grad_fn.name() == "ScatterBackward0"
    assert await ag.gradcheck(lambda x, s: ag.scatter(x, 0, index, s), (x, src))
    assert await ag.gradcheck(lambda x: ag.scatter(x, 1, index.T[:1], value=2.0), (x,))
    v = leaf(rand(2, seed=4))
    assert await ag.gradcheck(lambda x, v: ag.index_put(x, (np.array([0, 2]), np.array([1, 1])), v), (x, v))
    assert await ag.gradcheck(
        lambda x, v: ag.index_put(x, (np.array([0, 0]), np.array([1, 1])), v, accumulate=True), (x, v)
    )
    assert await ag.gradgradcheck(lambda x, v: ag.index_put(x * x, (np.array([0, 2]), np.array([3, 3])), v * v), (x, v))


# ----- masked_fill / masked_select / nonzero --------------------------------------------------------


@st.composite
def mask_case(draw: st.DrawFn) -> tuple[tuple[int, ...], np.ndarray]:
    shape = draw(shapes)
    k = draw(st.integers(0, len(shape)))
    mshape = tuple(draw(st.sampled_from([1, s])) for s in shape[len(shape) - k:])
    return shape, draw(hnp.arrays(np.bool_, mshape))


# NOTE: async hypothesis tests take every input through @given (no st.data() draws
# inside the coroutine): an overrun draw inside it leaves a "Task exception was never
# retrieved" StopTest on the asyncio loop (anyio's plugin).
@ASYNCIO_ONLY
@given(case=mask_case())
async def test_masked_fill_broadcast_mask_and_tensor_value(case: tuple[tuple[int, ...], np.ndarray]) -> None:
    shape, mask = case
    a = rand(*shape)
    x = leaf(a)
    np.testing.assert_array_equal(x.masked_fill(mask, 7.0).detach().numpy(), np.where(mask, 7.0, a))
    assert x.masked_fill(ag.tensor(mask), 7.0).grad_fn.name() == "MaskedFillBackward0"
    v = leaf(np.array(0.5))
    assert await ag.gradcheck(lambda x, v: ag.masked_fill(x * x, mask, v) * x, (x, v))
    assert await ag.gradgradcheck(lambda x, v: ag.masked_fill(x * x, mask, v * v), (x, v))


def test_masked_fill_rejects_non_bool_mask_and_keeps_dtype() -> None:
    x = ag.zeros(3)
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(np.array([1, 0, 1]), 1.0)
    assert x.masked_fill(np.array([True, False, True]), ag.tensor(2.0, dtype=ag.float64)).dtype == ag.float32


async def test_masked_select_and_nonzero() -> None:
    a = np.array([[0.0, 1.5], [-2.0, 0.0]])
    x = leaf(a)
    mask = a != 0
    np.testing.assert_array_equal(ag.masked_select(x, ag.tensor(mask)).detach().numpy(), a[mask])
    assert await ag.gradcheck(lambda x: ag.masked_select(x, mask[0]) ** 2, (x,))
    nz = ag.nonzero(ag.tensor(a))
    assert nz.dtype == ag.int64 and nz.tolist() == [[0, 1], [1, 0]]
    rows, cols = ag.tensor(a).nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    assert nz.grad_fn is None and not nz.requires_grad


# ----- 0-d inputs are one element (as torch) ------------------------------------------------------


async def test_index_add_on_a_0d_tensor_adds_to_its_one_element() -> None:
    a = ag.tensor(1.0, dtype=ag.float64, requires_grad=True)
    s = ag.tensor(5.0, dtype=ag.float64, requires_grad=True)
    for index in (ag.tensor([0]), ag.tensor(0)):
        out = ag.index_add(a, 0, index, s)
        assert out.shape == () and out.item() == 6.0
    out = ag.index_add(a, -1, ag.tensor([0]), s, alpha=2)
    assert out.item() == 11.0 and out.grad_fn.name() == "IndexAddBackward0"
    await out.backward()
    assert a.grad.item() == 1.0 and s.grad.item() == 2.0
    b = ag.tensor(1.0)
    b.index_add_(0, ag.tensor([0]), ag.tensor(2.0))
    assert b.item() == 3.0
    assert ag.index_add(ag.zeros(3), 0, ag.tensor(1), ag.tensor([5.0])).tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.index_add(ag.tensor(1.0), 1, ag.tensor([0]), ag.tensor(5.0)), IndexError,
         r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"),
        (lambda: ag.index_add(ag.tensor(1.0), 0, ag.tensor([1]), ag.tensor(5.0)), IndexError,
         "index out of range in self"),
        (lambda: ag.index_add(ag.tensor(1.0), 0, ag.tensor([0, 0]), ag.tensor([1.0, 2.0])), RuntimeError,
         r"source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
         r"\[\] source.shape = \[2\]"),
        (lambda: ag.index_add(ag.zeros(3), 0, ag.tensor([0]), ag.tensor(5.0)), RuntimeError,
         r"Got self.shape = \[3\] source.shape = \[\]"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0, 1]), ag.ones(2, 1)), RuntimeError,
         r"Got self.shape = \[3, 2\] source.shape = \[2, 1\]"),
        (lambda: ag.index_add(ag.zeros(3), 0, ag.tensor([0, 1]), ag.ones(3)), RuntimeError,
         r"index_add_\(\): Number of indices \(2\) should be equal to source.size\(dim\): \(3\), for dim: 0"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([[0, 1]]), ag.ones(2, 2)), IndexError,
         r"index_add_\(\): Index is supposed to be a vector, but got dim: 2"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0, 5]), ag.ones(2, 2)), RuntimeError,
         "index 5 is out of bounds for dimension 0 with size 3"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0, -1]), ag.ones(2, 2)), RuntimeError,
         "index -1 is out of bounds for dimension 0 with size 3"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0.0, 1.0]), ag.ones(2, 2)), RuntimeError,
         r"index_add_\(\): Expected dtype int32/int64 for index but got: Float"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0, 1]), ag.ones(2, 2, dtype=ag.float64)), RuntimeError,
         r"index_add_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
        (lambda: ag.index_add(ag.zeros(3, 2), 0, ag.tensor([0, 1]), 5.0), TypeError,
         r"index_add\(\): argument 'source' \(position 4\) must be Tensor, not float"),
    ],
)
def test_index_add_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc, match=phrase):
        call()


async def test_masked_select_on_a_0d_tensor_treats_it_as_one_element() -> None:
    x = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    out = ag.masked_select(x, ag.tensor(True))
    assert out.shape == (1,) and out.tolist() == [3.0]
    assert out.grad_fn.name() == "MaskedSelectBackward0"
    await out.sum().backward()
    assert x.grad.shape == () and x.grad.item() == 1.0
    assert ag.masked_select(x, ag.tensor(False)).shape == (0,)
    assert ag.masked_select(ag.tensor([3.0, 4.0]), ag.tensor(True)).tolist() == [3.0, 4.0]
    assert ag.masked_select(ag.tensor(3.0), ag.tensor([True, False])).tolist() == [3.0]
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        ag.masked_select(x, ag.tensor(1))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        ag.masked_select(ag.ones(2, 3), ag.tensor([True, False]))


async def test_scatter_and_scatter_add_on_a_0d_tensor_treat_it_as_one_element() -> None:
    x = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    s = ag.tensor([2.0, 4.0], dtype=ag.float64, requires_grad=True)
    out = ag.scatter_add(x, 0, ag.tensor([0, 0]), s)
    assert out.shape == () and out.item() == 9.0
    await out.backward()
    assert x.grad.item() == 1.0 and s.grad.tolist() == [1.0, 1.0]
    assert ag.scatter(ag.tensor(3.0), 0, ag.tensor([0, 0]), ag.tensor([2.0, 4.0])).item() == 4.0
    assert ag.scatter(ag.tensor(3.0), 0, ag.tensor(0), value=2.0).item() == 2.0
    assert ag.tensor(3.0).scatter_add(0, ag.tensor([0]), ag.tensor([2.0])).item() == 5.0
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as self tensor"):
        ag.scatter_add(ag.tensor(3.0), 0, ag.tensor([[0]]), ag.tensor([[2.0]]))


def test_index_select_and_take_along_dim_on_mismatched_ranks_say_so() -> None:
    with pytest.raises(RuntimeError, match=r"index_select\(\): Index to scalar can have only 1 value, got 2 value\(s\)"):
        ag.tensor(3.0).index_select(0, ag.tensor([0, 0]))
    with pytest.raises(RuntimeError, match=r"input and indices should have the same number of dimensions, but got 0 "
                       "dimensions for input, and 1 dimensions for indices"):
        ag.tensor(3.0).take_along_dim(ag.tensor([0]), 0)
    assert ag.ones(2, 3).take_along_dim(ag.tensor([0]), None).tolist() == [1.0]


# ----- issue 13: take, take_along_dim's broadcasting, narrow_copy -------------------------------


def test_take_reads_the_flattened_input_with_negative_indices() -> None:
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, -1], [5, -12]])
    got = ag.tensor(a).take(ag.tensor(idx))
    assert got.shape == (2, 2) and got.tolist() == np.take(a, idx).tolist()
    assert np.take(ag.tensor(a), [1, 2]).tolist() == [1.0, 2.0] and np.take(ag.tensor(a), [0, 2], axis=1).shape == (3, 2)
    assert ag.tensor(5.0).take(ag.tensor([0, -1])).tolist() == [5.0, 5.0]


def test_take_along_dim_broadcasts_and_wraps_negative_indices_as_numpy() -> None:
    a = np.arange(3.0).reshape(3, 1)
    idx = np.array([[0, 1, 2, -1]])
    np.testing.assert_array_equal(ag.tensor(a).take_along_dim(ag.tensor(idx), 0).numpy(),
                                  np.take_along_axis(np.broadcast_to(a, (3, 4)), idx % 3, 0))
    assert ag.take_along_dim(ag.tensor(a), ag.tensor([2, 0])).tolist() == [2.0, 0.0]  # flattened without dim
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        ag.tensor(a).take_along_dim(ag.tensor([[3]]), 0)


def test_narrow_copy_is_not_a_view() -> None:
    x = ag.arange(12.0).reshape(3, 4)
    y = x.narrow_copy(1, 1, 2)
    assert y.tolist() == x.narrow(1, 1, 2).tolist() and not np.shares_memory(y.numpy(), x.numpy())


def test_gather_with_an_empty_index_of_another_rank_reads_nothing_as_torch() -> None:
    x = ag.arange(5.0).requires_grad_()
    y = x.gather(0, ag.zeros(2, 0, dtype=ag.int64))
    assert y.shape == (2, 0) and y.grad_fn.name() == "GatherBackward0"
