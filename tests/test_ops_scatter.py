"""Indexed writes (aiograd/ops/indexing/scatter.py): scatter_reduce against a loop reference and against
gradients computed with torch (hard-coded: ties, zeros, include_self), scatter's legacy reduce,
index_copy, index_fill, masked_scatter, the in-place twins' node names, torch's errors; per-op
gradchecks are in tests/op_rows.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import aiograd as ag

_REDUCE = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}


def _scatter_reduce_ref(x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, reduce: str,
                        include_self: bool) -> np.ndarray:
    """torch's scatter_reduce, one element at a time."""
    out = x.astype(np.float64).copy()
    hits: dict[tuple[int, ...], list[float]] = {}
    for pos in np.ndindex(*index.shape):
        dest = list(pos)
        dest[dim] = int(index[pos])
        hits.setdefault(tuple(dest), []).append(float(src[pos]))
    for dest, values in hits.items():
        vals = ([float(x[dest])] if include_self else []) + values
        acc = vals[0]
        for v in vals[1:]:
            acc = float(_REDUCE[reduce](acc, v))
        out[dest] = acc / len(vals) if reduce == "mean" else acc
    return out


@given(reduce=st.sampled_from(list(_REDUCE)), include_self=st.booleans(), dim=st.integers(0, 1), seed=st.integers(0, 999))
def test_scatter_reduce_matches_the_loop_reference(reduce: str, include_self: bool, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, src = rng.standard_normal((3, 4)), rng.standard_normal((2, 3))
    index = rng.integers(0, x.shape[dim], (2, 3))
    got = ag.tensor(x).scatter_reduce(dim, ag.tensor(index), ag.tensor(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), _scatter_reduce_ref(x, dim, index, src, reduce, include_self), rtol=1e-12)


def test_scatter_reduce_integer_mean_rounds_down_as_torch() -> None:
    x = ag.tensor([-1, 2, 3])
    assert x.scatter_reduce(0, ag.tensor([0, 0]), ag.tensor([-4, 0]), "mean").tolist() == [-2, 2, 3]
    assert ag.tensor([1, 2, 3]).scatter_reduce(0, ag.tensor([0, 0]), ag.tensor([4, 7]), "mean",
                                               include_self=False).tolist() == [5, 2, 3]
    assert x.scatter_reduce(0, ag.tensor([0]), ag.tensor([5]), "max").tolist() == [5, 2, 3]  # torch's alias


def _grads(x: Any, src: Any, index: Any, reduce: str, include_self: bool) -> tuple[list[Any], ...]:
    xt = ag.tensor(x, dtype=ag.float64, requires_grad=True)
    st_ = ag.tensor(src, dtype=ag.float64, requires_grad=True)
    y = xt.scatter_reduce(0, ag.tensor(index), st_, reduce, include_self=include_self)
    g = ag.tensor([[1.0, 10.0], [100.0, 1000.0]], dtype=ag.float64)
    gx, gs = ag.grad(y, [xt, st_], g)
    return y.tolist(), gx.tolist(), gs.tolist()


_THIRD = 1000.0 / 3
# (x, src, index, reduce, include_self) -> (result, grad of x, grad of src), computed with torch 2.13
TORCH_GRADS = [
    (([[1, 2], [3, 4]], [[3, 4], [1, 4]], [[1, 1], [1, 1]], "amax", True),
     ([[1, 2], [3, 4]], [[1, 10], [50, _THIRD]], [[50, _THIRD], [0, _THIRD]])),  # ties share the gradient
    (([[1, 2], [3, 4]], [[3, 4], [1, 4]], [[1, 1], [1, 1]], "amax", False),
     ([[1, 2], [3, 4]], [[1, 10], [0, 0]], [[50, _THIRD], [0, _THIRD]])),
    (([[1, 0], [3, 4]], [[0, 2], [5, 0]], [[0, 0], [1, 1]], "prod", True),
     ([[0, 0], [15, 0]], [[0, 20], [500, 0]], [[1, 0], [300, 4000]])),  # a single zero: the product of the rest
    (([[1, 0], [3, 4]], [[0, 2], [5, 0]], [[1, 1], [1, 1]], "prod", False),
     ([[1, 0], [0, 0]], [[1, 10], [0, 0]], [[500, 0], [0, 2000]])),
    (([[1, 2], [3, 4]], [[3, 4], [1, 4]], [[1, 1], [1, 0]], "mean", False),
     ([[1, 4], [2, 4]], [[1, 0], [0, 0]], [[50, 1000], [50, 10]])),
    (([[1, 2], [3, 4]], [[3, 4], [1, 4]], [[1, 1], [1, 0]], "amin", False),
     ([[1, 4], [1, 4]], [[1, 0], [0, 0]], [[0, 500], [100, 10]])),
]


@pytest.mark.parametrize("args, want", TORCH_GRADS)
def test_scatter_reduce_gradients_match_torch(args: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    for got, expected in zip(_grads(*args), want):
        np.testing.assert_allclose(np.array(got, dtype=float), np.array(expected, dtype=float), rtol=1e-12)


def test_scatter_with_a_value_and_the_legacy_reduce() -> None:
    x = ag.zeros(2, 3, requires_grad=True)
    y = (x * 1).scatter(1, ag.tensor([[2], [0]]), 5.0)
    assert y.tolist() == [[0, 0, 5], [5, 0, 0]] and y.grad_fn.name() == "ScatterBackward1"
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor src is deprecated"):
        z = (x + 1).scatter(0, ag.tensor([[0, 0, 1]]), ag.full((1, 3), 3.0, requires_grad=True), reduce="multiply")
    assert z.tolist() == [[3, 3, 1], [1, 1, 3]] and z.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        z.sum().backward()
    assert ag.ones(3).scatter(0, ag.tensor([0, 0]), 2.0, reduce="add").tolist() == [5, 1, 1]
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        ag.ones(3).scatter(0, ag.tensor([0]), 2.0, reduce="mean")


def test_index_copy_index_fill_masked_scatter_values() -> None:
    x = ag.zeros(3, 2)
    assert x.index_copy(0, ag.tensor([2, 0]), ag.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist() == [[3, 4], [0, 0], [1, 2]]
    assert x.index_fill(1, ag.tensor([1, -1]), 7.0).tolist() == [[0, 7], [0, 7], [0, 7]]
    assert ag.arange(4).index_fill(0, ag.tensor([0]), 2.7).tolist() == [2, 1, 2, 3]  # cast, as torch
    m = ag.tensor([[True, False], [False, True], [True, True]])
    assert x.masked_scatter(m, ag.arange(1.0, 7.0)).tolist() == [[1, 0], [0, 2], [3, 4]]
    assert ag.zeros(2).masked_scatter(m, ag.arange(1.0, 7.0)).shape == (3, 2)  # input broadcast with the mask


async def test_index_fill_with_repeated_indices_counts_each_slice_once() -> None:
    v = ag.tensor(2.0, requires_grad=True)
    y = ag.zeros(3, 2).index_fill(0, ag.tensor([1, 1, 2]), v)
    assert y.grad_fn.name() == "IndexFillBackward1"
    await y.sum().backward()
    assert v.grad.item() == 4.0  # two slices of two elements


def test_in_place_twins_record_the_same_nodes_as_torch() -> None:
    w = ag.ones(3, 2, requires_grad=True)
    idx = ag.tensor([[0, 1], [2, 0]])
    cases = {
        "ScatterBackward0": lambda y: y.scatter_(0, idx, w[:2]),
        "ScatterBackward1": lambda y: y.scatter_(0, idx, 2.0),
        "ScatterAddBackward0": lambda y: y.scatter_add_(0, idx, w[:2]),
        "ScatterReduceBackward0": lambda y: y.scatter_reduce_(0, idx, w[:2], "prod"),
        "IndexAddBackward0": lambda y: y.index_add_(0, ag.tensor([1]), w[:1]),
        "IndexCopyBackward0": lambda y: y.index_copy_(0, ag.tensor([1]), w[:1]),
        "IndexFillBackward0": lambda y: y.index_fill_(1, ag.tensor([1]), 0.5),
        "MaskedScatterBackward0": lambda y: y.masked_scatter_(ag.tensor([True, False]), w),
        "TrilBackward0": lambda y: y.tril_(),
    }
    for name, op in cases.items():
        y = w * 1
        assert op(y) is y and y.grad_fn.name() == name
    with ag.no_grad():
        plain = ag.zeros(3, 2)
        plain.index_fill_(0, ag.tensor([0]), 1.0).masked_scatter_(ag.tensor([False, True]), ag.full((6,), 9.0))
    assert plain.tolist() == [[1, 9], [0, 9], [0, 9]] and plain._version == 2


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda x: x.scatter(0, ag.tensor([0]), x), RuntimeError,
         "Index tensor must have the same number of dimensions as self tensor"),
        (lambda x: x.gather(0, ag.tensor([0])), RuntimeError,
         "Index tensor must have the same number of dimensions as input tensor"),
        (lambda x: x.scatter(0, ag.zeros(3, 5, dtype=ag.int64), x), RuntimeError,
         "Expected index [3, 5] to be no larger than self [3, 4] apart from dimension 0 and to be no larger size than "
         "src [3, 4]"),
        (lambda x: x.gather(0, ag.zeros(3, 5, dtype=ag.int64)), RuntimeError,
         "Size does not match at dimension 1 expected index [3, 5] to be no larger than self [3, 4] apart from "
         "dimension 0"),
        (lambda x: x.scatter(0, ag.tensor([[5]]), x), RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
        (lambda x: x.gather(0, ag.tensor([[-1]])), RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
        (lambda x: x.scatter(0, ag.tensor([[0]]), x.double()), RuntimeError,
         "scatter(): Expected self.dtype to be equal to src.dtype"),
        (lambda x: x.scatter_reduce(0, ag.tensor([[0]]), x, "add"), RuntimeError,
         "reduce argument must be either sum, prod, mean, amax or amin, got add"),
        (lambda x: x.index_copy(0, ag.tensor([0, 2]), ag.zeros(2, 3)), RuntimeError,
         "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 4 at "
         "dimension 0 and source slice shape: 3 at dimension 0."),
        (lambda x: x.index_copy(0, ag.tensor([0, 2]), ag.zeros(3, 4)), IndexError,
         "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)"),
        (lambda x: x.index_copy(0, ag.tensor([0, 2], dtype=ag.int32), ag.zeros(2, 4)), RuntimeError,
         "index_copy_(): Expected a long tensor for index, but got Int"),
        (lambda x: x.index_copy(0, ag.tensor([0, 5]), ag.zeros(2, 4)), IndexError,
         "index_copy_(): index 5 is out of bounds for dimension 0 with size 3"),
        (lambda x: x.index_fill(0, ag.tensor([0]), ag.ones(2)), RuntimeError,
         "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
        (lambda x: x.index_fill(0, ag.tensor([5]), 1.0), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
        (lambda x: x.index_fill(1, ag.tensor([[0]]), 1.0), RuntimeError, "Index has to be a vector/scalar"),
        (lambda x: x.masked_scatter(x > -1, ag.ones(5)), RuntimeError,
         "Number of elements of source < number of ones in mask"),
        (lambda x: x.masked_scatter(ag.ones(3, 4, dtype=ag.int32), ag.ones(12)), RuntimeError,
         "masked_scatter_ only supports boolean masks, but got mask with dtype Int"),
        (lambda x: x.masked_scatter(x > 0, ag.ones(12, dtype=ag.float64)), RuntimeError,
         "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"),
        (lambda x: x.take(ag.tensor([12])), IndexError, "out of range: tried to access index 12 on a tensor of 12 elements."),
        (lambda x: x.take(ag.tensor([1], dtype=ag.int32)), RuntimeError,
         "take(): Expected a long tensor for index, but got Int"),
        (lambda x: x.index_select(0, ag.tensor([5])), IndexError, "index out of range in self"),
        (lambda x: x.take_along_dim(ag.tensor([[0]], dtype=ag.int32), 0), RuntimeError,
         "torch.take_along_dim(): dtype of indices should be Long but got Int"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call(ag.zeros(3, 4))
    assert phrase in str(info.value)
