"""Self-tests of the async test harness in conftest.py (they do not import aiograd)."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

import anyio
import pytest
import pytest_asyncio
import sniffio
from hypothesis import given, settings
from hypothesis import strategies as st

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

HERE = Path(__file__).resolve().parent


def backend_label() -> str:
    """'asyncio', 'uvloop' or 'trio', from inside a running task."""
    library = sniffio.current_async_library()
    if library == "asyncio":
        loop = asyncio.get_running_loop()
        if uvloop is not None and isinstance(loop, uvloop.Loop):
            return "uvloop"
        return "asyncio"
    return library


def param_id(request: pytest.FixtureRequest) -> str:
    return request.node.callspec.id


def collected_ids(request: pytest.FixtureRequest, originalname: str) -> set[str]:
    return {
        item.callspec.id  # type: ignore[attr-defined]
        for item in request.session.items
        if getattr(item, "originalname", None) == originalname
    }


# ----------------------------------------------------------------- anyio side --


async def test_unmarked_async_runs_on_its_backend(request: pytest.FixtureRequest) -> None:
    # handed to anyio's plugin by conftest's collection hook, not to pytest-asyncio
    assert "anyio_backend" in request.fixturenames
    assert request.node.get_closest_marker("anyio") is not None
    assert request.node.get_closest_marker("asyncio") is None
    assert backend_label() == param_id(request)
    await anyio.sleep(0)


def test_unmarked_async_is_collected_for_three_backends(
    request: pytest.FixtureRequest,
) -> None:
    ids = collected_ids(request, "test_unmarked_async_runs_on_its_backend")
    if not ids:
        pytest.skip("test_unmarked_async_runs_on_its_backend was deselected")
    expected = {"asyncio", "trio"} | ({"uvloop"} if uvloop is not None else set())
    assert ids == expected


@pytest.fixture
async def anyio_side_fixture():
    # plain async fixture: run by anyio on the test's backend and loop
    label = backend_label()
    async with anyio.create_task_group() as tg:  # task groups may span the yield
        yield label
        tg.cancel_scope.cancel()


async def test_plain_async_fixture_shares_the_backend(
    anyio_side_fixture: str, request: pytest.FixtureRequest
) -> None:
    assert anyio_side_fixture == backend_label() == param_id(request)


@pytest.mark.anyio
async def test_explicit_anyio_marker_is_the_same(request: pytest.FixtureRequest) -> None:
    assert backend_label() == param_id(request)


class TestInAClass:
    async def test_method(self, request: pytest.FixtureRequest) -> None:
        assert backend_label() == param_id(request)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_narrowed_to_trio(request: pytest.FixtureRequest) -> None:
    assert backend_label() == "trio"


@settings(max_examples=5)
@given(n=st.integers(min_value=0, max_value=3))
async def test_hypothesis_async_runs_on_anyio(n: int) -> None:
    await anyio.sleep(0)
    assert backend_label() in {"asyncio", "uvloop", "trio"}


# --------------------------------------------------------------- asyncio side --


@pytest_asyncio.fixture
async def asyncio_side_fixture():
    yield asyncio.get_running_loop()


@pytest.mark.asyncio
async def test_asyncio_marked_runs_on_both_loops(
    request: pytest.FixtureRequest, asyncio_side_fixture: asyncio.AbstractEventLoop
) -> None:
    loop = asyncio.get_running_loop()
    assert asyncio_side_fixture is loop
    assert "anyio_backend" not in request.fixturenames
    assert request.node.get_closest_marker("anyio") is None
    if param_id(request) == "uvloop":
        assert type(loop) is uvloop.Loop
    else:
        assert param_id(request) == "asyncio"
        assert uvloop is None or not isinstance(loop, uvloop.Loop)
        assert isinstance(loop, asyncio.BaseEventLoop)
    # asyncio-only APIs
    task = asyncio.create_task(asyncio.sleep(0, result=42))
    assert await asyncio.wait_for(task, timeout=5) == 42


def test_asyncio_marked_is_collected_for_two_loops(request: pytest.FixtureRequest) -> None:
    ids = collected_ids(request, "test_asyncio_marked_runs_on_both_loops")
    if not ids:
        pytest.skip("test_asyncio_marked_runs_on_both_loops was deselected")
    assert ids == ({"asyncio", "uvloop"} if uvloop is not None else {"asyncio"})


@pytest.mark.asyncio(loop_factories=["uvloop"])
async def test_asyncio_marked_narrowed_to_uvloop() -> None:
    assert backend_label() == "uvloop"


# ------------------------------------------------------------------- watchdog --


async def blocking_call(seconds: float) -> str:
    time.sleep(seconds)  # deliberately blocks the loop
    return "done"


async def test_watchdog_detects_a_blocked_loop(loop_block_watchdog_factory) -> None:
    watchdog = loop_block_watchdog_factory(max_ms=200)
    with pytest.raises(AssertionError, match="blocked for"):
        await watchdog.run(blocking_call, 0.5)
    assert watchdog.max_lag_ms >= 400
    assert watchdog.backend == backend_label()


async def test_watchdog_passes_a_cooperative_call(loop_block_watchdog_factory) -> None:
    watchdog = loop_block_watchdog_factory(max_ms=200)

    async def cooperative() -> str:
        for _ in range(5):
            await anyio.sleep(0.01)
        return "ok"

    assert await watchdog.run(cooperative) == "ok"
    assert watchdog.ticks > 0
    assert watchdog.max_lag_ms < 200


async def test_watchdog_lets_exceptions_through_unwrapped(loop_block_watchdog_factory) -> None:
    async def boom() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await loop_block_watchdog_factory().run(boom)


@pytest.mark.no_blocking(max_ms=1000)
async def test_no_blocking_marker_installs_the_fixture(loop_block_watchdog) -> None:
    assert loop_block_watchdog.max_ms == 1000
    await anyio.sleep(0.05)
    assert loop_block_watchdog.ticks > 0
    assert loop_block_watchdog.backend == backend_label()


@pytest.mark.asyncio
async def test_watchdog_fixture_on_pytest_asyncio(loop_block_watchdog) -> None:
    assert loop_block_watchdog.max_ms == 200
    await asyncio.sleep(0.05)
    assert loop_block_watchdog.ticks > 0


# ------------------------------------------------ end to end, in a sub-session --

INNER_TESTS = '''
import asyncio, time
import anyio
import pytest
from hypothesis import given, settings, strategies as st

async def helper():
    return 1

async def test_ok():
    await helper()

@pytest.mark.asyncio
async def test_ok_asyncio():
    await asyncio.sleep(0)

@pytest.mark.no_blocking(max_ms=100)
async def test_blocks_anyio():
    time.sleep(0.3)

@pytest.mark.asyncio
@pytest.mark.no_blocking(max_ms=100)
async def test_blocks_asyncio():
    await asyncio.sleep(0)
    time.sleep(0.3)

@pytest.mark.no_blocking
async def test_skips_under_watchdog():
    pytest.skip("skip is not wrapped in an ExceptionGroup")

@pytest.mark.no_blocking
@settings(max_examples=3)
@given(st.integers())
async def test_hypothesis_under_watchdog(n):
    await anyio.sleep(0)

@pytest.mark.asyncio
@pytest.mark.no_blocking
@settings(max_examples=3)
@given(st.integers())
async def test_hypothesis_asyncio_under_watchdog(n):
    await asyncio.sleep(0)

def test_never_awaited_sync():
    helper()

async def test_never_awaited_async():
    helper()

@pytest.mark.asyncio
@pytest.mark.anyio
async def test_claimed_by_both():
    pass
'''


def test_harness_end_to_end(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((HERE / "conftest.py").read_text())
    pytester.makefile(".toml", pyproject=(HERE.parent / "pyproject.toml").read_text())
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", "test_inner.py")
    n_loops = 2 if uvloop is not None else 1
    n_backends = n_loops + 1
    verdict = re.compile(r"^test_inner\.py::(\S+) (PASSED|FAILED|ERROR|SKIPPED)\b")
    outcomes = {
        m.group(1): m.group(2) for m in map(verdict.match, result.outlines) if m is not None
    }

    def of(name: str) -> set[str]:
        return {v for k, v in outcomes.items() if k.split("[")[0] == name}

    assert of("test_ok") == {"PASSED"}
    assert of("test_ok_asyncio") == {"PASSED"}
    assert of("test_blocks_anyio") == {"FAILED"}
    assert of("test_blocks_asyncio") == {"FAILED"}
    assert of("test_skips_under_watchdog") == {"SKIPPED"}
    assert of("test_hypothesis_under_watchdog") == {"PASSED"}
    assert of("test_hypothesis_asyncio_under_watchdog") == {"PASSED"}
    assert of("test_never_awaited_sync") == {"FAILED"}
    assert of("test_never_awaited_async") == {"FAILED"}
    assert of("test_claimed_by_both") == {"ERROR"}
    result.assert_outcomes(
        passed=2 * (n_backends + n_loops),
        failed=n_backends + n_loops + 1 + n_backends,
        skipped=n_backends,
        errors=n_loops * 3,
    )
    result.stdout.fnmatch_lines(["*event loop (*) was blocked for * ms (limit 100 ms)*"])
    result.stdout.fnmatch_lines(["*coroutine 'helper' was never awaited*"])
    result.stdout.fnmatch_lines(["*claimed by both pytest-asyncio*"])
    assert sys.modules.get("uvloop") is uvloop


def _test_extra_distributions() -> set[str]:
    """The distributions ``pip install -e .[test]`` installs: the test extra, the extras it
    names, and what those require in turn (normalized names)."""
    from importlib import metadata

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    def requirement(spec: str) -> tuple[str, set[str], str]:
        m = re.match(r"\s*([A-Za-z0-9._-]+)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?", spec)
        assert m is not None, spec
        extras = {e.strip() for e in (m.group(2) or "").split(",") if e.strip()}
        return norm(m.group(1)), extras, m.group(3) or ""

    # aiograd's own extras from pyproject.toml (the checkout's, installed or not), the rest
    # from the installed distributions' metadata.
    text = (HERE.parent / "pyproject.toml").read_text()
    block = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    own = {
        m.group(1): [q for q in re.findall(r'"([^"]+)"', m.group(2))]
        for m in re.finditer(r"(?ms)^(\w+) = \[(.*?)^\]", block)
    }
    seen: set[str] = set()
    todo: list[tuple[str, set[str]]] = [("aiograd", {"test"})]
    while todo:
        dist, extras = todo.pop()
        if dist == "aiograd":
            reqs = [f'{spec}; extra == "{extra}"' if ";" not in spec else spec
                    for extra in extras for spec in own.get(extra, [])]
        else:
            try:
                reqs = metadata.requires(dist) or []
            except metadata.PackageNotFoundError:
                continue
        for spec in reqs:
            name, sub_extras, marker = requirement(spec)
            wanted = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if wanted is not None and wanted.group(1) not in extras:
                continue
            if name == "aiograd":
                todo.append((name, sub_extras))
            elif name not in seen:
                seen.add(name)
                todo.append((name, sub_extras))
    return seen


def test_no_test_skips_on_a_package_the_test_extra_installs() -> None:
    """A test that imports with ``pytest.importorskip`` a package of the test extra would
    turn a broken install into a silent skip (without scikit-learn the training-accuracy
    tests skipped): such imports are plain imports, which fail."""
    from importlib import metadata

    installed = _test_extra_distributions()
    assert "scikit-learn" in installed and "pytest" in installed
    providers = metadata.packages_distributions()
    offenders = []
    for path in sorted(HERE.glob("**/*.py")):
        for m in re.finditer(r"importorskip\(\s*['\"]([\w.]+)['\"]", path.read_text()):
            top = m.group(1).split(".")[0]
            dists = {re.sub(r"[-_.]+", "-", d).lower() for d in providers.get(top, [top])}
            if dists & installed:
                offenders.append(f"{path.relative_to(HERE)}: importorskip({m.group(1)!r})")
    assert offenders == []
