"""The backward graph: Node, Edge, AccumulateGrad, GraphRoot, InputMetadata, hooks.

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
import threading
import traceback
import weakref
from sys import getrefcount
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NamedTuple, Sequence, Union

import numpy as np

from .._sparse import SparseCOO
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
    "VersionCounter",
    "InputMetadata",
    "AccumulateGrad",
    "GraphRoot",
    "RemovableHandle",
    "record",
    "sum_to",
    "sole_owner",
    "grad_lock",
    "is_numeric_array",
    "type_description",
    "save",
    "save_output",
    "unpack",
    "MAX_SEQUENCE_NR",
    "edge_to",
    "edges_of",
    "link",
    "link_one",
    "Saved",
    "SavedOperand",
    "SavedTensor",
    "SavedArray",
    "SavedInput",
    "SavedInputOperand",
    "Shape",
    "unpack_input",
    "version_of",
]

MAX_SEQUENCE_NR = (1 << 62) - 1

_sequence = itertools.count()
next_sequence_nr = _sequence.__next__

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


#: A saved tensor (NOTE [Saved tensors]): (array, version counter, version at save,
#: grad_fn, output_nr, leaf, device, is_output).
SavedTensor = tuple[Any, ...]
#: A Node field holding a saved tensor; None once released (NOTE [Typed nodes]).
Saved = Union[SavedTensor, None]
#: A Node field holding a saved tensor or the Python number an operand was.
SavedOperand = Union[SavedTensor, bool, int, float, complex, None]
#: A Node field holding an array kept for backward only; None once released.
SavedArray = Union[np.ndarray, None]
#: A Node field holding a saved input as the Tensor itself (NOTE [Saved inputs]); None once released.
SavedInput = Union["Tensor", None]
#: A Node field holding a saved input Tensor or the Python number an operand was (NOTE [Saved inputs]).
SavedInputOperand = Union["Tensor", bool, int, float, complex, None]
Shape = tuple[int, ...]


class Edge(NamedTuple):
    """Where a gradient goes: input ``input_nr`` of ``node``.

    ``shape``/``dtype`` repeat what ``node.input_metadata[input_nr]`` says the
    gradient must be, so the engine validates it without touching the next
    node's metadata (a cold object on large graphs); None means "look it up".
    """

    node: "Node"
    input_nr: int
    shape: "tuple[int, ...] | None" = None
    dtype: "np.dtype | None" = None


class InputMetadata(NamedTuple):
    """Shape, dtype and device of the gradient a node expects at one of its inputs."""

    shape: tuple[int, ...]
    dtype: np.dtype
    device: Device


class VersionCounter:
    """Counts in-place modifications; shared between a tensor and its views, and read by
    saved tensors (NOTE [Saved tensors]) to detect a change after they were saved."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


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


_NODE_INIT = """\
    self._edges = []
    self._to = None
    self.sequence_nr = next_sequence_nr()
    self.topological_nr = 0
    self._input_metadata = None
    self._shape_dtype = None
    self.n_inputs = 0
    self.device = CPU
    self._pre_hooks = None
    self._tensor_pre_hooks = None
    self._retains_grad_hooks = None
    self._post_hooks = None
    self._metadata = None
    self._forward_trace = None
    self._hooked = False
    self.work = 0
"""
# _hooked: any hook at all (the hot loop checks this one flag); work: the size of the
# backward's work (elements, or flops), read by the offload policy.

def _compile(signature: str, body: str) -> Any:
    """A function ``def <signature>:`` with ``body``, compiled in this module's namespace."""
    ns: dict[str, Any] = {}
    exec(f"def {signature}:\n{body or '    pass'}\n", globals(), ns)
    return next(iter(ns.values()))


