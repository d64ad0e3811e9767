"""The distributed backward pass (torch's dist_engine.cpp), each process's share on its own engine.

``await dist.backward(context_id, roots)`` runs one *pass* over the graph a
context recorded across processes. The process that calls it (the
initiator) asks every process the context reached to run its *part*; the
pass completes when every part is done.

NOTE [Parts of a pass]: a part is one GraphTask of this process's engine,
built as dist_engine's computeDependencies does: dependencies counted from
the local roots (on the initiator only) and from every send function of the
context, the send functions being extra roots whose gradients arrive from
other processes while the part runs (NOTE [External roots] in engine.py).
Its leaves' gradients go to the context, never to ``.grad`` (the engine's
leaf sink: DistAccumulateGradCaptureHook). A RecvRpcBackward that runs sends
its gradients to the sender's send function.

NOTE [Every send gets one message]: torch's FAST mode waits for every send
function and hangs when one never gets a gradient (a tensor sent but not
leading to the roots). Here every recv function fires exactly once per pass:
those the part's roots and send functions reach run in the engine (with None
gradients where nothing flows), the unreachable ones send None at the start
of the part. Each process takes part, so each send function receives exactly
one message and a part completes exactly when its send functions have all
run, its queue is empty and its outgoing gradients were acknowledged. No
pass waits for a message that never comes, and none ends early.

NOTE [Two-phase commit]: a part keeps its leaf gradients staged until the
initiator has heard that every part succeeded; then the pass is committed:
the initiator's own part at once, the others' when the next message of the
context reaches them (NOTE [Commits travel along] in context.py: no commit
message of its own). A part that staged no gradient (a process with no leaf
of the graph, as the workers of a data-parallel step whose parameters live on
the driver) has nothing to commit or undo: it ends itself when it reports
success. A pass that fails or is cancelled anywhere is cancelled on every
process before ``backward`` raises, and changes no context's gradients, as a
local backward leaves ``.grad``. Cancelling the initiator's ``backward``
cancels every part.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..autograd.engine import GraphTask, compute_dependencies, default_engine, get_time_slice, validate_outputs
from ..autograd.monitor import pass_monitor
from ..autograd.graph import GraphRoot, Node
from ..tensor import Tensor
from ._errors import rebuild_exception
from ._state import _current_part, awaitable_or_run, current_agent, require_asyncio, run_shielded
from .context import DistContext

if TYPE_CHECKING:
    from ._agent import Agent
    from ._nodes import RecvRpcBackward

__all__ = ["backward", "Part"]


class Part:
    """This process's share of one pass of a context (NOTE [Parts of a pass])."""

    def __init__(
        self,
        agent: "Agent",
        ctx: DistContext,
        pass_id: int,
        retain_graph: bool,
        initiator: tuple[str, str],
        roots: tuple[list[Any], list[Any]] | None = None,
    ) -> None:
        self.agent = agent
        self.ctx = ctx
        self.pass_id = pass_id
        self.retain_graph = retain_graph
        self.initiator = initiator
        self.staged: dict[Tensor, np.ndarray] = {}
        self.deliveries: set[asyncio.Task[Any]] = set()
        self.failure: BaseException | None = None

        gt = self.gt = GraphTask(retain_graph, False, 0)
        gt.leaf_sink = self._stage
        first = GraphRoot(*roots) if roots is not None else GraphRoot([], [])
        compute_dependencies(first, gt.table)
        self.waiting = dict(ctx.send_functions)  # message id -> send function still to be fed
        for send in self.waiting.values():
            compute_dependencies(send, gt.table)
        gt.expect_external(len(self.waiting))
        gt.monitor = pass_monitor(0, None, first, gt.table, None, get_time_slice())  # ag.profiler sees parts
        unreachable = [r for r in ctx.recv_functions.values() if r not in gt.table]
        self.task = asyncio.get_running_loop().create_task(self._run(first, unreachable))

    # ----- running -------------------------------------------------------------------
    async def _run(self, first: Node, unreachable: list["RecvRpcBackward"]) -> None:
        token = _current_part.set(self)
        try:
            for recv in unreachable:  # NOTE [Every send gets one message]
                self.deliver(recv, [None] * recv.n_inputs)
            await default_engine.execute_graph_task(self.gt, first, [None])
            while self.deliveries:
                await asyncio.wait(list(self.deliveries))
            if self.failure is not None:
                raise self.failure
        except asyncio.CancelledError:
            if self.failure is not None:
                raise self.failure from None
            raise
        finally:
            _current_part.reset(token)
            await self._stop_deliveries()

    def feed(self, message_id: int, grads: list[Any]) -> None:
        """The gradients of send function ``message_id`` arrived from its receiver."""
        send = self.waiting.pop(message_id, None)
        if send is None or self.task.done():
            return  # a repeated or late message: its send function has run already
        self.gt.feed_external(send, grads)

    def deliver(self, recv: "RecvRpcBackward", grads: list[Any]) -> None:
        """Send ``recv``'s gradients to its sender (runs as the node's apply)."""
        from ._wire import encode, to_wire  # on first use: _wire imports dask

        payload, _ = encode(grads, with_grad=False)
        call = self.agent.request(
            recv.sender_address,
            "aiograd_grads",
            ctx=self.ctx.meta(),
            pass_id=self.pass_id,
            retain_graph=self.retain_graph,
            initiator=self.initiator,
            message_id=recv.message_id,
            payload=to_wire(payload),
        )
        task = asyncio.get_running_loop().create_task(call)
        self.deliveries.add(task)
        task.add_done_callback(self._delivered)

    def _delivered(self, task: "asyncio.Task[Any]") -> None:
        self.deliveries.discard(task)
        if task.cancelled():
            return
        err = task.exception()
        if err is None:
            reply = task.result()
            if isinstance(reply, dict) and "error" in reply:
                err = rebuild_exception(reply["error"])
        if err is not None:
            self.fail(err)

    def fail(self, err: BaseException) -> None:
        """End this part with ``err`` (a delivery failed, or the initiator was lost)."""
        if self.failure is None and not self.task.done():
            self.failure = err
            self.task.cancel()

    async def _stop_deliveries(self) -> None:
        pending = list(self.deliveries)
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def cancel(self) -> None:
        """Stop the part (no further node runs) and wait until it has stopped; drop its gradients."""
        self.task.cancel()
        await asyncio.wait([self.task])
        if not self.task.cancelled():
            self.task.exception()  # retrieved: the pass is abandoned anyway
        self.staged.clear()

    async def outcome(self) -> BaseException | None:
        """Wait for the part to end; its error (a CancelledError if it was cancelled) or None."""
        await asyncio.wait([self.task])
        if self.task.cancelled():
            return asyncio.CancelledError(f"the part of pass {self.pass_id} was cancelled")
        return self.task.exception()

    # ----- gradients ---------------------------------------------------------------------
    def _stage(self, variable: Tensor, g: Any, owned: bool) -> None:
        """The engine's leaf sink: keep the pass's gradient of a leaf until commit (NOTE [Two-phase commit])."""
        if isinstance(g, Tensor):
            g = g._data
        if not (owned and g.__class__ is np.ndarray and g.flags.writeable):
            g = np.array(g, copy=True)
        self.staged[variable] = g

    def commit(self) -> None:
        for variable, g in self.staged.items():
            self.ctx.accumulate(variable, g)
        self.staged.clear()


