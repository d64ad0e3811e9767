"""A griffe extension for the API reference: what static analysis cannot see, read from the live package.

mkdocstrings documents aiograd through griffe, which reads the source without
running it (signatures as written, members in source order). Two things in
aiograd only exist once it is imported:

* computed ``__all__`` lists (``aiograd.__all__`` joins its submodules'
  lists): without them griffe cannot expand ``from .ops import *`` and
  ``aiograd.abs`` is not found;
* functions made at import time (``exp = _unary("exp", ...)``, an op table):
  griffe sees an attribute with no signature and no docstring.

This extension imports each module of the documented packages as griffe
visits it, hands griffe the module's real ``__all__``, and replaces each
exported name that static analysis missed, or saw as a plain attribute while
it is a function at run time, by a function built from the live object's
signature and docstring. It also takes underscored class members (dunder
methods, private helpers) out of the documented tree.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import griffe

# The package documented is the one in this checkout, not an installed copy.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
}


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    return value if isinstance(value, str) else getattr(value, "__name__", repr(value))


def _default(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    return value.__name__ if hasattr(value, "__name__") else repr(value)


def function_from_live(name: str, fn: Any, loader: griffe.GriffeLoader) -> griffe.Function:
    """A griffe Function with the signature and docstring ``fn`` has at run time."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature
        sig = None
    params = griffe.Parameters()
    if sig is not None:
        for p in sig.parameters.values():
            params.add(
                griffe.Parameter(p.name, annotation=_annotation(p.annotation), kind=_KINDS[p.kind], default=_default(p.default))
            )
    doc = inspect.getdoc(fn)
    return griffe.Function(
        name,
        parameters=params,
        returns=_annotation(sig.return_annotation) if sig is not None else None,
        docstring=griffe.Docstring(doc, parser=loader.docstring_parser, parser_options=loader.docstring_options)
        if doc
        else None,
    )


class RuntimeExports(griffe.Extension):
    """Read ``__all__`` and import-time functions of the documented packages from the live modules.

    Used from mkdocs.yml as ``docs/_griffe_runtime_exports.py:RuntimeExports``;
    ``packages`` names the top-level packages it applies to (aiograd by default).
    """

    def __init__(self, packages: list[str] | None = None) -> None:
        super().__init__()
        self.packages = tuple(packages or ("aiograd",))

    def _mine(self, path: str) -> bool:
        return any(path == p or path.startswith(p + ".") for p in self.packages)

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        # Runs while the tree is built, before griffe expands exports and wildcard imports.
        if self._mine(mod.path):
            runtime_all = getattr(importlib.import_module(mod.path), "__all__", None)
            if runtime_all is not None:
                mod.exports = [str(name) for name in runtime_all]

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if self._mine(pkg.path):
            self._fill_functions(pkg, loader, set())
            _drop_underscored_class_members(pkg)
            _drop_undocumented_instance_attributes(pkg)
            _drop_docstrings_of_page_modules(pkg)
            _public_bases(pkg)

    def _fill_functions(self, mod: griffe.Module, loader: griffe.GriffeLoader, seen: set[str]) -> None:
        seen.add(mod.path)
        live = importlib.import_module(mod.path)
        for name in mod.exports or ():
            if not isinstance(name, str):
                continue
            value = getattr(live, name, None)
            if not inspect.isfunction(value) and not inspect.isbuiltin(value):
                continue
            member = mod.members.get(name)
            if member is None or (not member.is_alias and member.is_attribute):
                mod.set_member(name, function_from_live(name, value, loader))
        for sub in list(mod.members.values()):
            if not sub.is_alias and sub.is_module and sub.path not in seen:
                self._fill_functions(sub, loader, seen)  # type: ignore[arg-type]


def _drop_undocumented_instance_attributes(obj: griffe.Object) -> None:
    """Take the instance attributes without a docstring (``self.alpha = alpha`` in a module's
    ``__init__``) out of the documented tree: the class signature already shows them, and
    rendered they are empty boxes."""
    for name, member in list(obj.members.items()):
        if member.is_alias:
            continue
        if obj.is_class and member.is_attribute and "instance-attribute" in member.labels and not member.docstring:
            obj.del_member(name)
        elif member.is_module or member.is_class:
            _drop_undocumented_instance_attributes(member)  # type: ignore[arg-type]


def _public_bases(obj: griffe.Object) -> None:
    """A class's bases as the reference shows them: a private base (``_Inplace``, a helper of
    its module) is replaced by its own bases (``Module``), so no underscored name is shown."""
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        if member.is_class:
            bases: list[Any] = []
            todo = list(member.bases)  # type: ignore[union-attr]
            while todo:
                base = todo.pop(0)
                name = str(base)
                private = obj.members.get(name) if name.startswith("_") else None
                if private is not None and not private.is_alias and private.is_class:
                    todo[:0] = list(private.bases)  # type: ignore[union-attr]
                else:
                    bases.append(base)
            member.bases = bases  # type: ignore[union-attr]
            _public_bases(member)  # type: ignore[arg-type]
        elif member.is_module:
            _public_bases(member)  # type: ignore[arg-type]