_init_node = _compile("_init_node(self)", _NODE_INIT)


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
# annotations beside ``__slots__``:
#
#     class MulBackward0(Node):
#         __slots__ = ("a", "b", "a_shape", "b_shape")
#         a: SavedOperand        # a saved tensor or a Python number: released after backward
#         b: SavedOperand
#         a_shape: Shape         # anything else is kept with the graph
#         b_shape: Shape
#
# ``Node.__init_subclass__`` reads the annotations (parents' fields first) and compiles
# (1) a constructor taking the fields in order, ``MulBackward0(a, b, a_shape, b_shape)``,
# straight-line so recording an op stays one cheap line, and (2) ``release_variables``
# clearing the fields whose annotation names a ``Saved*`` type. mypy sees the same
# constructor through ``dataclass_transform``. A class that defines ``__init__`` keeps it;
# a class without ``__slots__`` of its own (with a ``__dict__``) declares no fields.


@dataclass_transform(eq_default=False)
class Node:
    """The backward of one recorded op.

    Subclasses implement ``apply`` and declare their fields as annotations
    (NOTE [Typed nodes]); fields typed ``Saved*`` are released after a pass.
    """

    __slots__ = (
        "_edges",
        "_to",
        "_to_nr",
        "_to_shape",
        "_to_dtype",
        "sequence_nr",
        "topological_nr",
        "_input_metadata",
        "_shape_dtype",
        "n_inputs",
        "device",
        "_pre_hooks",
        "_tensor_pre_hooks",
        "_retains_grad_hooks",
        "_post_hooks",
        "_metadata",
        "_forward_trace",
        "_hooked",
        "work",
        "__weakref__",
    )

    _edges: "list[Edge | None] | None"  # None while the node holds its one edge inline
    _to: "Node | None"  # the inline edge (NOTE [Inline edge]): its node, input_nr, shape, dtype
    _to_nr: int
    _to_shape: "tuple[int, ...]"
    _to_dtype: np.dtype
    sequence_nr: int
    topological_nr: int
    _input_metadata: "list[InputMetadata] | None"
    _shape_dtype: "tuple[Any, ...]"
    n_inputs: int
    device: Device
    _pre_hooks: "dict[int, Any] | None"
    _tensor_pre_hooks: "dict[int, tuple[int, Any]] | None"
    _retains_grad_hooks: "dict[int, Any] | None"
    _post_hooks: "dict[int, Any] | None"
    _metadata: "dict[str, Any] | None"
    _forward_trace: "list[str] | None"
    _hooked: bool
    work: int

    _saves: ClassVar[bool] = False  # whether release_variables has anything to release
    _saved_fields: ClassVar[tuple[str, ...]] = ()  # fields holding saved tensors (NOTE [Typed nodes])
    _fields: ClassVar[tuple[str, ...]] = ()  # the constructor's parameters, in order
    _runs_on_undefined: ClassVar[bool] = False  # whether apply runs when every incoming gradient is None
    _offloadable: ClassVar[bool] = True  # whether apply may run on a device thread (pure numpy rules)

    def __init__(self) -> None:
        _init_node(self)

    @property
    def next_edges(self) -> "list[Edge | None]":
        """Where this node's gradients go: one Edge (or None) per input of the forward op.

        A node holding its one edge inline (NOTE [Inline edge]) builds the list now, and
        keeps it: the list returned is the node's own, and may be changed in place.
        """
        edges = self._edges
        if edges is None:
            edges = self._edges = [_new_edge(Edge, (self._to, self._to_nr, self._to_shape, self._to_dtype))]
            self._to = None
        return edges

    @next_edges.setter
    def next_edges(self, edges: "list[Edge | None]") -> None:
        self._edges = edges
        self._to = None

    def first_edge(self) -> "Edge | None":
        """The first edge that is not None, if any (without building ``next_edges``)."""
        return next((e for e in edges_of(self) if e is not None), None)

    @property
    def input_metadata(self) -> list[InputMetadata]:
        """Shape, dtype and device of the gradient expected at each input of this node.

        A node recorded by ``link`` keeps no list: its one output has the shape and dtype
        of the tensor its first edge leads to, or those in ``_shape_dtype`` when they
        differ (NOTE [Cheap recording]), and the node's device; the list is built when
        first asked for.
        """
        metas = self._input_metadata
        if metas is None:
            sd = self._shape_dtype
            if sd is None:
                e = self.first_edge()
                if e is None:
                    return []
                sd = (e[2], e[3])
            metas = self._input_metadata = [InputMetadata(sd[0], sd[1], self.device)]
        return metas

    @input_metadata.setter
    def input_metadata(self, metas: list[InputMetadata]) -> None:
        self._input_metadata = metas
        self.n_inputs = len(metas)  # read by the hot loop instead of len(input_metadata)

    # ----- the rule -------------------------------------------------------------
    def apply(self, grads: list[Any]) -> Sequence[Any]:
        """Map the gradients of this op's outputs to the gradients of its inputs."""
        raise NotImplementedError(f"{self.name()} does not implement apply")

    def __call__(self, *grads: Any) -> Sequence[Any]:
        return self.apply(list(grads))

    def release_variables(self) -> None:
        """Drop what was saved for backward (called after a pass without retain_graph).

        A class with saved fields gets a compiled one (NOTE [Typed nodes]); one without
        has nothing to release (the engine calls it on every node of such a pass, without
        asking ``_saves`` first: an attribute of the class costs as much as the call).
        """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = _declared_fields(cls)
        saved = tuple(name for name, ann in own if _is_saved(ann))
        if saved:
            cls._saved_fields = cls._saved_fields + saved
        if own:
            cls._fields = cls._fields + tuple(name for name, _ in own)
            if "__init__" not in cls.__dict__:
                cls.__init__ = _compile(  # type: ignore[method-assign]
                    f"__init__(self, {', '.join(cls._fields)})",
                    _NODE_INIT + "".join(f"    self.{f} = {f}\n" for f in cls._fields),
                )
        if cls._saved_fields and "release_variables" not in cls.__dict__:
            cls._saves = True
            # A straight-line release per class: a setattr loop costs ~1 us per node.
            cls.release_variables = _compile(  # type: ignore[method-assign]
                "release_variables(self)", "".join(f"    self.{f} = None\n" for f in cls._saved_fields)
            )

    # ----- introspection ----------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple[tuple["Node | None", int], ...]:
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    def num_inputs(self) -> int:
        return len(self.input_metadata)

    def num_outputs(self) -> int:
        return 1 if self._to is not None else len(self._edges)  # type: ignore[arg-type]

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def should_compute_output(self, index: int) -> bool:
        return self.next_edges[index] is not None

    # ----- hooks ------------------------------------------------------------------
    def register_hook(self, fn: Callable[[tuple[Any, ...], tuple[Any, ...]], Any]) -> RemovableHandle:
        """Post hook: ``fn(grad_inputs, grad_outputs)`` after apply; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        self._hooked = True
        return RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn: Callable[[tuple[Any, ...]], Any]) -> RemovableHandle:
        """Pre hook: ``fn(grad_outputs)`` before apply; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._hooked = True
        return RemovableHandle(self._pre_hooks, fn)

    def _register_tensor_pre_hook(self, output_nr: int, fn: Callable[[Any], Any]) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        self._hooked = True
        return RemovableHandle(self._tensor_pre_hooks, (output_nr, fn))

    def _add_retains_grad(self, t: "Tensor") -> None:
        if self._retains_grad_hooks is None:
            self._retains_grad_hooks = {}
        self._retains_grad_hooks[t._output_nr] = weakref.ref(t)
        self._hooked = True

    def _has_hooks(self) -> bool:
        return bool(self._pre_hooks or self._tensor_pre_hooks or self._retains_grad_hooks or self._post_hooks)


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``variable.grad``.

    During an engine pass the gradient is staged in the GraphTask and
    committed when the pass completes (see engine.py NOTE [Staged gradients]);
    calling ``apply`` directly accumulates at once.
    """

    __slots__ = ("variable",)

    def __init__(self, variable: "Tensor") -> None:
        super().__init__()
        self.variable = variable
        self.sequence_nr = MAX_SEQUENCE_NR
        self.device = variable._device
        # plain tuples, not the Size of variable.shape (NOTE [Size at the surface] in tensor.py)
        self.input_metadata = [InputMetadata(variable._data.shape, variable._data.dtype, variable._device)]
        self._hooked = bool(variable._hooks)

    def apply(self, grads: list[Any]) -> tuple[()]:
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


# NOTE [Atomic accumulation]: ``.grad`` is read, added into and written back by
# every pass that reaches a leaf, and passes run at once in several threads
# (``backward_sync`` in threads, one event loop per thread, device threads).
# numpy releases the GIL inside ``np.add``, so an unguarded read-modify-write
# loses updates, and two threads that both see ``.grad is None`` both install
# their own gradient. Every accumulation into a tensor's ``.grad`` (a leaf's, by
# the engine's commit or a direct ``AccumulateGrad`` call, or a retained one)
# therefore runs under ``grad_lock(tensor)``, from the None check to the store.
# (Resetting ``.grad`` in one thread while another accumulates is the caller's
# race, as in torch.) The locks are a fixed set made at import (so creating one can
# never race) and a tensor maps to one of them by identity: no per-tensor state,
# so creating tensors stays as cheap as before and copying or pickling a tensor
# never meets a lock. Two leaves that share a lock only take turns; a lock is
# held around numpy arithmetic alone (never around hooks or user code), and no
# code holds two of them, so nothing can deadlock. Uncontended, one acquire and
# release costs well under a microsecond per leaf and pass.
_GRAD_LOCKS = tuple(threading.Lock() for _ in range(61))


def grad_lock(t: "Tensor") -> threading.Lock:
    """The lock guarding the read-modify-write of ``t``'s ``.grad`` (NOTE [Atomic accumulation])."""
    # Objects are 16-byte aligned; a prime modulus spreads neighbours over every lock.
    return _GRAD_LOCKS[(id(t) >> 4) % 61]


