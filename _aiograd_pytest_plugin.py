"""aiograd's pytest plugin: a loop-block watchdog and a run on every event loop, for the
async test suites of code that uses aiograd.

pytest loads it through the ``aiograd`` entry point (group ``pytest11``) wherever aiograd
is installed; ``-p no:aiograd`` turns it off, ``-p aiograd`` turns it on where plugin
autoloading is disabled. It adds, and does nothing to a test that uses none of them:

* ``@pytest.mark.aiograd_no_blocking(max_ms=200)``: fail the async test if its event loop
  was blocked longer than ``max_ms`` milliseconds at any moment (default 200);
* the ``aiograd_loop_watchdog`` fixture: the same for the test that requests it, and
  the ``LoopBlockWatchdog`` object to read (``max_lag_ms``, ``ticks``, ``backend``);
* ``@pytest.mark.aiograd_backends``: run the async test once per event loop through
  anyio's plugin, with ids ``[asyncio]``, ``[uvloop]``, ``[trio]``;
  ``aiograd_backends("asyncio", "trio")`` names the loops.

NOTE [Plugin outside the package]: this module is top-level, not in ``aiograd/``,
because pytest imports every entry-point plugin at start-up, and importing anything
inside ``aiograd/`` runs ``aiograd/__init__``: about a second of imports, and BLAS
thread pools resized for the whole process (NOTE [BLAS threads]). A test session that
uses none of the markers must not pay for, or be changed by, aiograd. So this module
imports only pytest, and imports ``aiograd.testing`` (where the watchdog and the
backend list live) when a test uses a marker or the fixture. Hypothesis ships its
plugin the same way (``_hypothesis_pytestplugin``).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Iterator
from typing import Any

import pytest

NO_BLOCKING = "aiograd_no_blocking"
BACKENDS = "aiograd_backends"
WATCHDOG_FIXTURE = "aiograd_loop_watchdog"

_MARKERS = (
    f"{NO_BLOCKING}(max_ms=200): fail this async test if its event loop is blocked longer "
    "than max_ms milliseconds (aiograd's pytest plugin)",
    f"{BACKENDS}(*names): run this async test on each event loop, asyncio, uvloop and trio, "
    "or on those named (aiograd's pytest plugin, through anyio's)",
)


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)


def _marker(collector: pytest.Collector, obj: object, name: str) -> pytest.Mark | None:
    """The ``name`` mark of a function about to be collected: its own, else its class's or module's."""
    own = getattr(obj, "pytestmark", [])
    for mark in own if isinstance(own, list) else [own]:
        if getattr(mark, "name", None) == name:
            return mark
    return collector.get_closest_marker(name)


def _is_async(obj: object) -> bool:
    func = obj.__func__ if isinstance(obj, staticmethod) else obj
    handle = getattr(func, "hypothesis", None)
    return inspect.iscoroutinefunction(handle.inner_test if handle is not None else func)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Module | pytest.Class, name: str, obj: object) -> None:
    """Act on a test function that carries one of the markers; leave every other alone.

    It only adds marks to that function (and returns None, so collection goes on as
    usual): the watchdog fixture for ``aiograd_no_blocking``; for ``aiograd_backends``,
    anyio's mark and ``anyio_backend`` parametrized by loop, which anyio's plugin runs.
    """
    if not collector.istestfunction(obj, name):
        return
    no_blocking = _marker(collector, obj, NO_BLOCKING)
    backends = _marker(collector, obj, BACKENDS)
    if no_blocking is None and backends is None:
        return
    if not _is_async(obj):
        used = NO_BLOCKING if no_blocking is not None else BACKENDS
        raise collector.CollectError(f"{name}: @pytest.mark.{used} is for async tests (async def)")
    if no_blocking is not None:
        pytest.mark.usefixtures(WATCHDOG_FIXTURE)(obj)
    if backends is not None:
        if _marker(collector, obj, "asyncio") is not None:
            raise collector.CollectError(
                f"{name}: @pytest.mark.{BACKENDS} runs the test through anyio on each loop; it cannot also "
                "be @pytest.mark.asyncio (pytest-asyncio's). Keep one of the two marks."
            )
        if _asyncio_auto_mode(collector.config):
            raise collector.CollectError(
                f"{name}: @pytest.mark.{BACKENDS} needs pytest-asyncio in strict mode: in auto mode "
                "pytest-asyncio runs every async test on asyncio itself, so the uvloop and trio runs "
                "would not be what their ids say. Set asyncio_mode = strict (its default) and mark "
                "asyncio tests with @pytest.mark.asyncio."
            )
        from aiograd.testing._loops import loop_backends

        try:
            params = loop_backends(*backends.args)
        except ValueError as e:
            raise collector.CollectError(f"{name}: {e}") from None
        pytest.mark.parametrize("anyio_backend", params)(obj)
        # what anyio's own collection hook does for anyio-marked tests, done here as well
        # so that the order of the two hooks does not matter
        pytest.mark.usefixtures("anyio_backend")(obj)
        if _marker(collector, obj, "anyio") is None:
            pytest.mark.anyio(obj)


def _asyncio_auto_mode(config: pytest.Config) -> bool:
    """Whether pytest-asyncio is loaded in auto mode (it then takes every async test)."""
    if not config.pluginmanager.has_plugin("asyncio"):
        return False
    try:
        mode = config.getoption("asyncio_mode", default=None) or config.getini("asyncio_mode")
    except ValueError:  # a pytest-asyncio without these settings
        return False
    return str(getattr(mode, "value", mode)) == "auto"


@functools.lru_cache(maxsize=None)
def _pytest_watchdog_class() -> type:
    """aiograd's LoopBlockWatchdog, failing through ``pytest.fail`` (a message, no traceback)."""
    from aiograd.testing import LoopBlockWatchdog

    class PytestLoopBlockWatchdog(LoopBlockWatchdog):
        def check(self) -> None:
            if self.exceeded:
                pytest.fail(self.report(), pytrace=False)

    return PytestLoopBlockWatchdog


