"""Grad modes (aiograd.autograd.grad_mode): context managers, decorators, contextvar isolation."""

from __future__ import annotations

import contextvars

import anyio
import pytest

import aiograd as ag


def _x() -> ag.Tensor:
    return ag.tensor([1.0, 2.0], requires_grad=True)


def test_default_is_enabled_and_records() -> None:
    assert ag.is_grad_enabled()
    y = _x() * 2
    assert y.requires_grad and y.grad_fn is not None


@pytest.mark.parametrize("mode", [ag.no_grad, ag.inference_mode, lambda: ag.set_grad_enabled(False)])
def test_disabling_modes_as_context_managers(mode) -> None:
    x = _x()
    with mode():
        assert not ag.is_grad_enabled()
        y = x * 2
    assert ag.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_enable_grad_inside_no_grad_and_nesting_restores() -> None:
    x = _x()
    with ag.no_grad():
        with ag.enable_grad():
            assert ag.is_grad_enabled()
            y = x * 2
            with ag.no_grad():
                assert not ag.is_grad_enabled()
            assert ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
        z = x * 2
    assert y.grad_fn is not None and z.grad_fn is None
    assert ag.is_grad_enabled()


def test_set_grad_enabled_true_inside_no_grad() -> None:
    with ag.no_grad():
        with ag.set_grad_enabled(True):
            assert ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()


def test_mode_restored_after_exception() -> None:
    with pytest.raises(ValueError):
        with ag.no_grad():
            raise ValueError("boom")
    assert ag.is_grad_enabled()


def test_set_grad_enabled_called_eagerly_switches_mode_for_the_context() -> None:
    def body() -> tuple[bool, bool, bool]:
        ag.set_grad_enabled(False)
        off = ag.is_grad_enabled()
        rec = (_x() * 2).requires_grad
        ag.set_grad_enabled(True)
        return off, rec, ag.is_grad_enabled()

    # run in a copy of the context so the eager switch cannot leak into other tests
    off, rec, back_on = contextvars.copy_context().run(body)
    assert (off, rec, back_on) == (False, False, True)
    assert ag.is_grad_enabled()


def test_set_grad_enabled_eager_then_with_restores_previous() -> None:
    def body() -> tuple[bool, bool]:
        with ag.set_grad_enabled(False):
            inside = ag.is_grad_enabled()
        return inside, ag.is_grad_enabled()

    assert contextvars.copy_context().run(body) == (False, True)


# factories: building set_grad_enabled(False) switches the mode at once, so never at collection
_DISABLING_DECORATORS = [ag.no_grad, ag.inference_mode, lambda: ag.set_grad_enabled(False)]


@pytest.mark.parametrize("make_deco", _DISABLING_DECORATORS, ids=["no_grad", "inference_mode", "set_grad_enabled"])
def test_decorators_on_sync_functions(make_deco) -> None:
    @make_deco()
    def f(x: ag.Tensor) -> tuple[bool, ag.Tensor]:
        return ag.is_grad_enabled(), x * 2

    # decorating must not switch the mode of the caller (set_grad_enabled is eager otherwise)
    assert ag.is_grad_enabled()
    enabled, y = f(_x())
    assert not enabled and y.grad_fn is None
    assert ag.is_grad_enabled()


def test_enable_grad_decorator_inside_no_grad() -> None:
    @ag.enable_grad()
    def f(x: ag.Tensor) -> ag.Tensor:
        return x * 2

    with ag.no_grad():
        y = f(_x())
    assert y.grad_fn is not None


def test_decorator_keeps_name_and_doc() -> None:
    @ag.no_grad()
    def my_function() -> None:
        """Docstring."""

    assert my_function.__name__ == "my_function"
    assert my_function.__doc__ == "Docstring."


def test_decorator_on_generator_applies_only_while_the_body_runs() -> None:
    @ag.no_grad()
    def gen():
        yield ag.is_grad_enabled()
        yield ag.is_grad_enabled()

    seen = []
    for v in gen():
        seen.append(v)
        seen.append(ag.is_grad_enabled())
    assert seen == [False, True, False, True]


def test_inference_mode_false_is_a_no_op() -> None:
    with ag.inference_mode(False):
        assert ag.is_grad_enabled()
        assert (_x() * 2).grad_fn is not None