def accumulate_into_grad(variable: "Tensor", g: Any, owned: bool) -> None:
    """``variable.grad += g`` with torch's rules, atomically (NOTE [Atomic accumulation]).

    ``g`` is an ndarray (which the engine may own: ``owned``) or, in a pass
    with ``create_graph``, a Tensor. An ndarray is added in place into an
    existing ``.grad``; a Tensor is added out of place so that the old
    ``.grad`` stays valid for any graph that uses it, and keeps its graph.
    """
    from ..tensor import Tensor

    with _GRAD_LOCKS[(id(variable) >> 4) % 61]:  # grad_lock(variable), inlined: once per leaf and pass
        old = variable._grad
        if isinstance(g, Tensor):
            if old is None:
                variable._grad = g if g.grad_fn is not None else Tensor._wrap(copy_payload(g._data), variable._device)
            else:
                variable._grad = old + g
            return
        if old is None:
            if owned:
                arr = g
            elif g.__class__ is SparseCOO:  # a sparse gradient (NOTE [Sparse payload] in _sparse.py)
                arr = g.astype(variable._data.dtype)
            else:
                arr = np.array(g, dtype=variable._data.dtype, copy=True)
            variable._grad = Tensor._wrap(arr, variable._device)
        elif old.grad_fn is None and old._data.flags.writeable:
            np.add(old._data, g, out=old._data, casting="unsafe")
            old._version_counter.value += 1
        else:
            variable._grad = Tensor._wrap(old._data + g, variable._device)


