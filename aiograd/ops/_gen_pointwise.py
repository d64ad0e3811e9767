"""Writes ops/_pointwise_nodes.py: the Node class of every pointwise row, as plain Python.

Run ``python -m aiograd.ops._gen_pointwise`` after adding or changing a row made by
``PointwiseTable.unary``/``binary`` or ``make_unary``/``make_binary`` (``--check``
only reports whether the file is current; tests/test_pointwise_nodes.py fails when it
is not). The rows register what their Node needs in ``_pointwise.SPECS`` when
aiograd is imported; this script turns each into a class with an explicit
``__init__``, ``record`` (what the op's forward calls: NOTE [Recorded by the node class]
in _pointwise.py), ``release_variables`` and ``apply`` (NOTE [Formulas]).

NOTE [Bound numpy names]: each ``np.<name>`` a formula reads becomes a module global
``np_<name> = np.<name>`` of the generated file: a global load is specialized by the
interpreter, where ``np.cos`` goes through numpy's module ``__getattr__`` on every call
(~250 callgrind instructions per node of benchmarks/chain.py's sin chain).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from ..autograd.graph import LINK_ONE_SLOTS, LINK_PAIR_SLOTS, Node, link_one, link_pair
from ..tensor import new_tensor

__all__ = ["PATH", "render", "main"]

PATH = Path(__file__).resolve().parent / "_pointwise_nodes.py"

_NP_ATTR = re.compile(r"\bnp\.([A-Za-z_]\w*)")
_IN_PLACE_MIN = 4096  # elements: below this the ownership check costs more than it saves


def _uses(formula: str, name: str) -> bool:
    return re.search(rf"(?<![.\w]){name}\b", formula) is not None


def _code(formula: str, env: tuple[str, ...]) -> str:
    """A formula as the generated code reads it: bound numpy names, env names as class attributes."""
    formula = _NP_ATTR.sub(r"np_\1", formula)
    for name in env:
        formula = re.sub(rf"(?<![.\w]){name}\b", f"self.{name}", formula)
    return formula


def _env_decls(env: tuple[str, ...], row_module: str) -> str:
    return "".join(f"    {name}: ClassVar[Any]  # bound by the row in {row_module} (env=)\n" for name in env)


def _statements(fn: Any) -> list[str]:
    """The source lines of ``fn``'s statements after its docstring, at a method body's indentation."""
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src).body[0]
    assert isinstance(tree, ast.FunctionDef)
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    return ["    " + line if line.strip() else "" for line in src.splitlines()[body[0].lineno - 1: tree.end_lineno]]


def _base_init(linked: tuple[str, ...]) -> str:
    """Node._init_node's stores on ``node``, copied into a generated ``record`` (one call less per
    recorded op), less those of the slots in ``linked``, which the link copied after them sets
    (NOTE [Slots the link sets])."""
    lines = [line.replace("self.", "node.", 1) for line in _statements(Node._init_node)]
    kept = [line for line in lines if line.strip() and line.split("=")[0].strip()[len("node."):] not in linked]
    which = "link_one" if linked == LINK_ONE_SLOTS else "link_pair"
    return (f"        # Node._init_node, inlined (the generator copies it), less the slots {which} sets\n"
            "        # (NOTE [Slots the link sets])\n" + "".join(line + "\n" for line in kept))


def _link(fn: Any, call: str) -> str:
    """``fn``'s statements (graph.link_one or link_pair), copied into a generated ``record``."""
    return (f"        # graph.{call}, inlined (the generator copies it)\n"
            + "".join(line + "\n" for line in _statements(fn)))


def _result() -> str:
    """tensor.new_tensor's statements, making ``out``, copied into a generated ``record``."""
    lines = _statements(new_tensor)
    assert lines[0].strip() == "t = _new_object(Tensor)" and lines[-1].strip() == "return t", lines
    body = [line.replace("t = ", "out = ", 1).replace("t.", "out.", 1) for line in lines[:-1]]
    return ("        # tensor.new_tensor(data, device), inlined (the generator copies it)\n"
            + "".join(line + "\n" for line in body))


def _replace_once(text: str, old: str, new: str) -> str:
    """``text`` with its one ``old`` replaced: a copied function that no longer has it fails here."""
    if text.count(old) != 1:
        raise ValueError(f"expected one {old!r} in the copied code, found {text.count(old)}")
    return text.replace(old, new)


