"""Search ops (aiograd/ops/indexing/search.py): nonzero/argwhere/where, searchsorted/bucketize against
numpy, unique/unique_consecutive against values computed with torch (hard-coded), torch's errors
and unique's no-derivative grad_fn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import aiograd as ag


def test_nonzero_argwhere_and_where_with_one_argument() -> None:
    a = np.array([[0.0, 1.5], [2.0, 0.0]])
    x = ag.tensor(a)
    assert x.nonzero().tolist() == np.argwhere(a).tolist() == ag.argwhere(x).tolist()
    rows, cols = ag.where(x)
    assert rows.dtype == ag.int64 and (rows.tolist(), cols.tolist()) == tuple(i.tolist() for i in np.nonzero(a))
    assert [i.tolist() for i in np.nonzero(x)] == [[0, 1], [1, 0]]  # numpy dispatch: the tuple form
    assert ag.nonzero(ag.tensor(5.0)).shape == (1, 0) and ag.argwhere(ag.tensor(0.0)).shape == (0, 0)
    assert [t.tolist() for t in ag.nonzero(ag.tensor(5.0), as_tuple=True)] == [[0]]
    assert [t.tolist() for t in ag.where(ag.tensor(0.0))] == [[]]
    assert ag.nonzero(ag.zeros(0, 3)).shape == (0, 2)


@given(values=st.lists(st.integers(-3, 8), max_size=8), seq=st.lists(st.integers(0, 5), min_size=1, max_size=6),
       right=st.booleans())
def test_searchsorted_and_bucketize_match_numpy(values: list[int], seq: list[int], right: bool) -> None:
    s = np.sort(np.array(seq, dtype=float))
    v = np.array(values, dtype=float)
    want = np.searchsorted(s, v, side="right" if right else "left")
    assert ag.searchsorted(ag.tensor(s), ag.tensor(v), right=right).tolist() == want.tolist()
    assert ag.searchsorted(ag.tensor(s), ag.tensor(v), side="right" if right else "left").tolist() == want.tolist()
    assert ag.bucketize(ag.tensor(v), ag.tensor(s), right=right).tolist() == want.tolist()


def test_searchsorted_forms() -> None:
    seq = ag.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert ag.searchsorted(seq, ag.tensor([[1.5, 0.0], [5.0, 3.0]])).tolist() == [[1, 0], [2, 0]]  # one row each
    assert ag.searchsorted(ag.tensor([3.0, 1.0, 2.0]), ag.tensor([2.5]), sorter=ag.tensor([1, 2, 0])).tolist() == [2]
    r = ag.searchsorted(ag.tensor([1.0, 2.0]), 1.5)
    assert r.shape == () and r.item() == 1
    assert ag.bucketize(1.5, ag.tensor([1.0, 2.0]), out_int32=True).dtype == ag.int32
    assert ag.searchsorted(ag.tensor([1.0, 2.0]), ag.tensor([2.0]), out_int32=True).dtype == ag.int32
    assert ag.searchsorted(ag.zeros(0, 0), ag.zeros(0, 0)).shape == (0, 0)  # an empty batch


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.searchsorted(ag.tensor([1.0]), ag.tensor([1.0]), side="left", right=True), RuntimeError,
         "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"),
        (lambda: ag.searchsorted(ag.tensor([1.0]), ag.tensor([1.0]), side="up"), RuntimeError,
         "torch.searchsorted(): side can only be 'left' or 'right' but got up"),
        (lambda: ag.searchsorted(ag.tensor(1.0), ag.tensor([1.0])), RuntimeError,
         "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"),
        (lambda: ag.searchsorted(ag.zeros(2, 2), ag.zeros(2)), RuntimeError,
         "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value "
         "tensor must match, but we got boundaries tensor [2, 2] and input value tensor [2]"),
        (lambda: ag.bucketize(ag.zeros(2), ag.zeros(2, 2)), RuntimeError,
         "boundaries tensor must be 1 dimension, but got dim(2)"),
        (lambda: ag.unique(ag.tensor(3), dim=0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)


def test_unique_matches_torch() -> None:
    x = ag.tensor([3, 1, 2, 1, 3])
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    assert (values.tolist(), inverse.tolist(), counts.tolist()) == ([1, 2, 3], [2, 0, 1, 0, 2], [2, 1, 2])
    assert ag.unique(x, sorted=False).tolist() == [1, 2, 3]  # sorted all the same, as torch on the CPU
    v, inv = ag.unique(ag.tensor([[3, 1], [1, 2]]), return_inverse=True)
    assert inv.tolist() == [[2, 0], [0, 1]]  # the input's shape
    assert ag.unique(ag.tensor([np.nan, 1.0, np.nan])).shape == (3,)  # NaNs are all distinct, as torch
    assert ag.unique(ag.tensor(4)).tolist() == [4]
    rows = ag.tensor([[1, 2], [1, 2], [0, 5]])
    v, inv, cnt = rows.unique(dim=0, return_inverse=True, return_counts=True)
    assert (v.tolist(), inv.tolist(), cnt.tolist()) == ([[0, 5], [1, 2]], [1, 1, 0], [1, 2])
    assert ag.unique(ag.tensor([[1, 2, 1], [3, 4, 3]]), dim=1).tolist() == [[1, 2], [3, 4]]
    assert ag.unique(ag.zeros(0, 3), dim=0).shape == (0, 3)
    vals, counts = np.unique(x, return_counts=True)  # numpy dispatch
    assert vals.tolist() == [1, 2, 3] and counts.tolist() == [2, 1, 2]


def test_unique_consecutive_matches_torch() -> None:
    v, inv, cnt = ag.unique_consecutive(ag.tensor([1, 1, 2, 2, 3, 1, 1]), return_inverse=True, return_counts=True)
    assert (v.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3, 1], [0, 0, 1, 1, 2, 3, 3], [2, 2, 1, 2])
    assert ag.unique_consecutive(ag.tensor([[1, 2], [1, 2], [3, 4]]), dim=0).tolist() == [[1, 2], [3, 4]]
    assert ag.unique_consecutive(ag.tensor([])).shape == (0,)


def test_unique_values_carry_a_grad_fn_whose_backward_raises_as_torch() -> None:
    x = ag.tensor([1.0, 2.0, 1.0], requires_grad=True)
    for y, name, op in [(x.unique(), "Unique2Backward0", "_unique2"),
                        (x.reshape(3, 1).unique(dim=0), "UniqueDimBackward0", "unique_dim"),
                        (x.unique_consecutive(), "UniqueConsecutiveBackward0", "unique_consecutive")]:
        assert y.requires_grad and y.grad_fn.name() == name
        with pytest.raises(NotImplementedError, match=f"the derivative for '{op}' is not implemented."):
            y.sum().backward()
    assert x.grad is None
    assert not x.unique(return_inverse=True)[1].requires_grad
