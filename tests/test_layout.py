"""The package's layout rules (DESIGN §0): an import inside a function is there for a reason its
line says (an import cycle, or an optional or slow dependency loaded on first use); the op
families are packages whose modules aiograd.ops imports."""

from __future__ import annotations

import ast
from pathlib import Path

import aiograd as ag

PACKAGE = Path(ag.__file__).resolve().parent

# Being rewritten by the core redesign (issue 22), which removes their late imports of Tensor.
REWRITTEN: set[str] = set()  # every module follows the rule


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _late_imports(tree: ast.AST) -> list[ast.stmt]:
    """Import statements inside functions (not under ``if TYPE_CHECKING:``)."""
    found: list[ast.stmt] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for c in child.orelse:
                    walk(c, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found.append(child)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(tree, False)
    return found


def test_every_import_inside_a_function_says_why() -> None:
    """The line of such an import, or of the import just above it in one run, carries a comment."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in REWRITTEN:
            continue
        lines = path.read_text().splitlines()
        for stmt in _late_imports(ast.parse(path.read_text())):
            k = stmt.lineno - 1
            while k >= 0 and "#" not in lines[k] and lines[k].strip().startswith(("from ", "import ")):
                k -= 1  # the first import of a run of imports may speak for the run
            if k < 0 or "#" not in lines[k] or not lines[k].strip().startswith(("from ", "import ")):
                unexplained.append(f"aiograd/{rel}:{stmt.lineno}: {lines[stmt.lineno - 1].strip()}")
    assert unexplained == []


def test_family_packages_import_none_of_their_modules() -> None:
    """aiograd/ops/<family>/__init__.py only documents the family: its modules import one another
    across families, so a package that imported them would close import circles."""
    for family in ("pointwise", "reduction", "movement", "indexing", "nn"):
        tree = ast.parse((PACKAGE / "ops" / family / "__init__.py").read_text())
        assert [type(s).__name__ for s in tree.body] == ["Expr"], family
