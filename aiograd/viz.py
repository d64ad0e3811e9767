"""Pictures of the backward graph: ``ag.viz.make_dot``.

    dot = ag.viz.make_dot(loss, params=dict(model.named_parameters()))
    dot                        # in a notebook: rendered as SVG (needs Graphviz's `dot` program)
    print(dot.source)          # the DOT text: always available, `dot` or not

Drawn as torchviz draws torch's graphs: one box per graph Node labelled with
its ``name()``, a light blue box per leaf tensor (its parameter name and
shape) beside its AccumulateGrad, a green box per output tensor, and an edge
from each of a node's ``next_functions`` to the node (the direction the
values flowed forward). Needs the ``graphviz`` Python package
(``pip install 'aiograd[viz]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ._optional import require
from .autograd.graph import AccumulateGrad
from .autograd.saved import SavedTensor
from .tensor import Tensor

if TYPE_CHECKING:
    from .autograd.graph import Node

__all__ = ["make_dot"]

_NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10", "ranksep": "0.1",
              "height": "0.2", "fontname": "monospace"}
_LEAF_COLOR = "lightblue"
_OUTPUT_COLOR = "darkolivegreen1"
_SAVED_COLOR = "orange"


def make_dot(
    tensor: "Tensor | Sequence[Tensor]",
    params: "Mapping[str, Tensor] | None" = None,
    show_saved: bool = False,
) -> Any:
    """The backward graph of ``tensor`` (or of several tensors) as a ``graphviz.Digraph``.

    ``params`` maps names to tensors (e.g. ``dict(model.named_parameters())``)
    to label the leaves; ``show_saved`` adds, for each node, the shapes of the
    tensors it saved for backward (none after a pass freed them).
    """
    graphviz = require("graphviz", "ag.viz.make_dot()")
    outputs = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dot expects a Tensor or a sequence of Tensors, got {type(t).__name__}")
    names = {id(t): name for name, t in (params or {}).items()}
    dot = _digraph_class(graphviz)(node_attr=_NODE_ATTR, graph_attr={"size": "12,12"})

    def node_id(obj: object) -> str:
        return str(id(obj))

    seen: set[int] = set()
    stack: list[Node] = []

    def visit(fn: "Node") -> None:
        if id(fn) not in seen:
            seen.add(id(fn))
            stack.append(fn)

    for t in outputs:
        dot.node(node_id(t), _tensor_label(t, names), fillcolor=_OUTPUT_COLOR)
        if t.grad_fn is not None:
            visit(t.grad_fn)
            dot.edge(node_id(t.grad_fn), node_id(t))
    while stack:  # iterative: graphs deeper than the recursion limit draw too
        fn = stack.pop()
        dot.node(node_id(fn), fn.name())
        if isinstance(fn, AccumulateGrad):  # the leaf it writes
            leaf = fn.variable
            dot.node(node_id(leaf), _tensor_label(leaf, names), fillcolor=_LEAF_COLOR)
            dot.edge(node_id(leaf), node_id(fn))
        if show_saved:
            for i, (attr, shape) in enumerate(_saved_shapes(fn)):
                sid = f"{node_id(fn)}-saved-{i}"
                dot.node(sid, f"{attr}\n{_shape_str(shape)}", fillcolor=_SAVED_COLOR)
                dot.edge(sid, node_id(fn), style="dotted", dir="none")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                dot.edge(node_id(nxt), node_id(fn))
                visit(nxt)
    return dot


def _tensor_label(t: "Tensor", names: dict[int, str]) -> str:
    name = names.get(id(t))
    shape = _shape_str(t.shape)
    return f"{name}\n{shape}" if name else shape


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def _saved_shapes(fn: "Node") -> list[tuple[str, tuple[int, ...]]]:
    """(slot name, shape) of what ``fn`` saved for backward and still holds."""
    out: list[tuple[str, tuple[int, ...]]] = []
    fields: list[tuple[str, Any]] = [(f, getattr(fn, f, None)) for f in type(fn)._saved_fields]
    saved_list = getattr(fn, "_saved", None)  # custom Function: ctx.save_for_backward
    if isinstance(saved_list, list):
        fields += [(f"saved_tensors[{i}]", s) for i, s in enumerate(saved_list)]
    for attr, value in fields:
        shape = _shape_of(value)
        if shape is not None:
            out.append((attr, shape))
    return out


def _shape_of(value: Any) -> tuple[int, ...] | None:
    # A saved tensor is an array, a Tensor, or save()'s SavedTensor (NOTE [Saved tensors] in autograd/saved.py).
    if isinstance(value, SavedTensor):
        value = value.data
    shape = getattr(value, "shape", None)
    return tuple(shape) if isinstance(shape, tuple) else None


_DIGRAPH: list[type] = []


def _digraph_class(graphviz: Any) -> type:
    """``graphviz.Digraph`` whose notebook display falls back to the DOT source when ``dot`` is missing."""
    if not _DIGRAPH:

        class Digraph(graphviz.Digraph):
            """A graphviz.Digraph that shows its DOT source in a notebook when Graphviz's `dot` is absent."""

            def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
                try:
                    return super()._repr_mimebundle_(include, exclude, **kwargs)
                except graphviz.ExecutableNotFound:
                    return {"text/plain": self.source}

        Digraph.__module__ = __name__
        _DIGRAPH.append(Digraph)
    return _DIGRAPH[0]