_RESULT = _result()
_UNARY_INIT = _base_init(LINK_ONE_SLOTS)
_BINARY_INIT = _base_init(LINK_PAIR_SLOTS)
_UNARY_LINK = _link(link_one, "link_one(node, x, out)")
# the result's shape is the forward's ``shape``: no tuple made for it (NOTE [Recorded by the node class])
_BINARY_LINK = _replace_once(_link(link_pair, "link_pair(node, a, b, out)"),
                             "node.grad_shape = d.shape", "node.grad_shape = shape")


def _init(params: str, fields: list[str]) -> str:
    """A generated node's ``__init__``: a whole node, not linked (for anyone who builds one by hand)."""
    return (f"    def __init__(self, {params}) -> None:\n"
            "        self._init_node()\n"
            + "".join(f"        self.{f} = {f}\n" for f in fields))


# The snapshot of a tensor's version counter at save (saved.counter_and_version written out:
# NOTE [Saved inputs], NOTE [Version counters]). {t}: the tensor; {c}/{v}: the node's slots.
_SAVE_COUNTER = """\
{i}c = {t}._vc
{i}if c is None:
{i}    c = {t}._vc = new_version_counter()
{i}    node.{v} = ZERO_VERSION
{i}else:
{i}    node.{v} = c.copy() if c[0] else ZERO_VERSION
{i}node.{c} = c
"""


def _save_operand(x: str, when: str | None) -> str:
    """A binary record's saving of operand ``x`` (a Tensor or a number) under the condition ``when``
    ("" always; None never: it stores 0, no formula that runs reads it)."""
    if when is None:
        return f"        node.{x} = 0\n        node.{x}_counter = node.{x}_version = None\n"
    i = "            " if when else "        "
    text = (f"{i}if {x}.__class__ is Tensor or isinstance({x}, Tensor):\n"
            f"{i}    node.{x} = {x}._data\n"
            + _SAVE_COUNTER.format(i=i + "    ", t=x, c=f"{x}_counter", v=f"{x}_version")
            + f"{i}else:\n"
            f"{i}    node.{x} = {x}\n"
            f"{i}    node.{x}_counter = node.{x}_version = None\n")
    if not when:
        return text
    return (f"        if {when}:\n" + text + "        else:\n"
            f"            node.{x} = 0\n            node.{x}_counter = node.{x}_version = None\n")


_HEAD = '''\
"""The Node classes of the pointwise rows (ops/elementwise.py, ops/special.py).

GENERATED by ``python -m aiograd.ops._gen_pointwise`` from the rows: do not edit by
hand (tests/test_pointwise_nodes.py checks that this file is current). Each class's
docstring is its row's formula; NOTE [Formulas] and NOTE [Fast path] in _pointwise.py
say how the rows use them, NOTE [Recorded by the node class] there what ``record`` copies,
NOTE [Saved inputs] in autograd/saved.py how operands are kept.
"""

# mypy: disable-error-code="no-any-return"
from __future__ import annotations

import traceback
from typing import Any, ClassVar

import numpy as np

from ..autograd import grad_mode as _gm
from ..autograd.graph import (
    _NO_EDGES,
    _NO_METADATA,
    ZERO_VERSION,
    Node,
    Shape,
    new_version_counter,
    next_sequence_nr,
    sole_owner,
    sum_to,
)
from ..autograd.saved import SavedArray, SavedInputOperand, Version, VersionCounter, unpack_input, unpack_output
from ..device import Device
from ..tensor import Tensor

_new_object = object.__new__  # a node or tensor without its class's __init__ (NOTE [Nodes made without type.__call__])

# NOTE [Bound numpy names] (in _gen_pointwise.py)
'''

# A saved operand (NOTE [Saved inputs]): its array, counter and version snapshot, or a
# Python number with counter None; its array is None once released (unpack_input raises
# the "backward through the graph a second time" error). unpack_input also makes the
# in-place check's error and, in a create_graph pass, the Tensor at the node's edge {i}.
# The check reads one byte where the snapshot is ZERO_VERSION (NOTE [Version counters]).
_LOAD = """\
            {x}: Any = self.{x}
            if {x} is None or graph or (({x}c := self.{x}_counter) is not None
                                        and ({x}c[0] if self.{x}_version is ZERO_VERSION else {x}c != self.{x}_version)):
                {x} = unpack_input(self, {i}, {x}, self.{x}_counter, self.{x}_version, graph)
"""
_LOAD_OUT = """\
            {x}: Any = self.out
            if out is None or graph or (self.out_counter[0] if self.out_version is ZERO_VERSION
                                        else self.out_counter != self.out_version):
                out = unpack_output(self, out, self.out_counter, self.out_version, graph)
"""