@pytest.fixture
def aiograd_loop_watchdog(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Fail this async test if its event loop is blocked longer than the limit.

    The limit is ``max_ms`` of ``@pytest.mark.aiograd_no_blocking(max_ms=...)``, else
    200 ms. The fixture's value is the ``aiograd.testing.LoopBlockWatchdog`` watching the
    test (``max_lag_ms``, ``ticks``, ``backend``). It wraps the test function, so the
    watchdog's ticker runs on the test's own loop: anyio-run tests (asyncio, uvloop,
    trio), pytest-asyncio tests and Hypothesis tests alike.
    """
    from aiograd.testing._loops import DEFAULT_MAX_BLOCK_MS

    item = request.node
    marker = item.get_closest_marker(NO_BLOCKING)
    max_ms: Any = DEFAULT_MAX_BLOCK_MS
    if marker is not None:
        max_ms = marker.kwargs.get("max_ms", marker.args[0] if marker.args else max_ms)
    if isinstance(max_ms, bool) or not isinstance(max_ms, (int, float)) or not (math.isfinite(max_ms) and max_ms > 0):
        pytest.fail(f"{NO_BLOCKING}(max_ms=...) must be a positive number of milliseconds, got {max_ms!r}", pytrace=False)
    watchdog = _pytest_watchdog_class()(max_ms=max_ms)

    with pytest.MonkeyPatch.context() as mp:
        handle = getattr(item.obj, "hypothesis", None)
        if handle is not None:
            inner = handle.inner_test
            # anyio's plugin leaves its sync wrapper behind between parametrized runs
            inner = getattr(inner, "_anyio_original_func", inner)
            if not inspect.iscoroutinefunction(inner):
                pytest.fail(f"{WATCHDOG_FIXTURE} / {NO_BLOCKING} is for async tests (async def)", pytrace=False)
            mp.setattr(handle, "inner_test", watchdog.wrap(inner))
        else:
            if not inspect.iscoroutinefunction(item.obj):
                pytest.fail(f"{WATCHDOG_FIXTURE} / {NO_BLOCKING} is for async tests (async def)", pytrace=False)
            mp.setattr(item, "obj", watchdog.wrap(item.obj))
        yield watchdog
