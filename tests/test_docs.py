"""The documentation site (docs/): the API reference covers the public API, and the examples run.

The site itself is built by ``make docs`` (``mkdocs build --strict``), which
``make test`` runs after the test suite; these tests check what the build
cannot:

* every name in ``aiograd.__all__``, and in the ``__all__`` of every public
  submodule, is documented in ``docs/reference/`` (by a ``::: identifier``
  directive of mkdocstrings that resolves to that very object, or by a module
  directive that renders it);
* every ``python`` code block of every page runs. Blocks of a page run top to
  bottom in one namespace, like the cells of a notebook: those with a
  top-level ``await`` on one event loop kept for the page, the others with no
  loop running (so ``backward_sync`` and ``asyncio.run`` work). A comment line
  right above a block's fence can make it conditional:
  ``<!-- docs-test: skip -->`` (never run),
  ``<!-- docs-test: needs aiograd.profiler -->`` (run once that module imports),
  ``<!-- docs-test: python>=3.11 -->``. A page that says
  ``<!-- docs-test: notebook -->`` runs every block on the loop, as a
  notebook runs cells;
* the griffe extension that feeds mkdocstrings aiograd's computed ``__all__``
  lists and import-time functions does its job.
"""

from __future__ import annotations

import ast
import asyncio
import contextvars
import importlib
import importlib.util
import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

import aiograd as ag

DOCS = Path(__file__).resolve().parent.parent / "docs"
REFERENCE = DOCS / "reference"

# ----- the API reference --------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*):::[ \t]+(?P<ident>[\w.]+)[ \t]*$")


def reference_directives() -> list[tuple[str, str, dict[str, Any]]]:
    """Every ``::: identifier`` of the reference pages, as (page, identifier, options)."""
    found = []
    for page in sorted(REFERENCE.glob("*.md")):
        lines = page.read_text().splitlines()
        fence = None  # the fence of the code block we are in (directives there are examples)
        for i, line in enumerate(lines):
            f = _FENCE.match(line)
            if f is not None and (fence is None or line.strip().startswith(fence)):
                fence = f["fence"] if fence is None else None
                continue
            m = _DIRECTIVE.match(line)
            if m is None or fence is not None:
                continue
            indent = len(m["indent"])
            block = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                block.append(nxt)
            config = yaml.safe_load("\n".join(block)) if any(b.strip() for b in block) else None
            options = (config or {}).get("options", {}) or {}
            found.append((page.name, m["ident"], options))
    return found


def resolve(identifier: str) -> Any:
    """The live object an mkdocstrings identifier names (its longest importable module, then attributes).

    Importing, not attribute access, picks the module: ``aiograd.tensor`` is the
    creation function as an attribute but the module ``aiograd/tensor.py`` to import.
    """
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(identifier)


def module_members(module: types.ModuleType, options: dict[str, Any]) -> list[Any]:
    """What a module directive renders besides the module: its ``__all__``, or the listed members."""
    members = options.get("members", True)
    if members is False:
        return []
    names = members if isinstance(members, list) else getattr(module, "__all__", [])
    return [getattr(module, n) for n in names]


def documented_objects() -> list[Any]:
    objects = []
    for _, ident, options in reference_directives():
        obj = resolve(ident)
        objects.append(obj)
        if inspect.ismodule(obj):
            objects.extend(module_members(obj, options))
    return objects


def public_modules() -> list[types.ModuleType]:
    """aiograd and every module named in the ``__all__`` of a public module, recursively."""
    out: list[types.ModuleType] = []
    todo = [ag]
    while todo:
        mod = todo.pop(0)
        if mod in out:
            continue
        out.append(mod)
        todo.extend(v for n in getattr(mod, "__all__", []) if inspect.ismodule(v := getattr(mod, n)))
    return out


def _is_value(obj: Any) -> bool:
    """Plain values (dtypes): documented by name in a table, not by a directive."""
    return not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj))


def test_reference_directives_resolve() -> None:
    bad = []
    for page, ident, _ in reference_directives():
        try:
            resolve(ident)
        except (ImportError, AttributeError) as e:
            bad.append(f"{page}: ::: {ident} ({e})")
    assert bad == [], "reference directives that name nothing:\n" + "\n".join(bad)