def accumulate_into_retained_grad(t: "Tensor", g: Any, owned: bool) -> None:
    """``t.grad += g`` for a non-leaf that retains its grad: always out of place (the
    retained ``.grad`` may be held by the user), atomically (NOTE [Atomic accumulation])."""
    from ..tensor import Tensor

    with grad_lock(t):
        old = t._grad
        if isinstance(g, Tensor):
            t._grad = g if old is None else old + g
        elif old is None:
            arr = g if owned and g.__class__ is np.ndarray and g.flags.writeable else copy_payload(g)
            t._grad = Tensor._wrap(arr, t._device)
        else:
            t._grad = Tensor._wrap(old._data + g, t._device)


def copy_payload(a: Any) -> Any:
    """A copy of a gradient payload: an ndarray, or a sparse one (NOTE [Sparse payload] in _sparse.py)."""
    return a.copy() if a.__class__ is SparseCOO else np.array(a, copy=True)


class GraphRoot(Node):
    """A node with no inputs that seeds the pass: passes the root gradients to the roots."""

    __slots__ = ("outputs",)
    _runs_on_undefined = True  # it has no incoming gradient: apply must run regardless

    def __init__(self, edges: list[Edge | None], grads: list[Any]) -> None:
        super().__init__()
        self.next_edges = [e if e is None or len(e) == 4 else Edge(e[0], e[1]) for e in edges]
        self.outputs = grads
        self.sequence_nr = MAX_SEQUENCE_NR
        for e in edges:
            # edges may be plain (node, input_nr) tuples (Tensor._gradient_edge)
            if e is not None and e[0].topological_nr + 1 > self.topological_nr:
                self.topological_nr = e[0].topological_nr + 1

    def apply(self, grads: list[Any]) -> list[Any]:
        return self.outputs

    def name(self) -> str:
        return "GraphRoot"


