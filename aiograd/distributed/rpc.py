"""Remote calls and remote references: ``rpc_async``, ``remote``, ``RRef``, ``parameter_rrefs``.

``rpc_async`` runs a function on a worker inside the caller's autograd
context and returns its result; ``remote`` runs it there and keeps the result
there, handing back an ``RRef`` (torch.distributed.rpc's names). Plain
functions run on a thread of the worker, ``async def`` ones on its event
loop; either may call ``rpc_async`` itself (nested calls, worker to worker).

NOTE [RRef lifetime]: an RRef names a value held by its owner. The handle
``remote()`` returns frees the value on the owner when it is collected; a
handle made with ``RRef(value)`` (and the parameter RRefs of a module) keeps
its value for as long as the owner's agent lives. Copies of a handle sent to
other processes borrow it: the value stays while the creating handle lives.
Whatever a driver made is freed when its Dask client disconnects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dis
import sys
import threading
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable

from .._aio import running_loop_kind
from ._state import awaitable_or_run, current_agent, current_context, require_asyncio, run_blocking, submit

if TYPE_CHECKING:
    from ._agent import Agent
    from .context import DistContext

__all__ = ["rpc_async", "rpc_sync", "remote", "RRef", "parameter_rrefs", "Future", "worker_local"]


# NOTE [Functions sent by value]: a function defined in ``__main__``, a notebook or a
# module registered with ``cloudpickle.register_pickle_by_value`` travels by value,
# and each call unpickles it with a fresh copy of the globals it uses. A global it
# assigns on a worker is therefore gone at the next call: the parameter-server
# singleton of torch's examples (``global param_server``) silently becomes one
# server per call. ``worker_local`` is the per-process state that persists; calls
# that send such a function warn once per function. (A function that assigns no global
# and reads only constants, modules and importable functions is pickled once and kept
# by the callee, NOTE [Functions pickled once] in _wire.py: nothing it could change
# persists, so it runs as a fresh copy would.)
_checked_code: set[types.CodeType] = set()


def _stored_globals(code: types.CodeType) -> list[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_stored_globals(const))
    return sorted(names)


def _sent_by_value(func: Any) -> bool:
    try:
        from cloudpickle.cloudpickle import _should_pickle_by_reference  # on first use, with dask
    except ImportError:  # pragma: no cover - another cloudpickle
        return getattr(func, "__module__", None) == "__main__"
    try:
        return not _should_pickle_by_reference(func)
    except Exception:  # pragma: no cover - cloudpickle refuses the object: it says so when sending
        return False


def _warn_if_it_assigns_globals(func: Any) -> None:
    """Warn once per function (NOTE [Functions sent by value])."""
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType) or code in _checked_code:
        return
    _checked_code.add(code)
    names = _stored_globals(code)
    if names and _sent_by_value(func):
        warnings.warn(
            f"{func.__qualname__} assigns the global(s) {', '.join(names)} and travels by value (it is defined in "
            f"{func.__module__}): each remote call runs it with a fresh copy of those globals, so the assignment "
            "is lost after the call and a singleton made this way is a new one at every call. Keep per-worker state "
            "in dist.worker_local(key, factory), or keep the object on one process and pass an RRef to it",
            RuntimeWarning,
            stacklevel=3,
        )


_local_lock = threading.Lock()


def worker_local(key: str, factory: Callable[[], Any]) -> Any:
    """The value this process keeps under ``key``, made by ``factory()`` on first use (thread-safe).

    Per-process state that persists across remote calls, for functions that
    travel by value (NOTE [Functions sent by value]): a parameter server's
    singleton is ``dist.worker_local("ps", ParameterServer)`` inside a remote
    function. It lives as long as the worker's agent (the driver's: until
    ``dist.shutdown``).
    """
    state = current_agent().local_state
    with _local_lock:
        if key not in state:
            state[key] = factory()
        return state[key]


async def _rpc(
    to: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None, timeout: float | None,
    on_asyncio: bool = False,
) -> Any:
    """The call itself; ``on_asyncio``: the caller already saw an asyncio loop running this thread."""
    if not on_asyncio:
        require_asyncio("dist.rpc_async")
    agent = current_agent()
    address = agent.known_address(to) if isinstance(to, str) else None
    if address is None:
        address = await agent.resolve(to)
    return await agent.call(address, func, tuple(args), dict(kwargs) if kwargs else {}, ctx=current_context(),
                            timeout=timeout)


class Future:
    """What ``rpc_async`` returns in a thread that runs no event loop: ``wait()`` blocks for the result.

    torch.futures.Future's ``wait()``, ``done()`` and ``value()`` (NOTE [Blocking calls]).
    """

    __slots__ = ("_future",)

    def __init__(self, future: "concurrent.futures.Future[Any]") -> None:
        self._future = future

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the call ends; its result (or its error, raised)."""
        return self._future.result(timeout)

    def done(self) -> bool:
        return self._future.done()

    def value(self) -> Any:
        """The result of a call that is done (raises its error)."""
        if not self._future.done():
            raise RuntimeError("Future.value(): the call has not completed yet, use wait()")
        return self._future.result()


