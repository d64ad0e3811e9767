"""The backward graph: Node, Edge, AccumulateGrad, GraphRoot, InputMetadata, VersionCounter, hooks.

A ``Node`` is the backward of one recorded operation. ``apply(grads)`` takes
one gradient per output of the forward op and returns one per input, in the
order of ``next_edges``. Gradients are numpy arrays during an ordinary pass,
and Tensors when the pass records a graph of its own (``create_graph=True``);
a rule written with numpy functions and operators serves both, because
Tensor implements numpy's dispatch protocols.

NOTE [Sequence numbers]: every recorded node takes the next value of one
global counter, so later ops run first in backward (higher priority), and
``AccumulateGrad`` takes the maximum so leaves are written (and their buffers
freed) as soon as their gradient is ready.

NOTE [Per-pass state]: a node holds nothing about any particular backward
pass. Dependency counts, input buffers and staged gradients live in the
GraphTask, so two passes over one retained graph never see each other.
"""

from __future__ import annotations

import inspect
import itertools
import traceback
import weakref
from sys import getrefcount
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NamedTuple, Sequence, Union

import numpy as np

from ..device import CPU, Device
from . import grad_mode as _gm


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    from ..tensor import Tensor
else:

    def dataclass_transform(**kwargs: Any) -> Callable[[type], type]:
        """Only for type checkers (NOTE [Typed nodes]): at run time the class is unchanged."""
        return lambda cls: cls

__all__ = [
    "Node",
    "Edge",
    "NodeHooks",
    "VersionCounter",
    "Version",
    "ZERO_VERSION",
    "new_version_counter",
    "bump_version",
    "version_value",
    "InputMetadata",
    "AccumulateGrad",
    "GraphRoot",
    "RemovableHandle",
    "record",
    "sum_to",
    "sole_owner",
    "is_numeric_array",
    "type_description",
    "MAX_SEQUENCE_NR",
    "edge_to",
    "link",
    "link_one",
    "link_pair",
    "Shape",
]

MAX_SEQUENCE_NR = (1 << 62) - 1

_sequence = itertools.count()
next_sequence_nr = _sequence.__next__

Shape = tuple[int, ...]


# NOTE [Version counters]: a tensor's count of in-place changes, shared with its views and
# read by saved tensors (NOTE [Saved tensors] in saved.py) to detect a change after they
# were saved, is a plain ``bytearray`` of 9 bytes: byte 0 is 0 until the first change and
# 1 from then on, bytes 1-8 hold the count as a little-endian integer. A plain bytearray is
# not tracked by the garbage collector (a class instance, a bytearray subclass or an
# ``array.array`` is) and is cheap to make, so a node can keep a saved intermediate's
# counter beside its array without keeping the Tensor, and the graph keeps one tracked
# object per op (NOTE [Cheap recording]). ``new_version_counter()`` makes one at 0 (a copy
# of a private zero: ~35 ns, where ``bytearray(9)`` parses its argument and takes ~150);
# ``bump_version`` adds one in place (in-place ops are rare next to recording).
# A saved version is a snapshot: the shared ``ZERO_VERSION`` for a counter never changed
# (byte 0 is 0: nothing is copied), else ``counter.copy()`` (a bytearray that nothing bumps;
# ``bytes(counter)`` costs three times as much). The in-place check is ``counter !=
# snapshot``; against ``ZERO_VERSION`` it is ``counter[0]``, one byte read (~30 ns where
# comparing the bytearrays takes ~80): a check that every node saving a tensor makes in
# every backward. ``version_value`` reads either as an int (``Tensor._version``, the error
# message). ``VersionCounter(other)`` makes a counter of its own at ``other``'s value.
VersionCounter = bytearray
#: A saved version: a snapshot of a counter (NOTE [Version counters]).
Version = Union[bytes, bytearray]
#: The snapshot of every counter that was never bumped (NOTE [Version counters]: compared by identity).
ZERO_VERSION: Version = bytes(9)
#: A new version counter at 0 (NOTE [Version counters]).
new_version_counter: Callable[[], VersionCounter] = bytearray(9).copy


