"""The backward engine: GraphTask, evaluate_function, validate_outputs, Engine.execute.

A translation of torch's engine.cpp onto an event loop. The coroutine that
awaits ``backward()`` drives its own GraphTask: it runs ready nodes back to
back on the loop thread and yields to the loop only when its time slice is
spent, so a small graph costs no suspension at all and a large one never
starves other coroutines.

NOTE [GraphTask lifetime]: a GraphTask lives for one call of
``Engine.execute``. It is created with the dependency counts of every node
reachable from the roots, runs until no task is outstanding, commits its
staged gradients, runs final callbacks and is dropped. Nothing of it is
stored on the nodes (NOTE [Per-pass state] in graph.py).

NOTE [Dependency counting]: ``GraphTask.table`` maps each node to the number
of edges still to deliver a gradient to it (a plain int, so no gc-tracked
object is made per node up front). When the first gradient of a node with
several pending edges arrives, the int is replaced by an ``InputBuffer`` that
sums the gradients; a node with a single pending edge becomes ready at once
with a one-element list and never gets a buffer (NOTE [Hot loop] (a), (d)).

NOTE [Staged gradients]: ``AccumulateGrad`` does not write ``.grad`` during
the pass. Its gradient (and a retained gradient) is staged in the GraphTask
and committed when the pass completes; a pass that fails or is cancelled
leaves every ``.grad`` exactly as it was. Post-accumulate-grad hooks run at
commit, after every gradient is written: a hook that raises ends the pass with
its exception, every ``.grad`` already updated, and the hooks after it unrun
(torch runs each hook right after its leaf's accumulation, so there too the
gradients written before a raising hook stay).

NOTE [Aliasing]: backward rules hand out arrays that others still hold
(AddBackward passes one array to both inputs, a sum's backward is a read-only
broadcast view, a pass-through forwards the user's gradient). The engine adds
in place only into an array it made itself (``InputBuffer.owned``); the first
sum into a slot is out of place. The same rule decides whether ``.grad`` may
take an array or must copy it.

NOTE [Reentrant backward]: a node whose apply awaits ``backward``/``grad``
starts a nested GraphTask at depth + 1. It is driven inline by the awaiting
coroutine (its nodes therefore run before any of the outer task's), except at
every ``_REENTRANT_TASK_EVERY``-th level, where it is driven by a fresh
task: the await chain, and so the Python stack, stays short however deep the
nesting (1000 levels work), and no thread is ever started.
"""

from __future__ import annotations

import contextvars
import heapq
import math
import warnings
from time import perf_counter
from typing import Any, Callable, Sequence

import anyio
import numpy as np

from .. import _aio
from .._sparse import SparseCOO, as_payload
from ..device import CPU
from ..tensor import Tensor
from . import executors
from . import grad_mode as _gm
from .executors import kernel_clock
from .executors import policy as offload_policy
from .accumulate import accumulate_into_grad, accumulate_into_retained_grad
from .graph import AccumulateGrad, Edge, GraphRoot, Node, is_expandable_to, sum_to
from .graph import sole_owner as _sole_owner
from .ready_queue import COUNT_BITS, priority_key
from .monitor import PassMonitor, pass_monitor

__all__ = [
    "Engine",
    "GraphTask",
    "InputBuffer",
    "validate_outputs",
    "queue_callback",
    "set_time_slice",
    "get_time_slice",
    "current_graph_task",
]

_current_graph_task: contextvars.ContextVar["GraphTask | None"] = contextvars.ContextVar(
    "aiograd_current_graph_task", default=None
)

_time_slice = 0.001
_CHECK_EVERY = 64  # nodes between two reads of the clock
_REENTRANT_TASK_EVERY = 32


def set_time_slice(seconds: float) -> None:
    """How long a backward pass may run on the loop thread before it yields (default 1 ms)."""
    global _time_slice
    if not seconds > 0:
        raise ValueError(f"time slice must be a positive number of seconds, got {seconds!r}")
    _time_slice = float(seconds)


def get_time_slice() -> float:
    return _time_slice


def current_graph_task() -> "GraphTask | None":
    """The GraphTask whose backward is running in this context, if any."""
    return _current_graph_task.get()


def queue_callback(callback: Callable[[], Any]) -> None:
    """Run ``callback`` when the current backward pass completes (only valid during one)."""
    gt = _current_graph_task.get()
    if gt is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    gt.final_callbacks.append(callback)