def _roots(roots: Sequence[Tensor]) -> tuple[list[Any], list[Any]]:
    """Root edges and their gradients (ones), checked as dist_engine's validateRootsAndRetrieveEdges."""
    if isinstance(roots, Tensor):
        roots = [roots]
    roots = list(roots)
    if not roots:
        raise RuntimeError("No tensors provided for gradient computation.")
    edges, grads = [], []
    for i, r in enumerate(roots):
        if not isinstance(r, Tensor):
            raise TypeError(f"dist.backward: roots must be Tensors, but root {i} is a {type(r).__name__}")
        if not r._requires_grad:
            raise RuntimeError(f"requires_grad not set on root {i}")
        if r._data.size != 1:
            raise RuntimeError(f"root {i} has shape {list(r.shape)}: all roots need to be scalar")
        if r.grad_fn is None:
            raise RuntimeError(f"root {i} does not have a valid gradient function.")
        edges.append(r._gradient_edge())
        grads.append(np.ones(r.shape, r._data.dtype))
    return edges, validate_outputs(edges, grads)


def backward(context_id: int, roots: Sequence[Tensor], retain_graph: bool = False) -> Any:
    """Run the distributed backward pass of ``context_id`` from ``roots`` (scalars) on every process.

    ``await dist.backward(...)`` under an event loop; in a thread that runs
    none (a plain remote function), it blocks until the pass is done, as
    torch's (NOTE [Blocking calls]).

    Gradients accumulate in the context (``dist.get_gradients``), never in
    ``.grad``; the call returns when every process's part is done and
    committed. ``retain_graph=True`` keeps the graph for another pass, whose
    gradients add up.
    """
    return awaitable_or_run(
        "dist.backward", "await dist.backward(context_id, roots)", _backward(context_id, roots, retain_graph)
    )


async def _backward(context_id: int, roots: Sequence[Tensor], retain_graph: bool) -> None:
    require_asyncio("dist.backward")
    agent = current_agent()
    ctx = agent.context(context_id)
    root_edges, root_grads = _roots(roots)
    if ctx.part is not None:
        raise RuntimeError(f"a backward pass is already running in autograd context {context_id}")
    participants = await agent.participants(ctx)
    pass_id = agent.new_id()
    me = (agent.name, agent.address)
    ctx.part = part = Part(agent, ctx, pass_id, retain_graph, me, (root_edges, root_grads))
    calls = {
        address: asyncio.get_running_loop().create_task(
            agent.request(address, "aiograd_pass", ctx=ctx.meta(), pass_id=pass_id, retain_graph=retain_graph,
                          initiator=me)
        )
        for address in participants
    }
    waits: list[asyncio.Future[Any]] = [part.task, *calls.values()]
    try:
        pending = set(waits)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                reply = t.result()  # raises the local part's error, or a lost worker / deadline
                if isinstance(reply, dict) and "error" in reply:
                    raise rebuild_exception(reply["error"])
    except BaseException:
        await run_shielded(_abort(agent, ctx, part, participants, calls))
        raise
    # No commit message: the other parts commit when the news reaches them (NOTE [Commits travel along]).
    ctx.finished_passes.add(pass_id)
    if ctx.part is part:
        ctx.part = None
    part.commit()
    ctx.committed.append(pass_id)


async def _abort(
    agent: "Agent", ctx: DistContext, part: Part, participants: dict[str, str], calls: dict[str, Any]
) -> None:
    """Cancel the pass everywhere and wait until every part has stopped (NOTE [Two-phase commit])."""
    ctx.finished_passes.add(part.pass_id)
    if ctx.part is part:
        ctx.part = None
    await part.cancel()
    for t in calls.values():
        t.cancel()
    await asyncio.gather(
        *calls.values(),
        *(agent.request(a, "aiograd_cancel_pass", ctx_id=ctx.id, pass_id=part.pass_id) for a in participants),
        return_exceptions=True,
    )