def bump_version(vc: VersionCounter) -> None:
    """Count one in-place change in ``vc`` (NOTE [Version counters]): mark it changed, add one, carrying."""
    vc[0] = 1
    i = 1
    while vc[i] == 255:
        vc[i] = 0
        i += 1
    vc[i] += 1


def version_value(vc: Version) -> int:
    """A counter's (or a snapshot's) value as an int (NOTE [Version counters])."""
    return int.from_bytes(vc, "little") >> 8


class Edge(NamedTuple):
    """Where a gradient goes: input ``input_nr`` of ``node`` (NOTE [Edges])."""

    node: "Node"
    input_nr: int


class InputMetadata(NamedTuple):
    """Shape, dtype and device of the gradient a node expects at one of its inputs."""

    shape: tuple[int, ...]
    dtype: np.dtype
    device: Device


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook."""

    _next_id = itertools.count()
    __slots__ = ("_store", "id")

    def __init__(self, store: dict[int, Any], hook: Any) -> None:
        self.id = next(RemovableHandle._next_id)
        self._store = store
        store[self.id] = hook

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class NodeHooks:
    """The hooks of one node, made when the first is registered (``Node._hooks``): the hot loop
    tests ``node._hooks is not None`` once per node (engine.py NOTE [Hot loop])."""

    __slots__ = ("pre", "tensor_pre", "retains_grad", "post")

    def __init__(self) -> None:
        self.pre: dict[int, Any] | None = None  # register_prehook: fn(grad_outputs)
        self.tensor_pre: dict[int, tuple[int, Any]] | None = None  # Tensor.register_hook: (output_nr, fn)
        self.retains_grad: dict[int, Any] | None = None  # output_nr -> weakref to the Tensor
        self.post: dict[int, Any] | None = None  # register_hook: fn(grad_inputs, grad_outputs)


_NO_EDGES: "tuple[Edge | None, ...]" = ()
_NO_METADATA: "tuple[InputMetadata, ...]" = ()


def _own_copy(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A second function object running ``fn``'s code, with caches of its own (NOTE [One initializer per class])."""
    copy = FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = fn.__qualname__
    return copy


def _declared_fields(cls: type) -> list[tuple[str, Any]]:
    """(name, annotation) of the fields ``cls`` itself declares (NOTE [Typed nodes])."""
    if "__slots__" not in cls.__dict__:
        return []
    slots = cls.__dict__["__slots__"]
    slots = (slots,) if isinstance(slots, str) else tuple(slots)
    own = []
    for name, ann in inspect.get_annotations(cls).items():
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        if name not in slots:
            raise TypeError(f"{cls.__name__} declares the field {name!r} but not in __slots__: add it there")
        own.append((name, text))
    return own


def _is_saved(annotation: str) -> bool:
    return annotation.startswith("Saved")


# NOTE [Typed nodes]: a Node subclass declares what its backward needs as class
# annotations beside ``__slots__``, and writes the constructor that sets them:
#
#     class MulBackward0(Node):
#         __slots__ = ("a", "a_version", "b", "b_version", "a_shape", "b_shape")
#         a: SavedInputOperand   # Saved*: released by release_variables after a pass
#         a_version: int
#         ...
#         a_shape: Shape         # anything else is kept with the graph
#
#         def __init__(self, a, a_version, b, b_version, a_shape, b_shape) -> None:
#             self._init_node()     # NOTE [One initializer per class]
#             self.a = a
#             ...
#         def release_variables(self) -> None:
#             self.a = None         # exactly the Saved* fields
#             self.b = None
#
# ``Node.__init_subclass__`` reads the annotations (parents' fields first) into
# ``_fields`` and the ``Saved*`` ones into ``_saved_fields``; it generates no code.
# Every aiograd Node class writes its constructor and ``release_variables`` out
# (tests/test_node_classes.py checks them against the annotations; the pointwise ones
# are generated into ops/_pointwise_nodes.py). A class outside aiograd that writes
# neither gets ``Node._init_fields`` (the fields in order, positional or by name) and
# ``Node._release_saved`` (clears ``_saved_fields``): correct, but loops. mypy sees the
# constructor through ``dataclass_transform``. A class without ``__slots__`` of its
# own (with a ``__dict__``) declares no fields.

