"""aiograd.testing: assert_close against torch's verdicts and messages, make_tensor's ranges
and errors, the loop watchdog and the backend params (the pytest plugin has its own file,
tests/test_pytest_plugin.py)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.testing import LoopBlockWatchdog, assert_allclose, assert_close, loop_backends, make_tensor

CASES = json.loads((Path(__file__).parent / "data" / "assert_close_cases.json").read_text())["cases"]


def decode(x: Any) -> Any:
    """The JSON encoding of tests/data/make_assert_close_cases.py, as aiograd objects."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "tensor" in x:
        t = ag.tensor(_values(x["tensor"]), dtype=x["dtype"])
        return t.t() if x.get("t") else t
    if "array" in x:
        return np.array(_values(x["array"]), dtype=x["dtype"])
    if "complex" in x:
        return complex(*x["complex"])
    if "npscalar" in x:
        return np.dtype(x["dtype"]).type(x["npscalar"])
    if "npbool" in x:
        return np.bool_(x["npbool"])
    if "tuple" in x:
        return tuple(decode(v) for v in x["tuple"])
    if "dict" in x:
        return {k: decode(v) for k, v in x["dict"].items()}
    raise ValueError(x)


def _values(data: Any) -> Any:
    if isinstance(data, list):
        return [_values(v) for v in data]
    if isinstance(data, dict):
        return complex(*data["complex"])
    return data


def kwargs_of(raw: dict[str, Any]) -> dict[str, Any]:
    kwargs = dict(raw)
    if isinstance(kwargs.get("msg"), list):
        text = kwargs["msg"][1]
        kwargs["msg"] = lambda m: text + m
    return kwargs


# ------------------------------------------------------------------ assert_close --


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_assert_close_matches_torch(case: dict[str, Any]) -> None:
    actual, expected = decode(case["actual"]), decode(case["expected"])
    if case["raises"] is None:
        assert_close(actual, expected, **kwargs_of(case["kwargs"]))
        return
    with pytest.raises(Exception) as info:
        assert_close(actual, expected, **kwargs_of(case["kwargs"]))
    assert type(info.value).__name__ == case["raises"]
    # torch's TypeError names torch's class; aiograd's names aiograd's
    message = case["message"].replace("<class 'torch.Tensor'>", "<class 'aiograd.tensor.Tensor'>")
    assert str(info.value) == message


def test_the_cases_cover_passes_and_failures() -> None:
    assert len(CASES) > 80
    assert {c["raises"] for c in CASES} == {None, "AssertionError", "ValueError", "TypeError"}


def test_attribute_mismatches_name_aiograd_values() -> None:
    # torch says torch.Size([2]) and torch.float32; aiograd says aiograd.Size([2]), and dtypes are numpy's
    with pytest.raises(
        AssertionError, match=r"^The values for attribute 'shape' do not match: aiograd\.Size\(\[2\]\) != aiograd\.Size\(\[3\]\)\.$"
    ):
        assert_close(ag.zeros(2), ag.zeros(3))
    with pytest.raises(AssertionError, match=r"^The values for attribute 'dtype' do not match: float32 != float64\.$"):
        assert_close(ag.zeros(2), ag.zeros(2, dtype=ag.float64))
    with pytest.raises(AssertionError, match=r"^The values for attribute 'device' do not match: cpu != cpu:1\.$"):
        assert_close(ag.zeros(2), ag.zeros(2, device="cpu:1"))
    assert_close(ag.zeros(2), ag.zeros(2, device="cpu:1"), check_device=False)
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match: \(1, 2\) != \(2, 1\)\.$"):
        assert_close(x.t(), x.t().contiguous(), check_stride=True)
    assert_close(x.t(), x.t().contiguous())


def test_shape_is_checked_before_dtype_and_msg_applies() -> None:
    with pytest.raises(AssertionError, match=r"^XThe values for attribute 'shape'.*\n\nThe failure occurred for item \[0\]$"):
        assert_close([ag.zeros(2)], [ag.zeros(3, dtype=ag.float64)], msg=lambda m: "X" + m)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(ag.zeros(2), ag.zeros(2, dtype=ag.float64), msg="custom")


def test_values_compare_whatever_the_graph() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    assert_close(w * 1, ag.tensor([1.0, 2.0]))
    p = ag.nn.Parameter(ag.tensor([1.0, 2.0]))
    assert_close(p, ag.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        assert_close(p, ag.tensor([1.0, 2.0]), allow_subclasses=False)


def test_tolerances_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="rtol must be greater than or equal to zero, but got -1.0"):
        assert_close(ag.zeros(2), ag.zeros(2), rtol=-1.0, atol=0.0)


