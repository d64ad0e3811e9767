"""The awaitable that ``backward()`` returns, and the checks that catch a forgotten ``await``.

NOTE [Forgotten await]: ``loss.backward()`` without ``await`` computes nothing,
and a training loop then runs on stale or missing gradients without a word.
So ``backward()`` is not a coroutine function but returns a ``BackwardCall``:
a coroutine object (asyncio, anyio and trio accept it as one) that starts the
pass only when it is awaited or handed to a task. Until then:

- its repr says "not awaited: write `await loss.backward()`", which is what a
  notebook shows when the call is the last line of a cell;
- garbage-collected un-awaited, it warns (RuntimeWarning) at the line that
  made it, instead of Python's generic "coroutine ... was never awaited";
- it is recorded in a contextvar, so per task: the next ``.grad`` read,
  ``optimizer.step()`` or ``zero_grad()`` in that task raises a RuntimeError
  naming the line and showing how to write it (``check_backward_awaited``).

NOTE [Sync outside a loop]: where no event loop runs in the calling thread (a
plain script, a worker thread, a synchronous test), nothing could ever await the
call, so ``BackwardCall.start`` runs the pass to completion on the spot with the
loop-free driver of ``backward_sync`` (NOTE [Loop-free passes] in _aio.py), as
torch's ``backward()`` does, and returns a finished call: awaiting it later (say
``asyncio.run(loss.backward())``) does nothing more. An error of the pass is
raised at the call. Inside a running loop nothing changes. ``ag.grad``,
``gradcheck`` and ``gradgradcheck`` follow the same rule with their results.

``optimizer.step_async()`` returns the same kind of call (``StepCall``), so a
forgotten ``await`` there is reported the same way: "no step was taken".

A call counts as settled once started (awaited, or run by a task: the task may
have copied the context, so the record is a shared object that the call marks,
never a contextvar value it resets), or closed before starting (a cancelled
task). The awaited path costs one small object and a contextvar set per call;
the checks cost one contextvar read while nothing is pending.
"""

from __future__ import annotations

import ast
import collections.abc
import contextvars
import linecache
import sys
import warnings
from types import CodeType
from typing import Any, Callable, Coroutine, Generator

from .._aio import run_without_loop, running_loop_kind

__all__ = ["BackwardCall", "StepCall", "check_backward_awaited"]


class _CallKind:
    """What kind of call a record is about, for its messages: the method's name, its blocking
    form where no loop runs, and what is lost when the call never runs."""

    __slots__ = ("method", "blocking", "lost", "what")

    def __init__(self, method: str, blocking: str, lost: str, what: str) -> None:
        self.method = method  # "backward"
        self.blocking = blocking  # "backward_sync": the same receiver and arguments
        self.lost = lost  # "no gradient was computed"
        self.what = what  # "backward() is a coroutine in aiograd"


_BACKWARD = _CallKind(
    "backward", "backward_sync", "no gradient was computed",
    "backward() returns an awaitable inside a running event loop",
)
_STEP = _CallKind(
    "step_async", "step", "no step was taken", "step_async() (step() then zero_grad(), off the loop) is a coroutine"
)


class _CallRecord:
    """What the checks need to know about one call (it keeps no tensor alive)."""

    __slots__ = ("settled", "started", "prev", "written", "code", "lineno", "kind", "finished_without_loop")

    def __init__(
        self, prev: "_CallRecord | None", written: str, code: CodeType | None, lineno: int, kind: _CallKind
    ) -> None:
        self.settled = False  # started, or reported as forgotten: nothing more to say about it
        self.started = False
        self.prev = prev  # the calls of this context not settled when this one was made
        self.written = written  # how the call is written, e.g. "loss.backward()"
        self.code = code
        self.lineno = lineno
        self.kind = kind
        self.finished_without_loop = False  # NOTE [Sync outside a loop]

    def source_line(self) -> str:
        if self.code is None:
            return ""
        return linecache.getline(self.code.co_filename, self.lineno).strip()

    def call_text(self) -> tuple[str, str]:
        """The call as the user wrote it, and its blocking form (``loss2.backward()``,
        ``loss2.backward_sync()``); the generic form when the source is not at hand."""
        method, blocking = self.kind.method, self.kind.blocking
        try:
            tree = ast.parse(self.source_line())
        except SyntaxError:  # part of a statement that spans lines
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr == method:
                    written = ast.unparse(node)
                    f.attr = blocking
                    return written, ast.unparse(node)
                if isinstance(f, ast.Name) and f.id == method:
                    written = ast.unparse(node)
                    f.id = blocking
                    return written, ast.unparse(node)
        return self.written, self.written.replace(f"{method}(", f"{blocking}(")

    def message(self, what: str) -> str:
        written, blocking = self.call_text()
        where = f'File "{self.code.co_filename}", line {self.lineno}' if self.code is not None else ""
        return (
            f"{written} {what}, so {self.kind.lost}" + (f" ({where})" if where else "")
            + f". {self.kind.what}: write `await {written}`, "
            f"or call {blocking} where no event loop runs."
        )


