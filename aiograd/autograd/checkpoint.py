"""Activation checkpointing: trade compute for memory (torch.utils.checkpoint).

``checkpoint(fn, *args)`` runs ``fn`` without keeping its intermediate
values and runs it again during backward to get them back. Gradients are the
same as without checkpointing; random ops inside ``fn`` (dropout) draw the
same numbers again because the generator's state is restored.

Two modes, as in torch:

``use_reentrant=True``
    A custom Function. Its forward runs ``fn`` under ``no_grad``; its
    ``async def backward`` recomputes under ``enable_grad`` on detached
    inputs and awaits a nested ``backward()`` (reentrant backward, NOTE
    [Reentrant backward] in engine.py). The nested pass commits the
    gradients of parameters used inside ``fn`` into their ``.grad`` when it
    completes; so, like torch, this mode does not work with ``grad()`` or
    ``backward(inputs=...)`` and says so.

``use_reentrant=False``
    NOTE [Non-reentrant checkpoint]: ``fn`` runs once with grad enabled to
    find the graph's *boundary*: every edge from a node recorded by ``fn``
    to a node recorded before it (an explicit input's ``grad_fn``, a
    captured non-leaf) or to an ``AccumulateGrad`` (an input leaf or a
    parameter ``fn`` closes over). That graph's saved tensors are released
    at once, and one ``CheckpointBackward`` node whose edges are the
    boundary edges becomes the ``grad_fn`` of the outputs. Its (async)
    apply recomputes ``fn``, points the recomputed graph's boundary edges
    at private sink nodes, and runs a nested pass that captures the
    gradients arriving at the sinks: nothing beyond the boundary runs, is
    freed, or has its hooks fired twice. The edges are restored afterwards
    (a ``create_graph`` gradient's graph runs through them). So parameters
    get their gradient through the outer pass like any other leaf: staged
    and committed with it, and reachable by ``grad(loss, [param])``.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Optional

from .._generator import default_stream
from ..tensor import Tensor
from . import grad_mode as _gm
from .function import Function
from .graph import AccumulateGrad, Edge, Node, next_sequence_nr, record
from .saved import FREED
from . import run_backward as _backward
from .engine import current_graph_task, default_engine

__all__ = ["checkpoint"]

_NOT_VALID = (
    "Checkpointing is not compatible with .grad() or when an `inputs` parameter is passed to "
    ".backward(). Please use .backward() and do not pass its `inputs` argument, or use "
    "checkpoint(..., use_reentrant=False)."
)


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``function(*args, **kwargs)`` without storing its activations; recompute them in backward.

    ``use_reentrant`` picks the mode (None means True, torch's historical
    default); ``preserve_rng_state`` restores aiograd's random generator
    before the recomputation, so random ops give the same values.
    """
    if use_reentrant is None or use_reentrant:
        if kwargs:
            raise ValueError(
                "Unexpected keyword arguments: " + ",".join(kwargs)
                + " (keyword arguments are only supported with use_reentrant=False)"
            )
        return _CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_non_reentrant(function, preserve_rng_state, args, kwargs)


# ----- RNG state ------------------------------------------------------------------------


def _get_rng_state() -> Any:
    return copy.deepcopy(default_stream().bit_generator.state)


class _RestoredRng:
    """Run a block with aiograd's generator set to ``state``, then put the current state back."""

    def __init__(self, state: Any) -> None:
        self._state = state
        self._saved: Any = None

    def __enter__(self) -> None:
        if self._state is not None:
            gen = default_stream()
            self._saved = (gen, gen.bit_generator.state)
            gen.bit_generator.state = copy.deepcopy(self._state)

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            gen, state = self._saved
            gen.bit_generator.state = state


def _as_outputs(out: Any) -> tuple[tuple[Any, ...], bool]:
    if isinstance(out, tuple):
        return out, True
    if isinstance(out, list):
        return tuple(out), True
    return (out,), False