def test_non_contiguous_and_broadcast_views() -> None:
    big = ag.arange(12.0).reshape(3, 4)
    assert_close(big[:, ::2], ag.tensor([[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]))
    with pytest.raises(AssertionError, match=r"Greatest absolute difference: 1\.0 at index \(2, 1\)"):
        assert_close(big[:, ::2], ag.tensor([[0.0, 2.0], [4.0, 6.0], [8.0, 11.0]]))


def test_reachable_as_torch_programs_write_it() -> None:
    import aiograd as torch

    torch.testing.assert_close(torch.ones(2), torch.ones(2))
    assert ag.testing.make_tensor is make_tensor


def test_assert_allclose_is_deprecated_and_looser() -> None:
    with pytest.warns(FutureWarning, match="assert_allclose.*deprecated.*assert_close"):
        # the expected list takes actual's dtype; float32 allows 1e-4 relative here
        assert_allclose(ag.tensor([1.0, 2.0]), [1.0, 2.0001])
    with pytest.warns(FutureWarning):
        assert_allclose(ag.tensor([math.nan]), [math.nan])  # equal_nan=True by default
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="Tensor-likes are not close"):
        assert_allclose(ag.tensor([1.0, 2.0]), [1.0, 2.01])


# ------------------------------------------------------------------- make_tensor --


@pytest.mark.parametrize(
    "dtype, low, high",
    [
        (ag.float32, -9, 9), (ag.float64, -9, 9), (ag.float16, -9, 9),
        (ag.int64, -9, 10), (ag.int32, -9, 10), (ag.int8, -9, 10), (ag.uint8, 0, 10),
    ],
)
def test_make_tensor_default_ranges(dtype: Any, low: int, high: int) -> None:
    ag.manual_seed(0)
    t = make_tensor(2000, dtype=dtype, device="cpu")
    assert t.dtype == dtype and t.shape == (2000,) and t.device == ag.device("cpu")
    values = t.numpy()
    assert values.min() >= low and values.max() < high
    if dtype.kind in "iu":  # every integer of the range shows up in 2000 draws
        assert set(values.tolist()) == set(range(low, high))
    else:
        assert values.min() < low + 1 and values.max() > high - 1


def test_make_tensor_bool_and_complex() -> None:
    b = make_tensor(200, dtype=ag.bool_, device="cpu")
    assert b.dtype == ag.bool_ and set(b.numpy().tolist()) == {False, True}
    c = make_tensor(500, dtype=np.complex64, device="cpu", low=0, high=1)
    assert c.dtype == np.complex64
    for part in (c.numpy().real, c.numpy().imag):  # each part in [low, high)
        assert part.min() >= 0 and part.max() < 1


def test_make_tensor_shapes() -> None:
    assert make_tensor(2, 3, dtype=ag.float32, device="cpu").shape == (2, 3)
    assert make_tensor((2, 3), dtype=ag.float32, device="cpu").shape == (2, 3)
    assert make_tensor([2, 3], dtype=ag.float32, device="cpu").shape == (2, 3)
    assert make_tensor(dtype=ag.float32, device="cpu").shape == ()
    assert make_tensor(2, dtype=ag.float32, device="cpu:1").device == ag.device("cpu:1")


def test_make_tensor_bounds_are_clamped_and_rounded() -> None:
    t = make_tensor(500, dtype=ag.int8, device="cpu", low=-1000, high=1000)
    assert t.numpy().min() >= -128 and t.numpy().max() <= 127 and t.numpy().min() < -100
    # integer bounds round up: [0.5, 2.5) is [1, 3)
    assert set(make_tensor(200, dtype=ag.int64, device="cpu", low=0.5, high=2.5).numpy().tolist()) == {1, 2}
    wide = make_tensor(100, dtype=ag.float32, device="cpu", low=-1e39, high=1e39)
    assert np.isfinite(wide.numpy()).all() and np.abs(wide.numpy()).max() > 1e37
    assert make_tensor(50, dtype=ag.float32, device="cpu", low=2).numpy().min() >= 2


def test_make_tensor_is_reproducible_under_manual_seed() -> None:
    ag.manual_seed(7)
    a = make_tensor(3, 4, dtype=ag.float32, device="cpu")
    ag.manual_seed(7)
    b = make_tensor(3, 4, dtype=ag.float32, device="cpu")
    assert_close(a, b, rtol=0, atol=0)


def test_make_tensor_noncontiguous_and_memory_format() -> None:
    t = make_tensor(2, 3, dtype=ag.float32, device="cpu", noncontiguous=True)
    assert t.shape == (2, 3) and not t.is_contiguous()
    assert make_tensor(1, dtype=ag.float32, device="cpu", noncontiguous=True).is_contiguous()  # one element: no step
    cl = make_tensor(2, 3, 4, 5, dtype=ag.float32, device="cpu", memory_format=ag.channels_last)
    assert cl.is_contiguous(memory_format=ag.channels_last) and not cl.is_contiguous()


