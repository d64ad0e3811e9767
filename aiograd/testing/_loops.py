"""Event loops for async tests: a watchdog that measures how long the loop was blocked,
and the list of loop backends (asyncio, uvloop, trio) a test can be run on.

Neither imports pytest or aiograd's tensors: the watchdog is plain anyio (it runs on any
backend anyio supports), and ``loop_backends`` imports pytest only when called. The
pytest plugin (``_aiograd_pytest_plugin``, loaded through the ``aiograd`` entry point)
builds its marker and fixtures on them.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import math
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import anyio

__all__ = ["LoopBlockWatchdog", "loop_backends", "DEFAULT_MAX_BLOCK_MS"]

DEFAULT_MAX_BLOCK_MS = 200.0

_W = TypeVar("_W", bound="LoopBlockWatchdog")


def current_backend() -> str:
    """'asyncio', 'uvloop' or 'trio': what the calling task runs on."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop: anyio's other backend
        return "trio"
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


class LoopBlockWatchdog:
    """Measures how long the running event loop could not run a ticker task.

    A ticker sleeps until a deadline ``interval_ms`` ahead, again and again; how late it
    wakes is how long the loop was blocked (by synchronous work in some task). When the
    watched block ends, a deadline already passed counts too, so a block at the very
    end is seen. Use it as an async context manager, which fails on leaving when the
    longest block exceeded ``max_ms``::

        async with LoopBlockWatchdog(max_ms=50):
            await train_step()

    or ``await watchdog.run(fn, *args)``. ``max_lag_ms`` (the longest block seen),
    ``ticks`` and ``backend`` stay readable afterwards. Works on asyncio, uvloop and
    trio; the pytest marker ``aiograd_no_blocking`` watches a whole test with it.
    """

    def __init__(self, max_ms: float = DEFAULT_MAX_BLOCK_MS, interval_ms: float = 10.0) -> None:
        for name, value in (("max_ms", max_ms), ("interval_ms", interval_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
                raise ValueError(f"LoopBlockWatchdog: {name} must be a positive number of milliseconds, got {value!r}")
        self.max_ms = float(max_ms)
        self.interval_ms = float(interval_ms)
        self.max_lag_ms = 0.0
        self.ticks = 0
        self.backend: str | None = None
        self._deadline: float | None = None
        self._task_group: Any = None

    def __repr__(self) -> str:
        return (
            f"LoopBlockWatchdog(max_ms={self.max_ms}, max_lag_ms={self.max_lag_ms:.1f}, "
            f"ticks={self.ticks}, backend={self.backend!r})"
        )

    @property
    def exceeded(self) -> bool:
        """Whether the loop was blocked longer than ``max_ms``."""
        return self.max_lag_ms > self.max_ms

    def report(self) -> str:
        """The failure message: the backend, the longest block and the limit, in ms."""
        return (
            f"event loop ({self.backend}) was blocked for {self.max_lag_ms:.0f} ms "
            f"(limit {self.max_ms:.0f} ms): something ran synchronously on the "
            "loop instead of yielding or moving to an executor"
        )

    def check(self) -> None:
        """Raise ``AssertionError`` (with ``report()``) if the limit was exceeded."""
        if self.exceeded:
            raise AssertionError(self.report())

    def _record(self, now: float) -> None:
        if self._deadline is not None:
            self.max_lag_ms = max(self.max_lag_ms, (now - self._deadline) * 1000.0)

    async def _tick(self) -> None:
        interval = self.interval_ms / 1000.0
        while self._deadline is not None:
            await anyio.sleep_until(self._deadline)
            if self._deadline is None:  # the watched block has ended
                return
            now = anyio.current_time()
            self._record(now)
            self.ticks += 1
            self._deadline = now + interval

    async def __aenter__(self: _W) -> _W:
        if self._task_group is not None:
            raise RuntimeError("this LoopBlockWatchdog is already watching; use one per block")
        self.backend = current_backend()
        # The first deadline is "now", set before the ticker task exists: a block that
        # starts before the ticker first runs is measured in full.
        self._deadline = anyio.current_time()
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._tick)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task_group, self._task_group = self._task_group, None
        self._record(anyio.current_time())
        self._deadline = None
        task_group.cancel_scope.cancel()
        # The body's own exception is not handed to the task group: it propagates as
        # it is, not wrapped in an ExceptionGroup.
        await task_group.__aexit__(None, None, None)
        if exc_type is None:
            self.check()

    async def run(self, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """Await ``fn(*args, **kwargs)`` under the watchdog, then ``check()``; its result."""
        async with self:
            return await fn(*args, **kwargs)

    def wrap(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``fn`` as a coroutine function that runs under the watchdog."""

        # Copy the name only, not __dict__ (which holds pytestmark / hypothesis).
        @functools.wraps(fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
        async def watched(*args: Any, **kwargs: Any) -> Any:
            return await self.run(fn, *args, **kwargs)

        return watched


# (test id, anyio_backend value, module that must be importable)
_BACKENDS: tuple[tuple[str, Any, str], ...] = (
    ("asyncio", ("asyncio", {}), "asyncio"),
    ("uvloop", ("asyncio", {"use_uvloop": True}), "uvloop"),
    ("trio", ("trio", {}), "trio"),
)
BACKEND_NAMES = tuple(name for name, _, _ in _BACKENDS)


def loop_backends(*names: str) -> list[Any]:
    """``anyio_backend`` values as pytest params: one test per loop, with ids
    ``asyncio``, ``uvloop`` and ``trio`` (or those of ``names``).

    A backend whose library is not installed is kept as a skipped param that says so,
    so a missing loop shows in the report instead of vanishing. For a whole suite, in a
    ``conftest.py``::

        @pytest.fixture(params=aiograd.testing.loop_backends())
        def anyio_backend(request):
            return request.param
    """
    import pytest  # only when called: aiograd.testing must not import pytest

    unknown = [n for n in names if n not in BACKEND_NAMES]
    if unknown:
        raise ValueError(f"unknown loop backend {unknown[0]!r}: the backends are {', '.join(BACKEND_NAMES)}")
    params = []
    for name, value, module in _BACKENDS:
        if names and name not in names:
            continue
        marks = []
        if importlib.util.find_spec(module) is None:
            marks.append(pytest.mark.skip(reason=f"{module} is not installed"))
        params.append(pytest.param(value, id=name, marks=marks))
    return params
