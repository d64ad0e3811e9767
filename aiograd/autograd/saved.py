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

NOTE [Saved inputs]: a pointwise Node (ops/_pointwise_nodes.py) keeps a saved *input*
as the Tensor itself with the version its counter had (0 while it has none) instead of a
SavedTensor: the input Tensor already exists, and a SavedTensor would be one more
gc-tracked object per op (NOTE [Cheap recording] in graph.py). ``unpack_input`` makes
the same freed and in-place checks as ``unpack``; a create_graph pass uses the Tensor
itself. A saved *output* cannot be the Tensor (that would make a cycle: output ->
grad_fn -> output): a pointwise node keeps the output's array, version counter and
version as three fields of its own (``unpack_output``), so it makes no SavedTensor
either; other ops keep a SavedTensor (``save_output``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Union

import numpy as np

from ..device import Device
from ..tensor import Tensor
from .graph import VersionCounter

if TYPE_CHECKING:
    from .graph import Node

__all__ = [
    "FREED",
    "VersionCounter",
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
#: A Node field holding a saved input as the Tensor itself (NOTE [Saved inputs]); None once released.
SavedInput = Union["Tensor", None]
#: A Node field holding a saved input Tensor or the Python number an operand was (NOTE [Saved inputs]).
SavedInputOperand = Union["Tensor", bool, int, float, complex, None]


def counter_of(t: "Tensor") -> VersionCounter:
    """``t``'s version counter, made now if it has none yet."""
    vc = t._vc
    if vc is None:  # made on first use (NOTE [Lazy version counter] in tensor.py)
        vc = t._vc = VersionCounter()
    return vc


def save(t: "Tensor") -> SavedTensor:
    """Remember an input tensor for backward, with its version for the in-place check."""
    fn = t.grad_fn
    vc = counter_of(t)
    return _new_saved(SavedTensor, (t._data, vc, vc.value, fn, t._output_nr,
                                    t if (fn is None and t._requires_grad) else None, t._device))


def save_output(t: "Tensor") -> SavedTensor:
    """Remember an op's own output for backward (call after ``record``): its grad_fn is the unpacking node."""
    vc = counter_of(t)
    return _new_saved(SavedOutput, (t._data, vc, vc.value, None, t._output_nr, None, t._device))


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
    if vc.value != saved.version:
        raise modified_error(node, saved.data, vc.value, saved.version, saved.leaf is not None)
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
    if counter.value != version:
        raise modified_error(node, data, counter.value, version, False)
    if not graph:
        return data
    r = Tensor._wrap(data, node.device)
    r._version_counter = counter
    r.grad_fn = node
    r._output_nr = 0
    r._requires_grad = True
    return r


def unpack_input(node: "Node", x: Any, version: int, graph: bool) -> Any:
    """A saved input (NOTE [Saved inputs]): its array (the Tensor in a create_graph pass), after
    the freed/in-place checks."""
    if x is None:
        raise RuntimeError(FREED)
    vc = x._vc
    if vc is not None and vc.value != version:
        raise modified_error(node, x._data, vc.value, version, x.grad_fn is None and x._requires_grad)
    return x if graph else x._data