class InputBuffer:
    """Gradients arriving at the inputs of one node, summed per input (NOTE [Aliasing])."""

    __slots__ = ("grads", "owned", "remaining")

    def __init__(self, n: int, remaining: int) -> None:
        self.grads: list[Any] = [None] * n
        self.owned = 0  # bit i set: grads[i] was made by the engine and may be added into
        self.remaining = remaining

    def add(self, nr: int, g: Any) -> None:
        if g is None:
            return
        grads = self.grads
        old = grads[nr]
        if old is None:
            grads[nr] = g
        elif (self.owned >> nr) & 1 or (_sole_owner(old, 3) and old.shape == g.shape):
            np.add(old, g, out=old)
            self.owned |= 1 << nr
        else:
            new = old + g
            grads[nr] = new
            if new.__class__ is np.ndarray:
                self.owned |= 1 << nr


class GraphTask:
    """The state of one backward pass (torch's GraphTask)."""

    __slots__ = (
        "keep_graph",
        "create_graph",
        "reentrant_depth",
        "table",
        "pending_buffers",
        "exec_info",
        "captured",
        "staged",
        "heap",
        "queued",
        "queued_nodes",
        "queued_grads",
        "outstanding",
        "error",
        "final_callbacks",
        "warnings",
        "check_nan",
        "_wakeup",
        "done",
        "post",
        "futures",
        "monitor",
        "external",
        "leaf_sink",
    )

    def __init__(self, keep_graph: bool, create_graph: bool, reentrant_depth: int) -> None:
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.table: dict[Node, Any] = {}
        self.pending_buffers = 0
        self.exec_info: dict[Node, list[Any]] | None = None
        self.captured: list[Any] | None = None
        # tensor -> [grad, owned, is_retained_grad]
        self.staged: dict[Tensor, list[Any]] = {}
        # The ready queue (NOTE [Hot loop] (c)): a heap of int keys, each naming a queued node and its gradients.
        self.heap: list[int] = []
        self.queued = 0  # nodes put on the heap so far: the low bits of their keys
        self.queued_nodes: dict[int, Node] = {}
        self.queued_grads: dict[int, Any] = {}
        self.outstanding = 0  # tasks of this GraphTask queued or running on device queues
        self.error: BaseException | None = None
        self.final_callbacks: list[Callable[[], Any]] = []
        self.warnings: list[warnings.WarningMessage] = []
        self.check_nan = _gm.is_anomaly_check_nan_enabled()
        self._wakeup: Any = None
        self.done: list[tuple[Any, ...]] = []  # nodes whose kernels ran on a device thread
        self.post: Any = None  # schedules a call on the loop thread from a device thread
        self.futures: list[Any] = []  # executor jobs submitted for this pass
        self.monitor: PassMonitor | None = None  # profiler/progress, NOTE [Pass monitor] in monitor.py
        # NOTE [External roots]: aiograd.distributed runs a pass whose extra roots (send
        # functions) get their gradients from other processes while it runs. Each one is
        # counted in ``outstanding`` (the pass waits for it, as for device work) and in
        # ``external`` (an abandoned pass stops waiting for it); ``feed_external`` hands
        # one in. ``leaf_sink``, when set, receives the leaf gradients at commit instead
        # of ``.grad`` (the distributed autograd context).
        self.external = 0
        self.leaf_sink: Callable[[Tensor, Any, bool], None] | None = None

    # ----- the ready queue (NOTE [Hot loop] (c)) ---------------------------------------
    def enqueue(self, node: Node, grads: list[Any]) -> None:
        """Queue ``node``, ready with ``grads``, behind the nodes of higher ``sequence_nr``."""
        self.queued += 1
        key = priority_key(node.sequence_nr, 0, self.queued)  # depth 0: one GraphTask's heap
        heapq.heappush(self.heap, key)
        self.queued_nodes[key] = node
        self.queued_grads[key] = grads[0] if len(grads) == 1 else grads

    def dequeue(self) -> tuple[Node, list[Any]]:
        """The queued node of highest ``sequence_nr`` and its gradients."""
        key = heapq.heappop(self.heap)
        grads = self.queued_grads.pop(key)
        return self.queued_nodes.pop(key), grads if grads.__class__ is list else [grads]

    # ----- staging (NOTE [Staged gradients]) -------------------------------------------
    def stage(self, variable: Tensor, g: Any, retained: bool = False) -> None:
        if g is None:
            return
        entry = self.staged.get(variable)
        if entry is None:
            self.staged[variable] = [g, False, retained]
            return
        old = entry[0]
        if entry[1] or (_sole_owner(old, 3) and old.shape == g.shape):
            np.add(old, g, out=old)
            entry[1] = True
        else:
            new = old + g
            entry[0] = new
            entry[1] = new.__class__ is np.ndarray

    def commit(self) -> None:
        """Write the staged gradients into ``.grad``, then run post-accumulate-grad hooks
        (NOTE [Staged gradients]: every gradient is written before the first hook runs)."""
        create_graph = self.create_graph
        sink = self.leaf_sink
        grad_enabled = _gm._grad_enabled.get
        hooked: list[tuple[Any, list[Any]]] = []
        for variable, (g, owned, retained) in self.staged.items():
            owned = owned or _sole_owner(g, 3)
            if retained:
                accumulate_into_retained_grad(variable, g, owned)
                continue
            if sink is not None:
                sink(variable, g, owned)
                continue
            if grad_enabled() == create_graph:  # the pass's mode, as the driver set it: no switch
                accumulate_into_grad(variable, g, owned)
            else:
                with _gm.set_grad_enabled(create_graph):
                    accumulate_into_grad(variable, g, owned)
            hooks = variable._post_accumulate_hooks
            if hooks:
                hooked.append((variable, list(hooks.values())))
        self.staged.clear()
        for variable, hook_list in hooked:
            for hook in hook_list:
                hook(variable)

    # ----- device work (see executors.py) ----------------------------------------------
    def notify(self) -> None:
        """Wake the driver if it waits for device work."""
        ev = self._wakeup
        if ev is not None:
            self._wakeup = None
            ev.set()

    async def wait_for_work(self) -> None:
        if self.post.__class__ is _aio.ThreadInbox:  # NOTE [Loop-free passes] in _aio.py
            self.post.run_posted()
            return
        ev = _aio.Event()
        self._wakeup = ev
        await ev.wait()

    def expect_external(self, n: int) -> None:
        """Keep this pass running until ``n`` more nodes are fed in (NOTE [External roots])."""
        self.outstanding += n
        self.external += n

    def feed_external(self, node: Node, grads: list[Any]) -> None:
        """Run ``node`` with ``grads`` in this pass, as one of its expected external roots (loop thread).

        The node joins the ready queue like any node made ready (``done`` holds only
        outputs a device computed: NOTE [Hot loop] (f)).
        """
        self.external -= 1
        self.outstanding -= 1
        self.enqueue(node, grads)
        self.notify()

    def device_done(self, node: Node, grads: list[Any], outputs: Any, err: BaseException | None, secs: float) -> None:
        """Called on the loop thread when a device thread finished ``node``."""
        self.outstanding -= 1
        self.done.append((node, grads, outputs, err, secs))
        if self.monitor is not None:
            self.monitor.device_node_done()
        self.notify()