@pytest.mark.parametrize("module", public_modules(), ids=lambda m: m.__name__)
def test_every_public_name_is_in_the_api_reference(module: types.ModuleType) -> None:
    documented = documented_objects()
    text = "\n".join(p.read_text() for p in REFERENCE.glob("*.md"))
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        if _is_value(obj):
            if not re.search(rf"\b(?:{re.escape(module.__name__)}|ag)\.{re.escape(name)}\b", text):
                missing.append(name)
        elif not any(d is obj for d in documented):
            missing.append(name)
    assert missing == [], (
        f"names of {module.__name__}.__all__ missing from the API reference: {missing}. "
        f"Add a line `::: {module.__name__}.NAME` to the right section of a page in docs/reference/ "
        "(a new module: a page docs/reference/MODULE.md with `::: aiograd.MODULE`, and a line in "
        "the nav of mkdocs.yml)"
    )


def test_every_reference_page_is_in_the_nav() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    pages = [p.name for p in REFERENCE.glob("*.md")]
    assert [p for p in pages if f"reference/{p}" not in nav] == []


# ----- the code examples --------------------------------------------------------------

_MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<what>.+?)\s*-->")
_NOTEBOOK = "<!-- docs-test: notebook -->"


def code_blocks(page: Path) -> Iterator[tuple[int, str, str | None]]:
    """The ``python`` blocks of a page as (line number, code, marker or None)."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, indent, fence = i, len(m["indent"]), m["fence"]
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:])
            i += 1
        i += 1
        if m["lang"] != "python":
            continue
        prev = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        marker = _MARKER.search(prev)
        yield start + 1, "\n".join(body) + "\n", marker["what"] if marker else None


def _should_skip(marker: str | None) -> str | None:
    if marker is None:
        return None
    if marker == "skip":
        return "marked skip"
    if marker.startswith("needs "):
        module = marker[len("needs "):].strip()
        if importlib.util.find_spec(module.split(".")[0]) is None:
            return f"needs {module}"
        try:
            importlib.import_module(module)
        except ImportError:
            return f"needs {module}"
        return None
    if marker.startswith("python>="):
        want = tuple(int(p) for p in marker[len("python>="):].split("."))
        return None if sys.version_info >= want else f"needs Python {marker[len('python>='):]}"
    raise ValueError(f"unknown docs-test marker {marker!r}")


# Pages whose examples are known not to run, with the reason. Strict: once a page is
# fixed its test passes, XPASS fails, and the entry must go.
KNOWN_BROKEN: dict[str, str] = {}


def _pages() -> list[Any]:
    pages = sorted(p for p in DOCS.rglob("*.md") if any(True for _ in code_blocks(p)))
    return [
        pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_BROKEN[name], strict=True))
        if (name := str(p.relative_to(DOCS))) in KNOWN_BROKEN
        else p
        for p in pages
    ]


class _Knobs:
    """aiograd's process-wide settings a page may change, restored after it."""

    def __enter__(self) -> None:
        self.saved = (ag.get_time_slice(), ag.get_offload(), ag.get_default_dtype())
        self.flags = (ag.backends.cudnn.benchmark, ag.backends.cudnn.deterministic,
                      ag.backends.cuda.matmul.allow_tf32)

    def __exit__(self, *exc: object) -> None:
        slice_, offload, dtype = self.saved
        ag.set_time_slice(slice_)
        ag.set_offload(offload)
        ag.set_default_dtype(dtype)
        (ag.backends.cudnn.benchmark, ag.backends.cudnn.deterministic,
         ag.backends.cuda.matmul.allow_tf32) = self.flags


async def _cancel_leftover_tasks() -> None:
    """Cancel and await the tasks a page left running (a background job it never awaited)."""
    leftover = asyncio.all_tasks() - {asyncio.current_task()}
    for task in leftover:
        task.cancel()
    await asyncio.gather(*leftover, return_exceptions=True)


async def _as_cell(compiled: types.CodeType, namespace: dict[str, Any]) -> None:
    """Run a block inside the event loop, as a notebook runs a cell."""
    result = eval(compiled, namespace)  # noqa: S307 - our own documentation
    if inspect.iscoroutine(result):
        await result


