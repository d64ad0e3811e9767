"""Saved tensors: what a Node keeps of a tensor for its backward, and the checks on reading it.

NOTE [Saved tensors]: like torch's SavedVariable, a saved tensor keeps the tensor's data
and its place in the graph, not the Tensor object, as a ``SavedTensor`` with named
fields: ``data``, ``version_counter`` and ``version`` (the in-place check), ``grad_fn``
and ``output_nr`` (where a create_graph pass puts the Tensor it rebuilds), ``leaf`` (a
leaf that requires grad is handed back as itself) and ``device``. An op's own output is
saved with ``save_output``: its ``grad_fn`` is left None and supplied by the node that
unpacks it, so saving an output makes no reference cycle. ``unpack`` reads a
SavedTensor: the freed check, the in-place check, then the array (or, in a create_graph
pass, a Tensor at the same place in the graph). Intermediate Tensor objects die during
forward.

NOTE [Saved inputs]: a pointwise Node (ops/_pointwise_nodes.py) keeps each tensor it saves
as the same named fields as a SavedTensor, flattened into slots of its own instead of a
tuple (a SavedTensor would be one more gc-tracked object per op, NOTE [Cheap recording] in
graph.py): for an input ``a`` of a binary node, ``a`` (the data), ``a_counter`` and
``a_version`` (the in-place check), ``a_grad_fn`` and ``a_output_nr`` (its place in the
graph); a unary node's input is ``saved``, ``counter``, ``version``, ``saved_grad_fn``,
``saved_output_nr``. ``leaf`` is not a field: a leaf that requires grad has its
AccumulateGrad as ``grad_fn``, which holds the leaf itself (``unpack_input`` hands it
back); ``device`` is the node's (a pointwise op's operands and output share one device).
The input Tensor object is not kept, so an intermediate Tensor of a chain dies during
forward, as with ``save``; the node keeps its array and its version counter, made at save
time if the tensor had none (a one-element array, which the collector does not track:
NOTE [Untracked version counter]). ``a_grad_fn`` is the node's edge to that input as it
was when recorded (``next0``), kept apart because the edge may be rewritten later (a
non-reentrant checkpoint points it at a sink during its recomputation's pass).
A saved *output* keeps only ``out``, ``out_counter``, ``out_version`` (``saved``,
``counter``, ``version`` for a unary node): its grad_fn is the node itself, and keeping the
output Tensor would make a cycle (output -> grad_fn -> output). ``unpack_input`` and
``unpack_output`` make the same freed and in-place checks as ``unpack``.

The two forms are one scheme, field for field: SavedTensor ``data`` / ``version_counter`` /
``version`` / ``grad_fn`` / ``output_nr`` are a pointwise node's ``a`` / ``a_counter`` /
``a_version`` / ``a_grad_fn`` / ``a_output_nr``; SavedTensor's ``leaf`` is ``a_grad_fn``
being an AccumulateGrad, its ``device`` the node's; ``save`` and the pointwise forward
(``record_node`` / ``make_unary`` in ops/_pointwise.py) fill them the same way, and
``unpack`` and ``unpack_input`` read them with the same checks and the same result. Only
the container differs: a hand-written node (linalg, nn, reductions: some 65 ``save`` and
``save_output`` calls) holds a SavedTensor, a NamedTuple and so one more tracked object
per saved tensor; the generated pointwise nodes, the ops a long chain of tiny ops is made
of, spread its fields over their own slots. Converting a hand-written node means giving
it those five slots per saved tensor; none is converted yet.

NOTE [Untracked version counter]: a version counter is a one-element int64 ndarray
(``new_counter``), read with ``vc.item()`` and bumped with ``vc[0] += 1``. numpy arrays hold
no references to Python objects, so the cyclic collector does not track them
(``gc.is_tracked`` is False): a counter made for every saved intermediate adds nothing
for the young and full collections to walk, where a class instance would be one more
tracked object per op. (``array.array`` is tracked, on Python 3.11 at least; a dict is untracked
only while it holds atomic values and only before Python 3.14; a bytearray cannot be
read as an int cheaply.) Views share their base's counter object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Union

import numpy as np

from ..device import Device
from ..tensor import Tensor
from .graph import AccumulateGrad, VersionCounter, new_counter

if TYPE_CHECKING:
    from .graph import Node

__all__ = [
    "FREED",
    "VersionCounter",
    "new_counter",
    "SavedTensor",
    "SavedOutput",
    "Saved",
    "SavedOperand",
    "SavedArray",
    "SavedInput",
    "SavedInputOperand",
    "save",
    "save_output",
    "unpack",
    "unpack_input",
    "unpack_output",
    "counter_of",
    "modified_error",
]

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class SavedTensor(NamedTuple):
    """A tensor saved for backward (NOTE [Saved tensors]): its data and place in the graph.

    A NamedTuple: fields by name, made without a Python-level constructor call (``save``
    builds it with ``tuple.__new__``: a third of a class instance's cost per saved tensor).
    """

    data: Any  # the ndarray (or SparseCOO) the tensor held at save
    version_counter: VersionCounter  # the tensor's counter, shared with its views
    version: int  # the counter's value at save: a different value now means "modified in place"
    grad_fn: "Node | None"  # the tensor's grad_fn; None for a leaf, a constant, or an op's own output
    output_nr: int
    leaf: "Tensor | None"  # the tensor itself when it is a leaf that requires grad
    device: Device


class SavedOutput(SavedTensor):
    """A saved op output (``save_output``): its ``grad_fn`` is the node that unpacks it."""

    __slots__ = ()


_new_saved = tuple.__new__


#: A Node field holding a saved tensor; None once released (NOTE [Typed nodes] in graph.py).
Saved = Union[SavedTensor, None]
#: A Node field holding a saved tensor or the Python number an operand was.
SavedOperand = Union[SavedTensor, bool, int, float, complex, None]
#: A Node field holding an array kept for backward only; None once released.
SavedArray = Union[np.ndarray, None]
#: A Node field holding a saved input's data (NOTE [Saved inputs]); None once released.
SavedInput = Union[np.ndarray, Any, None]
#: A Node field holding a saved input's data or the Python number an operand was (NOTE [Saved inputs]).
SavedInputOperand = Union[np.ndarray, bool, int, float, complex, Any, None]


def counter_of(t: "Tensor") -> VersionCounter:
    """``t``'s version counter, made now if it has none yet."""
    vc = t._vc
    if vc is None:  # made on first use (NOTE [Lazy version counter] in tensor.py)
        vc = t._vc = new_counter()
    return vc


def save(t: "Tensor") -> SavedTensor:
    """Remember an input tensor for backward, with its version for the in-place check."""
    fn = t.grad_fn
    vc = counter_of(t)
    return _new_saved(SavedTensor, (t._data, vc, vc.item(), fn, t._output_nr,
                                    t if (fn is None and t._requires_grad) else None, t._device))


def save_output(t: "Tensor") -> SavedTensor:
    """Remember an op's own output for backward (call after ``record``): its grad_fn is the unpacking node."""
    vc = counter_of(t)
    return _new_saved(SavedOutput, (t._data, vc, vc.item(), None, t._output_nr, None, t._device))


def modified_error(node: "Node", arr: np.ndarray, now: int, saved: int, leaf: bool) -> RuntimeError:
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


def unpack(node: "Node", saved: Any, graph: bool) -> Any:
    """The saved array (or Tensor, in a create_graph pass), after the freed/in-place checks.

    ``saved`` is a SavedTensor, or None once released (a field typed ``SavedOperand``
    may hold either, or a number the rule reads without unpacking)."""
    if saved is None:
        raise RuntimeError(FREED)
    vc = saved.version_counter
    if (now := vc.item()) != saved.version:
        raise modified_error(node, saved.data, now, saved.version, saved.leaf is not None)
    if not graph:
        return saved.data
    if saved.leaf is not None:
        return saved.leaf
    r = Tensor._wrap(saved.data, saved.device)
    r._version_counter = vc
    # an output saved by save_output has no grad_fn of its own: it is the unpacking node's
    fn = node if saved.__class__ is SavedOutput else saved.grad_fn
    if fn is not None:
        r.grad_fn = fn
        r._output_nr = saved.output_nr
        r._requires_grad = True
    return r


def unpack_output(node: "Node", data: Any, counter: VersionCounter, version: int, graph: bool) -> Any:
    """An op's output kept by its node as three fields (NOTE [Saved inputs]): the array (a Tensor whose
    grad_fn is ``node``, in a create_graph pass), after the freed/in-place checks."""
    if data is None:
        raise RuntimeError(FREED)
    if (now := counter.item()) != version:
        raise modified_error(node, data, now, version, False)
    if not graph:
        return data
    r = Tensor._wrap(data, node.device)
    r._version_counter = counter
    r.grad_fn = node
    r._output_nr = 0
    r._requires_grad = True
    return r


def unpack_input(node: "Node", data: Any, counter: VersionCounter, version: int, grad_fn: "Node | None",
                 output_nr: int, graph: bool) -> Any:
    """A saved input kept as fields of its node (NOTE [Saved inputs]): its array (a Tensor at the same
    place in the graph, in a create_graph pass), after the freed/in-place checks."""
    if data is None:
        raise RuntimeError(FREED)
    if (now := counter.item()) != version:
        raise modified_error(node, data, now, version, grad_fn.__class__ is AccumulateGrad)
    if not graph:
        return data
    if grad_fn.__class__ is AccumulateGrad:
        return grad_fn.variable  # a leaf that requires grad: itself
    from ..tensor import Tensor  # cycle: tensor -> graph -> saved -> tensor (graph re-exports this module)

    r = Tensor._wrap(data, node.device)
    r._version_counter = counter
    if grad_fn is not None:
        r.grad_fn = grad_fn
        r._output_nr = output_nr
        r._requires_grad = True
    return r
