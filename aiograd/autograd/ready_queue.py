"""Priority keys and ready queues, ordered as torch's ReadyQueue.

NOTE [Ready queue order]: error tasks first (their GraphTask failed, so they
only need to be dropped; torch also puts shutdown tasks here, which an
executor-thread worker does not need), then higher reentrant depth, then
higher ``sequence_nr``. heapq is a min-heap, so the key is the negated
priority packed into one int by ``priority_key``, the one encoding every ready
queue uses: the GraphTask's own heap (engine.py NOTE [Hot loop] (c), whose
keys carry the push count in the low bits, so each names one queued node) and
the shared device queues here (whose keys carry none: a tie-breaking counter
beside the key keeps entries of different GraphTasks from ever comparing nodes).
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import GraphTask
    from .graph import Node

__all__ = ["priority_key", "ReadyQueue", "ERROR_KEY", "COUNT_BITS"]

_DEPTH_SHIFT = 63  # sequence numbers fit in 62 bits (MAX_SEQUENCE_NR); depth sits above them
COUNT_BITS = 32  # the low bits: a push count (below 2**32 per GraphTask)
ERROR_KEY = -(1 << 256)  # below every priority_key (reentrant depth stays far below 2**100)

_counter = itertools.count()
next_tiebreak = _counter.__next__


def priority_key(sequence_nr: int, depth: int = 0, count: int = 0) -> int:
    """The heap key of a node of ``sequence_nr`` in a GraphTask of reentrant ``depth``,
    pushed ``count``-th (smaller runs first; NOTE [Ready queue order])."""
    return (-((depth << _DEPTH_SHIFT) | sequence_nr) << COUNT_BITS) | count


class ReadyQueue:
    """A heap of NodeTasks ``(key, tiebreak, graph_task, node, grads)`` shared by GraphTasks.

    Used for device queues: the queue of one device holds the ready nodes of
    every GraphTask that has work on that device; its worker drains it.
    """

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Any, Any, Any]] = []

    def push(self, graph_task: "GraphTask", node: "Node", grads: list[Any]) -> None:
        key = ERROR_KEY if graph_task.error is not None else priority_key(node.sequence_nr, graph_task.reentrant_depth)
        heapq.heappush(self._heap, (key, next_tiebreak(), graph_task, node, grads))

    def pop(self) -> tuple[Any, Any, Any]:
        """The most urgent task as ``(graph_task, node, grads)``."""
        _, _, gt, node, grads = heapq.heappop(self._heap)
        return gt, node, grads

    def peek_key(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def discard(self, graph_task: "GraphTask") -> int:
        """Remove every task of ``graph_task`` (after it failed or was cancelled); return how many."""
        before = len(self._heap)
        self._heap = [e for e in self._heap if e[2] is not graph_task]
        heapq.heapify(self._heap)
        return before - len(self._heap)