def run_page(page: Path) -> list[str]:
    """Run the page's python blocks in order; return why blocks were skipped.

    One event loop is kept for the whole page, so a task started in one block
    may be awaited in a later one. Blocks with a top-level ``await`` run on it;
    the others run with no loop running, as a script's top level does, unless
    the page says ``<!-- docs-test: notebook -->``: then every block runs on
    the loop, as a notebook cell.
    """
    namespace: dict[str, Any] = {"__name__": "__main__"}
    notebook = _NOTEBOOK in page.read_text()
    skipped = []
    loop = asyncio.new_event_loop()
    try:
        for line, code, marker in code_blocks(page):
            reason = _should_skip(marker)
            if reason is not None:
                skipped.append(f"line {line}: {reason}")
                continue
            compiled = compile(code, f"{page.relative_to(DOCS)}:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            if notebook:
                loop.run_until_complete(_as_cell(compiled, namespace))
                continue
            result = eval(compiled, namespace)  # noqa: S307 - our own documentation
            if inspect.iscoroutine(result):
                loop.run_until_complete(result)
    finally:
        loop.run_until_complete(_cancel_leftover_tasks())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return skipped


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_code_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples may write files (a trace, a picture)
    with _Knobs():
        skipped = contextvars.copy_context().run(run_page, page)
    if skipped and len(skipped) == len(list(code_blocks(page))):
        pytest.skip("; ".join(skipped))


def test_code_block_parser_reads_markers_and_indented_fences(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n```python\na = 1\n```\n\n<!-- docs-test: skip -->\n```python\nb = 2\n```\n\n"
        "!!! note\n    ```python\n    c = 3\n    ```\n\n```bash\nls\n```\n"
    )
    assert list(code_blocks(page)) == [(3, "a = 1\n", None), (8, "b = 2\n", "skip"), (13, "c = 3\n", None)]


# ----- the griffe extension -------------------------------------------------------------


def test_griffe_extension_reads_computed_all_and_import_time_functions(tmp_path: Path) -> None:
    """A package whose ``__all__`` is computed, with functions made at import time and a class with dunders."""
    import griffe
    pkg = tmp_path / "docsfixturepkg"
    pkg.mkdir()
    (pkg / "_impl.py").write_text(
        "def _make(name):\n"
        "    def op(x: 'int', *, scale: float = 2.0) -> 'int':\n"
        "        return x\n"
        "    op.__name__ = op.__qualname__ = name\n"
        "    op.__doc__ = f'The {name} op.'\n"
        "    return op\n\n"
        "made = _make('made')\n\n"
        "def written(y: int) -> int:\n"
        "    '''Written in the source.'''\n"
        "    return y\n\n"
        "class Thing:\n"
        "    def __init__(self, size: int) -> None: ...\n"
        "    def __len__(self) -> int: ...\n"
        "    def _helper(self) -> None: ...\n"
        "    def method(self) -> None: ...\n\n"
        "__all__ = [n for n in ('made', 'written', 'Thing')]\n"
    )
    (pkg / "__init__.py").write_text(
        "from . import _impl\nfrom ._impl import *\n__all__ = list(_impl.__all__)\n"
    )
    spec = importlib.util.spec_from_file_location("_griffe_runtime_exports", DOCS / "_griffe_runtime_exports.py")
    assert spec is not None and spec.loader is not None
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    sys.path.insert(0, str(tmp_path))
    try:
        loader = griffe.GriffeLoader(
            search_paths=[str(tmp_path)],
            extensions=griffe.load_extensions(ext.RuntimeExports(packages=["docsfixturepkg"])),
        )
        mod = loader.load("docsfixturepkg")
        loader.resolve_aliases(implicit=False, external=False)
        made, written = mod["made"], mod["written"]
        assert made.is_function and made.docstring.value == "The made op."
        assert [(p.name, p.annotation, p.default) for p in made.parameters] == [("x", "int", None), ("scale", "float", "2.0")]
        assert written.is_function and written.docstring.value == "Written in the source."
        assert sorted(mod["Thing"].members) == ["__init__", "method"]  # dunders and _private dropped
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("docsfixturepkg")]:
            del sys.modules[name]


# ----- what the rendered reference shows ----------------------------------------------------