# ----- recording ops ------------------------------------------------------------------


_new_edge = tuple.__new__  # builds an Edge without NamedTuple's Python-level __new__

# NOTE [Cheap recording]: an op on small arrays spends most of its time outside numpy,
# and in a long forward a large part of that (about 40% of a (4,)-element op in a
# 20,000-op chain) is the garbage collector walking what each op leaves behind: every
# container object that survives is visited by the young and the full collections.
# So an op records with as few surviving objects as it can: the node, its edge list
# and one Edge per differentiable input, or for an op of one input the node alone
# (NOTE [Inline edge]). Its output needs no
# InputMetadata: the shape and dtype it has are most often those of the tensor its
# first edge leads to, which the Edge tuple already holds; ``_shape_dtype`` is set only
# when they differ, and ``Node.input_metadata`` builds the list only when asked (hooks,
# error paths). The anomaly context is read only once some anomaly mode was ever entered.
# (No ``__getattr__`` on Node for defaults: it makes every attribute read of every node,
# the engine's included, about three times slower.)


# NOTE [Inline edge]: a node recorded by ``link_one`` (an op of one input: the unary
# ops, views, reductions...) keeps its one edge in four slots of its own, ``_to``,
# ``_to_nr``, ``_to_shape`` and ``_to_dtype`` (an Edge's fields), and ``_edges`` is None:
# no list and no Edge tuple, two gc-tracked objects fewer per recorded op, which is half
# of what a chain of unary ops leaves to the collector (a forward of 20,000 of them in a
# process of ~180,000 objects no longer reaches the full collection that alone cost as
# much as the ops). Every other node keeps the list in ``_edges`` (``_to`` None). The
# engine and ``compute_dependencies`` read the slots; ``next_edges`` builds the list the
# first time something asks for it and the node keeps that list from then on (so code
# that changes a node's edges in place, as checkpoint does, sees the same list).


def edges_of(node: Node) -> "Sequence[Edge | None]":
    """``node.next_edges``, without making an inline edge (NOTE [Inline edge]) a list for good."""
    if node._to is not None:
        return (_new_edge(Edge, (node._to, node._to_nr, node._to_shape, node._to_dtype)),)
    return node._edges  # type: ignore[return-value]


