"""ag.offload and BLAS threads (aiograd/autograd/executors.py)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd import executors

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def test_offload_runs_on_the_cpu_executor_and_returns_the_result() -> None:
    def where(a: int, *, b: int) -> tuple[str, int]:
        return threading.current_thread().name, a + b

    name, total = await ag.offload(where, 1, b=2)
    assert name.startswith("aiograd-cpu") and total == 3
    assert name != threading.current_thread().name


async def test_offload_keeps_grad_mode_and_context_variables() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    token = _request_id.set("req-7")
    try:
        with ag.no_grad():
            y, seen = await ag.offload(lambda: (x * 2, _request_id.get()))
        assert y.grad_fn is None and seen == "req-7"
        y = await ag.offload(lambda: (x * 2).sum())
        assert y.grad_fn is not None
        await y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    finally:
        _request_id.reset(token)


async def test_offload_changes_to_context_variables_stay_in_the_call() -> None:
    def set_it() -> str:
        _request_id.set("inside")
        return _request_id.get()

    assert await ag.offload(set_it) == "inside"
    assert _request_id.get() == "none"


async def test_offload_raises_the_functions_exception() -> None:
    def boom() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        await ag.offload(boom)


async def test_offload_refuses_coroutine_functions() -> None:
    async def forward() -> None:
        pass

    with pytest.raises(TypeError, match="offload runs synchronous functions; .*forward is a coroutine function"):
        await ag.offload(forward)


async def test_offload_refuses_a_function_that_returns_an_awaitable() -> None:
    async def forward() -> None:
        pass

    with pytest.raises(TypeError, match="offload runs synchronous functions; .*<lambda> returned coroutine"):
        await ag.offload(lambda: forward())  # closed, so no "never awaited" warning (an error here)
    with pytest.raises(TypeError, match="offload runs synchronous functions; partial is a coroutine function"):
        await ag.offload(functools.partial(forward))


def _aiograd_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("aiograd-")}


async def test_offload_starts_no_thread_per_call() -> None:
    """Every call runs on the one cpu executor thread, and aiograd starts no other thread.

    Only aiograd's threads are counted: the event loop's library may start its own
    meanwhile (trio's thread cache did, under load, and failed an older version)."""
    home = await ag.offload(threading.get_ident)
    before = _aiograd_threads()
    ran_on: set[int] = set()

    async def one() -> None:
        ran_on.add(await ag.offload(lambda: (np.ones((64, 64)), threading.get_ident())[1]))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(one)
    assert ran_on == {home}
    assert _aiograd_threads() == before


async def test_cancelled_offload_that_has_not_started_never_runs(executor_blocked: threading.Event) -> None:
    ran = []
    with anyio.move_on_after(0.05) as scope:
        await ag.offload(ran.append, 1)
    assert scope.cancelled_caught
    executor_blocked.set()
    await ag.offload(int)  # the executor has drained its queue
    assert ran == []


async def test_cancelled_offload_that_is_running_is_waited_for() -> None:
    finished = []

    def slow() -> None:
        time.sleep(0.2)
        finished.append(True)

    with anyio.move_on_after(0.05) as scope:
        await ag.offload(slow)
    assert scope.cancelled_caught
    assert finished == [True]  # the cancelled await returned only once the function was over


@pytest.mark.asyncio
async def test_task_cancel_of_offload_raises_cancelled_error_after_the_function() -> None:
    started, finished = threading.Event(), []

    def slow() -> None:
        started.set()
        time.sleep(0.1)
        finished.append(True)

    task = asyncio.ensure_future(ag.offload(slow))
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == [True]


# ----- fork (NOTE [Executors and fork]) ------------------------------------------------


def _in_forked_child(child: Callable[[], bool], deadline: float = 60.0) -> int:
    """Fork, run ``child`` in the child with a deadline, and return its exit code.

    The child exits with ``os._exit``: 0 when ``child()`` returned True within
    ``deadline``, 3 when it hung, 4 when it returned False, 5 when it raised. The
    parent kills a child that has not exited within twice the deadline."""
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 5
        try:
            box: list[bool] = []
            t = threading.Thread(target=lambda: box.append(child()), daemon=True)
            t.start()
            t.join(deadline)
            code = 3 if t.is_alive() else 0 if box == [True] else 4 if box else 5
        finally:
            os._exit(code)
    end = time.monotonic() + 2 * deadline
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return -9


def _offloaded_backward() -> bool:
    """One backward with every kernel on the executor thread; whether its gradient is right."""
    x = ag.tensor(np.arange(64 * 64, dtype=np.float64).reshape(64, 64) / 4096, requires_grad=True)
    (x * x).sum().backward_sync()
    return bool(np.allclose(x.grad.numpy(), 2 * x.detach().numpy()))


# Python 3.12+ warns about any fork of a process with threads; forking is what is tested.
_FORK_WARNING = "ignore:This process .*is multi-threaded, use of fork:DeprecationWarning"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
@pytest.mark.filterwarnings(_FORK_WARNING)
@pytest.mark.timeout(200)
def test_forked_child_runs_an_offloaded_backward(offload_always: None) -> None:
    assert _offloaded_backward()  # the executor thread is started and idle when the process forks
    assert _aiograd_threads()
    assert _in_forked_child(_offloaded_backward) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
@pytest.mark.filterwarnings(_FORK_WARNING)
@pytest.mark.timeout(200)
async def test_child_forked_by_an_offloaded_function_runs_an_offloaded_backward(offload_always: None) -> None:
    def fork_here() -> int:  # on the executor thread, busy while the process forks
        return _in_forked_child(lambda: not executors.on_executor_thread() and _offloaded_backward())

    assert await ag.offload(fork_here) == 0


# ----- BLAS threads -------------------------------------------------------------------


@pytest.fixture
def restore_num_threads() -> Iterator[None]:
    before = ag.get_num_threads()
    yield
    ag.set_num_threads(before)


def test_set_num_threads_sizes_the_blas_pools(restore_num_threads: None) -> None:
    ag.set_num_threads(1)
    assert ag.get_num_threads() == 1
    if executors.available_cores() > 1:
        ag.set_num_threads(2)
        assert ag.get_num_threads() == 2


def test_set_num_threads_refuses_bad_values() -> None:
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        ag.set_num_threads(0)
    with pytest.raises(TypeError, match="set_num_threads expects an int, but got float"):
        ag.set_num_threads(1.5)  # type: ignore[arg-type]


_PROBE = (
    "import json, numpy, threadpoolctl\n"
    "before = max(i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas')\n"
    "import aiograd as ag\n"
    "from aiograd.autograd import executors\n"
    "print(json.dumps([before, ag.get_num_threads(), executors.available_cores()]))\n"
)


def _probe_process(**env: str) -> tuple[int, int, int]:
    """(BLAS threads before importing aiograd, after, cores) in a fresh interpreter with ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in (executors.ENV_VAR, *executors.BLAS_ENV_VARS)}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         timeout=120, check=True)
    before, after, cores = json.loads(out.stdout.strip().splitlines()[-1])
    return before, after, cores


def test_default_leaves_a_core_to_the_event_loop() -> None:
    before, after, cores = _probe_process()
    assert after == min(before, max(1, cores - 1))


def test_an_explicit_blas_environment_setting_is_respected() -> None:
    before, after, _ = _probe_process(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    assert after == before


def test_aiograd_num_threads_environment_variable_wins() -> None:
    _, after, _ = _probe_process(AIOGRAD_NUM_THREADS="1", OPENBLAS_NUM_THREADS="2")
    assert after == 1


# ----- no thread waits on itself (NOTE [Work on an executor thread]) -------------------
#
# Each entry point is called from a function that ``ag.offload`` runs on the cpu
# executor thread, in "auto" (with a kernel predicted past a slice, which "auto" hands
# off) and in "always". Before the fix each one sent work to the thread it ran on and
# waited for it forever, even under ``asyncio.wait_for`` (a running offload is waited
# for). So the probe runs in a child interpreter and gives each call a deadline: a call
# that misses it is reported, the stuck executor is dropped for a fresh one, and the
# child ends with ``os._exit`` (the stuck thread would block a normal exit).

_REENTRY_PROBE = r'''
import asyncio, json, os, sys, threading
import numpy as np
import trio
import aiograd as ag
from aiograd.autograd import executors

def graph():
    x = ag.tensor(np.linspace(-1.0, 1.0, 192 * 192).reshape(192, 192), requires_grad=True)
    return x, ((x @ x).tanh() @ x).sum()  # two MmBackward0 nodes of ~7e6 flops: past a slice at once

def on_executor():
    assert threading.current_thread().name.startswith("aiograd-cpu"), threading.current_thread().name

def backward_sync():
    x, loss = graph(); loss.backward_sync(); return x.grad.numpy()

def ag_backward_sync():
    x, loss = graph(); ag.autograd.backward_sync(loss); return x.grad.numpy()

def grad_sync():
    x, loss = graph(); return ag.autograd.grad_sync(loss, [x])[0].numpy()

def asyncio_backward():
    x, loss = graph(); asyncio.run(loss.backward()); return x.grad.numpy()

def asyncio_grad():
    x, loss = graph()
    async def main():
        return await ag.autograd.grad(loss, [x])
    return asyncio.run(main())[0].numpy()

def plain_backward():  # no loop runs on the executor thread: backward() completes (NOTE [Sync outside a loop])
    x, loss = graph(); loss.backward(); return x.grad.numpy()

def plain_grad():
    x, loss = graph(); return ag.grad(loss, [x])[0].numpy()

def trio_backward():
    x, loss = graph()
    async def main():
        await loss.backward()
    trio.run(main); return x.grad.numpy()

def nested_offload():
    x = ag.tensor(np.linspace(-1.0, 1.0, 192 * 192).reshape(192, 192), requires_grad=True)
    async def main():
        loss = await ag.offload(lambda: ((x @ x).tanh() @ x).sum())  # runs at once, on this thread
        await loss.backward()
    asyncio.run(main()); return x.grad.numpy()

def checkpointed():
    x = ag.tensor(np.linspace(-1.0, 1.0, 192 * 192).reshape(192, 192), requires_grad=True)
    loss = (ag.checkpoint(lambda t: (t @ t).tanh(), x, use_reentrant=False) @ x).sum()
    loss.backward_sync(); return x.grad.numpy()

def gradcheck():
    x = ag.tensor(np.linspace(-1.0, 1.0, 9).reshape(3, 3), requires_grad=True)
    return np.array(float(ag.gradcheck(lambda t: (t @ t).tanh(), (x,))))

def step_async():
    x, loss = graph(); loss.backward_sync()
    asyncio.run(ag.optim.SGD([x], lr=1.0).step_async()); return x.detach().numpy()

def expected(name):
    ag.set_offload("never")
    if name == "gradcheck":
        return np.array(1.0)
    if name == "step_async":
        x, loss = graph(); loss.backward_sync(); return x.detach().numpy() - x.grad.numpy()
    x, loss = graph(); loss.backward_sync(); return x.grad.numpy()

def run(fn):
    def inside():
        on_executor()
        return fn()
    return asyncio.run(ag.offload(inside))

names = sys.argv[1].split(",")
hung, wrong = [], []
for name in names:
    want = expected(name)
    for mode in ("auto", "always"):
        ag.set_offload(mode)
        box = []
        t = threading.Thread(target=lambda: box.append(run(globals()[name])), daemon=True)
        t.start()
        t.join(20)
        if t.is_alive():
            hung.append(f"{name} ({mode})")
            executors._reset_after_fork()  # drop the stuck executor: the next call gets a fresh one
        elif not box or not np.allclose(box[0], want):
            wrong.append(f"{name} ({mode})")
print(json.dumps({"hung": hung, "wrong": wrong}), flush=True)
os._exit(0)
'''

_ENTRY_POINTS = [
    "backward_sync", "ag_backward_sync", "grad_sync", "plain_backward", "plain_grad", "asyncio_backward",
    "asyncio_grad", "trio_backward", "nested_offload", "checkpointed", "gradcheck", "step_async",
]


@pytest.mark.timeout(240)
def test_no_entry_point_waits_on_its_own_executor_thread() -> None:
    out = subprocess.run([sys.executable, "-c", _REENTRY_PROBE, ",".join(_ENTRY_POINTS)], capture_output=True,
                         text=True, timeout=220)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"hung": [], "wrong": []}, out.stderr
