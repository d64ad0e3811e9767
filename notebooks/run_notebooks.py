"""Execute the notebooks of this folder and save them with their outputs.

    python notebooks/run_notebooks.py                    # every notebook, in place
    python notebooks/run_notebooks.py 03-train-digits    # some of them (names or paths)

Each notebook runs top to bottom in a fresh kernel (nbclient, the ``python3``
kernel of this interpreter) whose working directory is this folder and whose
``aiograd`` is the checkout's (its root is put first on ``PYTHONPATH``). The
saved notebook keeps what a reader needs (outputs, pictures, the widgets'
state) and drops what would change on every run without meaning anything
(execution timestamps), so that diffs stay small. tests/test_notebooks.py runs
the same :func:`execute` on a temporary copy, so the tests write nothing here.
"""

from __future__ import annotations

import html
import os
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CELL_TIMEOUT_S = 300
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def notebook_paths() -> list[Path]:
    """The notebooks of this folder, in reading order."""
    return sorted(HERE.glob("[0-9][0-9]-*.ipynb"))


def execute(path: Path, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """Run the notebook at ``path`` in a kernel working in ``cwd``; return it with its outputs, cleaned.

    The kernel inherits this process's environment plus ``env``, with the
    checkout's root first on ``PYTHONPATH``; an error in a cell raises
    ``nbclient.exceptions.CellExecutionError``.
    """
    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    # The kernel is a subprocess started with os.environ (jupyter_client copies it).
    os.environ.update(env or {})
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [saved.get("PYTHONPATH")] if p])
    try:
        NotebookClient(
            nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(cwd)}},
            record_timing=False, coalesce_streams=True, store_widget_state=True,
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    clean(nb)
    return nb


def clean(nb: Any) -> None:
    """Drop volatile metadata; give progress-bar widgets a text fallback that shows where they ended.

    A tqdm widget's ``text/plain`` is the bar as it was when first displayed
    (0%); a viewer that does not run widgets (a repository's page) shows that
    text, so it is replaced by the bar's final state, read from the stored
    widget state.
    """
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(_WIDGET_VIEW)
            if view is not None:
                text = _progress_text(nb, view.get("model_id"))
                if text is not None:
                    out["data"]["text/plain"] = text
    nb.metadata.pop("papermill", None)


def _progress_text(nb: Any, model_id: str | None) -> str | None:
    """``desc: 100%|██████████| n/n [elapsed]`` from a tqdm HBox's stored state (None if not one)."""
    state = nb.metadata.get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})
    box = state.get(model_id)
    if box is None or box.get("model_name") != "HBoxModel":
        return None
    children = [state.get(ref.removeprefix("IPY_MODEL_"), {}) for ref in box["state"].get("children", [])]
    if [c.get("model_name") for c in children] != ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        return None
    left, bar, right = (c.get("state", {}) for c in children)
    frac = bar.get("value", 0) / bar.get("max", 1) if bar.get("max") else 0.0
    filled = round(10 * min(max(frac, 0.0), 1.0))
    return f"{html.unescape(left.get('value', ''))}|{'█' * filled}{' ' * (10 - filled)}|{html.unescape(right.get('value', ''))}"


def stderr_outputs(nb: Any) -> list[str]:
    """Everything the notebook's cells wrote to stderr (warnings land there)."""
    return [out.get("text", "") for cell in nb.cells for out in cell.get("outputs", [])
            if out.get("output_type") == "stream" and out.get("name") == "stderr"]


def _resolve(name: str) -> Path:
    path = Path(name)
    if path.exists():
        return path.resolve()
    matches = [p for p in notebook_paths() if p.stem == name or p.stem.startswith(name)]
    if len(matches) != 1:
        raise SystemExit(f"no single notebook matches {name!r}: {[p.name for p in matches]}")
    return matches[0]


def main(argv: list[str]) -> int:
    paths = [_resolve(a) for a in argv] or notebook_paths()
    for path in paths:
        t0 = time.perf_counter()
        nb = execute(path, cwd=path.parent)
        nbformat.write(nb, path)
        errs = stderr_outputs(nb)
        print(f"{path.name}: {time.perf_counter() - t0:.1f} s" + (f"  ({len(errs)} stderr outputs!)" if errs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