_unsettled: contextvars.ContextVar[_CallRecord | None] = contextvars.ContextVar(
    "aiograd_unsettled_backward", default=None
)
_warned: dict[Any, Any] = {}
_is_finalizing = sys.is_finalizing
pending = _unsettled.get  # read by the checks' fast path: None while nothing may be forgotten


class _Finished:
    """Stands in for the coroutine of a call that already ran (NOTE [Sync outside a loop]):
    awaiting it returns at once, as a coroutine that has returned would not."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]

    def send(self, value: Any) -> Any:
        raise StopIteration

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        raise typ if val is None else val

    def close(self) -> None:
        pass


_FINISHED: Any = _Finished()


class BackwardCall(collections.abc.Coroutine[Any, Any, None]):
    """The result of ``backward()``: the pass runs when this is awaited (NOTE [Forgotten await]),
    or has already run where no event loop runs (NOTE [Sync outside a loop])."""

    __slots__ = ("_fn", "_args", "_kwargs", "_coro", "_record")
    _kind = _BACKWARD

    @classmethod
    def start(
        cls,
        fn: Callable[..., Coroutine[Any, Any, None]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        written: str,
    ) -> "BackwardCall":
        """``fn(*args, **kwargs)`` run now when no event loop runs in this thread, else deferred
        until awaited (NOTE [Sync outside a loop]); the user's call is the caller's caller."""
        if running_loop_kind() is None:
            run_without_loop(lambda: fn(*args, **kwargs))
            call = cls.__new__(cls)
            call._fn = call._args = call._kwargs = None
            call._coro = _FINISHED
            call._record = record = _CallRecord(None, written, None, 0, cls._kind)
            record.settled = record.started = record.finished_without_loop = True
            return call
        return cls(fn, args, kwargs, written, depth=3)

    def __init__(
        self,
        fn: Callable[..., Coroutine[Any, Any, None]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        written: str,
        depth: int = 2,
    ) -> None:
        """The call ``fn(*args, **kwargs)``, written as ``written`` (``"loss.backward()"``) in
        messages that cannot quote the user's line; the user's call is ``depth`` frames up."""
        prev = _unsettled.get()
        while prev is not None and prev.settled:
            prev = prev.prev
        try:
            frame = sys._getframe(depth)  # the user's line that called backward()
            code, lineno = frame.f_code, frame.f_lineno
        except ValueError:  # pragma: no cover - called from the outermost frame
            code, lineno = None, 0
        self._record = _CallRecord(prev, written, code, lineno, self._kind)
        self._fn: Callable[..., Coroutine[Any, Any, None]] | None = fn
        self._args: tuple[Any, ...] | None = args
        self._kwargs: dict[str, Any] | None = kwargs
        self._coro: Coroutine[Any, Any, None] | None = None
        _unsettled.set(self._record)

    def _started(self) -> Coroutine[Any, Any, None]:
        coro = self._coro
        if coro is None:
            self._record.settled = self._record.started = True
            coro = self._coro = self._fn(*self._args, **self._kwargs)  # type: ignore[misc, arg-type]
            self._fn = self._args = self._kwargs = None  # drops the graph's roots: the coroutine holds them
        return coro

    def __await__(self) -> Generator[Any, None, None]:
        coro = self._coro
        return (coro if coro is not None else self._started()).__await__()

    def send(self, value: Any) -> Any:
        return self._started().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        coro = self._started()  # an exception before the first step ends it unstarted, as a coroutine
        if val is None and tb is None:
            return coro.throw(typ)
        return coro.throw(typ, val, tb)  # pragma: no cover - the legacy 3-argument form

    def close(self) -> None:
        self._started().close()

    def __repr__(self) -> str:
        record = self._record
        if record.finished_without_loop:
            return f"<aiograd {record.written}: completed (no event loop was running)>"
        written, blocking = record.call_text()
        if record.started:
            return f"<aiograd {written}: awaited>"
        return f"<aiograd {written} not awaited: write `await {written}` (or {blocking} where no event loop runs)>"

    def __del__(self) -> None:
        record = self._record
        if record.settled or _is_finalizing():  # at exit, the warnings machinery may be gone
            return
        code = record.code
        warnings.warn_explicit(
            record.message("was never awaited"),
            RuntimeWarning,
            code.co_filename if code is not None else "<unknown>",
            record.lineno,
            registry=_warned,  # once per line, as Python's own "never awaited" warning
        )


class StepCall(BackwardCall):
    """The result of ``optimizer.step_async()``: the step runs when this is awaited, and a
    forgotten ``await`` is reported as ``backward()``'s is (NOTE [Forgotten await])."""

    __slots__ = ()
    _kind = _STEP


def check_backward_awaited() -> None:
    """Raise if a ``backward()`` call of this context was never awaited (NOTE [Forgotten await]).

    Called by ``.grad`` reads, ``optimizer.step()`` and ``zero_grad()``, after their
    fast path saw a record; reports a forgotten call once, then forgets it.
    """
    record = _unsettled.get()
    if record is None:
        return
    _unsettled.set(None)
    forgotten = None
    while record is not None:
        if not record.settled:
            record.settled = True
            forgotten = record  # the oldest one is reported
        record = record.prev
    if forgotten is not None:
        raise RuntimeError(forgotten.message("was called without `await`"))
