"""Anomaly detection (grad_mode.detect_anomaly + the engine's NaN check and forward traces)."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag


class NanBackward(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class Fails(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise ValueError("backward exploded")


def _x() -> ag.Tensor:
    return ag.tensor([1.0, 2.0], requires_grad=True)


async def test_nan_in_backward_raises_naming_the_node() -> None:
    x = _x()
    with ag.detect_anomaly():
        y = NanBackward.apply(x).sum()
        with pytest.raises(RuntimeError, match=r"Function 'NanBackwardBackward' returned nan values in its 0th output\."):
            await y.backward()
    assert x.grad is None


async def test_nan_from_a_builtin_op() -> None:
    x = ag.tensor([0.0, 1.0], requires_grad=True)
    with ag.detect_anomaly():
        y = x.sqrt()  # d/dx sqrt at 0 -> inf; times 0 -> nan
        z = (y * 0.0).sum()
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output\."):
            await z.backward()


async def test_nan_passes_without_anomaly_mode_or_with_check_nan_off() -> None:
    x = _x()
    await NanBackward.apply(x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()
    x = _x()
    with ag.detect_anomaly(check_nan=False):
        await NanBackward.apply(x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()


async def test_error_in_backward_carries_the_forward_traceback() -> None:
    x = _x()
    with ag.detect_anomaly():
        y = Fails.apply(x)  # the user's forward line: recorded for the error
        loss = (y * 2).sum()
    with pytest.raises(ValueError, match="backward exploded") as info:
        await loss.backward()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Error detected in FailsBackward" in notes
    assert "y = Fails.apply(x)  # the user's forward line" in notes
    assert "test_anomaly.py" in notes


async def test_no_forward_trace_without_anomaly_mode() -> None:
    x = _x()
    loss = (Fails.apply(x) * 2).sum()
    assert loss.grad_fn._forward_trace is None
    with pytest.raises(ValueError) as info:
        await loss.backward()
    assert not getattr(info.value, "__notes__", [])


async def test_anomaly_mode_set_eagerly_in_a_task() -> None:
    ag.set_detect_anomaly(True)  # anyio runs the test in its own task context
    try:
        x = _x()
        y = NanBackward.apply(x).sum()
        with pytest.raises(RuntimeError, match="returned nan values"):
            await y.backward()
    finally:
        ag.set_detect_anomaly(False)
    assert not ag.is_anomaly_enabled()


async def test_engine_works_after_an_anomaly() -> None:
    x = _x()
    with ag.detect_anomaly():
        with pytest.raises(RuntimeError):
            await NanBackward.apply(x).sum().backward()
        await (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