def edge_to(x: "Tensor") -> Edge:
    """The edge that carries the gradient of ``x`` (a tensor that requires grad)."""
    d = x._data
    fn = x.grad_fn
    if fn is None:
        return _new_edge(Edge, (x._get_grad_accumulator(), 0, d.shape, d.dtype))
    return _new_edge(Edge, (fn, x._output_nr, d.shape, d.dtype))


def link(node: Node, edges: "list[Edge | None]", out: "Tensor") -> None:
    """Make ``node`` (whose inputs' edges are ``edges``, one at least) the ``grad_fn`` of the op's
    one output ``out``."""
    topo = 0
    first = None
    for e in edges:
        if e is not None:
            if first is None:
                first = e
            t = e[0].topological_nr
            if t >= topo:
                topo = t + 1
    node._edges = edges
    node.topological_nr = topo
    d = out._data
    shape = d.shape
    dtype = d.dtype
    if first is None or dtype is not first[3] or shape != first[2]:
        node._shape_dtype = (shape, dtype)
    node.n_inputs = 1
    node.device = out._device
    node.work = d.size
    out.grad_fn = node
    out._requires_grad = True
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node._forward_trace = traceback.format_stack()[:-2]


def link_one(node: Node, x: "Tensor", out: "Tensor") -> None:
    """``link(node, [edge_to(x)], out)`` in one call: the op has one input, ``x``, which requires grad."""
    d = x._data
    fn = x.grad_fn
    shape = d.shape
    dtype = d.dtype
    # the edge to x, inline (NOTE [Inline edge])
    node._edges = None
    if fn is None:
        fn = x._get_grad_accumulator()
        node._to_nr = 0
    else:
        node._to_nr = x._output_nr
    node._to = fn
    node._to_shape = shape
    node._to_dtype = dtype
    node.topological_nr = fn.topological_nr + 1
    od = out._data
    if od.dtype is not dtype or od.shape != shape:
        node._shape_dtype = (od.shape, od.dtype)
    node.n_inputs = 1
    node.device = out._device
    node.work = od.size
    out.grad_fn = node
    out._requires_grad = True
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node._forward_trace = traceback.format_stack()[:-2]


def record(node: Node, inputs: Sequence[Any], outputs: Sequence["Tensor"]) -> None:
    """Link ``node`` into the graph: edges to each input that requires grad, and
    make it the ``grad_fn`` of each output.

    ``inputs`` may hold non-tensors (constants), which get no edge (``None``).
    """
    edges: list[Edge | None] = []
    topo = 0
    device = None
    for x in inputs:
        rg = getattr(x, "_requires_grad", None)  # None: not a tensor
        if rg is not None:
            if device is None:
                device = x._device
            if rg:
                e = edge_to(x)
                edges.append(e)
                t = e[0].topological_nr
                if t >= topo:
                    topo = t + 1
                continue
        edges.append(None)
    node._edges = edges
    node.topological_nr = topo
    if device is not None:
        node.device = device
    metas = []
    work = 0
    for i, out in enumerate(outputs):
        out.grad_fn = node
        out._output_nr = i
        out._requires_grad = True
        d = out._data
        work += d.size
        metas.append(InputMetadata(d.shape, d.dtype, out._device))
    node.input_metadata = metas
    node.work = work
    if _gm.anomaly_seen[0] and _gm._anomaly.get()[0]:
        node._forward_trace = traceback.format_stack()[:-2]


# ----- saved tensors -----------------------------------------------------------------
# NOTE [Saved tensors]: like torch's SavedVariable, a saved tensor keeps its data
# and its graph position, not the Tensor object: the tuple
#     (array, version_counter, version_at_save, grad_fn, output_nr, leaf, device, is_output)
# An ordinary pass reads ``array`` after comparing the counter with the saved
# version (the in-place check). A create_graph pass rebuilds a Tensor at the
# same place in the graph (the leaf itself for a leaf that requires grad).
# Intermediate Tensor objects therefore die during forward, and an op that
# saves its own output makes no reference cycle (its grad_fn is supplied by
# the unpacking node).