# ----- reentrant ------------------------------------------------------------------------


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.rng_state = _get_rng_state() if preserve_rng_state else None
        ctx.inputs = list(args)
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning, stacklevel=4)
        out = run_function(*args)
        if isinstance(out, list):
            out = tuple(out)
        return out

    @staticmethod
    async def backward(ctx: Any, *grads: Any) -> Any:
        gt = current_graph_task()
        if gt is not None and gt.exec_info is not None:
            raise RuntimeError(_NOT_VALID)
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            d = t.detach()
            if t.requires_grad:
                d.requires_grad_(True)
            inputs[i] = d
        with _RestoredRng(ctx.rng_state), _gm.enable_grad():
            outputs, _ = _as_outputs(ctx.run_function(*inputs))
        roots, root_grads = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad and g is not None:
                roots.append(o)
                root_grads.append(g)
        if not roots:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        await _backward(roots, root_grads)
        return (None, None) + tuple(
            inputs[i].grad if isinstance(inputs[i], Tensor) else None for i in range(len(inputs))
        )


# ----- non-reentrant (NOTE [Non-reentrant checkpoint]) -------------------------------


SavedRun = Optional[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]


class CheckpointBackward(Node):
    """The backward of a non-reentrant checkpoint: recompute, then a nested capturing pass."""

    __slots__ = ("run", "rng_state", "out_positions", "boundary")
    run: SavedRun  # (function, args, kwargs), released after the pass like saved tensors
    rng_state: Any
    out_positions: list[int]
    boundary: tuple[Edge, ...]
    _runs_on_undefined = False
    # Its apply returns a coroutine (it awaits a nested pass on the loop): never a device thread's
    # job, and the engine awaits it only on the path of nodes that may not leave the loop.
    _offloadable = False

    def __init__(self, run: SavedRun, rng_state: Any, out_positions: list[int], boundary: tuple[Edge, ...]) -> None:
        self._init_node()
        self.run = run
        self.rng_state = rng_state
        self.out_positions = out_positions
        self.boundary = boundary

    def release_variables(self) -> None:
        self.run = None

    def apply(self, grads: list[Any]) -> Any:
        return self._apply(grads)

    async def _apply(self, grads: list[Any]) -> list[Any]:
        if self.run is None:
            raise RuntimeError(FREED)
        function, args, kwargs = self.run
        create_graph = _gm.is_grad_enabled()  # the engine runs nodes with grad mode = create_graph
        start_seq = next_sequence_nr() + 1
        with _RestoredRng(self.rng_state), _gm.enable_grad():
            outs, _ = _as_outputs(function(*args, **kwargs))
        recomputed: list[Tensor] = []
        root_grads: list[Any] = []
        for k, pos in enumerate(self.out_positions):
            o = outs[pos] if pos < len(outs) else None
            meta = self.input_metadata[k]
            if not isinstance(o, Tensor) or o.shape != meta.shape:
                got = list(o.shape) if isinstance(o, Tensor) else type(o).__name__
                raise RuntimeError(
                    f"checkpoint: the recomputed output {pos} ({got}) differs from the forward's "
                    f"({list(meta.shape)}): the checkpointed function must be deterministic"
                )
            if grads[k] is None or not o.requires_grad:
                continue
            recomputed.append(o)
            root_grads.append(grads[k])
        if not recomputed:
            return [None] * len(self.next_edges)
        # Cut the recomputed graph at its boundary: each edge that leaves it goes to a
        # private sink instead, where the nested pass captures the gradient. So nothing
        # outside runs or is freed, and no hook of an outside node fires twice.
        sinks: dict[tuple[int, int], _Sink] = {}

        def sink_for(e: Edge) -> Edge:
            key = (id(e[0]), e[1])
            s = sinks.get(key)
            if s is None:
                s = sinks[key] = _sink(Edge(e[0], e[1]))
            return _full_edge(s, 0)

        roots = []
        for o in recomputed:
            e = Edge(*o._gradient_edge())
            roots.append(sink_for(e) if _is_outside(e[0], start_seq) else _full_edge(e[0], e[1]))
        cuts = _cut_at_boundary([r[0] for r in roots], start_seq, sink_for)
        # Capture at the boundary this node was made with: its own next_edges may since have
        # been cut by an enclosing checkpoint's recomputation (nested checkpoints).
        outputs = []
        for e in self.boundary:
            key = (id(e[0]), e[1])
            # an edge the recomputation did not reach gets a sink of its own: captured as None
            outputs.append(_full_edge(sinks[key] if key in sinks else _sink(Edge(e[0], e[1])), 0))
        try:
            # With create_graph the gradients' own graph runs through the recomputed nodes:
            # keep their saved tensors, and give them their real edges back afterwards.
            captured = await default_engine.execute(roots, root_grads, create_graph, create_graph, False, outputs)
        finally:
            for node, i, e in cuts:
                node.set_next_edge(i, e)
        assert captured is not None
        return list(captured)