def _docs_module(name: str) -> types.ModuleType:
    """A module of docs/ (the griffe extension, the mkdocs hooks), loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rendered_tree() -> Any:
    """aiograd as mkdocstrings sees it: loaded by griffe with the extensions of mkdocs.yml."""
    import griffe

    ext = _docs_module("_griffe_runtime_exports")
    config = yaml.safe_load((DOCS.parent / "mkdocs.yml").read_text().replace("!!python", "#"))
    (mkdocstrings,) = [p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p]
    names = [e.split(":", 1)[1] for e in mkdocstrings["handlers"]["python"]["options"]["extensions"]]
    assert names == ["RuntimeExports", "InternalNotes"]
    loader = griffe.GriffeLoader(
        search_paths=[str(DOCS.parent)],
        extensions=griffe.load_extensions(*(getattr(ext, n)() for n in names)),
        docstring_parser=griffe.Parser.google,
    )
    pkg = loader.load("aiograd")
    loader.resolve_aliases(implicit=True, external=False)
    return pkg


def _objects(obj: Any, seen: set[str]) -> Iterator[Any]:
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member, seen)


def test_docstrings_show_no_internal_notes_or_raw_roles(rendered_tree: Any) -> None:
    """The code's NOTE [Name] citations stay in the code; a raw reStructuredText role
    (``:func:`x```) would show as typed. The hook in docs/_hooks.py fails the site's build
    on either in the HTML; this finds them in the docstrings first, naming the object."""
    hooks = _docs_module("_hooks")
    bad = {}
    for obj in _objects(rendered_tree, set()):
        if obj.docstring is not None:
            found = hooks.leaks(obj.docstring.value.replace("``", "`"))
            if found:
                bad[obj.path] = found
    assert bad == {}


def test_internal_notes_are_cut_with_the_words_that_cite_them() -> None:
    strip = _docs_module("_griffe_runtime_exports").strip_internal_notes
    assert strip("picks (NOTE [Ties] in _tie_order.py).") == "picks."
    assert strip("staged (see engine.py NOTE [Staged gradients]); then") == "staged; then"
    assert strip("(nodes: View over Addmm; NOTE [Linear layout] in ops/nn.py).") == "(nodes: View over Addmm)."
    assert strip("(NaN with NaN: NOTE [NaN extrema] in reduce.py)") == "(NaN with NaN)"
    assert strip("a triangle. See NOTE [Factorization gradients] for the caveats.") == "a triangle."
    assert strip("NOTE [Diagonal adjoint pair]: ``diagonal`` reads") == "``diagonal`` reads"
    assert strip("a pass (NOTE [Hot loop] (a), (d)).") == "a pass."
    assert strip("registers it for NOTE [Live views]. Then") == "registers it for Live views. Then"


def test_the_build_hook_finds_notes_and_raw_roles_in_html() -> None:
    leaks = _docs_module("_hooks").leaks
    assert leaks("<p>as for :func:<code>backward</code>.</p>") == [":func:`"]
    assert leaks("<p>staged (NOTE [Staged gradients]).</p>") == ["NOTE [Staged gradients]"]
    assert leaks("<p>a <code>NOTE</code> comment, the role <code>:func:</code></p>") == []


def test_reference_pages_show_signatures_and_no_empty_boxes(rendered_tree: Any) -> None:
    """backward_sync and grad_sync show backward's and grad's parameters (not *args, **kwargs);
    a module with a page of its own is introduced once, by the page (its docstring is not
    rendered); instance attributes without a docstring are not rendered as empty boxes."""
    autograd = rendered_tree["autograd"]
    for sync, form in (("backward_sync", "backward"), ("grad_sync", "grad")):
        assert [p.name for p in autograd[sync].parameters] == [p.name for p in autograd[form].parameters]
    for name in ("nn", "optim", "linalg", "profiler", "viz", "return_types", "functional", "nn.functional"):
        assert rendered_tree[name].docstring is None, name
    assert rendered_tree["nn.init"].docstring is not None  # no page of its own: its docstring introduces it
    elu = rendered_tree["nn.activation.ELU"]
    assert "alpha" not in elu.members and "forward" in elu.members
    assert [str(b) for b in rendered_tree["nn.activation.SELU"].bases] == ["Module"]  # not _Inplace


def test_the_reference_index_lists_every_reference_page() -> None:
    index = (REFERENCE / "index.md").read_text()
    for page in sorted(REFERENCE.glob("*.md")):
        if page.name != "index.md":
            assert f"]({page.name})" in index, page.name


def test_the_docs_extra_has_a_signature_formatter_and_the_notebook_plugin() -> None:
    text = (DOCS.parent / "pyproject.toml").read_text()
    docs_extra = re.search(r"(?ms)^docs = \[(.*?)^\]", text)
    assert docs_extra is not None
    assert re.search(r'"(ruff|black)\b', docs_extra.group(1)) and '"mkdocs-jupyter' in docs_extra.group(1)


def test_a_notebook_page_links_to_the_other_notebooks_and_docs_pages() -> None:
    links = _docs_module("_hooks").notebook_links
    assert links('<a href="02-async-backward.ipynb">') == '<a href="../02-async-backward/">'
    assert links('<a href="../docs/distributed.md#rrefs">') == '<a href="../../distributed/#rrefs">'
    assert links('<a href="../docs/README.md">') == '<a href="../../">'
    assert links('<a href="05-devices-trace.json">') == '<a href="05-devices-trace.json">'
