"""ag.offload and BLAS threads (aiograd/autograd/executors.py)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

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


async def test_offload_starts_no_thread_per_call() -> None:
    await ag.offload(int)
    before = set(threading.enumerate())  # threads of earlier tests may end meanwhile: compare sets
    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(ag.offload, np.ones, (64, 64))
    assert set(threading.enumerate()) - before == set()


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
