"""The package's layout rules (DESIGN §0): an import inside a function is there for a reason its
line says (an import cycle, or an optional or slow dependency loaded on first use); the core
modules form layers that import only downwards (NOTE [Layers] in aiograd/autograd/__init__.py); the op
families are packages whose modules aiograd.ops imports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import aiograd as ag
import aiograd.autograd as autograd_pkg

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


# NOTE [Layers] in aiograd/autograd/__init__.py: the core modules, lowest layer first. A module
# imports (at its top or inside a function, TYPE_CHECKING blocks aside) only modules of its own
# layer or lower ones, and those imports make no cycle.
LAYERS: list[set[str]] = [
    {  # leaves
        "aiograd._dtypes", "aiograd.device", "aiograd._size", "aiograd._aio", "aiograd._sparse",
        "aiograd._memory_format", "aiograd._optional", "aiograd.autograd.grad_mode",
        "aiograd.autograd.backward_call",
    },
    # the graph, and the package's __init__ (Python runs it before any module of the package)
    {"aiograd.autograd", "aiograd.autograd.graph"},
    {"aiograd.tensor"},
    {  # above Tensor
        "aiograd.autograd.saved", "aiograd.autograd.accumulate", "aiograd.autograd.variable",
        "aiograd._generator", "aiograd._random",
    },
    {  # the engine
        "aiograd.autograd.ready_queue", "aiograd.autograd.monitor", "aiograd.autograd.background",
        "aiograd.autograd.blas_threads",
        "aiograd.autograd.executors", "aiograd.autograd.engine", "aiograd.autograd.function",
    },
    {"aiograd.autograd.api"},
]
LAYER = {m: i for i, layer in enumerate(LAYERS) for m in layer}
# modules of aiograd.autograd that use the ops: above every layer, as the ops are
ABOVE_THE_CORE = {"aiograd.autograd.checkpoint", "aiograd.autograd.functional", "aiograd.autograd.gradcheck"}

# The one import that goes up a layer, inside a function (NOTE [Layers]). The other upward
# binding, the package's ``_LATE`` names, is no import statement (test below).
UPWARD = {
    # AccumulateGrad must be below Tensor (Tensor makes it); adding into .grad makes Tensors
    ("aiograd.autograd.graph", "aiograd.autograd.accumulate"): "AccumulateGrad.apply",
}


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("aiograd",) + path.relative_to(PACKAGE).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str, bool]]:
    """(imported aiograd module, the function it is imported in or "", whether at the top) for
    every import statement of ``module`` outside ``if TYPE_CHECKING:``. ``from pkg import sub``
    imports the module ``sub``; ``from pkg import name`` imports ``pkg`` itself."""
    found: list[tuple[str, str, bool]] = []
    is_package = path.name == "__init__.py"

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for c in child.orelse:
                    visit(c, function)
                continue
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = module.split(".") if is_package else module.split(".")[:-1]
                    parts = parts[: len(parts) - child.level + 1]
                    base = ".".join(parts + ([child.module] if child.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in child.names]
            for t in targets:
                m = owner(t)
                if m is not None and m != module:
                    found.append((m, function, not function))
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            visit(child, inner)

    visit(ast.parse(path.read_text()), "")
    return found


def _core_edges() -> dict[tuple[str, str], list[str]]:
    """Import edges between core modules: (importer, imported) -> the functions importing ("" for the top)."""
    modules = _module_names()
    edges: dict[tuple[str, str], list[str]] = {}
    for module in LAYER:
        for target, function, _ in _imports(module, modules[module], modules):
            edges.setdefault((module, target), []).append(function)
    return edges


def test_every_autograd_module_has_a_layer() -> None:
    """A new module of aiograd.autograd takes a place in NOTE [Layers] (and in LAYERS above)."""
    placed = LAYER.keys() | ABOVE_THE_CORE
    missing = [m for m in _module_names() if m.startswith("aiograd.autograd") and m not in placed]
    assert missing == []


def test_core_modules_import_only_their_layer_or_below() -> None:
    """No core module imports a module of a higher layer, nor one outside the layers (ops, nn...
    are above them all), at its top or inside a function, but for the UPWARD ones."""
    wrong = []
    for (module, target), functions in sorted(_core_edges().items()):
        if (module, target) in UPWARD:
            # inside the named function only: at the top it would close the cycle while importing
            assert functions == [UPWARD[module, target].rpartition(".")[2]], (module, target, functions)
            continue
        if target not in LAYER or LAYER[target] > LAYER[module]:
            wrong.append(f"{module} imports {target} (in {', '.join(f or 'its top' for f in functions)})")
    assert wrong == []
    assert set(UPWARD) <= set(_core_edges()), "an UPWARD import is gone: drop it from the list"


def test_core_imports_make_no_cycle() -> None:
    """Modules of one layer import one another without a cycle either: with the UPWARD imports
    left out, the core modules have an import order (a topological one)."""
    deps: dict[str, set[str]] = {m: set() for m in LAYER}
    for module, target in _core_edges():
        if (module, target) not in UPWARD and target in deps:
            deps[module].add(target)
    done: set[str] = set()
    while len(done) < len(deps):
        ready = [m for m in deps if m not in done and deps[m] <= done]
        assert ready, f"an import cycle among {sorted(set(deps) - done)}"
        done.update(ready)


def test_the_package_binds_only_upper_layers_late() -> None:
    """aiograd.autograd names the front end, Function and Variable through ``_LATE`` (NOTE
    [Layers]): each is in a module above Tensor, and nothing else is bound that way; at its
    top the package imports only leaves (it runs before any module of the package)."""
    late = getattr(autograd_pkg, "_LATE")
    for name, module in late.items():
        assert LAYER[module] > LAYER["aiograd.tensor"], name
        assert getattr(autograd_pkg, name) is getattr(importlib.import_module(module), name)
    assert set(late) <= set(autograd_pkg.__all__) | {"run_backward", "run_grad", "Gradients"}
    modules = _module_names()
    top = {t for t, _, at_top in _imports("aiograd.autograd", modules["aiograd.autograd"], modules) if at_top}
    assert top and all(LAYER.get(t) == 0 for t in top), top
