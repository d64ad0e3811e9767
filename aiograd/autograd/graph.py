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

import itertools
import threading
import traceback
import weakref
from sys import getrefcount
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

import numpy as np

from ..device import CPU, Device
from . import grad_mode as _gm

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = [
    "Node",
    "Edge",
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


class Node:
    """The backward of one recorded op.

    Subclasses implement ``apply``; those that keep tensors for backward
    implement ``release_variables`` and set ``_saves = True``.
    """

    __slots__ = (
        "next_edges",
        "sequence_nr",
        "topological_nr",
        "_input_metadata",
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

    next_edges: "list[Edge | None]"
    sequence_nr: int
    topological_nr: int
    _input_metadata: "list[InputMetadata]"
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

    _saves = False  # whether release_variables has anything to release
    _saved_fields: tuple[str, ...] = ()  # slots holding saved tensors, cleared by release_variables
    _runs_on_undefined = False  # whether apply runs when every incoming gradient is None
    _offloadable = True  # whether apply may run on a device thread (pure numpy rules)

    def __init__(self) -> None:
        self.next_edges = []
        self.sequence_nr = next_sequence_nr()
        self.topological_nr = 0
        self.input_metadata = []
        self.device = CPU
        self._pre_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad_hooks = None
        self._post_hooks = None
        self._metadata = None
        self._forward_trace = None
        self._hooked = False  # any hook at all: the hot loop checks this one flag
        self.work = 0  # size of the backward's work (elements, or flops): read by the offload policy

    @property
    def input_metadata(self) -> list[InputMetadata]:
        """Shape, dtype and device of the gradient expected at each input of this node."""
        return self._input_metadata

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
        """Drop what was saved for backward (called after a pass without retain_graph)."""
        for f in self._saved_fields:
            setattr(self, f, None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = cls.__dict__.get("_saved_fields")
        if fields and "release_variables" not in cls.__dict__:
            cls._saves = True
            # A straight-line release per class: a setattr loop costs ~1 us per node.
            body = "".join(f"    self.{f} = None\n" for f in fields)
            ns: dict[str, Any] = {}
            exec(f"def release_variables(self):\n{body}", ns)
            cls.release_variables = ns["release_variables"]  # type: ignore[method-assign]

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
        return len(self.next_edges)

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
        self.input_metadata = [InputMetadata(variable.shape, variable.dtype, variable._device)]
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
                variable._grad = g if g.grad_fn is not None else Tensor._wrap(np.array(g._data), variable._device)
            else:
                variable._grad = old + g  # type: ignore[operator]
            return
        if old is None:
            if owned:
                arr = g
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
            t._grad = g if old is None else old + g  # type: ignore[operator]
        elif old is None:
            arr = g if owned and g.__class__ is np.ndarray and g.flags.writeable else np.array(g, copy=True)
            t._grad = Tensor._wrap(arr, t._device)
        else:
            t._grad = Tensor._wrap(old._data + g, t._device)


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


def record(node: Node, inputs: Sequence[Any], outputs: Sequence["Tensor"]) -> None:
    """Link ``node`` into the graph: edges to each input that requires grad, and
    make it the ``grad_fn`` of each output.

    ``inputs`` may hold non-tensors (constants), which get no edge (``None``).
    """
    from ..tensor import Tensor

    edges: list[Edge | None] = []
    topo = 0
    device = None
    for x in inputs:
        if x.__class__ is Tensor or isinstance(x, Tensor):
            if device is None:
                device = x._device
            if x._requires_grad:
                fn = x.grad_fn
                d = x._data
                if fn is None:
                    fn = x._get_grad_accumulator()
                    edges.append(_new_edge(Edge, (fn, 0, d.shape, d.dtype)))
                else:
                    edges.append(_new_edge(Edge, (fn, x._output_nr, d.shape, d.dtype)))
                if fn.topological_nr >= topo:
                    topo = fn.topological_nr + 1
                continue
        edges.append(None)
    node.next_edges = edges
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
    anomaly = _gm._anomaly.get()
    if anomaly[0]:
        node._forward_trace = traceback.format_stack()[:-2]


def needs_grad(*inputs: Any) -> bool:
    """Whether an op on ``inputs`` must record a node (grad mode on and some input requires grad)."""
    from ..tensor import Tensor

    if not _gm.is_grad_enabled_fast():
        return False
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            return True
    return False


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


def save(t: "Tensor") -> tuple[Any, ...]:
    """Remember an input tensor for backward, with its version for the in-place check."""
    vc = t._version_counter
    fn = t.grad_fn
    leaf = t if (fn is None and t._requires_grad) else None
    return (t._data, vc, vc.value, fn, t._output_nr, leaf, t._device, False)


def save_output(t: "Tensor") -> tuple[Any, ...]:
    """Remember an op's own output for backward (call after ``record``)."""
    vc = t._version_counter
    return (t._data, vc, vc.value, None, t._output_nr, None, t._device, True)


def unpack(node: Node, saved: Any, graph: bool) -> Any:
    """The saved array (or Tensor, in a create_graph pass), after the freed/in-place checks."""
    if saved is None:
        raise RuntimeError(_FREED)
    arr, vc, version, fn, out_nr, leaf, device, is_output = saved
    if vc.value != version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{arr.dtype} {list(arr.shape)}], which is saved by {node.name()}, is at "
            f"version {vc.value}; expected version {version} instead. Hint: the operation that "
            "modified it ran after the forward op; make a copy (clone()) before changing it."
        )
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