# ----- validate_outputs -------------------------------------------------------------


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def validate_grad(node_name: str, index: int, g: Any, meta: Any) -> Any:
    """The full validate_outputs path for one gradient: broadcast reduction, dtype cast, device."""
    shape, dtype, device = meta
    if g.shape != shape:
        if is_expandable_to(shape, g.shape):
            g = sum_to(g, shape)
        else:
            raise RuntimeError(
                f"Function {node_name} returned an invalid gradient at index {index} - got "
                f"{_shape_str(g.shape)} but expected shape compatible with {_shape_str(shape)}"
            )
    if g.dtype != dtype:
        if isinstance(g, Tensor):
            g = g.to(dtype)
        else:
            g = as_payload(g).astype(dtype)
    if isinstance(g, Tensor) and g._device is not device:
        if g.ndim == 0:
            g = g.to(device)
        else:
            raise RuntimeError(
                f"Function {node_name} returned an invalid gradient at index {index} - expected device "
                f"{device} but got {g._device}"
            )
    return g


def validate_outputs(edges: Sequence[Edge | None], grads: Sequence[Any], node_name: str = "GraphRoot") -> list[Any]:
    """Check a node's gradients against the inputs they flow into (count, shape, dtype, device)."""
    if len(grads) != len(edges):
        raise RuntimeError(
            f"Function {node_name} returned an invalid number of gradients - expected {len(edges)}, "
            f"but got {len(grads)}"
        )
    out = list(grads)
    for i, (e, g) in enumerate(zip(edges, grads)):
        if e is None or g is None:
            continue
        out[i] = validate_grad(node_name, i, g, e[0].input_metadata[e[1]])
    return out


# ----- graph analysis ---------------------------------------------------------------


def compute_dependencies(root: Node, table: dict[Node, Any], min_topo_nr: int = 0) -> None:
    """Count, for every node reachable from ``root``, the edges that point to it (iterative).

    The walk reads the edge slots (NOTE [Edges] in graph.py). The node that input 0
    leads to is followed at once, without the stack: most of a graph is chains, and
    this walk is part of every backward call.
    """
    stack = [root]
    pop = stack.pop
    push = stack.append
    get = table.get
    while stack:
        fn = pop()
        while True:
            n = fn.n_edges
            if n > 1:
                nxt = fn.next1
                if nxt is not None:
                    c = get(nxt)
                    if c is None:
                        table[nxt] = 1
                        if nxt.topological_nr >= min_topo_nr:
                            push(nxt)
                    else:
                        table[nxt] = c + 1
                if n > 2:
                    for e in fn.more_edges:
                        if e is None:
                            continue
                        nxt = e[0]
                        c = get(nxt)
                        if c is None:
                            table[nxt] = 1
                            if nxt.topological_nr >= min_topo_nr:
                                push(nxt)
                        else:
                            table[nxt] = c + 1
            nxt = fn.next0
            if nxt is None:
                break
            c = get(nxt)
            if c is None:
                table[nxt] = 1
                if nxt.topological_nr >= min_topo_nr:
                    fn = nxt
                    continue
            else:
                table[nxt] = c + 1
            break


