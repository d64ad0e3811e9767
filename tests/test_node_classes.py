"""Every Node class's constructor and ``release_variables`` agree with its declared fields
(NOTE [Typed nodes] in aiograd/autograd/graph.py).

A Node class declares its fields as annotations beside ``__slots__``; those typed ``Saved*``
hold saved tensors and are released after a pass. The constructor and ``release_variables``
are written out as code in each class (issue 22: no class gets methods compiled at import),
so these tests check, for every Node subclass reachable after ``import aiograd``, that the
code says what the annotations say: a field added to the annotations but not to
``__init__``, or a saved field that ``release_variables`` forgets (a leak of every saved
tensor of every pass), fails here.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache
from pathlib import Path

import pytest

import aiograd  # noqa: F401  (defines every Node class)
from aiograd.autograd.graph import Node

# Modules whose Node classes have no class statement of their own: none (the pointwise
# ones are written out in ops/_pointwise_nodes.py, generated and checked in).
_TEMPLATE_MODULES: set[str] = set()


def _node_classes() -> list[type[Node]]:
    out: list[type[Node]] = []
    todo = list(Node.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in out:
            if cls.__module__.startswith("aiograd."):  # not those other test modules define
                out.append(cls)
            todo.extend(cls.__subclasses__())
    return sorted(out, key=lambda c: (c.__module__, c.__qualname__))


NODES = _node_classes()
TYPED = [c for c in NODES if c._fields]


def _id(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_walk_finds_the_node_classes() -> None:
    names = {c.__name__ for c in NODES}
    assert {"SumBackward0", "MmBackward0", "CheckpointBackward", "EinsumBackward0"} <= names
    assert len(TYPED) > 100


@pytest.mark.parametrize("cls", TYPED, ids=_id)
def test_the_constructor_takes_the_declared_fields_in_order(cls: type[Node]) -> None:
    params = list(inspect.signature(cls.__init__).parameters)
    assert params == ["self", *cls._fields]


def _dummy(cls: type[Node], field: str) -> object:
    ann = next((inspect.get_annotations(k).get(field) for k in cls.__mro__ if field in inspect.get_annotations(k)), "")
    return [object()] if str(ann).startswith("list[") else object()


@pytest.mark.parametrize("cls", TYPED, ids=_id)
def test_the_constructor_sets_each_field_and_release_clears_the_saved_ones(cls: type[Node]) -> None:
    values = {f: _dummy(cls, f) for f in cls._fields}
    node = cls(*values.values())
    for f, v in values.items():
        assert getattr(node, f) is v, f
    # a node made by its constructor is a fresh node: no edges, no hooks, a sequence number
    assert node.n_edges == 0 and list(node.next_edges) == [] and node._hooks is None
    assert isinstance(node.sequence_nr, int)
    node.release_variables()
    for f, v in values.items():
        if f in cls._saved_fields:
            assert getattr(node, f) is None, f"{f} (annotated Saved*) is kept after release_variables"
        elif isinstance(v, list) and getattr(node, f) is not v:
            # a list of saved tensors (EinsumBackward0.operands: ``list[Saved]``) is released entry by entry
            assert getattr(node, f) == [None] * len(v), f
        else:
            assert getattr(node, f) is v, f"{f} (not Saved*) was changed by release_variables"


def _source_file(cls: type) -> str:
    """The file of the class statement: where its methods' code is (a generated module may
    define classes for another module's namespace), else its module's file."""
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is not None and not code.co_filename.startswith("<"):
            return str(code.co_filename)
    path = inspect.getsourcefile(sys.modules[cls.__module__])
    assert path is not None
    return path


@cache
def _classes_in(path: str) -> dict[str, ast.ClassDef]:
    tree = ast.parse(Path(path).read_text())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def _annotated(node: ast.ClassDef) -> list[tuple[str, str]]:
    """(field, annotation text) declared in a class statement (ClassVar excluded)."""
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            text = ast.unparse(stmt.annotation).strip("'\"")
            if not text.startswith(("ClassVar", "typing.ClassVar")):
                out.append((stmt.target.id, text))
    return out


@pytest.mark.parametrize("cls", NODES, ids=_id)
def test_a_class_statement_with_fields_writes_its_constructor_and_release(cls: type[Node]) -> None:
    """The class statement itself defines ``__init__`` when it declares fields, and
    ``release_variables`` when it declares a ``Saved*`` field: nothing is made at import."""
    path = _source_file(cls)
    node = _classes_in(path).get(cls.__name__)
    if node is None:
        # made by ``type()`` (autograd.Function's backward classes, resample's separable
        # ones): fine while it declares no fields (it inherits its methods)
        own = {k for k in inspect.get_annotations(cls) if not str(inspect.get_annotations(cls)[k]).startswith("ClassVar")}
        assert not own or cls.__module__ in _TEMPLATE_MODULES, f"{_id(cls)} declares fields but has no class statement"
        return
    fields = _annotated(node)
    defs = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if fields:
        assert "__init__" in defs, f"{_id(cls)} declares fields but writes no __init__"
    if any(text.startswith("Saved") for _, text in fields):
        assert "release_variables" in defs, f"{_id(cls)} declares Saved* fields but writes no release_variables"
    if "release_variables" in defs:
        # it clears exactly the Saved* fields (parents' included), one ``self.<field> = None`` each
        func = next(s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "release_variables")
        cleared = [
            t.attr
            for s in func.body
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None
            for t in s.targets
            if isinstance(t, ast.Attribute)
        ]
        if cls._saved_fields:  # (a class without declared fields may release state of its own: autograd.Function's)
            assert sorted(cleared) == sorted(cls._saved_fields), _id(cls)
