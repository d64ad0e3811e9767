"""Test harness for aiograd: event loops, async plugins, watchdog, Hypothesis profiles.

Conventions for test authors
============================

* A plain ``async def test_x(): ...`` with no marker runs through anyio's pytest
  plugin on three backends: ``test_x[asyncio]``, ``test_x[uvloop]`` (asyncio with
  uvloop's loop) and ``test_x[trio]``. Write it with backend-neutral code: anyio
  (``anyio.sleep``, ``anyio.create_task_group``, ``anyio.fail_after``) and aiograd's
  own API. Async fixtures for these tests are plain ``@pytest.fixture async def``.
  (``@pytest.mark.anyio`` is also accepted and means the same thing.)
* ``@pytest.mark.asyncio`` marks a test that uses asyncio-only APIs
  (``asyncio.create_task``, ``asyncio.timeout``, ``loop.run_in_executor``...). It
  runs through pytest-asyncio (strict mode) on two loops: ``test_x[asyncio]`` and
  ``test_x[uvloop]``. Its async fixtures must be ``@pytest_asyncio.fixture``.
  ``@pytest.mark.asyncio(loop_factories=["asyncio"])`` narrows it to one loop.
* A test is never run by both plugins: an ``asyncio``-marked test is not handed to
  anyio, and a test that is both ``asyncio``-marked and asks for ``anyio_backend``
  (or is ``anyio``-marked) fails with an explanation.
* To limit an anyio test to some backends, parametrize the fixture directly:
  ``@pytest.mark.parametrize("anyio_backend", ["trio"])``.
* ``@pytest.mark.no_blocking(max_ms=200)`` (or requesting the ``loop_block_watchdog``
  fixture) fails an async test whose event loop was blocked longer than ``max_ms``
  (default 200 ms: CI is a shared 2-core machine) at any moment of the test.
* Warnings are errors (``filterwarnings = ["error"]`` in pyproject.toml). That
  includes ``RuntimeWarning: coroutine ... was never awaited``, which reaches pytest
  through ``sys.unraisablehook`` as ``PytestUnraisableExceptionWarning``.
* Hypothesis: the "ci" profile (30 examples, no deadline) is the default; pick
  another with ``HYPOTHESIS_PROFILE=dev`` (300 examples) or ``HYPOTHESIS_PROFILE=quick``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import pytest

try:  # uvloop has no Windows build
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

try:
    import trio  # noqa: F401

    _HAVE_TRIO = True
except ImportError:  # pragma: no cover
    _HAVE_TRIO = False


# --------------------------------------------------------------------------- #
# Hypothesis profiles                                                          #
# --------------------------------------------------------------------------- #

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover
    pass
else:
    # on CI itself: the same examples every run, and no example database
    _on_ci: dict[str, Any] = (
        {"derandomize": True, "database": None} if os.environ.get("CI") else {}
    )
    settings.register_profile(
        "ci",
        deadline=None,
        max_examples=30,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
        **_on_ci,
    )
    settings.register_profile(
        "dev",
        deadline=None,
        max_examples=300,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "quick",
        deadline=None,
        max_examples=10,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --------------------------------------------------------------------------- #
# pytest-asyncio: every @pytest.mark.asyncio test on asyncio and on uvloop      #
# --------------------------------------------------------------------------- #

ASYNCIO_LOOP_FACTORIES: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
}
if uvloop is not None:
    ASYNCIO_LOOP_FACTORIES["uvloop"] = uvloop.new_event_loop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """pytest-asyncio >= 1.5 hook (firstresult): the loops an asyncio test runs on.

    Called for each ``@pytest.mark.asyncio`` test while it is parametrized; the
    mapping's keys become the test ids (``[asyncio]``, ``[uvloop]``). It must
    return a non-empty mapping (``None`` is a usage error); a test narrows the set
    with ``@pytest.mark.asyncio(loop_factories=[...])``.
    """
    return ASYNCIO_LOOP_FACTORIES


# --------------------------------------------------------------------------- #
# anyio: unmarked async tests on asyncio, uvloop and trio                       #
# --------------------------------------------------------------------------- #

_ANYIO_BACKENDS = [
    pytest.param(("asyncio", {}), id="asyncio"),
    pytest.param(
        ("asyncio", {"use_uvloop": True}),
        id="uvloop",
        marks=pytest.mark.skipif(uvloop is None, reason="uvloop is not installed"),
    ),
    pytest.param(
        ("trio", {}),
        id="trio",
        marks=pytest.mark.skipif(not _HAVE_TRIO, reason="trio is not installed"),
    ),
]


@pytest.fixture(scope="module", params=_ANYIO_BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """The backend anyio's plugin runs a test (and its async fixtures) on."""
    return request.param


