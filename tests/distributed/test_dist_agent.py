"""aiograd.distributed._agent: requests' deadlines in the caller's task, the threads of plain remote functions."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
import time
from typing import Any

import pytest

from aiograd.distributed import _agent
from aiograd.distributed._agent import Agent, _Threads
from aiograd.distributed._errors import WorkerLostError

pytestmark = [pytest.mark.distributed, pytest.mark.asyncio]


class _Pool:
    """A stand-in for Dask's ConnectionPool: ``pool(address).op(**msg)`` answers after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.cancelled = 0

    def __call__(self, address: str) -> "_Pool":
        return self

    def __getattr__(self, op: str) -> Any:
        async def call(**msg: Any) -> Any:
            try:
                await asyncio.sleep(self.delay)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return {"op": op, **msg}

        return call


def _agent_with(pool: _Pool) -> Agent:
    agent = Agent("driver", "tcp://127.0.0.1:1", pool, None, rpc_timeout=60.0)
    agent.names["tcp://w"] = "worker0"
    return agent


# ----- NOTE [A request in its caller's task] -------------------------------------------------------


async def test_a_request_answers_in_the_callers_task() -> None:
    agent = _agent_with(_Pool(0.0))
    assert await agent.request("tcp://w", "aiograd_peers", ctx_id=3) == {"op": "aiograd_peers", "ctx_id": 3}
    await agent.close()


async def test_a_deadline_raises_timeout_error_and_leaves_the_task_uncancelled() -> None:
    pool = _Pool(10.0)
    agent = _agent_with(pool)
    with pytest.raises(TimeoutError, match=r"RPC to worker0 \(aiograd_call\) ran for more than the set timeout"):
        await agent.request("tcp://w", "aiograd_call", timeout=0.05)
    assert pool.cancelled == 1
    task = asyncio.current_task()
    assert task is not None
    if sys.version_info >= (3, 11):
        assert task.cancelling() == 0
        with pytest.raises(TimeoutError):  # an enclosing timeout still counts right
            async with asyncio.timeout(0.05):
                await asyncio.sleep(1)
    await asyncio.sleep(0)  # no cancellation left pending on this task
    await agent.close()


async def test_a_departure_fails_the_request_at_once() -> None:
    agent = _agent_with(_Pool(10.0))
    asyncio.get_running_loop().call_later(0.05, agent.peer_lost, "tcp://w")
    t0 = time.monotonic()
    with pytest.raises(WorkerLostError, match="worker0"):
        await agent.request("tcp://w", "aiograd_call")
    assert time.monotonic() - t0 < 5
    with pytest.raises(WorkerLostError, match="left the cluster"):  # and the next one before it is sent
        await agent.request("tcp://w", "aiograd_call")
    await agent.close()


async def test_one_timer_keeps_every_deadline_and_a_departure_stops_only_its_address() -> None:
    # NOTE [One deadline timer]: a later request with an earlier deadline re-arms the sweep.
    agent = _agent_with(_Pool(10.0))
    agent.names["tcp://v"] = "worker1"
    t0 = time.monotonic()
    slow = asyncio.ensure_future(agent.request("tcp://w", "aiograd_call", timeout=0.6))
    fast = asyncio.ensure_future(agent.request("tcp://w", "aiograd_call", timeout=0.1))
    other = asyncio.ensure_future(agent.request("tcp://v", "aiograd_call", timeout=5.0))
    with pytest.raises(TimeoutError, match=r"\(0.1 s\)"):
        await fast
    assert 0.05 < time.monotonic() - t0 < 0.5 and not slow.done()
    with pytest.raises(TimeoutError, match=r"\(0.6 s\)"):
        await slow
    assert 0.5 < time.monotonic() - t0 and not other.done()
    agent.peer_lost("tcp://v")
    with pytest.raises(WorkerLostError, match="worker1"):
        await other
    assert not agent._waiting
    await agent.close()


async def test_cancelling_the_caller_cancels_the_request() -> None:
    pool = _Pool(10.0)
    agent = _agent_with(pool)
    task = asyncio.ensure_future(agent.request("tcp://w", "aiograd_call", timeout=0.2))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pool.cancelled == 1
    await asyncio.sleep(0.3)  # the deadline's timer is gone with the request: nothing fires later
    await agent.close()


# ----- NOTE [Short calls] --------------------------------------------------------------------------