def save(t: "Tensor") -> SavedTensor:
    """Remember an input tensor for backward, with its version for the in-place check."""
    vc = t._vc
    if vc is None:  # made on first use (NOTE [Lazy version counter] in tensor.py)
        vc = t._vc = VersionCounter()
    fn = t.grad_fn
    leaf = t if (fn is None and t._requires_grad) else None
    return (t._data, vc, vc.value, fn, t._output_nr, leaf, t._device, False)


def save_output(t: "Tensor") -> SavedTensor:
    """Remember an op's own output for backward (call after ``record``)."""
    vc = t._vc
    if vc is None:
        vc = t._vc = VersionCounter()
    return (t._data, vc, vc.value, None, t._output_nr, None, t._device, True)


def _modified(node: Node, arr: np.ndarray, now: int, saved: int, leaf: bool) -> RuntimeError:
    """torch's in-place error. A leaf that requires grad can only have been changed under no_grad,
    which is what an optimizer's ``step()`` does: then the hint points at ``step_async``, which
    never writes an array that a pass in flight saved (NOTE [Step off the loop])."""
    if leaf:
        hint = (
            "Hint: it is a leaf that requires grad, changed in place under no_grad after the forward op "
            "(an optimizer's step()?). Where other tasks or threads run passes over the same parameters, "
            "update them with `await opt.step_async()`, which never changes what a pass in flight saved."
        )
    else:
        hint = "Hint: the operation that modified it ran after the forward op; make a copy (clone()) before changing it."
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{arr.dtype} {list(arr.shape)}], which is saved by {node.name()}, is at "
        f"version {now}; expected version {saved} instead. {hint}"
    )


def unpack(node: Node, saved: Any, graph: bool) -> Any:
    """The saved array (or Tensor, in a create_graph pass), after the freed/in-place checks."""
    if saved is None:
        raise RuntimeError(_FREED)
    arr, vc, version, fn, out_nr, leaf, device, is_output = saved
    if vc.value != version:
        raise _modified(node, arr, vc.value, version, leaf is not None)
    if not graph:
        return arr
    if leaf is not None:
        return leaf
    from ..tensor import Tensor

    r = Tensor._wrap(arr, device)
    r._version_counter = vc
    if is_output:
        fn = node
    if fn is not None:
        r.grad_fn = fn
        r._output_nr = out_nr
        r._requires_grad = True
    return r


# NOTE [Saved inputs]: an op made by a pointwise template (ops/_pointwise.py) keeps a
# saved *input* as the Tensor itself, with the version its counter had (``version_of``),
# instead of a SavedTensor tuple: the input Tensor already exists, and its counter is made
# only if something views or changes it in place, so the op leaves one or two objects
# fewer to the garbage collector (NOTE [Cheap recording]). ``unpack_input`` makes the same
# freed and in-place checks as ``unpack``; a create_graph pass uses the Tensor itself.
# A saved *output* stays a SavedTensor: keeping the output Tensor would make a cycle.


def version_of(t: "Tensor") -> int:
    """The version of ``t``'s counter (0 while it has none: NOTE [Lazy version counter])."""
    vc = t._vc
    return 0 if vc is None else vc.value


def unpack_input(node: Node, x: Any, version: int, graph: bool) -> Any:
    """A saved input (NOTE [Saved inputs]): its array (the Tensor in a create_graph pass), after
    the freed/in-place checks."""
    if x is None:
        raise RuntimeError(_FREED)
    vc = x._vc
    if vc is not None and vc.value != version:
        raise _modified(node, x._data, vc.value, version, x.grad_fn is None and x._requires_grad)
    return x if graph else x._data


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
