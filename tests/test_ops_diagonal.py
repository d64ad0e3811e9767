"""Diagonals and triangles (aiograd/ops/movement/diagonal.py) against numpy and torch's rules: the writable
diagonal view, the adjoint pair diagonal/diag_embed to second order, the index helpers, trace's
dtype; per-op gradients are in tests/op_rows.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import aiograd as ag
from helpers import check_grads, t64


@given(shape=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 3)), offset=st.integers(-5, 5),
       dims=st.sampled_from([(0, 1), (1, 0), (0, 2), (-1, 1)]))
def test_diagonal_matches_numpy_and_is_a_view(shape: tuple[int, int, int], offset: int, dims: tuple[int, int]) -> None:
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = ag.tensor(a)
    d = x.diagonal(offset, *dims)
    np.testing.assert_array_equal(d.numpy(), np.diagonal(a, offset, *dims))
    np.testing.assert_array_equal(np.diagonal(x, offset, *dims).numpy(), np.diagonal(a, offset, *dims))
    assert d._version_counter is x._version_counter
    if d.numel():
        d.fill_(-1.0)  # writable, as torch's diagonal
        assert (np.diagonal(x.numpy(), offset, *dims) == -1).all() and (x.numpy() == -1).sum() == d.numel()


@given(shape=st.tuples(st.integers(0, 3), st.integers(1, 4)), offset=st.integers(-3, 3),
       dims=st.sampled_from([(-2, -1), (0, 2), (2, 0), (1, 0)]))
def test_diag_embed_places_the_last_dim_on_the_diagonal(shape: tuple[int, int], offset: int,
                                                          dims: tuple[int, int]) -> None:
    a = np.random.default_rng(0).standard_normal(shape)
    e = ag.diag_embed(ag.tensor(a), offset, *dims)
    n = shape[-1] + abs(offset)
    assert sorted(e.shape) == sorted((shape[0], n, n))
    np.testing.assert_array_equal(e.diagonal(offset, *dims).numpy(), a)
    assert np.count_nonzero(e.numpy()) == np.count_nonzero(a)


def test_diag_and_diagflat_match_numpy() -> None:
    v, m = np.arange(1.0, 4.0), np.arange(12.0).reshape(3, 4)
    for k in (-2, 0, 1, 5):
        np.testing.assert_array_equal(ag.diag(ag.tensor(v), k).numpy(), np.diag(v, k))
        np.testing.assert_array_equal(ag.diag(ag.tensor(m), k).numpy(), np.diag(m, k))
        np.testing.assert_array_equal(ag.diagflat(ag.tensor(m), k).numpy(), np.diagflat(m, k))
    assert np.diag(ag.tensor(v)).shape == (3, 3)
    x = ag.tensor(m, requires_grad=True)
    assert ag.diag(x).grad_fn.name() == "DiagonalBackward0_copy"  # a copy, as torch's diag of a matrix
    assert ag.diag(ag.tensor(v, requires_grad=True)).grad_fn.name() == "DiagEmbedBackward0"


def test_diagonal_scatter_writes_the_diagonal_of_a_copy() -> None:
    x = ag.zeros(3, 4)
    y = ag.diagonal_scatter(x, ag.tensor([1.0, 2.0, 3.0]), 1)
    assert y.diagonal(1).tolist() == [1.0, 2.0, 3.0] and x.numpy().sum() == 0
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of self. src size = \[2\], "
                                           r"slice size = \[3\]"):
        ag.diagonal_scatter(x, ag.zeros(2))


def test_the_diagonal_adjoint_pair_differentiates_to_second_order() -> None:
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    check_grads(lambda x: x.diagonal(1, 1, 2) ** 2, [t64(a)])
    check_grads(lambda x: ag.diag_embed(x, -1, 0, 2) * ag.diag_embed(x, -1, 0, 2), [t64(a[0])])
    check_grads(lambda x, s: ag.diagonal_scatter(x * x, s * s, 0, -1, 0), [t64(a), t64(a[0, :, :2])])
    check_grads(lambda x: ag.trace(x) * x, [t64(a[0])])


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 3, 0), (3, 3, 5), (3, 3, -5)])
def test_tril_and_triu_indices_match_numpy(row: int, col: int, offset: int) -> None:
    for name in ("tril", "triu"):
        got = getattr(ag, f"{name}_indices")(row, col, offset)
        want = np.stack(getattr(np, f"{name}_indices")(row, offset, col))
        assert got.dtype == ag.int64 and got.tolist() == want.tolist()
    assert ag.tril_indices(3, 3, dtype=ag.int32).dtype == ag.int32


def test_tril_triu_trace_follow_torch() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(ag.tensor(a).tril(k).numpy(), np.tril(a, k))
        np.testing.assert_array_equal(np.triu(ag.tensor(a), k).numpy(), np.triu(a, k))
    x = ag.tensor(a[0])
    x.tril_(-1)
    np.testing.assert_array_equal(x.numpy(), np.tril(a[0], -1))
    assert ag.arange(6).reshape(2, 3).trace().dtype == ag.int64 and ag.ones(2, 3).trace().item() == 2.0
    assert np.trace(ag.tensor(a[0])).item() == np.trace(a[0]) and np.trace(ag.tensor(a), 1, 1, 2).shape == (2,)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.zeros(3).tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
        (lambda: ag.zeros(2, 2, 2).trace(), RuntimeError, "trace: expected a matrix, but got tensor with dim 3"),
        (lambda: ag.ones(2, 2, dtype=ag.bool_).trace(), NotImplementedError, "\"trace\" not implemented for 'Bool'"),
        (lambda: ag.diag(ag.zeros(2, 2, 2)), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 3D"),
        (lambda: ag.diag_embed(ag.zeros(3), 0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
        (lambda: ag.tril_indices(-1, 3), RuntimeError, "row must be non-negative, got-1"),
        (lambda: ag.triu_indices(3, -2), RuntimeError, "col must be non-negative, got-2"),
        (lambda: ag.tril_indices(3, 3, dtype=ag.float32), NotImplementedError,
         "\"tril_indices\" not implemented for 'Float'"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)