def _work(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.fixture
def roomy_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits long enough that a busy CI machine's thread wake-ups count as short (100 ms, 50 ms)."""
    monkeypatch.setattr(_agent, "SHORT_WAIT_S", 0.1)
    monkeypatch.setattr(_agent, "SHORT_CALL_S", 0.05)


async def test_a_short_call_finishes_without_the_loop_and_a_long_one_through_it(roomy_waits: None) -> None:
    threads = _Threads(asyncio.get_running_loop())
    key = _work.__code__
    assert threads.run(lambda: _work(0.0), key) == (True, 0.0)  # first call: waited on
    finished, fut = threads.run(lambda: _work(0.3), key)  # longer than SHORT_WAIT_S
    assert not finished and await fut == 0.3
    assert threads.last_elapsed[key] >= 0.3
    finished, fut = threads.run(lambda: _work(0.0), key)  # last ran long: not waited on
    assert not finished and await fut == 0.0
    assert threads.run(lambda: _work(0.0), key) == (True, 0.0)  # short again
    finished, fut = threads.run(lambda: _work(0.0), None)  # no code object to time it by: never waited on
    assert not finished and await fut == 0.0
    threads.close()


async def test_short_and_long_calls_raise_their_errors(roomy_waits: None) -> None:
    threads = _Threads(asyncio.get_running_loop())

    def fail() -> None:
        raise KeyError("short")

    def stop() -> None:
        raise StopIteration

    with pytest.raises(KeyError, match="short"):
        threads.run(fail, fail.__code__)
    with pytest.raises(RuntimeError, match="raised StopIteration"):
        threads.run(stop, stop.__code__)

    def slow_fail() -> None:
        time.sleep(0.3)
        raise KeyError("long")

    finished, fut = threads.run(slow_fail, slow_fail.__code__)
    assert not finished
    with pytest.raises(KeyError, match="long"):
        await fut
    threads.close()


async def test_a_short_call_that_needs_the_loop_gets_it_after_the_wait() -> None:
    # A plain function blocking on the loop (rpc_sync does): the loop waits at most SHORT_WAIT_S.
    loop = asyncio.get_running_loop()
    threads = _Threads(loop)

    async def on_loop() -> str:
        return threading.current_thread().name

    def needs_loop() -> str:
        return asyncio.run_coroutine_threadsafe(on_loop(), loop).result(timeout=5)

    t0 = time.monotonic()
    finished, fut = threads.run(needs_loop, needs_loop.__code__)
    assert time.monotonic() - t0 < _agent.SHORT_WAIT_S + 0.5
    assert not finished and await fut == threading.current_thread().name
    threads.close()


async def test_concurrent_calls_each_get_a_thread() -> None:
    threads = _Threads(asyncio.get_running_loop())
    barrier = threading.Barrier(3, timeout=5)

    def meet() -> int:
        return barrier.wait()

    results = [threads.run(meet, meet.__code__) for _ in range(3)]
    assert all(not finished for finished, _ in results[:2])  # each waits for the others
    values = [v if finished else await v for finished, v in results]
    assert sorted(values) == [0, 1, 2] and len(threads.threads) == 3
    threads.close()


async def test_calls_in_a_row_reuse_one_thread_and_close_ends_it_with_its_pipe(roomy_waits: None) -> None:
    # NOTE [Waking a call thread]: a thread sleeps on a pipe of its own and goes back to the idle stack.
    threads = _Threads(asyncio.get_running_loop())

    def name() -> str:
        return threading.current_thread().name

    seen = set()
    for _ in range(20):
        finished, value = threads.run(name, name.__code__)
        seen.add(value if finished else await value)
    assert len(seen) == 1 and len(threads.threads) == 1
    t = threads.threads[0]
    fds = (t.read_fd, t.write_fd)
    threads.close()
    assert not t.thread.is_alive() and not threads.threads
    for fd in fds:  # closed (or, reused meanwhile by another thread of this process, no longer its pipe)
        try:
            assert not stat.S_ISFIFO(os.fstat(fd).st_mode)
        except OSError:
            pass


async def test_closing_lets_a_call_just_handed_over_finish() -> None:
    threads = _Threads(asyncio.get_running_loop())
    finished, fut = threads.run(lambda: _work(0.05), None)  # handed over, not waited on
    threads.close()  # its stop comes after the call, never instead of it
    assert not finished and await asyncio.wait_for(fut, 5) == 0.05
    assert not threads.threads
