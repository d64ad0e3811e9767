"""ReadyQueue order (torch's): failed passes first, then deeper reentrant passes, then higher sequence_nr."""

from __future__ import annotations

from typing import Any

from aiograd.autograd.graph import MAX_SEQUENCE_NR
from aiograd.autograd.ready_queue import ReadyQueue, priority_key


class _Node:
    def __init__(self, seq: int) -> None:
        self.sequence_nr = seq


class _Task:
    def __init__(self, depth: int, error: Any = None) -> None:
        self.reentrant_depth = depth
        self.error = error


def _drain(q: ReadyQueue) -> list[tuple[int, int]]:
    out = []
    while q:
        gt, node, _ = q.pop()
        out.append((gt.reentrant_depth, node.sequence_nr))
    return out


def test_higher_sequence_nr_runs_first_and_accumulate_grad_before_all() -> None:
    q = ReadyQueue()
    t = _Task(0)
    for seq in (3, 10, MAX_SEQUENCE_NR, 7):
        q.push(t, _Node(seq), [])  # type: ignore[arg-type]
    assert [s for _, s in _drain(q)] == [MAX_SEQUENCE_NR, 10, 7, 3]


def test_deeper_reentrant_task_outranks_any_sequence_nr() -> None:
    q = ReadyQueue()
    q.push(_Task(0), _Node(MAX_SEQUENCE_NR), [])  # type: ignore[arg-type]
    q.push(_Task(1), _Node(1), [])  # type: ignore[arg-type]
    assert _drain(q) == [(1, 1), (0, MAX_SEQUENCE_NR)]
    assert priority_key(5, 2) < priority_key(MAX_SEQUENCE_NR, 1)
    assert priority_key(7, 0, 1) < priority_key(7, 0, 2) < priority_key(6, 0, 0)  # push count: ties only


def test_tasks_of_a_failed_pass_come_out_first_and_discard_removes_them() -> None:
    q = ReadyQueue()
    ok, failed = _Task(3), _Task(0, error=RuntimeError("x"))
    q.push(ok, _Node(9), [])  # type: ignore[arg-type]
    q.push(failed, _Node(1), [])  # type: ignore[arg-type]
    q.push(failed, _Node(2), [])  # type: ignore[arg-type]
    gt, _, _ = q.pop()
    assert gt is failed
    assert q.discard(failed) == 1
    assert _drain(q) == [(3, 9)]


def test_equal_keys_never_compare_nodes() -> None:
    q = ReadyQueue()
    t = _Task(0)
    for _ in range(5):
        q.push(t, _Node(MAX_SEQUENCE_NR), [])  # type: ignore[arg-type]  # _Node has no ordering
    assert len(_drain(q)) == 5