# NOTE [Edges]: every node stores its edges the same way, in named slots: ``next0`` /
# ``next0_nr`` for input 0, ``next1`` / ``next1_nr`` for input 1, and a tuple
# ``more_edges`` of ``Edge | None`` for inputs 2.. (the shared empty tuple when there
# are none); ``n_edges`` is how many inputs the forward op had (an input that needs no
# gradient has node None). So an op of one or two inputs records with no edge object
# at all (NOTE [Cheap recording]), and the engine reads the slots by name.
# ``next_edges`` (torch's list of Edge) and ``next_functions`` are built on demand;
# assigning ``next_edges`` or calling ``set_next_edge`` rewrites the slots. A rule asks
# whether input i needs a gradient with ``should_compute_output(i)`` (torch's name).

# NOTE [Gradient metadata]: what the gradient arriving at a node's input i must be
# (shape, dtype, device) lives on that node: ``grad_shape`` / ``grad_dtype`` /
# ``device`` for input 0, always set when it is recorded, and a tuple of InputMetadata
# ``more_metadata`` for inputs 1.. of a multi-output op. The engine validates a
# gradient against the fields of the node it flows into (engine.py NOTE [Hot loop] (h));
# ``input_metadata`` builds torch's list from them.


@dataclass_transform(eq_default=False)
class Node:
    """The backward of one recorded op.

    Subclasses implement ``apply`` and declare their fields as annotations
    (NOTE [Typed nodes]); fields typed ``Saved*`` are released after a pass.
    """

    __slots__ = (
        "next0",  # NOTE [Edges]: the node receiving the gradient of input 0, or None
        "next0_nr",  # ... at that node's input number
        "next1",  # the same for input 1
        "next1_nr",
        "more_edges",  # Edge | None for inputs 2.. (() when none)
        "n_edges",  # the number of inputs of the forward op (edges, None ones included)
        "sequence_nr",  # NOTE [Sequence numbers]: the priority in the ready queue
        "topological_nr",  # 1 + the largest topological_nr of the next nodes (0 for a leaf's sink)
        "grad_shape",  # NOTE [Gradient metadata]: the gradient at input 0: its shape (None: no inputs)
        "grad_dtype",  # ... its dtype
        "device",  # ... its device (and the device the node's rule runs on)
        "more_metadata",  # InputMetadata of inputs 1.. (outputs 1.. of the forward op)
        "work",  # the size of the backward's work (elements), read by the offload policy
        "_hooks",  # NodeHooks once a hook is registered, else None
        "_metadata",  # torch's Node.metadata dict (anomaly mode's "traceback_" too), made on first use
        "__weakref__",
    )

    next0: "Node | None"
    next0_nr: int
    next1: "Node | None"
    next1_nr: int
    more_edges: "tuple[Edge | None, ...]"
    n_edges: int
    sequence_nr: int
    topological_nr: int
    grad_shape: "tuple[int, ...] | None"
    grad_dtype: "np.dtype | None"
    device: Device
    more_metadata: "tuple[InputMetadata, ...]"
    work: int
    _hooks: "NodeHooks | None"
    _metadata: "dict[str, Any] | None"

    _saves: ClassVar[bool] = False  # whether release_variables has anything to release
    _saved_fields: ClassVar[tuple[str, ...]] = ()  # fields holding saved tensors (NOTE [Typed nodes])
    _fields: ClassVar[tuple[str, ...]] = ()  # the constructor's parameters, in order
    _runs_on_undefined: ClassVar[bool] = False  # whether apply runs when every incoming gradient is None
    _offloadable: ClassVar[bool] = True  # whether apply may run on a device thread (pure numpy rules)

    def __init__(self) -> None:
        self._init_node()

    # NOTE [One initializer per class]: every node starts with the fields below, and the
    # constructor of each Node class calls ``self._init_node()`` before it stores its own
    # fields. The interpreter specializes an attribute store for the one class it last saw
    # at that place in the code; a single ``_init_node`` shared by ~200 classes keeps
    # missing, and its 15 stores then make every recorded op slower (``x.sum()``,
    # ``x @ w``, ``x.reshape(16)`` measured each way). So ``__init_subclass__`` gives each class
    # its own copy of this function (the same code object, copied: nothing is compiled).
    # The generated pointwise constructors (ops/_pointwise_nodes.py) inline these stores.
    def _init_node(self) -> None:
        self.next0 = None
        self.next0_nr = 0
        self.next1 = None
        self.next1_nr = 0
        self.more_edges = _NO_EDGES
        self.n_edges = 0
        self.sequence_nr = next_sequence_nr()
        self.topological_nr = 0
        self.grad_shape = None
        self.grad_dtype = None
        self.device = CPU
        self.more_metadata = _NO_METADATA
        self.work = 0
        self._hooks = None
        self._metadata = None

    def _init_fields(self, *args: Any, **kwargs: Any) -> None:
        """The constructor of a class that declares fields and writes no ``__init__`` (NOTE [Typed nodes])."""
        self._init_node()
        fields = type(self)._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments but {len(args)} were given")
        for name, value in zip(fields, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            if name not in fields or fields.index(name) < len(args):
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {name!r}")
            setattr(self, name, value)
        missing = [f for f in fields[len(args):] if f not in kwargs]
        if missing:
            raise TypeError(f"{type(self).__name__}() missing arguments: {', '.join(missing)}")

    def _release_saved(self) -> None:
        """The ``release_variables`` of a class that declares saved fields and writes none."""
        for name in type(self)._saved_fields:
            setattr(self, name, None)

    # ----- edges (NOTE [Edges]) ---------------------------------------------------
    def edge(self, i: int) -> "Edge | None":
        """The edge of input ``i`` (None when that input needs no gradient)."""
        if i == 0 and self.n_edges:
            n = self.next0
            return None if n is None else Edge(n, self.next0_nr)
        if i == 1 and self.n_edges > 1:
            n = self.next1
            return None if n is None else Edge(n, self.next1_nr)
        if 2 <= i < self.n_edges:
            return self.more_edges[i - 2]
        raise IndexError(f"{self.name()} has {self.n_edges} inputs, no input {i}")

    def should_compute_output(self, i: int) -> bool:
        """Whether input ``i`` of the forward op needs a gradient (torch's name for it; False past the last input)."""
        if i == 0:
            return self.next0 is not None
        if i == 1:
            return self.next1 is not None
        return 2 <= i < self.n_edges and self.more_edges[i - 2] is not None

    def set_next_edge(self, i: int, e: "Edge | tuple[Node, int] | None") -> None:
        """Point input ``i`` at ``e`` (checkpoint's cuts)."""
        if not 0 <= i < self.n_edges:
            raise IndexError(f"{self.name()} has {self.n_edges} inputs, no input {i}")
        if i == 0:
            self.next0, self.next0_nr = (None, 0) if e is None else (e[0], e[1])
        elif i == 1:
            self.next1, self.next1_nr = (None, 0) if e is None else (e[0], e[1])
        else:
            more = list(self.more_edges)
            more[i - 2] = None if e is None else Edge(e[0], e[1])
            self.more_edges = tuple(more)

    @property
    def next_edges(self) -> "list[Edge | None]":
        """Where this node's gradients go: one Edge (or None) per input of the forward op.

        Built from the edge slots (NOTE [Edges]) on each read: change a node's edges by
        assigning this property or with ``set_next_edge``, not by changing the list.
        """
        return [self.edge(i) for i in range(self.n_edges)]

    @next_edges.setter
    def next_edges(self, edges: "Sequence[Edge | tuple[Node, int] | None]") -> None:
        self.n_edges = n = len(edges)
        self.next0 = self.next1 = None
        self.next0_nr = self.next1_nr = 0
        if n > 2:
            self.more_edges = tuple(None if e is None else Edge(e[0], e[1]) for e in edges[2:])
        else:
            self.more_edges = _NO_EDGES
        for i in range(min(n, 2)):
            self.set_next_edge(i, edges[i])

    @property
    def next_functions(self) -> tuple[tuple["Node | None", int], ...]:
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    # ----- gradient metadata (NOTE [Gradient metadata]) -------------------------------
    @property
    def input_metadata(self) -> list[InputMetadata]:
        """Shape, dtype and device of the gradient expected at each input of this node."""
        if self.grad_shape is None:
            return []
        return [InputMetadata(self.grad_shape, self.grad_dtype, self.device), *self.more_metadata]  # type: ignore[arg-type]

    @input_metadata.setter
    def input_metadata(self, metas: Sequence[InputMetadata]) -> None:
        if not metas:
            self.grad_shape = self.grad_dtype = None
            self.more_metadata = _NO_METADATA
            return
        m = metas[0]
        self.grad_shape = tuple(m[0])
        self.grad_dtype = m[1]
        self.device = m[2]
        self.more_metadata = tuple(InputMetadata(*x) for x in metas[1:])

    @property
    def n_inputs(self) -> int:
        """How many gradients this node takes (outputs of the forward op)."""
        return 0 if self.grad_shape is None else 1 + len(self.more_metadata)

    # ----- the rule -------------------------------------------------------------
    def apply(self, grads: list[Any]) -> Sequence[Any]:
        """Map the gradients of this op's outputs to the gradients of its inputs."""
        raise NotImplementedError(f"{self.name()} does not implement apply")

    def __call__(self, *grads: Any) -> Sequence[Any]:
        return self.apply(list(grads))

    def release_variables(self) -> None:
        """Drop what was saved for backward (called after a pass without retain_graph).

        A class with saved fields writes its own or gets ``_release_saved`` (NOTE [Typed
        nodes]); one without has nothing to release (the engine calls it on every node of
        such a pass, without asking ``_saves`` first: a class attribute costs as much as the call).
        """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._init_node = _own_copy(Node._init_node)  # type: ignore[method-assign]  # NOTE [One initializer per class]
        own = _declared_fields(cls)
        saved = tuple(name for name, ann in own if _is_saved(ann))
        if saved:
            cls._saved_fields = cls._saved_fields + saved
        if own:
            cls._fields = cls._fields + tuple(name for name, _ in own)
            if "__init__" not in cls.__dict__:
                cls.__init__ = Node._init_fields  # type: ignore[method-assign]
                # what inspect (and the docs) show: the fields, in order
                cls.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                    [inspect.Parameter(f, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in cls._fields])
        if cls._saved_fields:
            cls._saves = True
            # a class that adds saved fields, or inherits nothing that releases, gets the loop;
            # one that adds none keeps what its parent wrote
            if "release_variables" not in cls.__dict__ and (saved or cls.release_variables is Node.release_variables):
                cls.release_variables = Node._release_saved  # type: ignore[method-assign]

    # ----- introspection ----------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def num_inputs(self) -> int:
        return self.n_inputs

    def num_outputs(self) -> int:
        return self.n_edges

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def _forward_trace(self) -> "list[str] | None":
        """The forward's stack, recorded under anomaly mode (torch keeps it in metadata too)."""
        return None if self._metadata is None else self._metadata.get("traceback_")

    # ----- hooks ------------------------------------------------------------------
    def _hook_store(self) -> NodeHooks:
        """This node's hooks, made on first use."""
        h = self._hooks
        if h is None:
            h = self._hooks = NodeHooks()
        return h

    def register_hook(self, fn: Callable[[tuple[Any, ...], tuple[Any, ...]], Any]) -> RemovableHandle:
        """Post hook: ``fn(grad_inputs, grad_outputs)`` after apply; may return new grad_inputs."""
        h = self._hook_store()
        if h.post is None:
            h.post = {}
        return RemovableHandle(h.post, fn)

    def register_prehook(self, fn: Callable[[tuple[Any, ...]], Any]) -> RemovableHandle:
        """Pre hook: ``fn(grad_outputs)`` before apply; may return new grad_outputs."""
        h = self._hook_store()
        if h.pre is None:
            h.pre = {}
        return RemovableHandle(h.pre, fn)

    def _register_tensor_pre_hook(self, output_nr: int, fn: Callable[[Any], Any]) -> RemovableHandle:
        h = self._hook_store()
        if h.tensor_pre is None:
            h.tensor_pre = {}
        return RemovableHandle(h.tensor_pre, (output_nr, fn))

    def _add_retains_grad(self, t: "Tensor") -> None:
        h = self._hook_store()
        if h.retains_grad is None:
            h.retains_grad = {}
        h.retains_grad[t._output_nr] = weakref.ref(t)

    def _has_hooks(self) -> bool:
        h = self._hooks
        return h is not None and bool(h.pre or h.tensor_pre or h.retains_grad or h.post)


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``variable.grad``.

    During an engine pass the gradient is staged in the GraphTask and
    committed when the pass completes (see engine.py NOTE [Staged gradients]);
    calling ``apply`` directly accumulates at once.
    """

    __slots__ = ("variable",)

    def __init__(self, variable: "Tensor") -> None:
        self._init_node()
        self.variable = variable
        self.sequence_nr = MAX_SEQUENCE_NR
        d = variable._data
        self.grad_shape = d.shape  # plain tuples, not Size (NOTE [Size at the surface] in tensor.py)
        self.grad_dtype = d.dtype
        self.device = variable._device
        if variable._hooks:
            self._hook_store()

    def apply(self, grads: list[Any]) -> tuple[()]:
        # (the engine stages leaf gradients and never calls this)
        from .accumulate import accumulate_into_grad  # cycle: accumulate is above Tensor (NOTE [Layers])

        g = grads[0]
        if g is not None:
            accumulate_into_grad(self.variable, g, owned=False)
            hooks = self.variable._post_accumulate_hooks
            if hooks:
                for hook in list(hooks.values()):
                    hook(self.variable)
        return ()

    def name(self) -> str:
        return "AccumulateGrad"


class GraphRoot(Node):
    """A node with no inputs that seeds the pass: passes the root gradients to the roots."""

    __slots__ = ("outputs",)
    _runs_on_undefined = True  # it has no incoming gradient: apply must run regardless

    def __init__(self, edges: "Sequence[Edge | tuple[Node, int] | None]", grads: list[Any]) -> None:
        self._init_node()
        self.next_edges = edges  # edges may be plain (node, input_nr) tuples (Tensor._gradient_edge)
        self.outputs = grads
        self.sequence_nr = MAX_SEQUENCE_NR
        for e in edges:
            if e is not None and e[0].topological_nr + 1 > self.topological_nr:
                self.topological_nr = e[0].topological_nr + 1

    def apply(self, grads: list[Any]) -> list[Any]:
        return self.outputs

    def name(self) -> str:
        return "GraphRoot"


# ----- recording ops ------------------------------------------------------------------

# NOTE [Cheap recording]: an op on small arrays spends most of its time outside numpy,
# and in a long forward much of that is the garbage collector walking what each op
# leaves behind: every container object that survives is visited by the young and the
# full collections (benchmarks/forward.py's "gc paused" row shows how much). So an op
# leaves as few gc-tracked objects alive as it can: its node alone for an op of one or
# two inputs (the edges are slots, NOTE [Edges]; the gradient's metadata too, NOTE
# [Gradient metadata]); a pointwise node's saved tensors are arrays, version counters
# and snapshots, none of them tracked (NOTE [Saved inputs] in saved.py, NOTE [Version
# counters]), so the intermediate Tensor it saved dies with the next op. Temporaries
# made while recording (an edge list passed to ``link``) die at once and cost the
# collector nothing. Shape tuples count too: a new tuple is tracked until the first young
# collection walks it, and each one kept counts toward that collection's threshold, so a
# binary pointwise node keeps an operand's shape only where the operand was broadcast
# (``a_shape``/``b_shape`` None otherwise: ``h * w`` keeps 2 new objects per op, not 4,
# and runs half the young collections). tests/test_pointwise_nodes.py pins the counts (benchmarks/forward.py's
# tracked/op column shows them). The anomaly trace is read only once some anomaly mode was ever entered.
# (No ``__getattr__`` on Node for defaults: it makes every attribute read of every
# node, the engine's included, about three times slower.)

# NOTE [Leaf sink lookup]: a leaf that requires grad keeps a weak reference to its
# AccumulateGrad (``Tensor._get_grad_accumulator`` makes one when there is none);
# ``link_one``/``link_pair`` read that reference themselves and call the method only to
# make one, which saves a Python call per leaf operand (``h * w`` with ``w`` a parameter
# records one per op).


_new_edge = tuple.__new__  # builds an Edge without NamedTuple's Python-level __new__ (record's hot path)


def edge_to(x: "Tensor") -> Edge:
    """The edge that carries the gradient of ``x`` (a tensor that requires grad)."""
    fn = x.grad_fn
    if fn is None:
        return _new_edge(Edge, (x._get_grad_accumulator(), 0))
    return _new_edge(Edge, (fn, x._output_nr))


def _finish(node: Node, out: "Tensor") -> None:
    """The output side of ``link``/``link_one``/``link_pair``: ``out``'s metadata, and out -> node."""
    d = out._data
    node.grad_shape = d.shape
    node.grad_dtype = d.dtype
    node.device = out._device
    node.work = d.size
    out.grad_fn = node
    out._requires_grad = True
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node.metadata["traceback_"] = traceback.format_stack()[:-3]


def link(node: Node, edges: "Sequence[Edge | None]", out: "Tensor") -> None:
    """Make ``node`` (whose inputs' edges are ``edges``) the ``grad_fn`` of the op's one output ``out``."""
    node.next_edges = edges
    topo = 0
    for e in edges:
        if e is not None and e[0].topological_nr >= topo:
            topo = e[0].topological_nr + 1
    node.topological_nr = topo
    _finish(node, out)


# NOTE [Slots the link sets]: ``link_one`` sets these slots of its node, and ``link_pair``
# these and the second edge's. A generated pointwise node (ops/_pointwise_nodes.py) is
# made by its class's ``record``, which copies Node._init_node's stores less these slots,
# and then the link's statements (ops/_pointwise.py NOTE [Recorded by the node class]):
# storing them twice was a tenth of the bytecodes of recording ``h * w``
# (benchmarks/callgrind_chain.py). Its ``__init__``, like every other node's, makes a whole
# node (``Node._init_node``). tests/test_pointwise_nodes.py checks both lists against these
# functions.
LINK_ONE_SLOTS = ("next0", "next0_nr", "n_edges", "topological_nr", "grad_shape", "grad_dtype", "device", "work")
LINK_PAIR_SLOTS = LINK_ONE_SLOTS + ("next1", "next1_nr")


def link_one(node: Node, x: "Tensor", out: "Tensor") -> None:
    """``link(node, [edge_to(x)], out)`` without the list: the op has one input, ``x``, which requires grad."""
    fn = x.grad_fn
    if fn is None:  # a leaf: its AccumulateGrad, through its weak reference (NOTE [Leaf sink lookup])
        if (ref := x._grad_accumulator) is None or (fn := ref()) is None:
            fn = x._get_grad_accumulator()
        node.next0_nr = 0
    else:
        node.next0_nr = x._output_nr
    node.next0 = fn
    node.n_edges = 1
    node.topological_nr = fn.topological_nr + 1
    d = out._data
    node.grad_shape = d.shape
    node.grad_dtype = d.dtype
    node.device = out._device
    node.work = d.size
    out.grad_fn = node
    out._requires_grad = True
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node.metadata["traceback_"] = traceback.format_stack()[:-2]


def link_pair(node: Node, a: "Tensor | None", b: "Tensor | None", out: "Tensor") -> None:
    """``link`` for an op of two inputs, given as the tensors (None: that input needs no gradient).

    Sets both edges either way (NOTE [Slots the link sets])."""
    topo = 0
    if a is None:
        node.next0 = None
        node.next0_nr = 0
    else:
        fn = a.grad_fn
        if fn is None:  # NOTE [Leaf sink lookup]
            if (ref := a._grad_accumulator) is None or (fn := ref()) is None:
                fn = a._get_grad_accumulator()
            node.next0_nr = 0
        else:
            node.next0_nr = a._output_nr
        node.next0 = fn
        topo = fn.topological_nr + 1
    if b is None:
        node.next1 = None
        node.next1_nr = 0
    else:
        fn = b.grad_fn
        if fn is None:  # NOTE [Leaf sink lookup]
            if (ref := b._grad_accumulator) is None or (fn := ref()) is None:
                fn = b._get_grad_accumulator()
            node.next1_nr = 0
        else:
            node.next1_nr = b._output_nr
        node.next1 = fn
        if fn.topological_nr >= topo:
            topo = fn.topological_nr + 1
    node.n_edges = 2
    node.topological_nr = topo
    d = out._data
    node.grad_shape = d.shape
    node.grad_dtype = d.dtype
    node.device = out._device
    node.work = d.size
    out.grad_fn = node
    out._requires_grad = True
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node.metadata["traceback_"] = traceback.format_stack()[:-2]


def record(node: Node, inputs: Sequence[Any], outputs: Sequence["Tensor"]) -> None:
    """Link ``node`` into the graph: edges to each input that requires grad, and
    make it the ``grad_fn`` of each output.

    ``inputs`` may hold non-tensors (constants), which get no edge (``None``). The first
    two edges go straight into their slots (NOTE [Edges]): no Edge tuple is made for them.
    """
    more: list[Edge | None] = []
    topo = 0
    device = None
    i = 0
    for x in inputs:
        fn = None
        nr = 0
        rg = getattr(x, "_requires_grad", None)  # None: not a tensor
        if rg is not None:
            if device is None:
                device = x._device
            if rg:
                fn = x.grad_fn
                if fn is None:
                    fn = x._get_grad_accumulator()
                else:
                    nr = x._output_nr
                if fn.topological_nr >= topo:
                    topo = fn.topological_nr + 1
        if i == 0:
            if fn is not None:
                node.next0 = fn
                node.next0_nr = nr
        elif i == 1:
            if fn is not None:
                node.next1 = fn
                node.next1_nr = nr
        else:
            more.append(None if fn is None else _new_edge(Edge, (fn, nr)))
        i += 1
    node.n_edges = i
    if more:
        node.more_edges = tuple(more)
    node.topological_nr = topo
    work = 0
    for i, out in enumerate(outputs):
        out.grad_fn = node
        out._output_nr = i
        out._requires_grad = True
        work += out._data.size
    if outputs:
        d = outputs[0]._data
        node.grad_shape = d.shape
        node.grad_dtype = d.dtype
        node.device = outputs[0]._device
        node.more_metadata = tuple(InputMetadata(o._data.shape, o._data.dtype, o._device) for o in outputs[1:])
    elif device is not None:  # no output: the node's device is its inputs'
        node.device = device
    node.work = work
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node.metadata["traceback_"] = traceback.format_stack()[:-2]


# ----- shared gradient helpers -------------------------------------------------------


def sole_owner(a: Any, refs: int) -> bool:
    """Whether only ``refs`` known references reach ``a``'s memory, so it may be kept or
    written in place (torch's use_count test; engine.py NOTE [Aliasing]).

    A view qualifies when its base is an array that nothing but this view holds: the
    fresh result that a rule reshaped or transposed (e.g. a weight's gradient that
    PermuteBackward0 hands out as a transposed view).
    """
    if a.__class__ is not np.ndarray or not a.flags.writeable or getrefcount(a) > refs + 1:
        return False  # +1 above: getrefcount's own argument
    base = a.base
    if base is None:
        return True
    # base is referenced by the view, by the local name and by getrefcount's argument.
    return base.__class__ is np.ndarray and base.base is None and getrefcount(base) <= 3




def is_numeric_array(g: Any) -> bool:
    """Whether ``g`` is a numpy array (or numpy scalar) of numbers: aiograd takes one where
    torch takes a Tensor as a gradient."""
    return isinstance(g, (np.ndarray, np.generic)) and g.dtype.kind in "biufc"


def type_description(g: Any) -> str:
    """``g``'s type in an error message ("list", "numpy array of dtype <U1")."""
    if isinstance(g, np.ndarray):
        return f"numpy array of dtype {g.dtype}"
    return type(g).__name__


def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
    """Reduce a broadcast gradient ``g`` back to ``shape`` (works on ndarrays and Tensors)."""
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead < 0:
        raise RuntimeError(f"cannot reduce a gradient of shape {list(gshape)} to shape {list(shape)}")
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1
    )
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    if lead:
        g = g.reshape(shape)
    elif g.shape != shape:
        g = g.reshape(shape)
    return g


def is_expandable_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (so a gradient of ``target`` can be reduced to it)."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != 1 and s != t:
            return False
    return True
