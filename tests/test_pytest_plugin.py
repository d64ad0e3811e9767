"""aiograd's pytest plugin (_aiograd_pytest_plugin.py), run on small suites with pytester.

Each inner session loads the plugin by module name after blocking the ``aiograd`` entry
point (``-p no:aiograd -p _aiograd_pytest_plugin``): the same whether or not the installed
aiograd predates the entry point. anyio's and pytest-asyncio's plugins load as usual.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

import _aiograd_pytest_plugin

ROOT = Path(__file__).resolve().parent.parent
LOAD = ("-p", "no:aiograd", "-p", "_aiograd_pytest_plugin")
STRICT = ("--strict-markers", "-p", "no:cacheprovider")

# The inner sessions' settings: warnings are errors, except that an in-process session
# finds the plugin module imported already (by this file), which pytest warns it cannot
# assertion-rewrite; a user's session imports it fresh.
INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning
"""


@pytest.fixture(autouse=True)
def _inner_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)


def outcomes(result: pytest.RunResult, module: str = "test_inner.py") -> dict[str, str]:
    """test id -> PASSED / FAILED / ERROR / SKIPPED, from a ``-v`` run."""
    verdict = re.compile(rf"^{re.escape(module)}::(\S+) (PASSED|FAILED|ERROR|SKIPPED)\b")
    return {m.group(1): m.group(2) for m in map(verdict.match, result.outlines) if m is not None}


BLOCKING = '''
import asyncio, time
import anyio
import pytest

@pytest.mark.anyio
@pytest.mark.aiograd_no_blocking(max_ms=100)
async def test_blocks():
    await anyio.sleep(0)
    time.sleep(0.3)

@pytest.mark.anyio
@pytest.mark.aiograd_no_blocking(max_ms=100)
async def test_cooperative():
    for _ in range(5):
        await anyio.sleep(0.01)

@pytest.mark.asyncio
@pytest.mark.aiograd_no_blocking(max_ms=100)
async def test_blocks_on_pytest_asyncio():
    time.sleep(0.3)

@pytest.mark.anyio
async def test_fixture_watches(aiograd_loop_watchdog):
    await anyio.sleep(0.05)
    assert aiograd_loop_watchdog.max_ms == 200 and aiograd_loop_watchdog.ticks > 0
    time.sleep(0.3)

@pytest.mark.aiograd_no_blocking(max_ms=100)
class TestClassMarked:
    @pytest.mark.anyio
    async def test_blocks_in_class(self):
        time.sleep(0.3)

@pytest.mark.anyio
@pytest.mark.aiograd_no_blocking(max_ms=-5)
async def test_bad_limit():
    pass
'''


def test_a_blocked_loop_fails_the_test_and_names_the_block(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=BLOCKING)
    result = pytester.runpytest(*LOAD, *STRICT, "-v", "test_inner.py")
    got = outcomes(result)
    # anyio's plugin runs an anyio-marked test on each backend it has (asyncio, trio)
    assert {k for k, v in got.items() if v == "FAILED"} == {
        "test_blocks[asyncio]", "test_blocks[trio]",
        "test_blocks_on_pytest_asyncio",
        "test_fixture_watches[asyncio]", "test_fixture_watches[trio]",
        "TestClassMarked::test_blocks_in_class[asyncio]", "TestClassMarked::test_blocks_in_class[trio]",
    }
    assert {k for k, v in got.items() if v == "PASSED"} == {"test_cooperative[asyncio]", "test_cooperative[trio]"}
    assert {k for k, v in got.items() if v == "ERROR"} == {"test_bad_limit[asyncio]", "test_bad_limit[trio]"}
    result.stdout.fnmatch_lines(["*event loop (asyncio) was blocked for * ms (limit 100 ms): something ran synchronously*"])
    result.stdout.fnmatch_lines(["*event loop (trio) was blocked for * ms (limit 100 ms)*"])
    result.stdout.fnmatch_lines(["*event loop (asyncio) was blocked for * ms (limit 200 ms)*"])
    result.stdout.fnmatch_lines(["*aiograd_no_blocking(max_ms=...) must be a positive number of milliseconds, got -5*"])
    blocked = [int(m.group(1)) for m in re.finditer(r"was blocked for (\d+) ms", result.stdout.str())]
    assert blocked and all(ms >= 250 for ms in blocked)
    # pytest.fail(pytrace=False): the message, not a traceback through the plugin
    assert "_aiograd_pytest_plugin.py" not in result.stdout.str()


