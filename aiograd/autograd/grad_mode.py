"""Grad mode, inference mode and anomaly mode, kept in contextvars.

torch keeps these thread-local; here they are per asyncio task (each task runs
in its own copy of the context), so one coroutine's ``no_grad`` never leaks
into another coroutine running concurrently on the same loop.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from typing import Any, Callable, TypeVar

import numpy as np

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])

# Read on every recorded op: a ContextVar.get is a few tens of nanoseconds.
_grad_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_grad_enabled", default=True)
_inference: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_inference_mode", default=False)
# (enabled, check_nan)
_anomaly: contextvars.ContextVar[tuple[bool, bool]] = contextvars.ContextVar(
    "aiograd_anomaly_mode", default=(False, True)
)

is_grad_enabled_fast = _grad_enabled.get

# Whether any context ever turned anomaly mode on: until then recording an op skips
# reading _anomaly (graph.py NOTE [Cheap recording]). Never reset: a task may still
# run in a copy of a context that had it on.
anomaly_seen = [False]


def reset_context_var(var: contextvars.ContextVar[Any], token: contextvars.Token[Any]) -> None:
    """``var.reset(token)``, or nothing when running in another context than ``token``'s.

    NOTE [Closed passes]: a coroutine left pending when its event loop closes is
    finalized by the garbage collector, which runs its ``finally`` blocks in
    whatever context is current then, not in its task's. The value to restore
    belonged to that task's context, which is gone, so there is nothing to undo
    (``reset`` would raise "Token was created in a different Context").
    """
    try:
        var.reset(token)
    except ValueError:
        pass


class closable_errstate(np.errstate):
    """``np.errstate`` for a coroutine that holds it across awaits: its exit does nothing when
    the coroutine is closed outside its task's context (NOTE [Closed passes])."""

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        except ValueError:  # "created in a different Context": see reset_context_var
            pass


def is_grad_enabled() -> bool:
    """Whether operations record a graph in the current context."""
    return _grad_enabled.get()


def is_inference_mode_enabled() -> bool:
    """Whether the current context is inside ``inference_mode``."""
    return _inference.get()


class _ContextMode:
    """Base for modes usable as ``with`` blocks and as decorators (sync and async).

    As a decorator, a fresh instance guards each call, so a decorated coroutine
    function keeps its mode across its own awaits without touching other tasks.
    """

    def __init__(self) -> None:
        self._tokens: list[Any] = []

    def _clone(self) -> "_ContextMode":
        return self.__class__()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._clone():
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]
        if inspect.isasyncgenfunction(fn):

            @functools.wraps(fn)
            async def agen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = fn(*args, **kwargs)
                # Enter the mode only while the generator body runs, never across yields.
                try:
                    while True:
                        with self._clone():
                            item = await gen.__anext__()
                        yield item
                except StopAsyncIteration:
                    return

            return agen_wrapper  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = fn(*args, **kwargs)
                try:
                    while True:
                        with self._clone():
                            item = next(gen)
                        yield item
                except StopIteration as stop:
                    return stop.value

            return gen_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._clone():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _GradModeSetter(_ContextMode):
    _value: bool

    def __enter__(self) -> None:
        self._tokens.append(_grad_enabled.set(self._value))

    def __exit__(self, *exc: object) -> None:
        reset_context_var(_grad_enabled, self._tokens.pop())


class no_grad(_GradModeSetter):
    """Disable graph recording inside the block (or the decorated function)."""

    _value = False


class enable_grad(_GradModeSetter):
    """Enable graph recording inside the block, even within ``no_grad``."""

    _value = True


class set_grad_enabled(_GradModeSetter):
    """Set grad mode to ``mode``: immediately when called, and as a context manager.

    Like torch, calling ``set_grad_enabled(False)`` outside a ``with`` switches
    grad mode off for the rest of the current context.
    """

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._value = bool(mode)
        self._prev: bool | None = _grad_enabled.get()
        _grad_enabled.set(self._value)

    def _clone(self) -> "set_grad_enabled":
        clone = object.__new__(set_grad_enabled)
        _ContextMode.__init__(clone)
        clone._value = self._value
        clone._prev = None
        return clone

    def __call__(self, fn: F) -> F:
        if self._prev is not None:
            _grad_enabled.set(self._prev)  # used as a decorator: undo the eager switch
            self._prev = None
        return super().__call__(fn)

    def __enter__(self) -> None:
        # The eager set in __init__ already happened: restore what was there before it.
        prev = self._prev if self._prev is not None else _grad_enabled.get()
        self._prev = None
        self._tokens.append(prev)
        _grad_enabled.set(self._value)

    def __exit__(self, *exc: object) -> None:
        _grad_enabled.set(self._tokens.pop())


class inference_mode(_ContextMode):
    """Like ``no_grad``, and marks the mode as inference (tensors made here never need grad)."""

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._mode = bool(mode)

    def _clone(self) -> "inference_mode":
        return inference_mode(self._mode)

    def __enter__(self) -> None:
        if self._mode:
            self._tokens.append((_grad_enabled.set(False), _inference.set(True)))
        else:
            self._tokens.append(None)

    def __exit__(self, *exc: object) -> None:
        tokens = self._tokens.pop()
        if tokens is not None:
            reset_context_var(_inference, tokens[1])
            reset_context_var(_grad_enabled, tokens[0])


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in the current context."""
    return _anomaly.get()[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for NaN."""
    enabled, check_nan = _anomaly.get()
    return enabled and check_nan


class detect_anomaly(_ContextMode):
    """Anomaly detection: record forward tracebacks, and fail on NaN gradients.

    Nodes created inside the block remember where in the user's code they were
    made; an error in their backward names that place. With ``check_nan`` a node
    whose backward returns NaN raises ``RuntimeError`` naming the node.
    """

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__()
        self._check_nan = check_nan

    def _clone(self) -> "detect_anomaly":
        return detect_anomaly(self._check_nan)

    def __enter__(self) -> None:
        anomaly_seen[0] = True
        self._tokens.append(_anomaly.set((True, self._check_nan)))

    def __exit__(self, *exc: object) -> None:
        reset_context_var(_anomaly, self._tokens.pop())


class set_detect_anomaly(_ContextMode):
    """Turn anomaly detection on or off: immediately, and as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__()
        self._value = (bool(mode), check_nan)
        if mode:
            anomaly_seen[0] = True
        self._prev = _anomaly.get()
        _anomaly.set(self._value)

    def __enter__(self) -> None:
        self._tokens.append(self._prev)

    def __exit__(self, *exc: object) -> None:
        _anomaly.set(self._tokens.pop())
