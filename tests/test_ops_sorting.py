"""Sorting and order statistics: torch's indices among ties (values hard-coded from torch 2.13 on CPU),
NaN as the largest value, the named tuples, quantile's interpolation modes, errors. Gradients: the rows
in tests/op_rows.py."""

from __future__ import annotations

import time

import numpy as np
import pytest

import aiograd as ag
from aiograd.ops.reduction import _tie_order
from helpers import t64

NAN = float("nan")
# a row of 20 (longer than insertion sort's 16) with many ties
ROW20 = [2, 0, 1, 2, 2, 0, 1, 1, 0, 2, 1, 0, 2, 0, 1, 2, 0, 0, 1, 2]


def test_sort_indices_among_ties_are_torchs() -> None:
    x = ag.tensor(ROW20)
    assert x.sort().indices.tolist() == [1, 17, 16, 5, 13, 8, 11, 10, 18, 14, 7, 6, 2, 0, 9, 12, 15, 4, 3, 19]
    assert x.sort(descending=True).indices.tolist() == [19, 3, 4, 15, 12, 0, 9, 10, 18, 14, 7, 6, 2, 8, 11, 13,
                                                        5, 16, 17, 1]
    stable = [1, 5, 8, 11, 13, 16, 17, 2, 6, 7, 10, 14, 18, 0, 3, 4, 9, 12, 15, 19]
    assert x.sort(stable=True).indices.tolist() == stable
    assert ag.argsort(x, stable=True).tolist() == stable
    assert x.sort(dim=0, descending=True, stable=True).indices.tolist()[:5] == [0, 3, 4, 9, 12]


def test_sort_puts_nan_last_and_first_descending() -> None:
    x = ag.tensor([3.0, NAN, 1.0, 2.0])
    assert x.sort().indices.tolist() == [2, 3, 0, 1]
    assert x.sort(descending=True).indices.tolist() == [1, 0, 3, 2]


def test_results_are_named_tuples_named_as_torchs() -> None:
    x = ag.tensor([[3.0, 1.0, 2.0]])
    for res, name in ((x.sort(), "sort"), (x.topk(2), "topk"), (x.kthvalue(1), "kthvalue"), (x.median(1), "median"),
                      (x.nanmedian(1), "nanmedian"), (x.mode(1), "mode"), (x.cummax(1), "cummax"),
                      (x.cummin(1), "cummin"), (x.max(1), "max"), (x.min(1), "min")):
        values, indices = res
        assert type(res).__name__ == name and isinstance(res, tuple)
        assert res.values is values and res.indices is indices and indices.dtype == np.int64
    mm = ag.aminmax(x)
    assert type(mm).__name__ == "aminmax" and (mm.min.item(), mm.max.item()) == (1.0, 3.0)
    assert type(mm) is ag.return_types.aminmax


def test_topk_ties_as_torch() -> None:
    x = ag.tensor([5.0, 3.0, 5.0, 1.0, 3.0, 5.0, 2.0, 3.0, 1.0, 5.0])
    assert x.topk(3).indices.tolist() == [5, 9, 0]
    assert x.topk(3, sorted=False).indices.tolist() == [5, 9, 0]
    assert x.topk(4, largest=False).indices.tolist() == [8, 3, 6, 4]
    assert ag.topk(ag.tensor([float(i % 7) for i in range(70)]), 1).indices.tolist() == [6]  # the partial-sort path


def test_topk_and_kthvalue_errors() -> None:
    x = ag.tensor([3.0, 1.0, 2.0])
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(4)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes"):
        ag.tensor([True]).topk(1)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ag.zeros(0).kthvalue(1)
    assert x.topk(0).values.shape == (0,)


def test_kthvalue_picks_among_ties_as_torchs_quickselect() -> None:
    x = ag.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0])
    assert [x.kthvalue(k).indices.item() for k in range(1, 8)] == [4, 1, 3, 6, 5, 2, 0]


def test_median_is_the_lower_median_with_torchs_index() -> None:
    assert ag.tensor([4.0, 1.0, 3.0, 2.0]).median().item() == 2.0
    values, indices = ag.tensor([1.0, 2.0, 2.0, 1.0]).median(0)
    assert (values.item(), indices.item()) == (1.0, 3)  # the last of equal values at the median's rank
    assert ag.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0]).median(0).indices.item() == 6
    x = ag.tensor([[1.0, NAN, 2.0, NAN], [2.0, 1.0, 3.0, 0.0]])
    assert np.isnan(x.median().item()) and x.nanmedian().item() == 1.0
    assert x.median(1).indices.tolist() == [1, 1]  # the first NaN
    assert x.nanmedian(1).indices.tolist() == [0, 1]
    assert ag.full((1, 20), NAN).nanmedian(1).indices.tolist() == [12]  # all NaN: as torch's nth_element leaves it


