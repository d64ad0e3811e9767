"""Distributed autograd contexts: ``async with dist.context() as context_id``, ``get_gradients``, ``debug_info``.

A context groups the forward calls whose graph one ``dist.backward`` will
run over (torch.distributed.autograd's context). Every process it touches
keeps its own ``DistContext`` under the same id: the send and recv functions
recorded there, the gradients that process's leaves received, and the
processes it exchanged messages with (``peers``).

NOTE [Context lifetime]: the process that enters ``async with dist.context()``
is the context's origin. A call made inside the context creates it on the
callee, and each reply carries the callee's peers back, so the origin learns
every process the context reached, also through nested calls. Leaving the
block (normally, by an exception or by cancellation) releases the context on
all of them before it returns; a worker also drops the contexts of a driver
whose Dask client disconnected and of an origin worker that left the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._aio import running_loop_kind
from ..tensor import Tensor
from ._state import _current_context, current_agent, run_blocking, run_shielded

if TYPE_CHECKING:
    from ._engine import Part
    from ._nodes import RecvRpcBackward, SendRpcBackward

__all__ = ["DistContext", "context", "get_gradients", "debug_info"]

COMMITS_CARRIED = 4  # the latest committed pass ids a message carries (NOTE [Commits travel along])


class DistContext:
    """One autograd context as one process knows it (torch's DistAutogradContext)."""

    __slots__ = (
        "id",
        "origin",
        "origin_client",
        "peers",
        "send_functions",
        "recv_functions",
        "grads",
        "part",
        "finished_passes",
        "committed",
    )

    def __init__(self, context_id: int, origin: tuple[str, str], origin_client: str | None) -> None:
        self.id = context_id
        self.origin = origin  # (name, address) of the process that entered the context
        self.origin_client = origin_client  # its Dask client id when the origin is a driver
        self.peers: dict[str, str] = {}  # address -> name of every other process it reached
        self.send_functions: dict[int, SendRpcBackward] = {}  # message id -> node
        self.recv_functions: dict[tuple[str, int], RecvRpcBackward] = {}  # (sender address, message id) -> node
        self.grads: dict[Tensor, np.ndarray] = {}  # leaf -> gradient (DistAccumulateGradCaptureHook's target)
        self.part: Part | None = None  # this process's share of the backward pass running now
        self.finished_passes: set[int] = set()  # passes over here: late messages for them are dropped
        self.committed: list[int] = []  # passes known to have succeeded everywhere (NOTE [Commits travel along])

    def meta(self) -> tuple[Any, ...]:
        """What a message carries so its receiver can find or create this context, and the latest commits."""
        return (self.id, self.origin[0], self.origin[1], self.origin_client, tuple(self.committed[-COMMITS_CARRIED:]))

    def learn_commits(self, pass_ids: Any) -> None:
        """Passes another process says succeeded everywhere: commit this process's part of them.

        NOTE [Commits travel along]: the initiator of a successful pass sends no
        commit message. It records the pass in ``committed``, and every later
        message of the context (calls, their replies, the messages of the next
        pass) carries the latest such ids; a process that staged gradients for
        one of them commits them when the message arrives, before anything else
        of the message runs. Whatever reads a process's gradients after a pass
        (``get_gradients`` in a remote function, ``DistributedOptimizer.step``)
        runs because a message of the context reached that process after the
        pass ended at its initiator, so the news arrives with it or before; and
        leaving the context releases a part still staged with the context. So a
        context's end is one message per process (the release), and a pass
        ends without a second round of messages. Every pass goes to every
        process of the context, whose pass message carries the previous
        commits: the latest few ids suffice.
        """
        for pid in pass_ids:
            if pid in self.committed:
                continue
            self.committed.append(pid)
            self.finished_passes.add(pid)
            part = self.part
            if part is not None and part.pass_id == pid and part.task.done() and not part.task.cancelled() \
                    and part.task.exception() is None:
                self.part = None
                part.commit()

    def add_peer(self, name: str, address: str) -> None:
        self.peers[address] = name

    def peer_list(self, me: tuple[str, str]) -> list[tuple[str, str]]:
        """Every process this one knows in the context, itself included (sent back in replies)."""
        return [(n, a) for a, n in self.peers.items()] + [me]

    def accumulate(self, variable: Tensor, g: np.ndarray) -> None:
        """Add a committed pass's gradient of ``variable`` (out of place: handed-out grads stay valid)."""
        old = self.grads.get(variable)
        self.grads[variable] = g if old is None else old + g

    def gradients(self) -> dict[Tensor, Tensor]:
        return {t: Tensor._wrap(g, t._device) for t, g in self.grads.items()}


class context:
    """``async with dist.context() as context_id``: record the calls inside it for ``dist.backward``.

    In a thread that runs no event loop, ``with dist.context() as context_id`` (torch's form).

    The id is an int shared by every process the context touches. On exit the
    context is released everywhere it went (NOTE [Context lifetime]), also when
    the block raises or is cancelled.
    """

    def __init__(self) -> None:
        self._ctx: DistContext | None = None
        self._agent: Any = None
        self._token: Any = None

    async def __aenter__(self) -> int:
        agent = current_agent()
        if _current_context.get() is not None:
            raise RuntimeError(
                "Already have an autograd context id for this task: dist.context() blocks cannot be nested"
            )
        ctx = agent.new_context()
        self._agent = agent
        self._ctx = ctx
        self._token = _current_context.set(ctx)
        return ctx.id

    async def __aexit__(self, *exc: object) -> None:
        ctx, self._ctx = self._ctx, None
        _current_context.reset(self._token)
        if ctx is not None:
            await run_shielded(self._agent.release_context(ctx))

    # ``with dist.context() as context_id`` in a thread that runs no event loop (a plain
    # remote function, a driver thread): torch's form, NOTE [Blocking calls] in _state.py.
    def __enter__(self) -> int:
        if running_loop_kind() is not None:
            raise RuntimeError(
                "`with dist.context()` is for threads that run no event loop: use `async with dist.context()` here"
            )
        agent = current_agent()
        if _current_context.get() is not None:
            raise RuntimeError(
                "Already have an autograd context id for this task: dist.context() blocks cannot be nested"
            )
        ctx = run_blocking("dist.context()", "async with dist.context()", _new_context(agent))
        self._agent = agent
        self._ctx = ctx
        self._token = _current_context.set(ctx)
        return ctx.id

    def __exit__(self, *exc: object) -> None:
        ctx, self._ctx = self._ctx, None
        _current_context.reset(self._token)
        if ctx is not None:
            run_blocking("dist.context()", "async with dist.context()", self._agent.release_context(ctx))


async def _new_context(agent: Any) -> DistContext:
    return agent.new_context()


def get_gradients(context_id: int) -> dict[Tensor, Tensor]:
    """``{tensor: grad}`` for this process's leaves in the context (inside a remote function: that worker's)."""
    return current_agent().context(context_id).gradients()


def debug_info() -> dict[str, int]:
    """``num_current_backward_passes`` and ``num_autograd_contexts`` of this process (of the worker, remotely)."""
    return current_agent().debug_info()