def _async_anywhere(what: str, coro: Any) -> Any:
    """``coro`` under a running loop; in a thread without one, a ``Future`` for it."""
    if running_loop_kind() is not None:
        return coro
    return Future(submit(what, coro))


def rpc_async(
    to: str, func: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """Run ``func(*args, **kwargs)`` on process ``to`` inside the current autograd context; its result.

    ``await dist.rpc_async(...)`` under an event loop. In a thread that runs
    no loop (a plain remote function), it returns a ``Future`` at once:
    ``fut.wait()`` is the result, as in torch. Tensors that require grad
    cross with a SendRpcBackward / RecvRpcBackward pair inside a context, and
    as fresh leaves outside one. ``to`` is a worker's name, or ``"driver"``
    from a worker serving the driver. ``timeout`` (seconds, default
    ``rpc_timeout``) bounds the call: past it, ``TimeoutError``.
    """
    _warn_if_it_assigns_globals(func)
    if running_loop_kind() == "asyncio":  # asked once per call: on Python < 3.12 each ask is a getpid() system call
        return _rpc(to, func, args, kwargs, timeout, on_asyncio=True)
    return _async_anywhere("dist.rpc_async", _rpc(to, func, args, kwargs, timeout))


def rpc_sync(
    to: str, func: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """``rpc_async``, blocking until the result: torch's ``rpc_sync``, for code that runs no event loop.

    From a plain remote function (it runs on a worker thread) or a driver
    thread (``await asyncio.to_thread(train)``). In a thread that runs an
    event loop it raises, pointing at ``await dist.rpc_async(...)``: waiting
    there would block the loop the reply needs (NOTE [Blocking calls]).
    """
    _warn_if_it_assigns_globals(func)
    return run_blocking("dist.rpc_sync", "await dist.rpc_async(...)", _rpc(to, func, args, kwargs, timeout))


class RRef:
    """A reference to a value held by one process, its owner (torch.distributed.rpc.RRef).

    ``RRef(value)`` makes a reference owned by this process; ``dist.remote``
    makes one owned by a worker. See NOTE [RRef lifetime].
    """

    __slots__ = ("_owner", "_address", "_id", "_creation", "_agent", "__weakref__")

    def __init__(self, value: Any) -> None:
        agent = current_agent()
        self._owner = agent.name
        self._address = agent.address
        self._id = agent.new_id()
        self._creation: Any = None
        self._agent: Agent | None = None  # set on the handle remote() returns: it frees the value
        agent.rrefs.hold(self._id, value)

    @classmethod
    def _handle(cls, owner: str, address: str, rref_id: int, creation: Any = None, agent: "Agent | None" = None) -> "RRef":
        r = object.__new__(cls)
        r._owner = owner
        r._address = address
        r._id = rref_id
        r._creation = creation
        r._agent = agent
        return r

    def __reduce__(self) -> Any:
        return (_rref_from_wire, (self._owner, self._address, self._id))

    def __del__(self) -> None:
        agent = getattr(self, "_agent", None)
        if agent is not None and not sys.is_finalizing():
            agent.forget_rref(self._address, self._id, self._creation)

    def __repr__(self) -> str:
        return f"RRef(owner={self._owner!r}, id={self._id})"

    def owner(self) -> str:
        """The name of the process holding the value (``"driver"`` for the driver)."""
        return self._owner

    def is_owner(self) -> bool:
        return current_agent().address == self._address

    def local_value(self) -> Any:
        """The value itself; only on the owner (elsewhere: ``await rref.to_here()``)."""
        agent = current_agent()
        if agent.address != self._address:
            raise RuntimeError(
                f"RRef.local_value() can only be called on the owner ({self._owner}), not on {agent.name}: "
                "use `await rref.to_here()` to copy the value here"
            )
        slot = agent.rrefs.get(self._id)
        if slot is None:
            raise RuntimeError(f"the value of {self!r} is no longer held by its owner")
        if not slot.ready.is_set():
            raise RuntimeError(f"the value of {self!r} is not ready yet: await rref.to_here() first")
        if slot.error is not None:
            raise slot.error
        return slot.value

    def to_here(self, timeout: float | None = None) -> Any:
        """A copy of the value in this process (the value itself on the owner).

        ``await rref.to_here()`` under an event loop; the value itself in a
        thread that runs none (NOTE [Blocking calls]).
        """
        return awaitable_or_run("rref.to_here()", "await rref.to_here()", _on_owner(self, _fetch_value, (self,), timeout))

    def rpc_async(self, timeout: float | None = None) -> "_OwnerMethods":
        """``await rref.rpc_async().method(*args)``: call a method of the value on its owner, in the current context.

        In a thread that runs no event loop each call returns a ``Future``.
        """
        return _OwnerMethods(self, timeout, "async")

    def rpc_sync(self, timeout: float | None = None) -> "_OwnerMethods":
        """``rref.rpc_sync().method(*args)``: the method's result, blocking (a thread that runs no loop)."""
        return _OwnerMethods(self, timeout, "sync")

    def remote(self, timeout: float | None = None) -> "_OwnerMethods":
        """``rref.remote().method(*args)``: an RRef to the method's result, kept on this RRef's owner, at once."""
        return _OwnerMethods(self, timeout, "remote")

    async def _created(self) -> None:
        creation = self._creation
        if creation is None:
            return
        if isinstance(creation, concurrent.futures.Future):
            creation = asyncio.wrap_future(creation)
        err = await creation
        if err is not None:
            raise err


def _rref_from_wire(owner: str, address: str, rref_id: int) -> RRef:
    return RRef._handle(owner, address, rref_id)


class _OwnerMethods:
    """What ``rref.rpc_async()`` / ``rpc_sync()`` / ``remote()`` return: each attribute calls that method on the owner."""

    __slots__ = ("_rref", "_timeout", "_mode")

    def __init__(self, rref: RRef, timeout: float | None, mode: str) -> None:
        self._rref = rref
        self._timeout = timeout
        self._mode = mode

    def __getattr__(self, name: str) -> Callable[..., Any]:
        rref, timeout, mode = self._rref, self._timeout, self._mode

        def method(*args: Any, **kwargs: Any) -> Any:
            if mode == "remote":
                return _remote_at(rref._owner, rref._address, _call_method, (rref, name, args, kwargs), {})
            coro = _on_owner(rref, _call_method, (rref, name, args, kwargs), timeout)
            if mode == "sync":
                return run_blocking(f"rref.rpc_sync().{name}()", f"await rref.rpc_async().{name}(...)", coro)
            return _async_anywhere(f"rref.rpc_async().{name}()", coro)

        method.__name__ = name
        return method


async def _on_owner(rref: RRef, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float | None) -> Any:
    """Run ``fn(*args)`` on the owner of ``rref`` (directly when that is this process)."""
    require_asyncio("RRef")
    await rref._created()
    agent = current_agent()
    if agent.address == rref._address:
        return await fn(*args)
    return await agent.call(rref._address, fn, args, {}, ctx=current_context(), timeout=timeout)


async def _fetch_value(rref: RRef) -> Any:
    return await current_agent().rrefs.value(rref._id)


async def _call_method(rref: RRef, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    agent = current_agent()
    value = await agent.rrefs.value(rref._id)
    return await agent.run_function(getattr(value, name), args, kwargs)


async def _create(
    agent: "Agent", address: str, rref_id: int, func: Any, args: Any, kwargs: Any, ctx: "DistContext | None"
) -> BaseException | None:
    """Make the value of an RRef on its owner; the error is returned (raised by whoever awaits the RRef)."""
    try:
        await agent.call(address, func, args, kwargs, ctx=ctx, kind="remote", rref_id=rref_id)
    except Exception as e:
        return e
    return None


def remote(
    to: str, func: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
) -> RRef:
    """Run ``func(*args, **kwargs)`` on worker ``to`` and keep the result there; an RRef to it, at once.

    Errors of the call are raised by ``to_here()`` / ``rpc_async()`` on the
    RRef. Callable from the event loop or from a plain remote function's thread.
    """
    _warn_if_it_assigns_globals(func)
    agent = current_agent()
    address = agent.known_address(to) if isinstance(to, str) else None
    if address is None:
        raise RuntimeError(
            f"could not find destination name {to!r}: the workers are {', '.join(agent.worker_names()) or 'none'}"
        )
    return _remote_at(to, address, func, args, kwargs)


def _remote_at(
    to: str, address: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> RRef:
    agent = current_agent()
    rref_id = agent.new_id()
    coro = _create(agent, address, rref_id, func, tuple(args), dict(kwargs or {}), current_context())
    try:
        asyncio.get_running_loop()
        on_loop = True
    except RuntimeError:
        on_loop = False
    creation: Any
    if on_loop:
        creation = agent.spawn(coro)
    else:  # a plain remote function, on a thread of its worker
        creation = asyncio.run_coroutine_threadsafe(_spawned(agent, coro), agent.loop)
    return RRef._handle(to, address, rref_id, creation, agent)


async def _spawned(agent: "Agent", coro: Any) -> Any:
    return await agent.spawn(coro)


async def _parameter_rrefs_here(rref: RRef) -> list[RRef]:
    agent = current_agent()
    module = await agent.rrefs.value(rref._id)
    out = [RRef(p) for p in module.parameters()]
    for r in out:
        agent.rrefs.add_child(rref._id, r._id)
    return out


def parameter_rrefs(rref: RRef) -> Any:
    """An RRef per parameter of the ``nn.Module`` that ``rref`` names (owned where the module is).

    ``await dist.parameter_rrefs(rref)`` under an event loop; the list itself in a thread that runs none.
    """
    return awaitable_or_run(
        "dist.parameter_rrefs", "await dist.parameter_rrefs(rref)", _on_owner(rref, _parameter_rrefs_here, (rref,), None)
    )
