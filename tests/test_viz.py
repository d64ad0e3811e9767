"""ag.viz.make_dot: the backward graph as a graphviz.Digraph (DOT source only: no `dot` program needed)."""

from __future__ import annotations

import re
import sys
from typing import Any

import graphviz
import pytest

import aiograd as ag
from aiograd.autograd.graph import Node


def _parse(dot: Any) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """(node id -> label, edges) from the DOT source."""
    nodes: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    for line in re.sub(r"\n(?=[^\t])", r"\\n", dot.source).splitlines():  # labels hold newlines
        line = line.strip()
        m = re.match(r'^"?([\w-]+)"? -> "?([\w-]+)"?', line)
        if m:
            edges.add((m.group(1), m.group(2)))
            continue
        m = re.match(r'^"?([\w-]+)"? \[label=("([^"]*)"|[^\s\]]+)', line)
        if m:
            nodes[m.group(1)] = (m.group(3) if m.group(3) is not None else m.group(2)).replace("\\n", "\n")
    return nodes, edges


def _graph_nodes(t: ag.Tensor) -> list[Node]:
    seen: dict[int, Node] = {}
    stack = [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(n for n, _ in fn.next_functions)
    return list(seen.values())


def _model_loss() -> tuple[ag.Tensor, dict[str, ag.Tensor]]:
    ag.manual_seed(0)
    model = ag.nn.Sequential(ag.nn.Linear(3, 4), ag.nn.ReLU(), ag.nn.Linear(4, 2))
    x = ag.randn(5, 3)
    return (model(x) ** 2).mean(), dict(model.named_parameters())


def test_a_node_per_graph_node_and_edges_as_next_functions() -> None:
    loss, params = _model_loss()
    dot = ag.viz.make_dot(loss, params=params)
    assert isinstance(dot, graphviz.Digraph)
    nodes, edges = _parse(dot)
    graph = _graph_nodes(loss)
    for fn in graph:
        assert nodes[str(id(fn))] == fn.name()
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                assert (str(id(nxt)), str(id(fn))) in edges
    fn_edges = {(a, b) for a, b in edges if a in {str(id(f)) for f in graph} and b in {str(id(f)) for f in graph}}
    assert len(fn_edges) == sum(1 for fn in graph for n, _ in fn.next_functions if n is not None)
    assert nodes[str(id(loss))] == "()"  # the output: its shape
    assert (str(id(loss.grad_fn)), str(id(loss))) in edges


def test_leaves_are_labelled_with_parameter_name_and_shape() -> None:
    loss, params = _model_loss()
    nodes, edges = _parse(ag.viz.make_dot(loss, params=params))
    for name, p in params.items():
        shape = "(" + ", ".join(str(s) for s in p.shape) + ")"
        assert nodes[str(id(p))] == f"{name}\n{shape}"
        acc = p._get_grad_accumulator()
        assert nodes[str(id(acc))] == "AccumulateGrad" and (str(id(p)), str(id(acc))) in edges
    unnamed = ag.viz.make_dot(loss)
    assert _parse(unnamed)[0][str(id(params["0.weight"]))] == "(4, 3)"


def test_show_saved_adds_saved_tensor_shapes_until_they_are_freed() -> None:
    a = ag.randn(2, 3, requires_grad=True)
    b = ag.randn(3, 4, requires_grad=True)
    out = (a @ b).sin().sum()
    plain, _ = _parse(ag.viz.make_dot(out))
    saved, edges = _parse(ag.viz.make_dot(out, show_saved=True))
    extra = {k: v for k, v in saved.items() if k not in plain}
    assert sorted(extra.values()) == sorted(["a\n(2, 3)", "b\n(3, 4)", "saved\n(2, 4)"])
    mm = str(id(out.grad_fn.next_functions[0][0].next_functions[0][0]))
    assert {(k, mm) for k, v in extra.items() if v.startswith(("a\n", "b\n"))} <= edges
    ag.backward_sync(out)  # frees the saved tensors
    after, _ = _parse(ag.viz.make_dot(out, show_saved=True))
    assert set(after) == set(plain)


def test_custom_function_saved_tensors_and_several_outputs() -> None:
    class Square(ag.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ag.randn(4, requires_grad=True)
    y, z = Square.apply(x), x.exp()
    nodes, _ = _parse(ag.viz.make_dot([y, z], params={"x": x}, show_saved=True))
    assert "saved_tensors[0]\n(4)" in nodes.values()
    assert nodes[str(id(y))] == "(4)" and nodes[str(id(z))] == "(4)"
    assert list(nodes.values()).count("AccumulateGrad") == 1


def test_deep_graphs_draw_without_recursion() -> None:
    x = ag.randn(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    nodes, _ = _parse(ag.viz.make_dot(y.sum()))
    assert list(nodes.values()).count("MulBackward0") == 3000


def test_a_leaf_alone_and_bad_arguments() -> None:
    x = ag.randn(2, requires_grad=True)
    nodes, edges = _parse(ag.viz.make_dot(x, params={"x": x}))
    assert list(nodes.values()) == ["x\n(2)"] and not edges
    with pytest.raises(TypeError, match="make_dot expects a Tensor"):
        ag.viz.make_dot([x, 3])


def test_notebook_display_falls_back_to_source_without_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    dot = ag.viz.make_dot((ag.randn(2, requires_grad=True) * 2).sum())

    def no_dot(*args: Any, **kwargs: Any) -> Any:
        raise graphviz.ExecutableNotFound(("dot",))

    monkeypatch.setattr(graphviz.Digraph, "pipe", no_dot)
    assert dot._repr_mimebundle_() == {"text/plain": dot.source}


def test_make_dot_without_graphviz_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ModuleNotFoundError, match=r"make_dot\(\) needs .*'graphviz'.*pip install 'aiograd\[viz\]'"):
        ag.viz.make_dot(ag.randn(2, requires_grad=True))