_REFERENCE = Path(__file__).resolve().parent / "reference"


def page_modules() -> set[str]:
    """The modules that have a reference page of their own: a page titled ``# aiograd.X`` whose
    text introduces the module above its ``::: aiograd.X`` directive."""
    found = set()
    for page in _REFERENCE.glob("*.md"):
        text = page.read_text()
        title = re.match(r"# ([\w.]+)\s*$", text.split("\n", 1)[0])
        if title is not None and re.search(rf"(?m)^:::\s+{re.escape(title.group(1))}\s*$", text):
            found.add(title.group(1))
    return found


def _drop_docstrings_of_page_modules(pkg: griffe.Module) -> None:
    """The docstring of a module with a page of its own is not rendered: the page's text
    introduces it (rendered too, the introduction would read twice)."""
    for path in page_modules():
        if path == pkg.path or path.startswith(pkg.path + "."):
            try:
                mod = pkg[path[len(pkg.path) + 1:]] if path != pkg.path else pkg
            except KeyError:
                continue
            if not mod.is_alias:
                mod.docstring = None


def _drop_underscored_class_members(obj: griffe.Object) -> None:
    """Take class members whose names start with ``_`` (but ``__init__``) out of the documented tree.

    The reference renders public members only: in a module, those of its
    ``__all__``; in a class, griffe would count dunder methods as public and list
    ``__float__`` and ``__len__`` beside ``backward`` (marking them not public
    does not carry through the aliases ``aiograd.Tensor`` and ``aiograd.nn.Linear``
    are rendered as). ``__init__`` stays: the class signature comes from it.
    """
    for name, member in list(obj.members.items()):
        if member.is_alias:
            continue
        if obj.is_class and name.startswith("_") and name != "__init__":
            obj.del_member(name)
        elif member.is_module or member.is_class:
            _drop_underscored_class_members(member)  # type: ignore[arg-type]


# ----- internal notes -----------------------------------------------------------------------

# The code cites its invariants as ``NOTE [Name]`` (the comment that explains it, often in
# another file). Those citations are for people reading the source; on the site they name
# nothing a reader can open. The patterns below take them out of the rendered docstrings,
# each with the words that only serve the citation, and keep the sentence around it.
_NOTE = r"NOTE \[[^\]]+\](?:\s*\([a-z]\)(?:,\s*\([a-z]\))*)?(?:\s+in\s+[\w/]+\.py)?"
_NOTE_PATTERNS = [
    # "... (NOTE [X] in f.py)", "(see engine.py NOTE [X])", "(NOTE [Hot loop] (a), (d))"
    (re.compile(r"\s*\((?:see\s+)?(?:[\w/]+\.py\s+)?" + _NOTE + r"\)"), ""),
    # "(its nodes: ...; NOTE [X] in f.py)", "(``taps``, NOTE [X])", "(NaN with NaN: NOTE [X])"
    (re.compile(r"\s*[;,:]\s*(?:see\s+)?" + _NOTE + r"(?=\))"), ""),
    # "... inline. See NOTE [X] for the caveats." (a sentence of its own)
    (re.compile(r"\s*\bSee\s+" + _NOTE + r"[^.]*\."), ""),
    # "NOTE [X]: text" opening a paragraph: the text stays
    (re.compile(r"(?m)^(\s*)" + _NOTE + r":\s*"), r"\1"),
    # anything else, in running text ("follow NOTE [X]"): the note's name, as words
    (re.compile(r"(?:see\s+)?NOTE \[([^\]]+)\](?:\s+in\s+[\w/]+\.py)?"), r"\1"),
]


def strip_internal_notes(text: str) -> str:
    """``text`` without its ``NOTE [Name]`` citations (see above)."""
    for pattern, repl in _NOTE_PATTERNS:
        text = pattern.sub(repl, text)
    return text


def _strip_notes(obj: griffe.Object, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if obj.docstring is not None and "NOTE [" in obj.docstring.value:
        obj.docstring.value = strip_internal_notes(obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _strip_notes(member, seen)  # type: ignore[arg-type]


class InternalNotes(griffe.Extension):
    """Take the code's ``NOTE [Name]`` citations out of the docstrings the reference renders.

    Used from mkdocs.yml as ``docs/_griffe_runtime_exports.py:InternalNotes``, after
    ``RuntimeExports`` (whose functions made at import time carry docstrings too).
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _strip_notes(pkg, set())
