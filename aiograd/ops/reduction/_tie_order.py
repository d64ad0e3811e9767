"""Which of several equal elements torch's CPU kernels pick: their sorting and selection
algorithms, replayed on one row.

NOTE [Ties]: sort (``stable=False``), topk, kthvalue and mode return indices, and when
values tie, which index comes first is whatever torch's CPU kernel leaves there: those
kernels run the C++ standard library's introsort (``std::sort``), introselect
(``std::nth_element``) and heap-based ``std::partial_sort`` (libstdc++, which torch's
Linux builds use), or, for kthvalue, torch's own median-of-three quickselect. The same
values and indices come out here by replaying those algorithms step for step on a
Python list of ``(value, index)`` pairs, with the kernels' comparators (NaN counts as
the largest value). That is slow Python, so an op replays only the rows whose answer
depends on it (rows where the selected values tie), and only while those rows hold at
most ``REPLAY_BUDGET`` elements in all; past that it keeps numpy's stable order (the
first of equal elements first), which torch's documentation allows ("the order of equal
elements is not specified"). Where no relevant values tie, numpy's vectorized result is
torch's, and is used.

Two kernels are not replayed: torch may sort int32/int64/float32/float64 rows with the
vectorized x86-simd-sort library when the CPU has AVX2 or AVX-512; its order of ties
differs from ``std::sort``'s and from machine to machine, and aiograd gives the
``std::sort`` order.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["REPLAY_BUDGET", "stl_sort", "stl_nth_element", "stl_partial_sort", "quickselect", "less_nan_last",
           "greater_nan_first"]

#: the most elements (rows times their length) one call replays (NOTE [Ties]): a sort of one row of
#: this many tied values takes about 0.1 s of Python
REPLAY_BUDGET = 20_000

_THRESHOLD = 16  # libstdc++'s _S_threshold: introsort leaves runs this short to insertion sort

Item = tuple[Any, int]
Less = Callable[[Item, Item], bool]


def less_nan_last(x: Item, y: Item) -> bool:
    """Ascending with NaN last, comparing values only (torch's KeyValueCompAsc)."""
    a, b = x[0], y[0]
    return (a == a and b != b) or a < b


def greater_nan_first(x: Item, y: Item) -> bool:
    """Descending with NaN first, comparing values only (torch's KeyValueCompDesc)."""
    a, b = x[0], y[0]
    return (a != a and b == b) or a > b


def _lg(n: int) -> int:
    return n.bit_length() - 1


# ----- insertion sort ---------------------------------------------------------------------------


def _linear_insert(a: list[Item], last: int, less: Less) -> None:
    """Move ``a[last]`` down past the larger elements before it (a smaller one must exist)."""
    val = a[last]
    nxt = last - 1
    while less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _insertion_sort(a: list[Item], first: int, last: int, less: Less) -> None:
    for i in range(first + 1, last):
        val = a[i]
        if less(val, a[first]):
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _linear_insert(a, i, less)


def _final_insertion_sort(a: list[Item], first: int, last: int, less: Less) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


# ----- partition ----------------------------------------------------------------------------------


def _median_to_first(a: list[Item], result: int, x: int, y: int, z: int, less: Less) -> None:
    """Swap the median of ``a[x], a[y], a[z]`` into ``a[result]``."""
    if less(a[x], a[y]):
        m = y if less(a[y], a[z]) else (z if less(a[x], a[z]) else x)
    elif less(a[x], a[z]):
        m = x
    else:
        m = z if less(a[y], a[z]) else y
    a[result], a[m] = a[m], a[result]


def _partition_pivot(a: list[Item], first: int, last: int, less: Less) -> int:
    """Partition ``a[first + 1:last]`` around the median of three, moved to ``a[first]``; the cut."""
    _median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1, less)
    pivot = a[first]
    lo, hi = first + 1, last
    while True:
        while less(a[lo], pivot):
            lo += 1
        hi -= 1
        while less(pivot, a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


# ----- heaps --------------------------------------------------------------------------------------


def _adjust_heap(a: list[Item], first: int, hole: int, length: int, value: Item, less: Less) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _make_heap(a: list[Item], first: int, last: int, less: Less) -> None:
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, length, a[first + parent], less)


def _pop_heap(a: list[Item], first: int, last: int, result: int, less: Less) -> None:
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _heap_select(a: list[Item], first: int, middle: int, last: int, less: Less) -> None:
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def _partial_sort(a: list[Item], first: int, middle: int, last: int, less: Less) -> None:
    _heap_select(a, first, middle, last, less)
    while middle - first > 1:
        middle -= 1
        _pop_heap(a, first, middle, middle, less)


# ----- the algorithms -----------------------------------------------------------------------------


def stl_sort(a: list[Item], less: Less, last: int | None = None) -> None:
    """``std::sort(a, a + last)`` (libstdc++'s introsort), in place."""
    n = len(a) if last is None else last
    if n < 2:
        return
    stack = [(0, n, 2 * _lg(n))]
    # the introsort loop (recursion on the right part, iteration on the left), depth-first
    while stack:
        first, end, depth = stack.pop()
        while end - first > _THRESHOLD:
            if depth == 0:
                _partial_sort(a, first, end, end, less)
                break
            depth -= 1
            cut = _partition_pivot(a, first, end, less)
            stack.append((first, cut, depth))  # the left part, with the same depth (disjoint parts:
            first = cut                        # the order they are done in does not matter)
    _final_insertion_sort(a, 0, n, less)


def stl_nth_element(a: list[Item], nth: int, less: Less) -> None:
    """``std::nth_element(a, a + nth, a + len(a))`` (libstdc++'s introselect), in place."""
    first, last = 0, len(a)
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, less)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)


def stl_partial_sort(a: list[Item], middle: int, less: Less) -> None:
    """``std::partial_sort(a, a + middle, a + len(a))`` (libstdc++: a heap), in place."""
    _partial_sort(a, 0, middle, len(a), less)


def quickselect(values: list[Any], indices: list[int], k: int) -> None:
    """Put the k-th smallest value (NaN largest) at position ``k`` as torch's kthvalue kernel does
    (Sedgewick's median-of-three quickselect), moving ``indices`` along, in place."""

    def gt(x: Any, y: Any) -> bool:
        return (x != x and y == y) or x > y

    def swap(i: int, j: int) -> None:
        values[i], values[j] = values[j], values[i]
        indices[i], indices[j] = indices[j], indices[i]

    lo, hi = 0, len(values) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(values[lo], values[hi]):
                swap(lo, hi)
            return
        swap((lo + hi) >> 1, lo + 1)
        if gt(values[lo + 1], values[hi]):
            swap(lo + 1, hi)
        if gt(values[lo], values[hi]):
            swap(lo, hi)
        if gt(values[lo + 1], values[lo]):
            swap(lo + 1, lo)
        i, j = lo + 1, hi
        pivot = values[lo]
        while True:
            i += 1
            while gt(pivot, values[i]):
                i += 1
            j -= 1
            while gt(values[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
