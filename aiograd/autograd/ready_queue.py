"""Priority keys and ready queues, ordered as torch's ReadyQueue.

NOTE [Ready queue order]: error tasks first (their GraphTask failed, so they
only need to be dropped; torch also puts shutdown tasks here, which an
executor-thread worker does not need), then higher reentrant depth, then
higher ``sequence_nr``. heapq is a min-heap, so the key is the
negated priority packed into one int; a tie-breaking counter keeps entries of
different GraphTasks in one shared queue from ever comparing nodes.
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import GraphTask
    from .graph import Node

__all__ = ["priority_key", "ReadyQueue", "ERROR_KEY"]

_DEPTH_SHIFT = 63  # sequence numbers fit in 62 bits; depth sits above them
ERROR_KEY = -(1 << 79)

_counter = itertools.count()
next_tiebreak = _counter.__next__


def priority_key(node: "Node", depth: int) -> int:
    """The heap key of ``node`` in a GraphTask of reentrant ``depth`` (smaller runs first)."""
    return -((depth << _DEPTH_SHIFT) | node.sequence_nr)


class ReadyQueue:
    """A heap of NodeTasks ``(key, tiebreak, graph_task, node, grads)`` shared by GraphTasks.

    Used for device queues: the queue of one device holds the ready nodes of
    every GraphTask that has work on that device; its worker drains it.
    """

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Any, Any, Any]] = []

    def push(self, graph_task: "GraphTask", node: "Node", grads: list[Any]) -> None:
        key = ERROR_KEY if graph_task.error is not None else priority_key(node, graph_task.reentrant_depth)
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