BACKENDS = '''
import asyncio
import pytest
import sniffio

def loop_name():
    if sniffio.current_async_library() == "trio":
        return "trio"
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"

@pytest.mark.aiograd_backends
async def test_every_loop(request):
    assert loop_name() == request.node.callspec.id

@pytest.mark.aiograd_backends("trio", "asyncio")
async def test_two_loops(request):
    assert loop_name() == request.node.callspec.id

@pytest.fixture
async def async_fixture():
    yield loop_name()

@pytest.mark.aiograd_backends
async def test_async_fixture_on_the_same_loop(async_fixture, request):
    assert async_fixture == loop_name() == request.node.callspec.id

@pytest.mark.aiograd_backends
@pytest.mark.aiograd_no_blocking(max_ms=1000)
async def test_both_markers(aiograd_loop_watchdog, request):
    await asyncio.sleep(0) if loop_name() != "trio" else None
    assert aiograd_loop_watchdog.backend == loop_name()
'''


def test_backends_marker_runs_the_test_on_each_loop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=BACKENDS)
    result = pytester.runpytest(*LOAD, *STRICT, "-v", "test_inner.py")
    got = outcomes(result)
    loops = ["asyncio", "uvloop", "trio"] if uvloop is not None else ["asyncio", "trio"]
    for name in ("test_every_loop", "test_async_fixture_on_the_same_loop", "test_both_markers"):
        assert {k for k in got if k.startswith(name + "[")} == {f"{name}[{loop}]" for loop in ["asyncio", "uvloop", "trio"]}
        assert {got[f"{name}[{loop}]"] for loop in loops} == {"PASSED"}
    assert {k: v for k, v in got.items() if k.startswith("test_two_loops")} == {
        "test_two_loops[asyncio]": "PASSED", "test_two_loops[trio]": "PASSED",
    }


MISUSE = '''
import pytest

@pytest.mark.aiograd_backends("curio")
async def test_unknown_loop():
    pass

@pytest.mark.asyncio
@pytest.mark.aiograd_backends
async def test_both_plugins():
    pass

@pytest.mark.aiograd_no_blocking
def test_not_async():
    pass

@pytest.mark.aiograd_backends
async def test_backends_in_auto_mode():
    pass
'''


def test_misuse_is_a_collection_error_that_says_why(pytester: pytest.Pytester) -> None:
    for name, text, extra in (
        ("test_unknown_loop", "*test_unknown_loop: unknown loop backend 'curio': the backends are asyncio, uvloop, trio*", ()),
        ("test_both_plugins", "*test_both_plugins: @pytest.mark.aiograd_backends runs the test through anyio on each loop;"
                              " it cannot also be @pytest.mark.asyncio*", ()),
        ("test_not_async", "*test_not_async: @pytest.mark.aiograd_no_blocking is for async tests (async def)*", ()),
        # in auto mode pytest-asyncio would run the [uvloop] and [trio] cases on asyncio
        ("test_backends_in_auto_mode", "*test_backends_in_auto_mode: @pytest.mark.aiograd_backends needs pytest-asyncio "
                                       "in strict mode*", ("-o", "asyncio_mode=auto")),
    ):
        pytester.makepyfile(test_inner=_only(MISUSE, name))
        result = pytester.runpytest(*LOAD, *STRICT, *extra, "test_inner.py")
        result.stdout.fnmatch_lines(["*ERROR collecting test_inner.py*", text])
        assert result.ret != 0


def _only(source: str, test: str) -> str:
    """``source`` with only the decorated function ``test`` kept (and the imports)."""
    header, *blocks = source.split("\n\n")
    return "\n\n".join([header] + [b for b in blocks if f"def {test}(" in b])


UNMARKED = '''
import asyncio, sys
import anyio
import pytest

def test_sync(request):
    assert not any(name.startswith("aiograd") for name in request.fixturenames)

@pytest.mark.anyio
async def test_anyio(request):
    assert not any(name.startswith("aiograd") for name in request.fixturenames)
    await anyio.sleep(0)

@pytest.mark.asyncio
async def test_asyncio(request):
    assert not any(name.startswith("aiograd") for name in request.fixturenames)
    await asyncio.sleep(0)

@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    pass

def test_no_aiograd_imported():
    # loading the plugin imported nothing of aiograd (nor its BLAS settings)
    assert not [m for m in sys.modules if m == "aiograd" or m.startswith("aiograd.")]
'''