def test_inference_mode_flag() -> None:
    from aiograd.autograd.grad_mode import is_inference_mode_enabled

    assert not is_inference_mode_enabled()
    with ag.inference_mode():
        assert is_inference_mode_enabled()
    assert not is_inference_mode_enabled()


@pytest.mark.parametrize("make_deco", _DISABLING_DECORATORS, ids=["no_grad", "inference_mode", "set_grad_enabled"])
async def test_decorators_on_async_functions_hold_across_awaits(make_deco) -> None:
    @make_deco()
    async def f(x: ag.Tensor) -> tuple[bool, bool, ag.Tensor]:
        before = ag.is_grad_enabled()
        await anyio.sleep(0)
        after = ag.is_grad_enabled()
        return before, after, x * 2

    assert ag.is_grad_enabled()
    before, after, y = await f(_x())
    assert (before, after) == (False, False)
    assert y.grad_fn is None
    assert ag.is_grad_enabled()


async def test_async_enable_grad_decorator_under_no_grad() -> None:
    @ag.enable_grad()
    async def f(x: ag.Tensor) -> ag.Tensor:
        await anyio.sleep(0)
        return x * 2

    with ag.no_grad():
        y = await f(_x())
    assert y.grad_fn is not None


async def test_async_generator_decorator() -> None:
    @ag.no_grad()
    async def agen():
        yield ag.is_grad_enabled()
        await anyio.sleep(0)
        yield ag.is_grad_enabled()

    seen = []
    async for v in agen():
        seen.append((v, ag.is_grad_enabled()))
    assert seen == [(False, True), (False, True)]


async def test_concurrent_tasks_do_not_leak_grad_mode() -> None:
    """One task sits inside no_grad across awaits; the other records a graph meanwhile."""
    x = _x()
    log: list[tuple[str, bool]] = []
    results: dict[str, ag.Tensor] = {}
    inside = anyio.Event()
    recorded = anyio.Event()

    async def quiet() -> None:
        with ag.no_grad():
            inside.set()
            for _ in range(5):
                await anyio.sleep(0)
                log.append(("quiet", ag.is_grad_enabled()))
            await recorded.wait()
            results["quiet"] = x * 3
            log.append(("quiet", ag.is_grad_enabled()))

    async def loud() -> None:
        await inside.wait()
        for _ in range(5):
            log.append(("loud", ag.is_grad_enabled()))
            await anyio.sleep(0)
        results["loud"] = (x * x).sum()
        recorded.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(quiet)
        tg.start_soon(loud)

    assert all(enabled is False for who, enabled in log if who == "quiet")
    assert all(enabled is True for who, enabled in log if who == "loud")
    assert {who for who, _ in log} == {"quiet", "loud"}
    assert results["quiet"].grad_fn is None
    assert results["loud"].grad_fn is not None
    await results["loud"].backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert ag.is_grad_enabled()


async def test_eager_set_grad_enabled_in_a_task_stays_in_that_task() -> None:
    seen = {}

    async def switcher() -> None:
        ag.set_grad_enabled(False)
        await anyio.sleep(0)
        seen["switcher"] = ag.is_grad_enabled()

    async def other() -> None:
        await anyio.sleep(0)
        seen["other"] = ag.is_grad_enabled()

    async with anyio.create_task_group() as tg:
        tg.start_soon(switcher)
        tg.start_soon(other)
    assert seen == {"switcher": False, "other": True}
    assert ag.is_grad_enabled()


async def test_backward_inside_no_grad_still_computes_gradients() -> None:
    x = _x()
    y = (x * x).sum()
    with ag.no_grad():
        await y.backward()
        assert not ag.is_grad_enabled()
    assert x.grad.tolist() == [2.0, 4.0]


def test_anomaly_mode_context_and_eager() -> None:
    assert not ag.is_anomaly_enabled()
    with ag.detect_anomaly():
        assert ag.is_anomaly_enabled()
    assert not ag.is_anomaly_enabled()

    def body() -> tuple[bool, bool]:
        ag.set_detect_anomaly(True)
        on = ag.is_anomaly_enabled()
        ag.set_detect_anomaly(False)
        return on, ag.is_anomaly_enabled()

    assert contextvars.copy_context().run(body) == (True, False)
    with ag.set_detect_anomaly(True):
        assert ag.is_anomaly_enabled()
    assert not ag.is_anomaly_enabled()
