"""Every differentiable op, row by row (tests/op_rows.py): forward against a numpy reference, torch's
node name, gradcheck and gradgradcheck in float64 over shapes and broadcasting; and every
differentiable op of the op tables has a row."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import aiograd as ag
from aiograd.ops._table import all_ops
from op_rows import BINARY, EXEMPT, ROWS, Case, OpRow

_OPS = {op.name: op for op in all_ops()}


def _fn(row: OpRow) -> Any:
    return row.fn if row.fn is not None else _OPS[row.op].fn


def _inputs(row: OpRow, case: Case) -> tuple[list[np.ndarray], list[ag.Tensor]]:
    rng = np.random.default_rng(zlib.crc32(f"{row.op}{row.variant}{case.describe()}".encode()))
    arrays = [np.asarray(row.sample(rng, s), dtype=np.float64) for s in case.shapes]
    return arrays, [ag.tensor(a, requires_grad=True) for a in arrays]


_PARAMS = [
    pytest.param(row, case, id=f"{row.op}{'-' + row.variant if row.variant else ''}[{case.describe()}]")
    for row in ROWS for case in row.cases
]


@pytest.mark.parametrize("row, case", _PARAMS)
def test_op_row(row: OpRow, case: Case) -> None:
    fn = _fn(row)
    arrays, tensors = _inputs(row, case)

    def call(*ts: ag.Tensor) -> Any:
        return fn(*ts, *case.args, **case.kwargs)

    out = call(*tensors)
    first = out[0] if isinstance(out, tuple) else out
    if row.ref is not None:
        want = np.asarray(row.ref(*arrays, *case.args, **case.kwargs))
        assert first.shape == want.shape
        np.testing.assert_allclose(first.detach().numpy(), want, rtol=1e-12, atol=1e-14)
    if row.node is not None:
        assert first.grad_fn.name() == row.node
    assert ag.gradcheck(call, tuple(tensors), **row.tolerance)
    if row.gradgrad:
        assert ag.gradgradcheck(call, tuple(tensors), **row.tolerance)


def test_every_differentiable_op_has_a_row() -> None:
    covered = {row.op for row in ROWS}
    missing = sorted(op.name for op in all_ops() if op.differentiable and op.name not in covered | set(EXEMPT))
    assert missing == [], f"differentiable ops without a row in tests/op_rows.py: {missing}"


def test_every_row_names_a_registered_op() -> None:
    assert sorted({row.op for row in ROWS} - set(_OPS)) == []
    assert sorted(set(EXEMPT) - set(_OPS)) == []


def test_rows_are_told_apart() -> None:
    keys = [(row.op, row.variant) for row in ROWS]
    assert len(keys) == len(set(keys)), "give rows of one op distinct variants"


_BROADCASTING = [row for row in ROWS if row.cases == BINARY and row.fn is None]


@pytest.mark.parametrize("row", _BROADCASTING, ids=lambda r: r.op)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       seed=st.integers(0, 2**32 - 1))
def test_binary_rows_over_drawn_broadcast_shapes(row: OpRow, shapes: Any, seed: int) -> None:
    """The binary rows once more, on shapes Hypothesis draws: first derivatives only (quick)."""
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(row.sample(rng, s), dtype=np.float64) for s in shapes.input_shapes]
    tensors = [ag.tensor(a, requires_grad=True) for a in arrays]
    out = _fn(row)(*tensors)
    assert out.shape == shapes.result_shape
    if row.ref is not None:
        np.testing.assert_allclose(out.detach().numpy(), row.ref(*arrays), rtol=1e-12, atol=1e-14)
    assert ag.gradcheck(_fn(row), tuple(tensors))


@given(which=st.sampled_from(_BROADCASTING),
       shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3),
       seed=st.integers(0, 2**32 - 1), grad_a=st.booleans())
async def test_binary_rows_gradcheck_on_every_loop(which: OpRow, shapes: Any, seed: int, grad_a: bool) -> None:
    """gradcheck and gradgradcheck awaited on asyncio, uvloop and trio, one operand maybe without grad."""
    rng = np.random.default_rng(seed)
    a, b = (np.asarray(which.sample(rng, s), dtype=np.float64) for s in shapes.input_shapes)
    x, y = ag.tensor(a, requires_grad=grad_a), ag.tensor(b, requires_grad=True)
    assert await ag.gradcheck(_fn(which), (x, y))
    assert await ag.gradgradcheck(_fn(which), (x, y))


# Ops whose second tensor may be on another device, as in torch: they read only its shape
# (reshape_as, expand_as, view_as, broadcast_tensors), or copy its values across (copy_, fill_
# and __setitem__ with a tensor value).
_ACROSS_DEVICES = {"reshape_as", "expand_as", "view_as", "broadcast_tensors", "copy_", "fill_", "__setitem__"}
_MULTI_INPUT = [
    pytest.param(row, row.cases[0], id=f"{row.op}{'-' + row.variant if row.variant else ''}")
    for row in ROWS if len(row.cases[0].shapes) > 1 and row.op not in _ACROSS_DEVICES
]


@pytest.mark.parametrize("row, case", _MULTI_INPUT)
def test_an_op_refuses_tensors_on_two_devices(row: OpRow, case: Case) -> None:
    """NOTE [One device per op]: any op of two or more tensors raises torch's error when one of
    them is on another device, whichever one it is."""
    _, tensors = _inputs(row, case)
    for moved in range(len(tensors)):
        mixed = [t.detach().to("cpu:1") if i == moved else t for i, t in enumerate(tensors)]
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            _fn(row)(*mixed, *case.args, **case.kwargs)
