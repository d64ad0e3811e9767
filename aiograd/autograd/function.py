"""Custom differentiable functions: ``Function`` with ``forward(ctx, ...)`` / ``backward(ctx, ...)``.

As in torch, ``ctx`` is the backward node itself. ``backward`` may be
``async def`` and may await ``backward()``/``grad()`` (reentrant backward,
NOTE [Reentrant backward] in engine.py). It receives and returns Tensors;
the node converts to and from the engine's arrays.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

import numpy as np

from .._sparse import as_payload
from ..tensor import Tensor
from . import grad_mode as _gm
from .graph import Node, is_numeric_array, record, type_description
from .saved import save, save_output, unpack
from .engine import current_graph_task

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]


class FunctionCtx:
    """The ctx API (mixin of the backward node): save tensors and pass flags to backward."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward; checked against in-place changes when read back."""
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        saved = self._saved  # type: ignore[attr-defined]
        if saved is None:
            return unpack(self, None, True)  # type: ignore[arg-type]
        return tuple(None if s is None else unpack(self, s, True) for s in saved)  # type: ignore[arg-type]

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that get no gradient (e.g. indices): they will not require grad."""
        self._non_differentiable = set(map(id, tensors))

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Inputs modified in place by forward."""
        self._dirty = set(map(id, tensors))

    def set_materialize_grads(self, value: bool) -> None:
        """Whether None output gradients are given to backward as zeros (default True)."""
        self._materialize_grads = value


class BackwardCFunction(FunctionCtx, Node):
    """The backward node of a custom Function; also its ctx."""

    _function_cls: type["Function"]
    _runs_on_undefined = True
    _saves = True
    _offloadable = False  # user Python code (maybe async): always runs on the loop

    def __init__(self) -> None:
        self._init_node()
        self._to_save: tuple[Tensor | None, ...] = ()
        self._saved: list[Any] | None = []
        self._non_differentiable: set[int] = set()
        self._dirty: set[int] = set()
        self._materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        self._out_meta: list[Any] = []

    def name(self) -> str:
        return self._function_cls.__name__ + "Backward"

    def release_variables(self) -> None:
        self._saved = None

    def apply(self, grads: list[Any]) -> Any:
        graph = any(isinstance(g, Tensor) for g in grads)
        args: list[Any] = []
        for g, meta in zip(grads, self.input_metadata):
            if g is None:
                if self._materialize_grads:
                    g = np.zeros(meta.shape, meta.dtype)
                else:
                    args.append(None)
                    continue
            args.append(g if isinstance(g, Tensor) else Tensor._wrap(as_payload(g), meta.device))
        backward = self._function_cls.backward
        if inspect.iscoroutinefunction(backward):
            return self._apply_async(backward, args, graph)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = backward(self, *args)
        _forward_warnings(caught)
        if inspect.isawaitable(result):
            return self._finish_async(result, graph)
        return self._convert(result, graph)

    async def _apply_async(self, backward: Callable[..., Any], args: list[Any], graph: bool) -> list[Any]:
        return self._convert(await backward(self, *args), graph)

    async def _finish_async(self, awaitable: Any, graph: bool) -> list[Any]:
        return self._convert(await awaitable, graph)

    def _convert(self, result: Any, graph: bool) -> list[Any]:
        if not isinstance(result, tuple):
            result = (result,)
        n = self.n_edges
        if len(result) < n or (len(result) > n and any(r is not None for r in result[n:])):
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected {n}, got {len(result)})"
            )
        out: list[Any] = []
        for i in range(n):
            r = result[i]
            if r is None or not self.should_compute_output(i):
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                if not is_numeric_array(r):  # a numpy array of numbers also serves (aiograd is numpy-native)
                    raise RuntimeError(
                        f"function {self.name()} returned an invalid gradient at index {i} - expected Tensor "
                        f"or None (got {type_description(r)})"
                    )
                r = Tensor._wrap(np.asarray(r))
            out.append(r if graph else r._data)
        return out


def _forward_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Hand warnings raised in a backward to the current pass, which re-emits them at its end."""
    if not caught:
        return
    gt = current_graph_task()
    if gt is None:
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    else:
        gt.warnings.extend(caught)


class _FunctionMeta(type):
    """Gives each Function subclass its own backward node class (named ``<Name>Backward``)."""

    def __init__(cls, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> None:
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_function_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Base class for custom autograd functions.

    Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
    (``backward`` may be ``async def``), then call ``MyFn.apply(*args)``.
    """

    _backward_cls: type[BackwardCFunction]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Function objects are not instantiated: call the static apply method instead, e.g. MyFn.apply(x)"
        )

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` without recording, and record one node whose backward is ``backward``."""
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        is_recording = _gm.is_grad_enabled_fast() and any(ctx.needs_input_grad)
        with _gm.no_grad():
            raw = cls.forward(ctx, *args, **kwargs)
        if not is_recording:
            return raw
        for i, t in enumerate(ctx._to_save):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save tensors, but argument {i} is of type {type(t).__name__}"
                )
        single = not isinstance(raw, tuple)
        outputs = (raw,) if single else raw
        inputs_by_id = {id(a) for a in args if isinstance(a, Tensor)}
        diff_outputs = []
        final = []
        for o in outputs:
            if isinstance(o, Tensor):
                if id(o) in inputs_by_id and id(o) not in ctx._dirty:
                    # An input returned as is: give the output its own identity (torch makes a view).
                    alias = Tensor._wrap(o._data, o._device)
                    alias._version_counter = o._version_counter
                    o = alias
                if id(o) in ctx._non_differentiable or o._data.dtype.kind not in "fc":
                    final.append(o)
                    continue
                diff_outputs.append(o)
            final.append(o)
        # Every tensor output gets a slot (non-differentiable ones receive None).
        tensor_outputs = [o for o in final if isinstance(o, Tensor)]
        record(ctx, args, tensor_outputs)
        for o in tensor_outputs:
            if id(o) in ctx._non_differentiable or o._data.dtype.kind not in "fc":
                o.grad_fn = None
                o._requires_grad = False
        out_ids = {id(o) for o in tensor_outputs}
        ctx._saved = [
            None if t is None else (save_output(t) if id(t) in out_ids else save(t)) for t in ctx._to_save
        ]
        ctx._to_save = ()
        return final[0] if single else tuple(final)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a backward as not differentiable itself: it runs without recording a graph."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(ctx: Any, *args: Any) -> Any:
            with _gm.no_grad():
                return await fn(ctx, *args)

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with _gm.no_grad():
            return fn(ctx, *args)

    return wrapper
