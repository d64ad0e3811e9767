"""The notebooks of notebooks/ run top to bottom, warning-free, and are committed with their outputs.

Each notebook is executed headless (nbclient, a fresh ``python3`` kernel of
this interpreter importing this checkout's aiograd) from a copy in a temporary
folder, so that what it writes (05's trace file) lands there and the
repository stays as it was. Warnings are shown in the kernel
(``PYTHONWARNINGS=default``) and any output on stderr fails the test, as
warnings fail the rest of the suite. notebooks/run_notebooks.py does the
executing, here and when the committed outputs are regenerated.
"""

from __future__ import annotations

import re
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

# The test extra installs these: a plain import fails where a skip would hide a broken install.
import ipykernel  # noqa: F401  # the kernel the notebooks run on
import nbclient  # noqa: F401
import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = ["01-quickstart", "02-async-backward", "03-train-digits", "04-custom-functions-and-checkpointing",
            "05-devices-and-trace", "06-distributed", "07-agent"]


def _runner() -> Any:
    """notebooks/run_notebooks.py as a module, compiled here: an import would write notebooks/__pycache__."""
    path = NOTEBOOKS / "run_notebooks.py"
    module = types.ModuleType("run_notebooks")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


run_notebooks = _runner()
PATHS = run_notebooks.notebook_paths()


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_every_notebook_is_there() -> None:
    assert [p.stem for p in PATHS][:len(EXPECTED)] == EXPECTED


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_top_to_bottom_without_warnings(path: Path, tmp_path: Path) -> None:
    before = _snapshot(NOTEBOOKS)
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    nb = run_notebooks.execute(copy, cwd=tmp_path, env={"PYTHONWARNINGS": "default"})  # raises on a cell's error
    assert run_notebooks.stderr_outputs(nb) == []
    assert all(cell.execution_count is not None for cell in nb.cells if cell.cell_type == "code")
    assert _snapshot(NOTEBOOKS) == before, "running a notebook wrote into notebooks/"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_committed_with_outputs_and_no_volatile_metadata(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), "run it top to bottom: python notebooks/run_notebooks.py"
    outputs = [out for cell in code for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    assert any("image/png" in out.get("data", {}) for out in outputs), "no picture"
    assert run_notebooks.stderr_outputs(nb) == []
    assert not [cell.id for cell in code if "execution" in cell.metadata], "timings: run it with run_notebooks.py"
    markdown = [cell for cell in nb.cells if cell.cell_type == "markdown"]
    assert len(markdown) >= len(code) // 2, "a few sentences of prose per step"


_NODE_NAME = re.compile(r"`(\w+Backward\d+|AccumulateGrad)`")


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_the_graph_nodes_a_text_names_are_in_the_picture_below_it(path: Path) -> None:
    """A markdown cell that names backward nodes (``AddmmBackward0``) above a cell whose saved
    output is a graph picture (SVG): the picture shows each node named."""
    cells = nbformat.read(path, as_version=4).cells
    for text, code in zip(cells, cells[1:]):
        if text.cell_type != "markdown" or code.cell_type != "code":
            continue
        svgs = ["".join(out["data"]["image/svg+xml"]) for out in code.outputs if "image/svg+xml" in out.get("data", {})]
        names = set(_NODE_NAME.findall("".join(text.source)))
        if svgs and names:
            shown = set(re.findall(r">([\w.]+)</text>", svgs[0]))
            assert names <= shown, f"named in the text but not in the picture: {sorted(names - shown)}"


def test_the_two_devices_notebook_says_what_its_measurement_shows() -> None:
    """05 times one device against two: its saved output states the speedup it measured and,
    under it, the case it met (faster, or no gain on a busy machine), as the text explains."""
    nb = nbformat.read(NOTEBOOKS / "05-devices-and-trace.ipynb", as_version=4)
    printed = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    m = re.search(r"\((\d+\.\d+)x; ", printed)
    assert m is not None, "the speedup line"
    verdict = "two devices: faster" if float(m.group(1)) >= 1.15 else "two devices: no gain on this machine"
    assert verdict in printed
    assert re.search(r"computed at the same time for \d+\.\d+ ms", printed)