def test_median_edges() -> None:
    assert np.isnan(ag.zeros(0).median().item())
    assert ag.tensor(2.0).median(0).indices.item() == 0
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        ag.zeros(2, 0).median(1)
    with pytest.raises(NotImplementedError, match="median_cpu"):
        ag.tensor([True, False]).median()


def test_median_gradient_is_shared_among_equal_values() -> None:
    x = t64([1.0, 2.0, 2.0, 3.0, 2.0])
    ag.backward_sync(x.median())
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3])


def test_mode_value_and_index_as_torch() -> None:
    values, indices = ag.tensor(ROW20).mode()
    assert (values.item(), indices.item()) == (0, 11)  # std::sort's arrangement of a row of 20
    assert ag.tensor([1.0, 2.0, 2.0, 1.0]).mode().indices.item() == 3  # the smallest, its last index
    nan_mode = ag.tensor([NAN, 1.0, NAN, 1.0]).mode()
    assert np.isnan(nan_mode.values.item()) and nan_mode.indices.item() == 0
    assert ag.tensor([True, False, True]).mode().indices.item() == 2
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size"):
        ag.zeros(2, 0).mode(1)


def test_rows_past_the_replay_budget_keep_a_stable_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """NOTE [Ties]: past the budget, equal values keep their order (and the call stays quick)."""
    monkeypatch.setattr("aiograd.ops.reduction.sorting.REPLAY_BUDGET", 10)
    x = ag.tensor(ROW20)
    assert x.sort().indices.tolist() == x.sort(stable=True).indices.tolist()
    big = ag.tensor(np.arange(200_000) % 3)
    start = time.perf_counter()
    big.sort()
    big.topk(5)
    assert time.perf_counter() - start < 5


def test_replay_matches_numpy_where_nothing_ties() -> None:
    rng = np.random.default_rng(0)
    for n in (17, 40):
        row = rng.permutation(n).astype(float).tolist()
        items = [(v, i) for i, v in enumerate(row)]
        _tie_order.stl_sort(items, _tie_order.less_nan_last)
        assert [i for _, i in items] == np.argsort(row).tolist()


QUANTILES = [0.5, 1 / 6, 0.5 / 3, 0.9]


@pytest.mark.parametrize("mode, want", [
    ("linear", [1.5, 0.5, 0.5, 2.7]), ("lower", [1.0, 0.0, 0.0, 2.0]), ("higher", [2.0, 1.0, 1.0, 3.0]),
    ("midpoint", [1.5, 0.5, 0.5, 2.5]), ("nearest", [2.0, 0.0, 0.0, 3.0]),
])
def test_quantile_interpolation_modes(mode: str, want: list[float]) -> None:
    x = ag.arange(4.0)
    np.testing.assert_allclose(ag.quantile(x, ag.tensor(QUANTILES), interpolation=mode).numpy(), want, rtol=1e-6)


def test_quantile_shapes_nan_and_errors() -> None:
    x = ag.rand(2, 3, 4)
    assert ag.quantile(x, ag.tensor([0.2, 0.8]), dim=1, keepdim=True).shape == (2, 2, 1, 4)
    assert ag.quantile(x, 0.5, keepdim=True).shape == (1, 1, 1)
    assert x.quantile(0.5, dim=-1).shape == (2, 3)
    y = ag.tensor([1.0, NAN, 3.0])
    assert np.isnan(ag.quantile(y, 0.5).item()) and ag.nanquantile(y, 0.5).item() == 2.0
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        ag.quantile(y, 1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
        ag.quantile(ag.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        ag.quantile(y, ag.tensor([0.5], dtype=ag.float64))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear"):
        ag.quantile(y, 0.5, interpolation="cubic")


def test_numpy_functions_dispatch() -> None:
    x = ag.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
    assert isinstance(np.sort(x), ag.Tensor) and np.sort(x).tolist() == [[1.0, 2.0, 3.0]]
    assert np.argsort(x).tolist() == [[1, 2, 0]]
    np.testing.assert_allclose(np.quantile(x, 0.25).item(), np.quantile(x.detach().numpy(), 0.25))