def _own_marker_names(obj: object) -> set[str]:
    marks = getattr(obj, "pytestmark", [])
    if not isinstance(marks, list):
        marks = [marks]
    return {getattr(m, "name", "") for m in marks}


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> None:
    """Hand every unmarked ``async def test_*`` to anyio's plugin.

    Runs before anyio's and pytest-asyncio's collection hooks (conftest hooks are
    called before those of plugins registered earlier). It only adds markers to the
    function object and returns None, so the normal collection proceeds: anyio's
    hook then sees the ``anyio`` mark and pytest-asyncio (strict mode) ignores it.
    """
    if not collector.istestfunction(obj, name):
        return
    func = obj.__func__ if isinstance(obj, staticmethod) else obj
    hypothesis_handle = getattr(func, "hypothesis", None)
    inner = hypothesis_handle.inner_test if hypothesis_handle is not None else func
    if not inspect.iscoroutinefunction(inner):
        return
    own = _own_marker_names(obj)
    if "asyncio" in own or collector.get_closest_marker("asyncio") is not None:
        return  # pytest-asyncio's test
    if "anyio" not in own and collector.get_closest_marker("anyio") is None:
        pytest.mark.anyio(obj)
    # What anyio's own hook does for marked tests; done here too so that the
    # outcome does not depend on the order of the two hooks.
    pytest.mark.usefixtures("anyio_backend")(obj)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("asyncio") is None:
        return
    if item.get_closest_marker("anyio") is not None or "anyio_backend" in getattr(
        item, "fixturenames", ()
    ):
        pytest.fail(
            f"{item.nodeid} is claimed by both pytest-asyncio (mark.asyncio) and anyio "
            "(mark.anyio or the anyio_backend fixture). Keep one: @pytest.mark.asyncio "
            "for asyncio-specific tests (asyncio + uvloop), no marker for "
            "backend-neutral tests (asyncio + uvloop + trio).",
            pytrace=False,
        )


# --------------------------------------------------------------------------- #
# Event-loop block watchdog                                                    #
# --------------------------------------------------------------------------- #

DEFAULT_MAX_BLOCK_MS = 200.0