def _unary(spec: dict) -> str:
    name, node, rule, saves, env = spec["name"], spec["node"], spec["rule"], spec["saves"], spec["env"]
    code = _code(rule, env)
    doc = f'    """Backward of {name}: grad_input = {rule}' + (f" (v = saved {saves})" if saves != "none" else "") + '."""\n\n'
    record_head = (
        "    @staticmethod\n"
        "    def record(x: Tensor, data: Any, device: Device) -> Tensor:\n"
        f'        """The result of ``{name}(x)``, holding ``data`` on ``device``, with its node (NOTE [Recorded by\n'
        '        the node class])."""\n'
        f"        node = _new_object({node})  # NOTE [Nodes made without type.__call__] in _pointwise.py\n"
        + _UNARY_INIT + _RESULT
    )
    if saves == "none":
        return (
            f"class {node}(Node):\n{doc}"
            "    __slots__ = ()\n"
            + _env_decls(env, spec["module"]) + "\n"
            + record_head + _UNARY_LINK + "        return out\n"
            + "\n    def apply(self, grads: list[Any]) -> tuple[Any]:\n"
            "        g = grads[0]\n"
            "        graph = g.__class__ is Tensor\n"
            f"        return ({code},)\n"
        )
    # A rule "g * factor" may multiply into g itself when only the engine's input list
    # holds g (refs: that list, the local name g, the helper's argument): one allocation
    # less per node. Small arrays skip the check (the node's work, its output's size, is g's size).
    in_place = (
        f"            if self.work >= {_IN_PLACE_MIN} and sole_owner(g, 3):\n"
        f"                return (np_multiply(g, {_code(rule[4:], env)}, out=g),)\n"
        if rule.startswith("g * ") else ""
    )
    # NOTE [Saved inputs]: the saved input's (or output's) array, version counter and snapshot
    what = "input" if saves == "input" else "output"
    fields = (
        '    __slots__ = ("saved", "counter", "version")\n'
        f"    saved: SavedArray  # the {what}'s array\n"
        f"    counter: VersionCounter  # the {what}'s version counter\n"
        "    version: Version  # its snapshot at save\n"
    )
    t = "x" if saves == "input" else "out"
    init = (_init("saved: SavedArray, counter: VersionCounter, version: Version", ["saved", "counter", "version"])
            + "\n" + record_head
            + f"        node.saved = {'x._data' if saves == 'input' else 'data'}\n"
            + _SAVE_COUNTER.format(i="        ", t=t, c="counter", v="version")
            + _UNARY_LINK + "        return out\n")
    # the in-place check reads one byte where the snapshot is ZERO_VERSION (NOTE [Version counters])
    fast = ("        if s is not None and g.__class__ is not Tensor and (\n"
            "                not self.counter[0] if self.version is ZERO_VERSION else self.counter == self.version):\n"
            "            v = s\n")
    if saves == "input":
        slow = "            v = unpack_input(self, 0, s, self.counter, self.version, g.__class__ is Tensor)\n"
    else:
        slow = "            v = unpack_output(self, s, self.counter, self.version, g.__class__ is Tensor)\n"
    return (
        f"class {node}(Node):\n{doc}{fields}" + _env_decls(env, spec["module"]) + "\n" + init + "\n"
        "    def release_variables(self) -> None:\n"
        "        self.saved = None\n\n"
        "    def apply(self, grads: list[Any]) -> tuple[Any]:\n"
        "        g = grads[0]\n"
        "        s: Any = self.saved\n"
        + fast + in_place +
        "        else:\n" + slow +
        f"        return ({code},)\n"
    )


