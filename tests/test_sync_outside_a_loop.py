"""Where no event loop runs in the calling thread, ``backward()``, ``ag.backward``, ``ag.grad``,
``gradcheck`` and ``gradgradcheck`` complete before they return, as torch's do
(NOTE [Sync outside a loop] in autograd/backward_call.py); inside a running loop they
return the awaitable and a forgotten ``await`` is still reported."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import anyio
import pytest

import aiograd as ag
from helpers import t64
from test_cancellation import _Boom  # a custom Function whose backward raises


class _WrongBackward(ag.Function):
    """exp with a backward off by a factor of two: every gradient check must fail on it."""

    @staticmethod
    def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
        (y,) = ctx.saved_tensors
        return 2 * g * y


def test_backward_in_a_script_fills_grad_before_it_returns() -> None:
    x = t64([1.0, 2.0])
    call = (x**2).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert "completed (no event loop was running)" in repr(call)
    ag.backward((x * 3).sum())
    assert x.grad.tolist() == [5.0, 7.0]


def test_a_finished_call_may_still_be_awaited_without_running_twice() -> None:
    x = t64([1.0, 2.0])
    asyncio.run((x * 2).sum().backward())  # runs at the call; asyncio.run awaits what is left: nothing
    assert x.grad.tolist() == [2.0, 2.0]
    call = (x * 5).sum().backward()

    async def main() -> None:
        await call
        await call

    asyncio.run(main())
    assert x.grad.tolist() == [7.0, 7.0]


def test_a_script_training_loop_as_torch_writes_it() -> None:
    ag.manual_seed(0)
    model = ag.nn.Linear(3, 1)
    opt = ag.optim.SGD(model.parameters(), lr=0.1)
    x, y = ag.randn(16, 3), ag.randn(16, 1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ag.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_an_error_is_raised_at_the_call_and_grads_are_untouched() -> None:
    x = t64([1.0, 2.0])
    (x * 1).sum().backward()
    with pytest.raises(ValueError, match="boom in backward"):
        (_Boom.apply(x) + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    (x * 1).sum().backward()  # the engine goes on
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_returns_the_gradients_and_they_may_be_awaited() -> None:
    x = t64([1.0, 2.0])
    gx, = ag.grad((x**3).sum(), [x])
    assert gx.tolist() == [3.0, 12.0]
    assert x.grad is None
    result = ag.grad((x**2).sum(), x)
    assert isinstance(result, tuple) and result[0].tolist() == [2.0, 4.0]

    async def main() -> Any:
        return await result

    assert asyncio.run(main()) == result


def test_gradcheck_returns_its_bool_so_a_plain_assert_checks_it() -> None:
    x = t64([0.1, 0.2])
    assert ag.gradcheck(lambda a: a.exp(), (x,)) is True
    assert ag.gradgradcheck(lambda a: a.exp(), (x,)) is True
    with pytest.raises(ag.GradcheckError):
        assert ag.gradcheck(_WrongBackward.apply, (x,))
    assert ag.gradcheck(_WrongBackward.apply, (x,), raise_exception=False) is False
    assert ag.gradgradcheck(lambda a: _WrongBackward.apply(a * a), (x,), raise_exception=False) is False


def test_gradcheck_of_a_coroutine_function_runs_on_a_loop_of_its_own() -> None:
    x = t64([0.3, 0.4])

    async def f(a: ag.Tensor) -> ag.Tensor:
        await asyncio.sleep(0)  # suspends: a loop-free pass could not run it
        return a.sin()

    assert ag.gradcheck(f, (x,)) is True


def test_a_worker_thread_without_a_loop_completes_while_another_thread_runs_one() -> None:
    x = t64([1.0, 2.0])
    done = threading.Event()
    results: list[Any] = []

    def worker() -> None:
        (x * 4).sum().backward()
        results.append(x.grad.tolist())
        done.set()

    async def main() -> None:
        t = threading.Thread(target=worker)
        t.start()
        while not done.is_set():
            await asyncio.sleep(0.001)
        t.join()

    asyncio.run(main())
    assert results == [[4.0, 4.0]]


async def test_inside_a_loop_each_entry_point_returns_an_awaitable() -> None:
    x = t64([1.0, 2.0])
    call = (x * 2).sum().backward()
    assert "not awaited" in repr(call)
    await call
    assert x.grad.tolist() == [2.0, 2.0]
    gx, = await ag.grad((x * 3).sum(), [x])
    assert gx.tolist() == [3.0, 3.0]
    assert await ag.gradcheck(lambda a: a.exp(), (x,)) is True
    assert await ag.gradgradcheck(lambda a: a.exp(), (x,)) is True


async def test_a_forgotten_await_inside_a_loop_is_still_reported() -> None:
    x = t64([1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="never awaited"):
        (x * 2).sum().backward()
        gc.collect()
    with pytest.raises(RuntimeError, match="without `await`"):
        x.grad
    assert x.grad is None
    await anyio.sleep(0)


async def test_a_thread_started_with_a_tasks_context_completes_backward_there() -> None:
    """anyio names the running library in a context variable (on asyncio too) that a copied
    context carries into a thread; no loop runs there, so backward() completes (NOTE [Sync
    outside a loop]; _aio.running_loop_kind asks per-thread facts only)."""
    import contextvars

    x = t64([1.0, 2.0])
    ctx = contextvars.copy_context()
    seen: list[Any] = []

    def work() -> None:
        call = (x * 3).sum().backward()
        seen.append((repr(call), x.grad.tolist()))

    await anyio.to_thread.run_sync(lambda: ctx.run(work))
    assert seen == [("<aiograd loss.backward(): completed (no event loop was running)>", [3.0, 3.0])]
