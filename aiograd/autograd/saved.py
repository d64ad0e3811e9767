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

NOTE [Saved inputs]: a pointwise Node (ops/_pointwise_nodes.py) keeps a saved tensor,
input or output, as three fields of its own: the array, the tensor's version counter and
the counter's snapshot at save (``saved``/``counter``/``version``, or ``a``/``a_counter``/
``a_version`` for operand ``a``); an operand that was a Python number is kept as the
number, with counter None. A version counter is a plain bytearray, which the garbage
collector does not track (NOTE [Version counters] in graph.py), so saving makes no
tracked object and keeps no Tensor alive: a chain of ops keeps one tracked object per op,
its node (NOTE [Cheap recording]). The counter is made at the save when the tensor has
none yet, with the shared snapshot ``ZERO_VERSION``. Where a SavedTensor keeps
``grad_fn``/``output_nr``/``leaf``, a saved input needs none of them: they are the node's
own edge for that input (``next0``/``next0_nr`` for input 0, ``next1``/``next1_nr`` for
input 1), whose node is the leaf's AccumulateGrad for a leaf that requires grad
(``variable`` is the leaf, handed back as itself) and None for an input that needs no
gradient. ``unpack_input`` makes the freed and in-place checks and, in a create_graph
pass, builds the Tensor at that place in the graph; ``unpack_output`` does the same for
the op's own output, whose grad_fn is the node. A checkpoint's nested pass cuts edges to
sinks of its own while it runs (checkpoint.py): a sink names the edge it stands for
(``stands_for``), and a saved input is rebuilt at that edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Union

import numpy as np

from ..device import Device
from ..tensor import Tensor
from .graph import ZERO_VERSION, AccumulateGrad, Version, VersionCounter, new_version_counter, version_value

if TYPE_CHECKING:
    from .graph import Node

__all__ = [
    "FREED",
    "VersionCounter",
    "Version",
    "SavedTensor",
    "SavedOutput",
    "Saved",
    "SavedOperand",
    "SavedArray",
    "SavedInputOperand",
    "save",
    "counter_and_version",
    "save_output",
    "unpack",
    "unpack_input",
    "unpack_output",
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
    version: Version  # the counter's snapshot at save: a different value now means "modified in place"
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
#: A Node field holding a saved operand's array or the Python number it was (NOTE [Saved inputs]); None once released.
SavedInputOperand = Union[np.ndarray, bool, int, float, complex, None]


def counter_and_version(t: "Tensor") -> "tuple[VersionCounter, Version]":
    """``t``'s version counter (made now if it has none) and a snapshot of it for the in-place check.

    NOTE [Version counters]: a counter made here, or one never bumped, has the shared
    snapshot ``ZERO_VERSION`` (nothing copied). The pointwise recorders (ops/_pointwise.py)
    write these lines out: a call per saved operand would be a noticeable share of a tiny op.
    """
    vc = t._vc
    if vc is None:
        vc = t._vc = new_version_counter()
        return vc, ZERO_VERSION
    return vc, vc.copy() if vc[0] else ZERO_VERSION


def save(t: "Tensor") -> SavedTensor:
    """Remember an input tensor for backward, with its version for the in-place check."""
    fn = t.grad_fn
    vc, version = counter_and_version(t)
    return _new_saved(SavedTensor, (t._data, vc, version, fn, t._output_nr,
                                    t if (fn is None and t._requires_grad) else None, t._device))


def save_output(t: "Tensor") -> SavedTensor:
    """Remember an op's own output for backward (call after ``record``): its grad_fn is the unpacking node."""
    vc, version = counter_and_version(t)
    return _new_saved(SavedOutput, (t._data, vc, version, None, t._output_nr, None, t._device))


def modified_error(node: "Node", arr: np.ndarray, now: "VersionCounter | int", saved: "Version | int",
                   leaf: bool) -> RuntimeError:
    """torch's in-place error. A leaf that requires grad can only have been changed under no_grad,
    which is what an optimizer's ``step()`` does: then the hint points at ``step_async``, which
    never writes an array that a pass in flight saved (NOTE [Step off the loop])."""
    if not isinstance(now, int):
        now = version_value(now)
    if not isinstance(saved, int):
        saved = version_value(saved)
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
    if vc[0] if saved.version is ZERO_VERSION else vc != saved.version:  # NOTE [Version counters]
        raise modified_error(node, saved.data, vc, saved.version, saved.leaf is not None)
    if not graph:
        return saved.data
    if saved.leaf is not None:
        return saved.leaf
    r = Tensor._wrap(saved.data, saved.device)
    r._vc = vc
    # an output saved by save_output has no grad_fn of its own: it is the unpacking node's
    fn = node if saved.__class__ is SavedOutput else saved.grad_fn
    if fn is not None:
        r.grad_fn = fn
        r._output_nr = saved.output_nr
        r._requires_grad = True
    return r


def unpack_output(node: "Node", data: Any, counter: VersionCounter, version: Version, graph: bool) -> Any:
    """An op's output kept by its node as three fields (NOTE [Saved inputs]): the array (a Tensor whose
    grad_fn is ``node``, in a create_graph pass), after the freed/in-place checks."""
    if data is None:
        raise RuntimeError(FREED)
    if counter != version:
        raise modified_error(node, data, counter, version, False)
    if not graph:
        return data
    r = Tensor._wrap(data, node.device)
    r._vc = counter
    r.grad_fn = node
    r._output_nr = 0
    r._requires_grad = True
    return r


def unpack_input(node: "Node", i: int, data: Any, counter: "VersionCounter | None", version: "Version | None",
                 graph: bool) -> Any:
    """Input ``i`` of ``node``, kept as three fields (NOTE [Saved inputs]): its array (in a create_graph
    pass, the Tensor at the place of the node's edge ``i``) after the freed/in-place checks; an operand
    that was a Python number (``counter`` None) as is."""
    if data is None:
        raise RuntimeError(FREED)
    if counter is None:
        return data
    fn, nr = (node.next0, node.next0_nr) if i == 0 else (node.next1, node.next1_nr)
    if fn is not None and (cut := getattr(fn, "stands_for", None)) is not None:  # a checkpoint's cut
        fn, nr = cut
    if counter != version:
        raise modified_error(node, data, counter, version or ZERO_VERSION, isinstance(fn, AccumulateGrad))
    if not graph:
        return data
    if isinstance(fn, AccumulateGrad):
        return fn.variable  # a leaf that requires grad is handed back as itself
    r = Tensor._wrap(data, node.device)
    r._vc = counter
    if fn is not None:
        r.grad_fn = fn
        r._output_nr = nr
        r._requires_grad = True
    return r