class LoopBlockWatchdog:
    """Measures how long the running event loop was unable to run a ticker task.

    A ticker sleeps until a deadline ``interval_ms`` ahead, again and again; the
    lag between each deadline and the moment the ticker actually ran is the time the
    loop was blocked (by synchronous work in some task). When the watched call
    ends, a deadline already passed counts too, so a block at the very end is seen.
    Works on any backend anyio supports (asyncio, uvloop, trio).
    """

    def __init__(self, max_ms: float = DEFAULT_MAX_BLOCK_MS, interval_ms: float = 10.0):
        self.max_ms = float(max_ms)
        self.interval_ms = float(interval_ms)
        self.max_lag_ms = 0.0
        self.ticks = 0
        self.backend: str | None = None
        self._deadline: float | None = None

    def __repr__(self) -> str:
        return (
            f"LoopBlockWatchdog(max_ms={self.max_ms}, max_lag_ms={self.max_lag_ms:.1f}, "
            f"ticks={self.ticks}, backend={self.backend!r})"
        )

    def _record(self, now: float) -> None:
        if self._deadline is not None:
            self.max_lag_ms = max(self.max_lag_ms, (now - self._deadline) * 1000.0)

    async def _tick(self) -> None:
        interval = self.interval_ms / 1000.0
        while self._deadline is not None:
            await anyio.sleep_until(self._deadline)
            if self._deadline is None:  # the watched call has ended
                return
            now = anyio.current_time()
            self._record(now)
            self.ticks += 1
            self._deadline = now + interval

    async def run_watched(
        self, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> Any:
        """Await ``fn(*args, **kwargs)`` with the ticker running, then ``check()``."""
        self.backend = _current_backend_label()
        # The first deadline is "now", set before the ticker task exists: a block
        # that starts before the ticker first runs is measured in full.
        self._deadline = anyio.current_time()
        error: BaseException | None = None
        result: Any = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._tick)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:  # re-raised below, outside the task group,
                error = exc  # so that it is not wrapped in an ExceptionGroup
            finally:
                self._record(anyio.current_time())
                self._deadline = None
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        self.check()
        return result

    def check(self) -> None:
        if self.max_lag_ms > self.max_ms:
            pytest.fail(
                f"event loop ({self.backend}) was blocked for {self.max_lag_ms:.0f} ms "
                f"(limit {self.max_ms:.0f} ms): something ran synchronously on the "
                "loop instead of yielding or moving to an executor",
                pytrace=False,
            )

    def wrap(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        # Copy the name only, not __dict__ (which holds pytestmark / hypothesis).
        @functools.wraps(
            fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=()
        )
        async def watched(*args: Any, **kwargs: Any) -> Any:
            return await self.run_watched(fn, *args, **kwargs)

        return watched


def _current_backend_label() -> str:
    """'asyncio', 'uvloop' or 'trio': what the current task runs on."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import sniffio

        return sniffio.current_async_library()
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


@pytest.fixture
def loop_block_watchdog_factory() -> type[LoopBlockWatchdog]:
    """The watchdog class, to watch a section by hand: ``await wd.run_watched(fn)``."""
    return LoopBlockWatchdog


@pytest.fixture
def loop_block_watchdog(request: pytest.FixtureRequest):
    """Fail this async test if its event loop is blocked longer than the limit.

    The limit is ``max_ms`` of ``@pytest.mark.no_blocking(max_ms=...)``, else 200 ms.
    Works for anyio-run tests (asyncio, uvloop, trio) and pytest-asyncio tests: it
    wraps the test function, so the ticker runs on the test's own loop.
    """
    item = request.node
    marker = item.get_closest_marker("no_blocking")
    max_ms = DEFAULT_MAX_BLOCK_MS
    if marker is not None:
        max_ms = marker.kwargs.get("max_ms", marker.args[0] if marker.args else max_ms)
    if not (isinstance(max_ms, (int, float)) and math.isfinite(max_ms) and max_ms > 0):
        pytest.fail(f"no_blocking(max_ms=...) must be a positive number, got {max_ms!r}")
    watchdog = LoopBlockWatchdog(max_ms=max_ms)

    with pytest.MonkeyPatch.context() as mp:
        hypothesis_handle = getattr(item.obj, "hypothesis", None)
        if hypothesis_handle is not None:
            inner = hypothesis_handle.inner_test
            # anyio's plugin leaves its sync wrapper behind between parametrized runs
            inner = getattr(inner, "_anyio_original_func", inner)
            if not inspect.iscoroutinefunction(inner):
                pytest.fail("loop_block_watchdog / no_blocking needs an async test")
            mp.setattr(hypothesis_handle, "inner_test", watchdog.wrap(inner))
        else:
            if not inspect.iscoroutinefunction(item.obj):
                pytest.fail("loop_block_watchdog / no_blocking needs an async test")
            mp.setattr(item, "obj", watchdog.wrap(item.obj))
        yield watchdog


@pytest.fixture(autouse=True)
def _no_blocking_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("no_blocking") is not None:
        request.getfixturevalue("loop_block_watchdog")


# --------------------------------------------------------------------------- #
# Offload policy and aiograd's executor                                        #
# --------------------------------------------------------------------------- #


@pytest.fixture
def offload_always() -> Any:
    """Run every offloadable node on its device's executor thread (``ag.set_offload("always")``),
    and restore the previous mode after the test."""
    import aiograd as ag

    before = ag.get_offload()
    ag.set_offload("always")
    yield
    ag.set_offload(before)


@pytest.fixture
def executor_blocked() -> Any:
    """Occupy aiograd's cpu executor thread until the returned ``threading.Event`` is set
    (set at teardown too): work submitted meanwhile waits in its queue, not started."""
    import threading

    from aiograd.autograd import executors

    release, started = threading.Event(), threading.Event()
    job = executors.submit(lambda: (started.set(), release.wait(30)))
    assert started.wait(10)
    yield release
    release.set()
    job.result(10)