def _binary(spec: dict) -> str:
    name, node, da, db, env = spec["name"], spec["node"], spec["da"], spec["db"], spec["env"]
    uses_out = _uses(da, "out") or _uses(db, "out")

    declared: set[str] = set()  # locals annotated already (mypy: one annotation per name)

    def load(template: str, x: str) -> str:
        text = template.format(x=x, i="0" if x == "a" else "1")
        if x in declared:
            text = text.replace(f"{x}: Any = ", f"{x} = ", 1)
        declared.add(x)
        return text

    def branch(slot: str, var: str, formula: str, shape: str) -> str:
        loads = "".join(load(_LOAD, x) for x in ("a", "b") if _uses(formula, x))
        if _uses(formula, "out"):
            loads += load(_LOAD_OUT, "out")
        return (
            f"        if self.{slot} is not None:\n{loads}"
            f"            {var} = {_code(formula, env)}\n"
            f"            if self.{shape} is not None and {var}.shape != self.{shape}:\n"
            f"                {var} = sum_to({var}, self.{shape})\n"
        )

    # a_shape / b_shape: the operand's shape where it was broadcast (the gradient is summed back
    # to it), else None: no shape tuple kept per node (graph.py NOTE [Cheap recording])
    slots = ["a", "a_counter", "a_version", "b", "b_counter", "b_version", "a_shape", "b_shape"]
    slots += ["out", "out_counter", "out_version"] if uses_out else []
    ann = {"a": "SavedInputOperand", "a_counter": "VersionCounter | None", "a_version": "Version | None",
           "b": "SavedInputOperand", "b_counter": "VersionCounter | None", "b_version": "Version | None",
           "a_shape": "Shape | None", "b_shape": "Shape | None", "out": "SavedArray", "out_counter": "VersionCounter",
           "out_version": "Version"}
    params = ", ".join(f"{s}: {ann[s]}" for s in slots)
    released = ["a", "b"] + (["out"] if uses_out else [])

    def needed(x: str) -> str | None:
        """When operand ``x`` is saved: the formulas of the operands that require grad read it."""
        by_a, by_b = _uses(da, x), _uses(db, x)
        return "" if by_a and by_b else "ra" if by_a else "rb" if by_b else None  # record runs with ra or rb

    saved_out = ("        node.out = data\n"
                 "        node.out_counter = out._vc = new_version_counter()  # a new tensor: no counter yet\n"
                 "        node.out_version = ZERO_VERSION\n") if uses_out else ""
    record = (
        "    @staticmethod\n"
        "    def record(a: Any, b: Any, ra: bool, rb: bool, a_shape: Shape | None, b_shape: Shape | None,\n"
        "               data: Any, device: Device, shape: Shape) -> Tensor:\n"
        f'        """The result of ``{name}(a, b)``, holding ``data`` (of shape ``shape``) on ``device``, with its\n'
        "        node (NOTE [Recorded by the node class]). ``ra``/``rb``: which operand requires grad; an operand\n"
        "        is a Tensor or a Python number; ``a_shape``/``b_shape`` its shape where it was broadcast, else\n"
        '        None."""\n'
        f"        node = _new_object({node})  # NOTE [Nodes made without type.__call__] in _pointwise.py\n"
        + _BINARY_INIT
        + _save_operand("a", needed("a")) + _save_operand("b", needed("b"))
        + "        node.a_shape = a_shape\n        node.b_shape = b_shape\n" + _RESULT + saved_out
        + "        if not ra:  # no edge to an operand that needs no gradient\n            a = None\n"
        "        if not rb:\n            b = None\n"
        + _BINARY_LINK + "        return out\n"
    )
    return (
        f"class {node}(Node):\n"
        f'    """Backward of {name}: grad_a = {da}, grad_b = {db}, each summed to its operand\'s shape."""\n\n'
        f"    __slots__ = ({', '.join(repr(s) for s in slots)})\n"
        + "".join(f"    {s}: {ann[s]}\n" for s in slots)
        + _env_decls(env, spec["module"]) + "\n"
        + _init(params, slots) + "\n" + record + "\n"
        "    def release_variables(self) -> None:\n"
        + "".join(f"        self.{s} = None\n" for s in released) + "\n"
        "    def apply(self, grads: list[Any]) -> tuple[Any, Any]:\n"
        "        g = grads[0]\n"
        "        graph = g.__class__ is Tensor\n"
        "        ga = gb = None\n"
        + branch("next0", "ga", da, "a_shape")
        + branch("next1", "gb", db, "b_shape")
        + "        return ga, gb\n"
    )


def render() -> str:
    """The text of _pointwise_nodes.py for the rows registered now (imports aiograd)."""
    import aiograd  # noqa: F401  (the rows register their specs on import)
    from ._pointwise import SPECS

    specs = [SPECS[k] for k in sorted(SPECS)]
    np_names: set[str] = set()
    for s in specs:
        for f in (s.get("rule", ""), s.get("da", ""), s.get("db", "")):
            np_names.update(_NP_ATTR.findall(f))
        if s["kind"] == "unary" and s["saves"] != "none" and s["rule"].startswith("g * "):
            np_names.add("multiply")
    parts = [_HEAD]
    parts += [f"np_{n} = np.{n}\n" for n in sorted(np_names)]
    parts.append("\n__all__ = [\n" + "".join(f'    "{s["node"]}",\n' for s in specs) + "]\n")
    for s in specs:
        parts.append("\n\n" + (_unary(s) if s["kind"] == "unary" else _binary(s)))
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Write the file (or with ``--check``, exit 1 when it is out of date)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    current = PATH.read_text() if PATH.exists() else ""
    if text == current:
        return 0
    if "--check" in args:
        print(f"out of date: {PATH}: run python -m aiograd.ops._gen_pointwise")
        return 1
    PATH.write_text(text)
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
