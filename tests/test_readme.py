"""The README: its example runs as written and gives a gradient whatever the random state,
what it points to exists, and it says how to install aiograd into one's own project.
(The examples of docs/ are run by test_docs.py.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag

ROOT = Path(__file__).resolve().parent.parent


def _first_python_block(path: Path) -> str:
    match = re.search(r"```python\n(.*?)```", path.read_text(), re.S)
    assert match is not None, f"no python block in {path.name}"
    return match.group(1)


async def _run_as_a_notebook_cell(source: str) -> dict[str, Any]:
    """Run ``source`` with top-level await, as a notebook or ``python -m asyncio`` would."""
    code = compile(source, "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {}
    result = eval(code, namespace)
    if result is not None:
        await result
    return namespace


@pytest.mark.asyncio(loop_factories=["asyncio"])
@pytest.mark.parametrize("draw", range(10))
async def test_the_example_runs_and_gives_a_gradient(draw: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever state the random generator is in, the example prints a gradient that is not all zero."""
    ag.manual_seed(draw)
    namespace = await _run_as_a_notebook_cell(_first_python_block(ROOT / "README.md"))
    assert np.abs(namespace["x"].grad.numpy()).sum() > 0
    capsys.readouterr()


def test_what_the_readme_points_to_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"[\w./-]+\.md\b", readme)) - {"README.md"}
    assert named, "the README names the user guide"
    assert [n for n in named if not (ROOT / n).exists()] == []


def test_the_readme_says_how_to_install_aiograd_into_a_project() -> None:
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"pip install \S*aiograd\S* @ git\+", readme.replace('"', ""))
    assert re.search(r"pip install (-e )?/path/to/aiograd", readme)


def test_the_readme_opens_with_the_commands_a_picture_the_example_and_links_to_notebooks_and_docs() -> None:
    """What aiograd is (its first paragraph), then the two commands, a picture, the example."""
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("**aiograd** is ")
    assert readme.index("**aiograd** is ") < readme.index("```")
    first_block = re.search(r"```\w*\n(.*?)```", readme, re.S)
    assert first_block is not None and first_block.group(1).split() == ["make", "demo", "make", "test"]
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert len(pictures) == 1
    picture = ROOT / pictures[0]
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size < 100_000  # small
    order = [readme.index(s) for s in ("make demo", pictures[0], "```python", "notebooks/01-quickstart.ipynb")]
    assert order == sorted(order), "commands, picture, example, then the links"
    notebooks = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    assert notebooks and [n for n in notebooks if f"({n})" not in readme] == []
    assert "(docs/README.md)" in readme
