"""A forgotten ``await`` on ``backward()`` is loud and specific (NOTE [Forgotten await]).

``loss.backward()`` returns an awaitable that does nothing until awaited. Left
un-awaited, it says so in its repr (what a notebook shows for a cell's last
line), warns when it is garbage-collected, and the next ``.grad`` read,
``optimizer.step()`` or ``zero_grad()`` in the same task raises a RuntimeError
that says how to write it.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import anyio
import pytest

import aiograd as ag

FORGOT = r"without `await`.*write `await loss\.backward\(\)`"


def _model() -> tuple[ag.Tensor, ag.Tensor, ag.optim.SGD]:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    return w, (w * 3).sum(), ag.optim.SGD([w], lr=0.1)


async def test_reading_grad_after_a_forgotten_await_raises_and_says_how_to_write_it() -> None:
    w, loss, _ = _model()
    call = loss.backward()
    with pytest.raises(RuntimeError, match=FORGOT) as info:
        w.grad
    assert "test_forgotten_await.py" in str(info.value)  # where the forgotten call is
    assert w.grad is None  # reported once; the task goes on
    assert "not awaited" in repr(call)
    await call  # awaiting it late still works
    assert w.grad.tolist() == [3.0, 3.0]


async def test_a_dropped_backward_warns_and_the_next_step_raises() -> None:
    w, loss, opt = _model()
    with pytest.warns(RuntimeWarning, match=r"never awaited.*write `await loss\.backward\(\)`"):
        loss.backward()
        gc.collect()
    with pytest.raises(RuntimeError, match=FORGOT):
        opt.step()
    assert w.tolist() == [1.0, 2.0]


async def test_a_forgotten_step_async_is_reported_like_backward() -> None:
    w, loss, opt = _model()
    await loss.backward()
    step = opt.step_async()
    assert "not awaited: write `await opt.step_async()`" in repr(step)
    with pytest.raises(RuntimeError, match=r"opt\.step_async\(\) was called without `await`, so no step was taken"):
        w.grad
    assert w.tolist() == [1.0, 2.0]  # nothing was applied
    await step  # awaiting it late still steps
    assert w.tolist() == pytest.approx([0.7, 1.7]) and w.grad is None


async def test_a_dropped_step_async_warns() -> None:
    w, loss, opt = _model()
    await loss.backward()
    with pytest.warns(RuntimeWarning, match=r"never awaited, so no step was taken.*`await opt\.step_async\(\)`"):
        opt.step_async()
        gc.collect()
    with pytest.raises(RuntimeError, match="no step was taken"):
        opt.step()


async def test_zero_grad_raises_after_a_forgotten_await() -> None:
    w, loss, opt = _model()
    call = loss.backward()
    with pytest.raises(RuntimeError, match=FORGOT):
        opt.zero_grad()
    call.close()


async def test_a_custom_optimizer_step_is_checked_too() -> None:
    class Plain(ag.optim.Optimizer):
        def __init__(self, params: Any) -> None:
            super().__init__(params, {})

        def step(self, closure: Any = None) -> None:
            return None

    w, loss, _ = _model()
    call = loss.backward()
    with pytest.raises(RuntimeError, match=FORGOT):
        Plain([w]).step()
    call.close()


async def test_module_level_backward_names_itself_in_the_message() -> None:
    w, loss, _ = _model()
    call = ag.backward(loss)
    with pytest.raises(RuntimeError, match=r"write `await ag\.backward\(loss\)`, or call ag\.backward_sync\(loss\)"):
        w.grad
    call.close()


async def test_the_message_quotes_the_call_as_written() -> None:
    w, _, _ = _model()
    with pytest.warns(RuntimeWarning, match=r"write `await \(w \* 2\)\.sum\(\)\.backward\(retain_graph=True\)`"):
        (w * 2).sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match=r"call \(w \* 2\)\.sum\(\)\.backward_sync\(retain_graph=True\)"):
        w.grad
    # a call split over lines: the generic form
    with pytest.warns(RuntimeWarning, match=r"write `await loss\.backward\(\)`"):
        (w * 2).sum().backward(
            retain_graph=True
        )
    with pytest.raises(RuntimeError, match=FORGOT):
        w.grad


async def test_repr_says_what_to_write_until_awaited() -> None:
    w, loss, _ = _model()
    call = loss.backward()
    assert "not awaited: write `await loss.backward()`" in repr(call)
    await call
    assert "not awaited" not in repr(call)
    assert w.grad.tolist() == [3.0, 3.0]


async def test_awaited_calls_leave_no_trace() -> None:
    w, loss, opt = _model()
    await loss.backward()
    assert w.grad.tolist() == [3.0, 3.0]
    opt.step()
    opt.zero_grad()
    a, b = (w * 2).sum(), (w * 5).sum()
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.backward)
        tg.start_soon(b.backward)
    assert w.grad.tolist() == [7.0, 7.0]


@pytest.mark.asyncio
async def test_calls_handed_to_asyncio_are_not_forgotten() -> None:
    w, loss, _ = _model()
    a, b = (w * 2).sum(), (w * 5).sum()
    await asyncio.gather(a.backward(retain_graph=True), b.backward())
    task = asyncio.create_task(a.backward())
    await task
    await asyncio.wait_for(loss.backward(), timeout=30)
    assert w.grad.tolist() == [12.0, 12.0]
    cancelled = asyncio.create_task((w * 1).sum().backward())
    cancelled.cancel()  # before it ever ran: nothing was forgotten
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert w.grad.tolist() == [12.0, 12.0]


async def test_a_forgotten_await_belongs_to_its_own_task() -> None:
    w, _, _ = _model()
    forgotten: list[Any] = []
    seen_by_sibling: list[Any] = []

    async def forgets() -> None:
        forgotten.append((w * 2).sum().backward())

    async def reads() -> None:
        await anyio.sleep(0.01)
        seen_by_sibling.append(w.grad)

    async with anyio.create_task_group() as tg:
        tg.start_soon(forgets)
        tg.start_soon(reads)
    assert seen_by_sibling == [None]
    assert w.grad is None  # the parent task never called backward
    forgotten[0].close()


def test_backward_sync_never_counts_as_forgotten() -> None:
    w, loss, opt = _model()
    loss.backward_sync()
    opt.step()
    assert w.grad.tolist() == [3.0, 3.0]


@pytest.mark.slow
def test_a_notebook_shows_the_forgotten_await_and_the_next_cell_raises(tmp_path: Any) -> None:
    import nbclient
    import nbformat
    cells = [
        "import aiograd as ag\nw = ag.tensor([1.0, 2.0], requires_grad=True)\nloss = (w * 3).sum()",
        "loss.backward()",  # the last line of a cell: its repr is displayed
        "try:\n    w.grad\nexcept RuntimeError as e:\n    print(e)",
        "await loss.backward()\nprint(w.grad)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute(cwd=str(tmp_path))
    shown = [o.get("text") or o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.outputs]
    assert "not awaited: write `await loss.backward()`" in shown[0]
    assert "loss.backward() was called without `await`" in shown[1]
    assert shown[2].strip() == "tensor([3., 3.])"
