"""The autograd front end: ``backward`` and ``grad`` (awaitable) and their blocking twins.

They check the user's arguments (roots that need grad, root gradients of the
right shape), find the edges to start from and to capture, and hand the pass
to the engine. The top of the autograd layers (NOTE [Layers] in autograd/__init__.py):
the package names these functions and binds them on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable, Generator, Sequence, Union

import numpy as np

from .._aio import run_without_loop, running_loop_kind
from ..tensor import Tensor
from .accumulate import copy_payload
from .backward_call import BackwardCall
from .engine import default_engine
from .graph import is_numeric_array, type_description

__all__ = ["backward", "grad", "backward_sync", "grad_sync", "run_backward", "run_grad", "Gradients"]

TensorOrTensors = Union["Tensor", Sequence["Tensor"]]

# iterable, yet one gradient (and so is a Tensor)
_ONE_GRADIENT: tuple[type, ...] = (np.ndarray, np.generic, str, bytes)


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs: tuple["Tensor", ...], grads: tuple[Any, ...], create_graph: bool) -> list[Any]:
    """Root gradients: the given ones (shape-checked) or ones for scalar outputs."""
    out: list[Any] = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if o._data.dtype.kind not in "fc":
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {o._data.dtype}"
                )
            arr = np.ones(o.shape, o._data.dtype)
            out.append(Tensor._wrap(arr, o._device) if create_graph else arr)
            continue
        if not isinstance(g, Tensor):
            if not is_numeric_array(g):  # a numpy array of numbers also serves, as in custom backwards
                raise TypeError(f"gradients can be either Tensors or None, but got {type_description(g)}")
            g = Tensor._wrap(np.asarray(g, dtype=o._data.dtype), o._device)
        if g.shape != o.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and output[{i}] has a "
                f"shape of {list(o.shape)}."
            )
        if g._device is not o._device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device: grad_output[{i}] is on {g._device} "
                f"but output[{i}] is on {o._device}"
            )
        out.append(g if create_graph else g._data)
    return out


def _root_edges(outputs: tuple["Tensor", ...]) -> list[Any]:
    edges = []
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(t._gradient_edge())
    return edges


def _grad_tensors(tensors: tuple[Any, ...], grad_tensors: Any) -> tuple[Any, ...]:
    """The gradients given for ``tensors``: a sequence of them, or one."""
    if grad_tensors is None:
        return (None,) * len(tensors)
    if isinstance(grad_tensors, (Tensor, *_ONE_GRADIENT)) or not isinstance(grad_tensors, Iterable):
        grad_tensors = (grad_tensors,)  # one gradient (checked by _make_grads), never its elements
    grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(
            f"grad_tensors should have the same length as tensors: got {len(grad_tensors)} and {len(tensors)}"
        )
    return grad_tensors


def backward(
    tensors: TensorOrTensors,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: TensorOrTensors | None = None,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> BackwardCall:
    """Accumulate into ``.grad`` of the leaves the gradient of ``tensors`` (torch.autograd.backward).

    ``progress=True`` shows a tqdm bar of the nodes run out of the nodes the
    pass will run; a callable gets ``(done, total)`` instead (see ``PassMonitor``).
    Awaitable inside a running event loop: nothing runs until the result is
    awaited (NOTE [Forgotten await]); where no loop runs in this thread the
    pass completes before this returns (NOTE [Sync outside a loop]).
    """
    return BackwardCall.start(
        run_backward, (tensors, grad_tensors, retain_graph, create_graph, inputs), {"progress": progress},
        "ag.backward(...)",
    )


async def run_backward(
    tensors: TensorOrTensors,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: TensorOrTensors | None = None,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> None:
    """The pass behind ``backward()``, ``Tensor.backward()`` and ``backward_sync()``."""
    roots = _as_tuple(tensors)
    if inputs is not None:
        in_t = _as_tuple(inputs)
        if not in_t:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    else:
        in_t = ()
    grads = _make_grads(roots, _grad_tensors(roots, grad_tensors), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(roots)
    outputs = None
    if in_t:
        outputs = []
        for t in in_t:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None:
                t.retain_grad()
            outputs.append(t._gradient_edge())
    await default_engine.execute(edges, grads, retain_graph, create_graph, True, outputs, progress=progress)


class Gradients(tuple):
    """The gradients ``ag.grad`` returns where no event loop runs: a tuple, as torch's, that
    may still be awaited (it gives itself), so code written for a loop runs too
    (NOTE [Sync outside a loop])."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, "Gradients"]:
        return self
        yield  # pragma: no cover - makes this a generator that returns at once


def grad(
    outputs: TensorOrTensors,
    inputs: TensorOrTensors,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> Any:
    """The gradients of ``outputs`` w.r.t. ``inputs``, without touching ``.grad`` (torch.autograd.grad).

    Inside a running event loop this returns a coroutine: ``gx, = await ag.grad(y, [x])``.
    Where no loop runs in this thread, the pass completes first and the tuple of
    gradients is returned, as in torch (NOTE [Sync outside a loop]). ``progress``:
    as for ``backward``.
    """
    args = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, is_grads_batched,
            materialize_grads)
    if running_loop_kind() is None:
        return Gradients(run_without_loop(lambda: run_grad(*args, progress=progress)))
    return run_grad(*args, progress=progress)


async def run_grad(
    outputs: TensorOrTensors,
    inputs: TensorOrTensors,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> tuple["Tensor | None", ...]:
    """The pass behind ``grad()`` and ``grad_sync()``."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported; loop over the batch instead")
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got "
            "allow_unused=False."
        )
    allow_unused = bool(allow_unused) or materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("grad requires at least one input")
    grads = _make_grads(outs, _grad_tensors(outs, grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(outs)
    out_edges = []
    for t in ins:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad() inputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        out_edges.append(t._gradient_edge())
    captured = await default_engine.execute(
        edges, grads, retain_graph, create_graph, False, out_edges, progress=progress
    )
    assert captured is not None
    result: list[Tensor | None] = []
    for t, g in zip(ins, captured):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
            result.append(Tensor._wrap(np.zeros(t.shape, t.dtype), t._device) if materialize_grads else None)
        elif isinstance(g, Tensor):
            result.append(g)
        else:
            arr = g if (g.__class__ is np.ndarray and g.flags.writeable) else copy_payload(g)
            result.append(Tensor._wrap(arr, t._device))
    return tuple(result)


def _refuse_in_loop(name: str) -> None:
    if running_loop_kind() is not None:
        raise RuntimeError(
            f"{name}() cannot run inside a running event loop (it would block it); "
            f"use `await {name.replace('_sync', '')}(...)` instead"
        )


def backward_sync(
    tensors: TensorOrTensors,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: TensorOrTensors | None = None,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> None:
    """Blocking ``backward`` for code outside an event loop (its arguments are ``backward``'s).

    The pass runs on the calling thread without starting an event loop
    (NOTE [Loop-free passes] in _aio.py)."""
    _refuse_in_loop("backward_sync")
    args = (tensors, grad_tensors, retain_graph, create_graph, inputs)
    run_without_loop(lambda: run_backward(*args, progress=progress))


def grad_sync(
    outputs: TensorOrTensors,
    inputs: TensorOrTensors,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
    *,
    progress: bool | Callable[[int, int], Any] | None = None,
) -> tuple["Tensor | None", ...]:
    """Blocking ``grad`` for code outside an event loop (no event loop is started either; its
    arguments are ``grad``'s)."""
    _refuse_in_loop("grad_sync")
    args = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, is_grads_batched,
            materialize_grads)
    return run_without_loop(lambda: run_grad(*args, progress=progress))
