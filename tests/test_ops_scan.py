"""Scans: dtype rules, cumprod's exact gradient with zeros, logcumsumexp's stability, cummax/cummin's
indices among ties and NaN (values hard-coded from torch 2.13). Gradients over shapes: tests/op_rows.py."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
from helpers import check_grads, t64

NAN = float("nan")


def test_dtypes_follow_torch() -> None:
    assert ag.cumsum(ag.tensor([True, True]), 0).tolist() == [1, 2]
    assert ag.cumsum(ag.tensor([1, 2], dtype=ag.int32), 0).dtype == np.int64
    assert ag.cumprod(ag.tensor([1, 2], dtype=ag.uint8), 0).dtype == np.int64
    assert ag.cumsum(ag.tensor([1.5, 2.5]), 0, dtype=ag.int32).dtype == np.int32
    assert ag.cumsum(ag.tensor([1, 2]), 0, dtype=ag.float32).dtype == np.float32
    # float16 accumulates in float32, as torch: 1000 * 0.1 is 100, not float16's 99.x
    assert ag.full((1000,), 0.1, dtype=ag.float16).cumsum(0)[-1].item() == 100.0
    with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu.*Long"):
        ag.logcumsumexp(ag.tensor([1, 2]), 0)


def test_dims_0d_and_empty() -> None:
    assert ag.cumsum(ag.tensor(2.0), 0).item() == 2.0 and ag.cumprod(ag.tensor(2.0), -1).item() == 2.0
    assert ag.cummax(ag.zeros(0), 0).indices.shape == (0,)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 2"):
        ag.cumsum(ag.ones(3), 2)


@pytest.mark.parametrize("row", [[0.0, 2.0, 3.0, 0.5], [2.0, 0.0, 3.0, 0.0], [2.0, 3.0, 0.5, 0.0], [0.0, 0.0, 1.5, 2.0]])
def test_cumprod_gradient_is_exact_with_zeros(row: list[float]) -> None:
    x = t64(row)
    g = np.array([0.3, -1.2, 0.7, 2.0])
    (gx,) = ag.grad_sync(ag.cumprod(x, 0), [x], ag.tensor(g))
    want = [sum(g[j] * np.prod([row[i] for i in range(j + 1) if i != k]) for j in range(k, 4)) for k in range(4)]
    np.testing.assert_allclose(gx.numpy(), want, atol=1e-12)
    check_grads(lambda t: ag.cumprod(t, 0), [x])  # second derivatives through the zeros too


def test_logcumsumexp_is_stable() -> None:
    x = t64([1000.0, -1000.0, 999.0, 1001.0, -np.inf])
    y = ag.logcumsumexp(x, 0)
    np.testing.assert_allclose(y.detach().numpy(), [1000.0, 1000.0, 1000.3132616875182, 1001.4076059644444,
                                                    1001.4076059644444])
    ag.backward_sync(y.sum())
    np.testing.assert_allclose(x.grad.numpy(), [3.220515520739583, 0.0, 0.4490025677107318, 1.3304819115495066, 0.0])


def test_cummax_and_cummin_indices_as_torch() -> None:
    x = ag.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0])
    assert x.cummax(0).indices.tolist() == [0, 0, 2, 2, 2, 5, 5]  # ties move to the latest
    assert x.cummin(0).indices.tolist() == [0, 1, 1, 1, 4, 4, 4]
    y = ag.tensor([1.0, NAN, 3.0, NAN, 0.0])
    assert y.cummax(0).indices.tolist() == [0, 1, 1, 3, 3]  # NaN propagates, the latest NaN
    assert ag.tensor([True, False, True]).cummax(0).indices.tolist() == [0, 0, 2]


def test_cummax_gradient_accumulates_at_the_source() -> None:
    x = t64([1.0, 3.0, 2.0, 4.0])
    ag.backward_sync(ag.cummax(x, 0).values.sum())
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 0.0, 1.0])


def test_in_place_scans() -> None:
    x = ag.tensor([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]
    assert ag.tensor([1.0, 2.0, 3.0]).cumprod_(0).tolist() == [1.0, 2.0, 6.0]
    assert np.cumsum(ag.tensor([[1, 2], [3, 4]])).tolist() == [1, 3, 6, 10]  # numpy's flattening default