def init_to_execute(
    root: Node, outputs: Sequence[Edge], accumulate_grad: bool, min_topo_nr: int
) -> dict[Node, list[Any]]:
    """Mark which nodes must run so that only paths to ``outputs`` execute (torch's ExecInfo).

    Returns node -> [needed, captures] where captures is a list of
    (input_nr, output_index) or None.
    """
    info: dict[Node, list[Any]] = {}
    for idx, (node, nr, *_) in enumerate(outputs):
        entry = info.get(node)
        if entry is None:
            entry = info[node] = [False, None]
        if accumulate_grad:
            entry[0] = True
        else:
            if entry[1] is None:
                entry[1] = []
            entry[1].append((nr, idx))

    def should_execute(fn: Node) -> bool:
        e = info.get(fn)
        return e is not None and (e[0] or e[1] is not None)

    def mark_needed(fn: Node) -> None:
        e = info.get(fn)
        if e is None:
            info[fn] = [True, None]
        else:
            e[0] = True

    mark_needed(root)
    seen = {root}
    stack: list[tuple[Node, Any]] = [(root, iter(root.next_edges))]
    while stack:
        fn, it = stack[-1]
        child = None
        for e in it:
            if e is None:
                continue
            c = e[0]
            if c in seen:
                if should_execute(c):
                    mark_needed(fn)
                continue
            seen.add(c)
            if c.topological_nr < min_topo_nr:
                continue
            child = c
            break
        if child is not None:
            stack.append((child, iter(child.next_edges)))
        else:
            stack.pop()
            if stack and should_execute(fn):
                mark_needed(stack[-1][0])
    return info


# ----- hooks ------------------------------------------------------------------------


def _wrap_for_hook(g: Any, device: Any) -> Any:
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._wrap(as_payload(g), device)


def _unwrap_from_hook(new: Any, old: Any) -> Any:
    if new is None:
        return old
    if isinstance(new, Tensor) and not isinstance(old, Tensor):
        return new._data
    return new


def call_tensor_pre_hooks(gt: GraphTask, node: Node, grads: list[Any]) -> list[Any]:
    """Tensor hooks (``t.register_hook``) then retains-grad hooks, as torch orders them."""
    grads = list(grads)
    nh = node._hooks
    hooks = nh.tensor_pre if nh is not None else None
    if hooks:
        for nr, fn in list(hooks.values()):
            g = grads[nr]
            if g is None:
                continue
            meta = node.input_metadata[nr]
            new = fn(_wrap_for_hook(g, meta[2]))
            if new is not None:
                _check_hook_result(node, nr, new, meta)
                grads[nr] = _unwrap_from_hook(new, g)
    if node.__class__ is AccumulateGrad:
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads[0] is not None:
            meta = node.input_metadata[0]
            for fn in list(leaf_hooks.values()):
                new = fn(_wrap_for_hook(grads[0], meta[2]))
                if new is not None:
                    _check_hook_result(node, 0, new, meta)
                    grads[0] = _unwrap_from_hook(new, grads[0])
    rg = nh.retains_grad if nh is not None else None
    if rg:
        for nr, ref in list(rg.items()):
            t = ref()
            if t is not None and grads[nr] is not None:
                gt.stage(t, grads[nr], retained=True)
    return grads


def _check_hook_result(node: Node, nr: int, new: Any, meta: Any) -> None:
    if not isinstance(new, (Tensor, np.ndarray)):
        raise TypeError(f"hook on the gradient of {node.name()} must return a Tensor or None, got {type(new).__name__}")
    if new.shape != meta[0]:
        raise RuntimeError(
            f"hook on the gradient of {node.name()} returned a gradient of shape {_shape_str(new.shape)} "
            f"but expected shape {_shape_str(meta[0])}: a hook must return a gradient of the same shape"
        )


def call_pre_hooks(node: Node, grads: list[Any]) -> list[Any]:
    hooks = node._hooks.pre if node._hooks is not None else None
    if hooks:
        for fn in list(hooks.values()):
            wrapped = tuple(_wrap_for_hook(g, m[2]) for g, m in zip(grads, node.input_metadata))
            new = fn(wrapped)
            if new is not None:
                if len(new) != len(grads):
                    raise RuntimeError(
                        f"pre hook of {node.name()} returned {len(new)} gradients, expected {len(grads)}"
                    )
                grads = [_unwrap_from_hook(n, g) for n, g in zip(new, grads)]
    return grads