def test_make_tensor_exclude_zero_and_requires_grad() -> None:
    ints = make_tensor(100, dtype=ag.int64, device="cpu", low=0, high=1, exclude_zero=True)
    assert (ints.numpy() == 1).all()
    t = make_tensor(2, 3, dtype=ag.float64, device="cpu", requires_grad=True, noncontiguous=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(dtype=ag.int64, requires_grad=True), ValueError,
         "`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype=int64"),
        (dict(dtype=ag.float32, noncontiguous=True, memory_format=ag.contiguous_format), ValueError,
         "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got noncontiguous=True "
         "and memory_format=aiograd.contiguous_format"),
        (dict(dtype=ag.float32, low=2, high=1), ValueError, "`low` must be less than `high`, but got 2 >= 1"),
        (dict(dtype=ag.float32, low=1, high=1), ValueError, "`low` must be less than `high`, but got 1 >= 1"),
        (dict(dtype=ag.float32, low=math.nan), ValueError, "`low` and `high` cannot be NaN, but got low=nan and high=9"),
        (dict(dtype=ag.float32, high=-20), ValueError, "`low` must be less than `high`, but got -9 >= -20"),
        (dict(dtype=ag.uint8, low=-5, high=-1), ValueError,
         "The value interval specified by `low` and `high` is [-5, -1), but uint8 only supports [0, 256)"),
        (dict(dtype=ag.uint8, low=300, high=400), ValueError,
         "The value interval specified by `low` and `high` is [300, 400), but uint8 only supports [0, 256)"),
        (dict(dtype="U3"), TypeError, "The requested dtype 'U3' is not supported by aiograd.testing.make_tensor()"),
    ],
)
def test_make_tensor_errors(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        make_tensor(2, device="cpu", **kwargs)
    assert str(info.value).startswith(message)


# --------------------------------------------------------------- loop watchdog --


async def _block(seconds: float) -> str:
    time.sleep(seconds)  # deliberately blocks the loop
    return "done"


async def test_watchdog_fails_a_blocked_block() -> None:
    watchdog = LoopBlockWatchdog(max_ms=100)
    with pytest.raises(AssertionError, match=r"event loop \((asyncio|uvloop|trio)\) was blocked for \d+ ms \(limit 100 ms\)"):
        async with watchdog:
            await _block(0.3)
    assert watchdog.max_lag_ms >= 250 and watchdog.exceeded


async def test_watchdog_passes_a_cooperative_block() -> None:
    import anyio

    watchdog = LoopBlockWatchdog(max_ms=200)

    async def cooperative() -> str:
        for _ in range(5):
            await anyio.sleep(0.01)
        return "ok"

    assert await watchdog.run(cooperative) == "ok"
    assert watchdog.ticks > 0 and not watchdog.exceeded
    assert watchdog.backend in {"asyncio", "uvloop", "trio"}


async def test_watchdog_lets_the_body_error_through_unwrapped() -> None:
    async def boom() -> None:
        time.sleep(0.3)  # blocked too, but the body's own error is what the caller sees
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await LoopBlockWatchdog(max_ms=50).run(boom)


def test_watchdog_checks_its_arguments() -> None:
    for bad in (0, -1, math.inf, "10", True):
        with pytest.raises(ValueError, match="max_ms must be a positive number of milliseconds"):
            LoopBlockWatchdog(max_ms=bad)  # type: ignore[arg-type]


def test_loop_backends_params() -> None:
    params = loop_backends()
    assert [p.id for p in params] == ["asyncio", "uvloop", "trio"]
    assert [p.values[0] for p in params] == [("asyncio", {}), ("asyncio", {"use_uvloop": True}), ("trio", {})]
    assert [p.id for p in loop_backends("trio", "asyncio")] == ["asyncio", "trio"]
    with pytest.raises(ValueError, match="unknown loop backend 'curio': the backends are asyncio, uvloop, trio"):
        loop_backends("curio")


async def test_watchdog_inside_a_cancelled_scope() -> None:
    import anyio

    watchdog = LoopBlockWatchdog(max_ms=200)
    with anyio.move_on_after(0.05) as scope:
        async with watchdog:
            await anyio.sleep(5)  # cancelled by the deadline: no failure, no hang
    assert scope.cancelled_caught and watchdog.ticks > 0 and not watchdog.exceeded
    async with watchdog:  # and it can watch again afterwards
        await anyio.sleep(0)