class _Sink(Node):
    """Where the nested pass of a non-reentrant checkpoint captures one boundary gradient."""

    __slots__ = ("stands_for",)
    # the boundary edge it captures, which a cut node's saved input is rebuilt at in a
    # create_graph pass (NOTE [Saved inputs] in saved.py)
    stands_for: Edge

    def __init__(self, stands_for: Edge) -> None:
        self._init_node()
        self.stands_for = stands_for

    def apply(self, grads: list[Any]) -> tuple[()]:
        return ()


def _sink(e: Edge) -> _Sink:
    """A sink for the boundary edge ``e``, expecting the gradient that ``e`` carries."""
    s = _Sink(e)
    s.input_metadata = [e[0].input_metadata[e[1]]]
    return s


def _full_edge(node: Node, nr: int) -> Edge:
    return Edge(node, nr)


def _is_outside(n: Node, start_seq: int) -> bool:
    return isinstance(n, (AccumulateGrad, _Sink)) or n.sequence_nr < start_seq


def _cut_at_boundary(
    starts: list[Node], start_seq: int, sink_for: Callable[[Edge], Edge]
) -> list[tuple[Node, int, Edge]]:
    """Point every edge leaving the graph recorded since ``start_seq`` to a sink; return the cuts."""
    cuts: list[tuple[Node, int, Edge]] = []
    stack = [n for n in starts if not _is_outside(n, start_seq)]
    seen = {id(n) for n in stack}
    while stack:
        n = stack.pop()
        edges = n.next_edges
        for i, e in enumerate(edges):
            if e is None:
                continue
            if _is_outside(e[0], start_seq):
                cuts.append((n, i, e))
                n.set_next_edge(i, sink_for(e))
            elif id(e[0]) not in seen:
                seen.add(id(e[0]))
                stack.append(e[0])
    return cuts


def _find_boundary(outputs: list[Tensor], start_seq: int) -> tuple[list[Edge], list[Node]]:
    """Edges leaving the graph recorded since ``start_seq``, and the nodes inside it (iterative)."""
    boundary: list[Edge] = []
    seen_edges: set[tuple[int, int]] = set()
    inside: list[Node] = []
    seen: set[int] = set()

    stack: list[Node] = []

    def visit(edge: Edge) -> None:
        n = edge[0]
        if _is_outside(n, start_seq):
            key = (id(n), edge[1])
            if key not in seen_edges:
                seen_edges.add(key)
                boundary.append(_full_edge(n, edge[1]))
        elif id(n) not in seen:
            seen.add(id(n))
            inside.append(n)
            stack.append(n)

    for o in outputs:
        visit(Edge(*o._gradient_edge()))
    while stack:
        n = stack.pop()
        for e in n.next_edges:
            if e is not None:
                visit(e)
    return boundary, inside


def _checkpoint_non_reentrant(
    function: Callable[..., Any], preserve_rng_state: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    if not _gm.is_grad_enabled():
        return function(*args, **kwargs)
    rng_state = _get_rng_state() if preserve_rng_state else None
    start_seq = next_sequence_nr() + 1
    raw = function(*args, **kwargs)
    outs, is_seq = _as_outputs(raw)
    diff = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    if not diff:
        return raw
    boundary, inside = _find_boundary([outs[i] for i in diff], start_seq)
    for n in inside:  # the activations are what checkpointing is meant not to keep
        n.release_variables()
    final = list(outs)
    new_outs = []
    for i in diff:
        o = outs[i]
        t = Tensor._wrap(o._data, o._device)
        final[i] = t
        new_outs.append(t)
    node = CheckpointBackward((function, args, kwargs), rng_state, diff, tuple(boundary))
    record(node, (), new_outs)
    node.next_edges = list(boundary)
    node.topological_nr = 1 + max((e[0].topological_nr for e in boundary), default=-1)
    if not is_seq:
        return final[0]
    return type(raw)(final) if isinstance(raw, (tuple, list)) else tuple(final)
