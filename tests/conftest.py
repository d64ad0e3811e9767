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
  (default 200 ms: CI is a shared 2-core machine) at any moment of the test. These are
  this suite's names for aiograd's pytest plugin's ``aiograd_no_blocking`` marker and
  ``aiograd_loop_watchdog`` fixture (``_aiograd_pytest_plugin.py``), which users get.
* Warnings are errors (``filterwarnings = ["error"]`` in pyproject.toml). That
  includes ``RuntimeWarning: coroutine ... was never awaited``, which reaches pytest
  through ``sys.unraisablehook`` as ``PytestUnraisableExceptionWarning``.
* Hypothesis: the "ci" profile (30 examples, no deadline) is the default; pick
  another with ``HYPOTHESIS_PROFILE=dev`` (300 examples) or ``HYPOTHESIS_PROFILE=quick``.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import _aiograd_pytest_plugin
from aiograd.testing import LoopBlockWatchdog, loop_backends

try:  # uvloop has no Windows build
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

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

@pytest.fixture(scope="module", params=loop_backends())
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """The backend anyio's plugin runs a test (and its async fixtures) on."""
    return request.param


def _own_marks(obj: object) -> list[pytest.Mark]:
    marks = getattr(obj, "pytestmark", [])
    return marks if isinstance(marks, list) else [marks]


def _own_marker_names(obj: object) -> set[str]:
    return {getattr(m, "name", "") for m in _own_marks(obj)}


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
    _alias_no_blocking(collector, obj)
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
# Event-loop block watchdog: aiograd's pytest plugin, under the suite's names   #
# --------------------------------------------------------------------------- #
# The watchdog is aiograd's own pytest plugin (_aiograd_pytest_plugin.py, entry point
# "aiograd"), which users get too: @pytest.mark.aiograd_no_blocking and the
# aiograd_loop_watchdog fixture. This suite also says no_blocking / loop_block_watchdog,
# the names it had before the plugin existed; they are aliases, not a second watchdog.


def pytest_configure(config: pytest.Config) -> None:
    # Installed aiograd loads the plugin through its entry point; a checkout whose
    # install predates the entry point (or runs with plugin autoload off) gets it here.
    if not config.pluginmanager.is_registered(_aiograd_pytest_plugin):
        config.pluginmanager.register(_aiograd_pytest_plugin, "aiograd")
    config.addinivalue_line(
        "markers",
        "no_blocking(max_ms=200): this suite's name for aiograd_no_blocking (aiograd's pytest plugin): "
        "fail the test if the event loop is blocked longer than max_ms",
    )


def _alias_no_blocking(collector: pytest.Module | pytest.Class, obj: object) -> None:
    mark = next((m for m in _own_marks(obj) if m.name == "no_blocking"), None)
    mark = mark or collector.get_closest_marker("no_blocking")
    if mark is not None:
        pytest.mark.aiograd_no_blocking(*mark.args, **mark.kwargs)(obj)
        pytest.mark.usefixtures("aiograd_loop_watchdog")(obj)


@pytest.fixture
def loop_block_watchdog_factory() -> type[LoopBlockWatchdog]:
    """The watchdog class, to watch a section by hand: ``async with factory(max_ms=...):``."""
    return LoopBlockWatchdog


@pytest.fixture
def loop_block_watchdog(request: pytest.FixtureRequest) -> LoopBlockWatchdog:
    """The suite's name for the plugin's ``aiograd_loop_watchdog`` fixture."""
    return request.getfixturevalue("aiograd_loop_watchdog")


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