def test_a_suite_without_the_markers_is_unaffected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=UNMARKED)
    # a fresh interpreter, so that "aiograd is not imported" means something
    with_plugin = pytester.runpytest_subprocess(*LOAD, *STRICT, "-v", "test_inner.py")
    without = pytester.runpytest_subprocess("-p", "no:aiograd", *STRICT, "-v", "test_inner.py")
    assert outcomes(with_plugin) == outcomes(without)
    assert set(outcomes(with_plugin).values()) == {"PASSED"}
    assert len(outcomes(with_plugin)) == 7  # anyio: asyncio and trio


def test_markers_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*LOAD, "--markers")
    result.stdout.fnmatch_lines([
        "@pytest.mark.aiograd_no_blocking(max_ms=200): fail this async test if its event loop is blocked longer*",
        "@pytest.mark.aiograd_backends(*names): run this async test on each event loop, asyncio, uvloop and trio*",
    ])


def test_alongside_aiograd_suite_conftest(pytester: pytest.Pytester) -> None:
    # aiograd's own conftest registers the plugin unless it is registered already (under
    # any name, as the entry point does): loading it both ways is no conflict, and the
    # suite's no_blocking alias and the plugin's marker are one watchdog.
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    # test_plain comes first: after a test that blocked its loop on purpose, a runner shared
    # by the module (trio's) can still be catching up when the next test's watchdog starts
    pytester.makepyfile(test_inner='''
import time
import pytest

async def test_plain(loop_block_watchdog):
    assert type(loop_block_watchdog).__name__ == "PytestLoopBlockWatchdog"

@pytest.mark.no_blocking(max_ms=100)
async def test_alias():
    time.sleep(0.3)

@pytest.mark.aiograd_no_blocking(max_ms=100)
async def test_plugin_marker():
    time.sleep(0.3)
''')
    for load in (LOAD, ()):
        result = pytester.runpytest(*load, *STRICT, "-v", "test_inner.py")
        got = outcomes(result)
        assert {v for k, v in got.items() if not k.startswith("test_plain")} == {"FAILED"}
        assert {v for k, v in got.items() if k.startswith("test_plain")} == {"PASSED"}
        result.stdout.fnmatch_lines(["*was blocked for * ms (limit 100 ms)*"])


def test_entry_point_is_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.entry-points.pytest11]", 1)[1].split("\n[", 1)[0]
    assert 'aiograd = "_aiograd_pytest_plugin"' in section
    # the wheel carries the top-level module
    assert '"_aiograd_pytest_plugin.py" = "_aiograd_pytest_plugin.py"' in text
    from importlib.metadata import entry_points

    installed = [ep for ep in entry_points(group="pytest11") if ep.name == "aiograd"]
    # an install from before the entry point existed has none; a current one, this one
    assert all(ep.value == "_aiograd_pytest_plugin" for ep in installed)
    assert sys.modules["_aiograd_pytest_plugin"] is _aiograd_pytest_plugin


def test_how_to_example_runs(pytester: pytest.Pytester) -> None:
    """The test file of docs/how-to/testing-async-code.md, as a user's suite."""
    page = (ROOT / "docs" / "how-to" / "testing-async-code.md").read_text()
    blocks = re.findall(r"```python\n(# test_\w+\.py\n.*?)```", page, flags=re.S)
    assert blocks, "the how-to lost its example test file"
    for block in blocks:
        name = block.splitlines()[0][2:]
        pytester.makepyfile(**{name[:-3]: block})
    # in a process of its own, as a user's suite runs: in this one, a full collection of the
    # whole suite's heap can land inside the example's watched step (480 ms once, in CI)
    result = pytester.runpytest_subprocess(*LOAD, *STRICT, "-v")
    # two tests on every loop, one on anyio's default backends (asyncio, trio)
    n_loops = 3 if uvloop is not None else 2
    result.assert_outcomes(passed=2 * n_loops + 2, skipped=2 * (3 - n_loops))