def call_post_hooks(node: Node, outputs: list[Any], inputs: list[Any]) -> list[Any]:
    hooks = node._hooks.post if node._hooks is not None else None
    if hooks:
        devs = [e[0].input_metadata[e[1]][2] if e is not None else CPU for e in node.next_edges]
        for fn in list(hooks.values()):
            w_out = tuple(_wrap_for_hook(g, d) for g, d in zip(outputs, devs))
            w_in = tuple(_wrap_for_hook(g, m[2]) for g, m in zip(inputs, node.input_metadata))
            new = fn(w_out, w_in)
            if new is not None:
                if len(new) != len(outputs):
                    raise RuntimeError(
                        f"hook of {node.name()} returned {len(new)} gradients, expected {len(outputs)}"
                    )
                outputs = [_unwrap_from_hook(n, g) for n, g in zip(new, outputs)]
    return outputs


def _annotate(err: BaseException, node: Node) -> None:
    trace = node._forward_trace
    if trace is not None and hasattr(err, "add_note"):
        err.add_note(
            f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n" + "".join(trace)
        )


# ----- the engine -------------------------------------------------------------------


class Engine:
    """Runs backward passes. One instance serves every pass on every loop (it keeps no per-pass state)."""

    async def execute(
        self,
        roots: Sequence[Edge],
        root_grads: Sequence[Any],
        keep_graph: bool,
        create_graph: bool,
        accumulate_grad: bool,
        outputs: Sequence[Edge] | None = None,
        progress: Any = None,
    ) -> list[Any] | None:
        """Run one backward pass from ``roots`` seeded with ``root_grads``.

        Returns the captured gradients of ``outputs`` when ``accumulate_grad``
        is false (``grad()``), else None after committing into ``.grad``.
        ``progress`` (True or a callable ``(done, total)``) reports the nodes run.
        """
        parent = _current_graph_task.get()
        depth = parent.reentrant_depth + 1 if parent is not None else 0
        gt = GraphTask(keep_graph, create_graph, depth)
        root_grads = validate_outputs(roots, root_grads)

        if len(roots) == 1 and roots[0] is not None:
            # One root: start at its node directly (no GraphRoot), as torch does.
            first: Node = roots[0][0]
            first_grads: list[Any] = [None] * first.n_inputs
            first_grads[roots[0][1]] = root_grads[0]
        else:
            first = GraphRoot(list(roots), list(root_grads))
            first_grads = [None]  # GraphRoot takes no gradient; the hot loop reads grads[0]

        min_topo = 0
        if outputs:
            min_topo = min(e[0].topological_nr for e in outputs)
        compute_dependencies(first, gt.table, min_topo)
        if outputs:
            gt.exec_info = init_to_execute(first, outputs, accumulate_grad, min_topo)
            if not accumulate_grad:
                gt.captured = [None] * len(outputs)
        gt.monitor = pass_monitor(depth, progress, first, gt.table, gt.exec_info, _time_slice)

        if depth and depth % _REENTRANT_TASK_EVERY == 0:
            # NOTE [Reentrant backward]: every so many levels a fresh task drives the nested pass
            await _run_in_fresh_task(self._drive, gt, first, first_grads)
        else:
            await self._drive(gt, first, first_grads)
        return gt.captured

    async def execute_graph_task(self, gt: GraphTask, first: Node, first_grads: list[Any]) -> None:
        """Drive a GraphTask its caller prepared (dependencies counted, external roots expected,
        maybe a leaf sink): how aiograd.distributed runs its part of a pass on this engine."""
        await self._drive(gt, first, first_grads)

    async def _drive(self, gt: GraphTask, first: Node, first_grads: list[Any]) -> None:
        token = _current_graph_task.set(gt)
        mode_token = _gm._grad_enabled.set(gt.create_graph)
        try:
            with _gm.closable_errstate(all="ignore"):
                await self._loop(gt, first, first_grads)
            self._post_process(gt)
        except BaseException as e:
            gt.error = e
            if gt.outstanding:
                # A coroutine being closed (GeneratorExit: its loop closed under it) may not wait.
                await self._abandon(gt, wait=not isinstance(e, GeneratorExit))
            raise
        finally:
            try:
                _gm._grad_enabled.reset(mode_token)
                _current_graph_task.reset(token)
            except ValueError:
                # NOTE [Closed passes] in grad_mode.py: a pending pass whose loop is closed is
                # finalized by the garbage collector, outside its task's context: nothing to restore.
                pass
            if gt.monitor is not None:
                gt.monitor.finish()

    async def _abandon(self, gt: GraphTask, wait: bool = True) -> None:
        """NOTE [Cancellation]: after a failure or cancel, drop this pass's queued device work
        and wait (shielded) for its kernels already running, so nothing of it is left behind.
        Without ``wait`` (a pass being closed) the running kernels finish unheard."""
        gt.outstanding -= gt.external  # NOTE [External roots]: they will never come now
        gt.external = 0
        dropped = executors.discard(gt)
        gt.outstanding -= dropped
        # Each dispatch submitted one interchangeable "run the next queued node" job:
        # withdraw as many of this pass's not-yet-started jobs as nodes were dropped.
        for f in gt.futures:
            if dropped and f.cancel():
                dropped -= 1
        if not wait:
            return
        with _aio.shielded():
            while gt.outstanding > 0:
                await gt.wait_for_work()

    def _dispatch(self, gt: GraphTask, node: Node, grads: list[Any]) -> None:
        """Send ``node`` to its device's thread (NOTE [Devices and executors] in executors.py)."""
        if gt.post is None:
            gt.post = _aio.thread_poster()
        gt.outstanding += 1
        gt.futures.append(executors.runtime(node.device).dispatch(gt, node, grads))

    def _post_process(self, gt: GraphTask) -> None:
        if gt.pending_buffers:
            raise RuntimeError("could not compute gradients for some functions")
        gt.commit()
        # Final callbacks may queue more callbacks; run until none is left.
        cbs = gt.final_callbacks
        i = 0
        while i < len(cbs):
            cbs[i]()
            i += 1
        for w in gt.warnings:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)

    # NOTE [Hot loop]: ``_loop`` runs every node of a pass, so its cost per node is most
    # of a backward over small ops. It reads pick -> evaluate -> propagate; a node that
    # propagates nothing yet (skipped by ExecInfo, a staged AccumulateGrad, one sent to a
    # device thread) ends its turn with ``continue``. The rules, each with its reason
    # (the measurements behind them are in benchmarks/README.md, "The engine's hot loop",
    # and re-run with ``python -m benchmarks chain``/``forward``):
    #
    # (a) Nothing gc-tracked may outlive a node's turn: every container that survives is
    #     walked by the young collections and, in a larger heap, by a full one. So
    #     dependency counts are plain ints (NOTE [Dependency counting]), an InputBuffer
    #     is made only when the first of several gradients of a node arrives (it dies
    #     young), and queueing makes nothing tracked (c). The collector's settings are
    #     left alone (no gc.disable, gc.freeze or raised thresholds around a pass): they
    #     belong to the process, and a pass yields to other coroutines every slice, which
    #     would run with them changed. tests/test_engine.py checks that the backward of
    #     a wide graph of 100,000 nodes runs no collection at all.
    # (b) The "next" slot: most pops follow a push, so the node made ready last runs next
    #     unless the heap's top outranks it, and never touches the heap.
    # (c) The ready queue is a heap of int keys (``priority_key``, NOTE [Ready queue
    #     order] in ready_queue.py): an int compares faster than a tuple and never
    #     compares nodes. The node and its gradients wait in two dicts under the key, a
    #     lone gradient as itself (its list is made when it is dequeued).
    # (d) One map, not two: ``GraphTask.table`` maps a node to its count or its buffer
    #     (torch keeps ``dependencies`` and ``not_ready`` apart).
    # (e) The time slice is checked every ``_CHECK_EVERY`` nodes by a countdown, not by
    #     a clock read per node. At its end the driver yields only if the turn would do
    #     something (``turn_probe``, NOTE [Nobody waiting] in _aio.py): a turn of an idle
    #     loop costs a trip through it and gives nobody anything.
    # (f) Outputs a device thread computed are propagated before the next ready node is
    #     evaluated, so that devices get their next nodes early.
    # (g) Only a node with at least ``min_work`` is timed or considered for a device
    #     (NOTE [Offload policy] in executors.py): no clock read for small ones. Such a
    #     node goes to its device thread only when that buys responsiveness or
    #     parallelism; run inline, it first yields to the loop if it would end past the
    #     slice's deadline, so inline kernels never stretch a slice (when nothing may want
    #     the turn, the slice starts afresh without the yield, as in (e)). A pass without an
    #     event loop (``backward_sync``) asks the policy with an infinite slice: no loop
    #     waits for a turn, so only parallelism may send a kernel away.
    # (h) Validation fast path: each gradient's dtype and shape are compared with what
    #     the node it flows into expects (its ``grad_dtype``/``grad_shape``, NOTE
    #     [Gradient metadata] in graph.py), and only a mismatch takes the full
    #     ``validate_grad`` (broadcast reduction, casts, errors), which is too slow to
    #     run on every output.
    # (i) The edges are read from the node's named slots (NOTE [Edges] in graph.py) by
    #     index, with no ``zip()`` and no Edge tuple: a node of one or two inputs
    #     propagates without making any object, and compute_dependencies follows the
    #     ``next0`` chain without its stack.
    # (j) Per-pass settings (ExecInfo, anomaly's NaN check, the pass monitor,
    #     retain_graph) are read into locals once: off, each costs one test of a local.
    #     Hooks are one slot (``node._hooks``, a NodeHooks or None): one test per node.
    # (k) Gradients handed on are dropped from the frame, so the next rule sees them
    #     held by its input list alone (``sole_owner``, NOTE [Aliasing]).
    # (l) Ties: AccumulateGrad nodes share the top priority, so their relative order is
    #     unspecified (as in torch); nothing may depend on it.
    # (m) ``release_variables`` runs right after ``apply``: it frees what only the node
    #     held (a saved input's Tensor and array), the memory torch frees there.

    async def _loop(self, gt: GraphTask, node: Node, grads: list[Any]) -> None:
        """The hot loop (NOTE [Hot loop]): pick a ready node, evaluate it, propagate its gradients.

        Starts with ``node`` ready with ``grads``; returns when no node is ready and
        no device work or external root is outstanding.
        """
        table = gt.table
        heap = gt.heap
        done = gt.done
        exec_info = gt.exec_info  # (j)
        release = not gt.keep_graph
        check_nan = gt.check_nan
        monitor = gt.monitor  # None unless profiling or progress (NOTE [Pass monitor])
        started = 0.0
        min_work = offload_policy.engine_min_work()
        AG = AccumulateGrad
        checkpoint = _aio.checkpoint_function()
        turn_wanted = _aio.turn_probe()  # (e), (g)
        # Without an event loop nothing waits for a turn: no hand-off for responsiveness (g).
        policy_slice = _time_slice if checkpoint is not _aio.no_yield else math.inf
        deadline = perf_counter() + _time_slice
        countdown = _CHECK_EVERY
        nxt: Node | None = node  # the node made ready last (b)
        nxt_grads: Any = grads
        outputs: Any = None
        try:
            while True:
                # ---- pick ------------------------------------------------------------------
                countdown -= 1
                if not countdown:  # (e)
                    countdown = _CHECK_EVERY
                    if perf_counter() >= deadline:
                        if turn_wanted():  # (e): only if something may take the turn
                            await checkpoint()
                        deadline = perf_counter() + _time_slice
                if done:  # a device thread ran a node: propagate its outputs (f)
                    node, grads, outputs, failure, secs = done.pop()
                    if failure is not None:
                        raise failure
                    offload_policy.observe(node, secs)
                else:
                    if nxt is not None and not (heap and heap[0] < -nxt.sequence_nr << COUNT_BITS):  # (b): priority_key(seq) inlined
                        node = nxt
                        grads = nxt_grads
                        nxt = None
                    elif heap:  # (c)
                        if nxt is not None:  # the heap's top outranks the node made ready last
                            gt.enqueue(nxt, nxt_grads)
                            nxt = None
                        node, grads = gt.dequeue()
                    elif gt.outstanding:  # only device work (or external roots) left: sleep until some is done
                        await gt.wait_for_work()
                        continue
                    else:
                        return
                    # ---- evaluate --------------------------------------------------------
                    if exec_info is not None:
                        grads = self._instrument(gt, node, grads)  # type: ignore[assignment]
                        if grads is None:
                            continue  # not on a path to the requested inputs
                    if monitor is not None:
                        started = perf_counter()
                    hooks = node._hooks
                    if hooks is not None:
                        grads = call_tensor_pre_hooks(gt, node, grads)
                        if hooks.pre:
                            grads = call_pre_hooks(node, grads)
                    if node.__class__ is AG:
                        gt.stage(node.variable, grads[0])  # NOTE [Staged gradients]
                        if monitor is not None:
                            monitor.ran(node, started)
                        continue
                    if grads[0] is None and not node._runs_on_undefined and all(g is None for g in grads):
                        outputs = [None] * node.num_outputs()
                    elif node.work >= min_work and node._offloadable:  # (g)
                        if offload_policy.should_offload(node, policy_slice, bool(heap)):
                            self._dispatch(gt, node, grads)
                            continue  # its outputs come back through ``done`` (f)
                        t0 = perf_counter()
                        if t0 + offload_policy.predict(node) > deadline:  # it would overrun this slice (g)
                            if turn_wanted():
                                await checkpoint()
                                t0 = perf_counter()
                                started = t0  # the node's run starts now: the turns of other passes are not its time
                            deadline = t0 + _time_slice
                            countdown = _CHECK_EVERY
                        c0 = kernel_clock()
                        outputs = node.apply(grads)
                        offload_policy.ran_inline(node, kernel_clock() - c0)
                    else:
                        outputs = node.apply(grads)
                        if outputs.__class__ is not tuple and outputs.__class__ is not list:
                            outputs = await _aio.awaitable_anywhere(outputs)
                    if monitor is not None:
                        monitor.ran(node, started)
                # ---- propagate -------------------------------------------------------------
                n = node.n_edges
                if release:
                    node.release_variables()  # (m): frees what only the node held
                if len(outputs) != n:
                    raise RuntimeError(
                        f"Function {node.name()} returned an invalid number of gradients - expected "
                        f"{n}, but got {len(outputs)}"
                    )
                if node._hooks is not None and node._hooks.post:
                    outputs = call_post_hooks(node, validate_outputs(node.next_edges, outputs, node.name()), grads)
                if check_nan:
                    _check_nan(node, outputs)
                i = 0
                while i < n:  # (i): the edge slots by name (NOTE [Edges] in graph.py)
                    if i == 0:
                        nn = node.next0
                        nr = node.next0_nr
                    elif i == 1:
                        nn = node.next1
                        nr = node.next1_nr
                    else:
                        e = node.more_edges[i - 2]
                        if e is None:
                            i += 1
                            continue
                        nn, nr = e
                    g = outputs[i]
                    i += 1
                    if nn is None:
                        continue
                    if g is not None:  # (h): against what the receiving node expects (NOTE [Gradient metadata])
                        if nr == 0:
                            if g.dtype is not nn.grad_dtype or g.shape != nn.grad_shape:
                                g = validate_grad(node.name(), i - 1, g, nn.input_metadata[0])
                        else:
                            meta = nn.more_metadata[nr - 1]
                            if g.dtype is not meta[1] or g.shape != meta[0]:
                                g = validate_grad(node.name(), i - 1, g, meta)
                    if exec_info is not None:
                        info = exec_info.get(nn)
                        if info is None or not (info[0] or info[1] is not None):
                            continue
                    entry = table.get(nn)  # (d)
                    if entry == 1:  # the only edge into nn: ready now, no buffer (a)
                        if not nn.more_metadata:
                            ready = [g]
                        else:
                            ready = [None] * (1 + len(nn.more_metadata))
                            ready[nr] = g
                    elif entry.__class__ is int:  # the first of several edges: buffer it (a)
                        buf = InputBuffer(1 + len(nn.more_metadata), entry - 1)
                        buf.grads[nr] = g
                        table[nn] = buf
                        gt.pending_buffers += 1
                        continue
                    elif entry is None:
                        raise RuntimeError(f"dependency not found for {nn.name()}")
                    else:
                        entry.add(nr, g)
                        entry.remaining -= 1
                        if entry.remaining:
                            continue
                        del table[nn]
                        gt.pending_buffers -= 1
                        ready = entry.grads
                    if nxt is None:  # (b)
                        nxt = nn
                        nxt_grads = ready
                    else:
                        gt.enqueue(nn, ready)  # (c)
                outputs = g = None  # (k)
        except BaseException as err:
            if isinstance(err, Exception):
                _annotate(err, node)
            raise

    def _instrument(self, gt: GraphTask, node: Node, grads: list[Any]) -> list[Any] | None:
        """ExecInfo: capture gradients for ``grad()`` and skip nodes that need not run."""
        info = gt.exec_info.get(node)  # type: ignore[union-attr]
        if info is None:
            return None
        needed, captures = info
        if captures is not None:
            captured_from = grads if needed else call_tensor_pre_hooks(gt, node, grads)
            for nr, idx in captures:
                gt.captured[idx] = captured_from[nr]  # type: ignore[index]
        return grads if needed else None




def _check_nan(node: Node, outputs: Sequence[Any]) -> None:
    for i, g in enumerate(outputs):
        if g is None:
            continue
        arr = g._data if isinstance(g, Tensor) else g
        arr = arr.values if arr.__class__ is SparseCOO else np.asarray(arr)  # NOTE [Sparse payload]
        if arr.dtype.kind in "fc" and np.isnan(arr).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


async def _run_in_fresh_task(fn: Callable[..., Any], *args: Any) -> None:
    """Run ``await fn(*args)`` in a new task of the running loop and wait for it (keeps stacks short)."""
    if not _aio.in_async_context():  # a loop-free pass (NOTE [Loop-free passes] in _aio.py)
        await fn(*args)
        return

    result: list[BaseException] = []

    async def runner() -> None:
        try:
            await fn(*args)
        except BaseException as e:  # re-raised in the caller below, outside the task group
            if isinstance(e, Exception):
                result.append(e)
            else:
                raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
    if result:
        raise result[0]


default_engine = Engine()
