"""aiograd.utils.data: datasets, samplers, collation and the DataLoader (threads, ``async for``).

Expected structures, dtypes and error texts were taken from torch 2.13's
``torch.utils.data`` on the same inputs (the comparison script is not part of
the suite: torch is not a test dependency).
"""

from __future__ import annotations

import collections
import gc
import threading
import time
import warnings
from typing import Any, Iterator

import anyio
import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
from aiograd.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from aiograd.utils.data._worker import THREAD_NAME

Point = collections.namedtuple("Point", "x y")


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME)]


@pytest.fixture(autouse=True)
def no_leftover_workers() -> Iterator[None]:
    """Every test leaves no DataLoader thread behind (iterators end, are dropped, or are cancelled)."""
    yield
    # An iterator dropped in a reference cycle (one left by an error: the exception's
    # traceback holds the iterator's frame and the test's ExceptionInfo holds the
    # exception) stops its threads when the collector frees it. The runner may still
    # hold the test's coroutine at the first collection, so collect again while waiting
    # (each is slow on a large heap: only while some thread is left).
    deadline = time.monotonic() + 5
    while worker_threads() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert worker_threads() == []


def describe(b: Any) -> Any:
    """A batch's structure, types, dtypes and values, comparable with ==."""
    if isinstance(b, ag.Tensor):
        return ("T", str(b.dtype), tuple(b.shape), b.tolist())
    if isinstance(b, dict):
        return ("dict", {k: describe(v) for k, v in b.items()})
    if isinstance(b, tuple) and hasattr(b, "_fields"):
        return (type(b).__name__, [describe(v) for v in b])
    if isinstance(b, (list, tuple)):
        return (type(b).__name__, [describe(v) for v in b])
    return ("py", type(b).__name__, b)


class Squares(Dataset):
    """dataset[i] == i * i, counting reads and the threads that made them."""

    def __init__(self, n: int, delay: float = 0.0, fail_at: int | None = None) -> None:
        self.n, self.delay, self.fail_at = n, delay, fail_at
        self.reads = 0
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        with self.lock:
            self.reads += 1
            self.threads.add(threading.get_ident())
        if self.delay:
            time.sleep(self.delay)
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        return i * i


class Stream(IterableDataset):
    """range(n), split between workers by get_worker_info() as torch's docs show."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self) -> int:
        return self.n


# ----- samplers ---------------------------------------------------------------------------

def test_sequential_sampler() -> None:
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_a_permutation_each_pass() -> None:
    s = RandomSampler(range(50), generator=ag.Generator().manual_seed(0))
    a, b = list(s), list(s)
    assert sorted(a) == sorted(b) == list(range(50)) and a != b and len(s) == 50


def test_random_sampler_replacement_and_num_samples() -> None:
    s = RandomSampler(range(4), replacement=True, num_samples=100, generator=ag.Generator().manual_seed(1))
    got = list(s)
    assert len(got) == len(s) == 100 and set(got) == {0, 1, 2, 3}
    # without replacement, more samples than items: whole permutations, then part of one
    s = RandomSampler(range(4), num_samples=10, generator=ag.Generator().manual_seed(1))
    got = list(s)
    assert len(got) == 10 and sorted(got[:4]) == sorted(got[4:8]) == [0, 1, 2, 3] and len(set(got[8:])) == 2


def test_random_sampler_same_seed_same_order() -> None:
    def order(seed: int) -> list[int]:
        return list(RandomSampler(range(30), generator=ag.Generator().manual_seed(seed)))

    assert order(3) == order(3) != order(4)
    ag.manual_seed(7)
    a = list(RandomSampler(range(30)))
    ag.manual_seed(7)
    assert list(RandomSampler(range(30))) == a


def test_subset_random_sampler() -> None:
    idx = [10, 20, 30, 40]
    s = SubsetRandomSampler(idx, generator=ag.Generator().manual_seed(0))
    assert sorted(s) == idx and len(s) == 4


def test_weighted_random_sampler() -> None:
    s = WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 200, generator=ag.Generator().manual_seed(0))
    got = list(s)
    assert len(got) == len(s) == 200 and set(got) == {1, 2}
    assert got.count(2) > got.count(1)  # three times the weight
    once = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 4, replacement=False,
                                      generator=ag.Generator().manual_seed(0)))
    assert sorted(once) == [0, 1, 2, 3]
    assert s.weights.dtype == ag.float64


def test_batch_sampler() -> None:
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 3, False)])
def test_distributed_sampler_shares_the_dataset(n: int, replicas: int, drop_last: bool) -> None:
    parts = [list(DistributedSampler(range(n), replicas, r, seed=4, drop_last=drop_last)) for r in range(replicas)]
    per = (n // replicas) if drop_last else -(-n // replicas)  # torch's num_samples
    assert all(len(p) == per == len(DistributedSampler(range(n), replicas, 0, drop_last=drop_last)) for p in parts)
    seen = [i for p in parts for i in p]
    if drop_last:
        assert len(set(seen)) == len(seen)
    else:
        assert set(seen) == set(range(n))  # padded by repeating the start of the order


def test_distributed_sampler_epochs_and_errors() -> None:
    s = DistributedSampler(range(20), 2, 0)
    first = list(s)
    assert list(s) == first
    s.set_epoch(1)
    assert list(s) != first
    assert list(DistributedSampler(range(6), 2, 1, shuffle=False)) == [1, 3, 5]
    assert [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)] == [  # torch's
        [0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    with pytest.raises(ValueError, match=r"^Invalid rank 2, rank should be in the interval \[0, 1\]$"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(4))


@pytest.mark.parametrize("make, error, text", [
    (lambda: RandomSampler(range(3), replacement=1), TypeError,
     "replacement should be a boolean value, but got replacement=1"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError,
     "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: RandomSampler(range(0)), ValueError,
     "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: WeightedRandomSampler([[1.0]], 2), ValueError,
     "weights should be a 1d sequence but given weights have shape (1, 1)"),
    (lambda: WeightedRandomSampler([1.0], 0), ValueError,
     "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: WeightedRandomSampler([1.0], 1, replacement=0), ValueError,
     "replacement should be a boolean value, but got replacement=0"),
    (lambda: list(WeightedRandomSampler([1.0, -1.0], 1)), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: BatchSampler(range(3), 0, False), ValueError,
     "batch_size should be a positive integer value, but got batch_size=0"),
    (lambda: BatchSampler(range(3), 1, 0), ValueError, "drop_last should be a boolean value, but got drop_last=0"),
])
def test_sampler_errors_are_torchs(make: Any, error: type, text: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == text


# ----- datasets ---------------------------------------------------------------------------

def test_tensor_dataset() -> None:
    x, y = ag.arange(12.0).reshape(4, 3), ag.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ag.zeros(2), ag.zeros(3))


def test_concat_dataset_and_add() -> None:
    ds = ConcatDataset([Squares(3), Squares(2)])
    assert len(ds) == 5 and ds.cumulative_sizes == [3, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 4, 0, 1] and ds[-1] == 1
    assert [x for x in Squares(2) + Squares(1)] != []  # __add__ gives a ConcatDataset
    assert isinstance(Squares(2) + Squares(1), ConcatDataset)
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(2)])


def test_chain_dataset_and_add() -> None:
    ds = ChainDataset([Stream(3), Stream(2)])
    assert list(ds) == [0, 1, 2, 0, 1] and len(ds) == 5
    assert list(Stream(2) + Stream(2)) == [0, 1, 0, 1]
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([range(3)]))


def test_iterable_dataset_is_abstract() -> None:
    with pytest.raises(TypeError):
        IterableDataset()  # type: ignore[abstract]


def test_subset() -> None:
    base = Squares(10)
    s = Subset(base, [9, 1, 4])
    assert len(s) == 3 and [s[i] for i in range(3)] == [81, 1, 16]
    assert s.__getitems__([0, 2]) == [81, 16]
    assert Subset(list(range(10)), [3, 4])[1] == 4


def test_stack_dataset() -> None:
    t = StackDataset(Squares(3), list("abc"))
    assert t[1] == (1, "b") and len(t) == 3 and t.__getitems__([0, 2]) == [(0, "a"), (4, "c")]
    d = StackDataset(x=Squares(3), y=list("abc"))
    assert d[2] == {"x": 4, "y": "c"} and d.__getitems__([1]) == [{"x": 1, "y": "b"}]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset([1], [1, 2])
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


@pytest.mark.parametrize("n, fractions, lengths", [  # torch 2.13's lengths for the same calls
    (10, [0.3, 0.3, 0.4], [3, 3, 4]),
    (7, [0.5, 0.5], [4, 3]),
    (11, [0.1, 0.2, 0.7], [2, 2, 7]),
    (5, [1 / 3] * 3, [2, 2, 1]),
    (3, [0.1, 0.9], [1, 2]),
    (100, [0.8, 0.1, 0.1], [80, 10, 10]),
])
def test_random_split_fractions_follow_torch(n: int, fractions: list[float], lengths: list[int]) -> None:
    parts = random_split(range(n), fractions, generator=ag.Generator().manual_seed(0))
    assert [len(p) for p in parts] == lengths
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


def test_random_split_counts_seed_and_errors() -> None:
    a = random_split(range(10), [3, 7], generator=ag.Generator().manual_seed(5))
    b = random_split(range(10), [3, 7], generator=ag.Generator().manual_seed(5))
    assert [p.indices for p in a] == [p.indices for p in b] and [len(p) for p in a] == [3, 7]
    with pytest.raises(ValueError, match="^Sum of input lengths does not equal the length of the input dataset!$"):
        random_split(range(10), [3, 4])
    with pytest.raises(ValueError, match="^Fraction at index 0 is not between 0 and 1$"):
        random_split(range(10), [1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0. This might result in an empty dataset."):
        random_split(range(2), [1.0, 0.0])


# ----- collation --------------------------------------------------------------------------

T = ("T",)
COLLATE_CASES = {  # samples -> describe(default_collate(samples)), as torch 2.13 collates them
    "ints": ([1, 2, 3], ("T", "int64", (3,), [1, 2, 3])),
    "floats": ([1.5, 2.5], ("T", "float64", (2,), [1.5, 2.5])),
    "bools": ([True, False], ("T", "bool", (2,), [True, False])),
    "strings": (["a", "bb"], ("list", [("py", "str", "a"), ("py", "str", "bb")])),
    "numpy arrays": ([np.ones(2, np.float32), np.zeros(2, np.float32)],
                     ("T", "float32", (2, 2), [[1.0, 1.0], [0.0, 0.0]])),
    "numpy int16 scalars": ([np.int16(1), np.int16(2)], ("T", "int16", (2,), [1, 2])),
    "numpy float64 scalars": ([np.float64(1), np.float64(2)], ("T", "float64", (2,), [1.0, 2.0])),
    "numpy bool scalars": ([np.bool_(True), np.bool_(False)], ("T", "bool", (2,), [True, False])),
    "tensors": ([ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0])], ("T", "float32", (2, 2), [[1.0, 2.0], [3.0, 4.0]])),
    "tuples give lists": ([(1, 2.0), (3, 4.0)],
                          ("list", [("T", "int64", (2,), [1, 3]), ("T", "float64", (2,), [2.0, 4.0])])),
    "lists": ([[1, 2], [3, 4]], ("list", [("T", "int64", (2,), [1, 3]), ("T", "int64", (2,), [2, 4])])),
    "namedtuples": ([Point(1, np.float32(2)), Point(3, np.float32(4))],
                    ("Point", [("T", "int64", (2,), [1, 3]), ("T", "float32", (2,), [2.0, 4.0])])),
    "dicts": ([{"a": 1, "s": "x"}, {"a": 2, "s": "y"}],
              ("dict", {"a": ("T", "int64", (2,), [1, 2]), "s": ("list", [("py", "str", "x"), ("py", "str", "y")])})),
    "nested": ([{"p": (np.zeros(2), [1, {"q": 1.0}])}, {"p": (np.ones(2), [2, {"q": 2.0}])}],
               ("dict", {"p": ("list", [("T", "float64", (2, 2), [[0.0, 0.0], [1.0, 1.0]]),
                                        ("list", [("T", "int64", (2,), [1, 2]),
                                                  ("dict", {"q": ("T", "float64", (2,), [1.0, 2.0])})])])})),
}


@pytest.mark.parametrize("case", list(COLLATE_CASES))
def test_default_collate_follows_torch(case: str) -> None:
    samples, want = COLLATE_CASES[case]
    assert describe(default_collate(samples)) == want


@pytest.mark.parametrize("batch, error, text", [
    ([ag.zeros(2), ag.zeros(3)], RuntimeError,
     "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
    ([np.zeros(2), np.zeros(3)], RuntimeError,
     "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
    ([[1, 2], [1]], RuntimeError, "each element in list of batch should be of equal size"),
    ([object(), object()], TypeError,
     "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class 'object'>"),
    ([np.array(["a"]), np.array(["b"])], TypeError,
     "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <U1"),
    ([None, None], TypeError,
     "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class 'NoneType'>"),
    ([1j, 2j], TypeError,
     "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class 'complex'>"),
])
def test_default_collate_errors_are_torchs(batch: list[Any], error: type, text: str) -> None:
    with pytest.raises(error) as info:
        default_collate(batch)
    assert str(info.value) == text


def test_default_convert() -> None:
    got = default_convert({"a": np.arange(3), "b": (np.float32(1), 2), "s": "x", "u": np.array(["q"])})
    assert isinstance(got["a"], ag.Tensor) and got["a"].dtype == ag.int64
    assert isinstance(got["b"], list) and got["b"][0].dtype == ag.float32 and got["b"][1] == 2
    assert got["s"] == "x" and isinstance(got["u"], np.ndarray)
    t = ag.ones(2)
    assert default_convert(t) is t


# ----- DataLoader arguments ---------------------------------------------------------------

@pytest.mark.parametrize("kwargs, text", [
    ({"batch_size": 0}, "batch_size should be a positive integer value, but got batch_size=0"),
    ({"batch_size": 1.5}, "batch_size should be a positive integer value, but got batch_size=1.5"),
    ({"shuffle": True, "sampler": [1, 2]}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[1]], "batch_size": 2},
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    ({"batch_size": None, "drop_last": True},
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    ({"num_workers": -1}, "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None."),
    ({"num_workers": 1, "prefetch_factor": -1}, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"multiprocessing_context": "fork"}, "multiprocessing_context can only be used with multi-process loading "
                                          "(num_workers > 0), but got num_workers=0"),
])
def test_dataloader_argument_errors_are_torchs(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError) as info:
        DataLoader(Squares(4), **kwargs)
    assert str(info.value) == text


def test_iterable_dataset_argument_errors() -> None:
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(3), batch_sampler=[[0]])


def test_frozen_attributes_and_timeout_without_workers() -> None:
    dl = DataLoader(Squares(4))
    with pytest.raises(ValueError, match="^batch_size attribute should not be set after DataLoader is initialized$"):
        dl.batch_size = 3
    dl.num_workers = 0  # not frozen, as in torch
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(Squares(4), timeout=1))


def test_len_and_defaults() -> None:
    assert len(DataLoader(Squares(10), batch_size=3)) == 4
    assert len(DataLoader(Squares(10), batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(Stream(10), batch_size=3)) == 4
    assert len(DataLoader(Squares(10), batch_size=None)) == 10
    dl = DataLoader(Squares(3), num_workers=2, pin_memory=True)
    assert dl.prefetch_factor == 2 and dl.collate_fn is default_collate
    assert isinstance(DataLoader(Squares(3), shuffle=True).sampler, RandomSampler)


# ----- DataLoader iteration ---------------------------------------------------------------

@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_batches_in_sampler_order(num_workers: int) -> None:
    dl = DataLoader(Squares(10), batch_size=4, num_workers=num_workers)
    assert [b.tolist() for b in dl] == [[0, 1, 4, 9], [16, 25, 36, 49], [64, 81]]
    dl = DataLoader(Squares(10), batch_size=4, drop_last=True, num_workers=num_workers)
    assert [b.tolist() for b in dl] == [[0, 1, 4, 9], [16, 25, 36, 49]]
    dl = DataLoader(Squares(3), batch_size=None, num_workers=num_workers)
    assert list(dl) == [0, 1, 4]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_tensor_dataset_batches_match_stacked_rows(num_workers: int) -> None:
    x = ag.from_numpy(np.random.default_rng(0).random((11, 3)).astype(np.float32))
    y = ag.arange(11)
    got = list(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=num_workers))
    rows = [default_collate([(x[i], y[i]) for i in range(s, min(s + 4, 11))]) for s in (0, 4, 8)]
    assert [describe(b) for b in got] == [describe(b) for b in rows]


def test_subset_of_tensor_dataset_batches_match_stacked_rows() -> None:
    x, y = ag.arange(30.0).reshape(10, 3), ag.arange(10)
    train, _ = random_split(TensorDataset(x, y), [0.7, 0.3], generator=ag.Generator().manual_seed(0))
    inner = Subset(train, [6, 0, 3])
    got = list(DataLoader(inner, batch_size=2))
    rows = [default_collate([inner[i] for i in range(s, min(s + 2, 3))]) for s in (0, 2)]
    assert [describe(b) for b in got] == [describe(b) for b in rows]


def test_tensors_that_need_grad_are_stacked_in_the_graph() -> None:
    w = ag.ones(4, 2, requires_grad=True)
    (xb,) = next(iter(DataLoader(TensorDataset(w), batch_size=3)))
    assert xb.requires_grad and xb.grad_fn is not None
    xb.sum().backward_sync()
    assert w.grad.tolist() == [[1.0, 1.0]] * 3 + [[0.0, 0.0]]


def test_out_of_order_gives_every_batch() -> None:
    dl = DataLoader(Squares(20), batch_size=2, num_workers=3, in_order=False)
    assert sorted(v for b in dl for v in b.tolist()) == [i * i for i in range(20)]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_iterable_dataset_split_by_worker_info(num_workers: int) -> None:
    got = sorted(v for b in DataLoader(Stream(10), batch_size=3, num_workers=num_workers) for v in b.tolist())
    assert got == list(range(10))


@pytest.mark.parametrize("num_workers, batch_size, drop_last, batches", [  # torch 2.13's batches, in its order
    (2, 3, False, [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]),
    (2, 3, True, [[0, 2, 4], [1, 3, 5]]),
    (3, 2, False, [[0, 3], [1, 4], [2, 5], [6, 9], [7], [8]]),
])
def test_iterable_dataset_batches_come_round_robin_as_torchs(num_workers: int, batch_size: int, drop_last: bool,
                                                             batches: list[list[int]]) -> None:
    dl = DataLoader(Stream(10), batch_size=batch_size, num_workers=num_workers, drop_last=drop_last)
    assert [b.tolist() for b in dl] == batches


def test_worker_info_and_init_fn() -> None:
    seen: dict[int, Any] = {}

    def init(worker_id: int) -> None:
        seen[worker_id] = get_worker_info()

    class Who(Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> int:
            info = get_worker_info()
            assert info is not None
            return info.id

    ds = Who()
    ag.manual_seed(0)
    ids = [v for b in DataLoader(ds, batch_size=2, num_workers=2, worker_init_fn=init) for v in b.tolist()]
    assert ids == [0, 0, 1, 1, 0, 0, 1, 1]  # round-robin, as torch hands out batches
    assert sorted(seen) == [0, 1]
    for wid, info in seen.items():
        assert info.id == wid and info.num_workers == 2 and info.dataset is ds and info.worker_method == "thread"
        assert info.seed == seen[0].seed + wid
        assert isinstance(info.rng.torch_generator, ag.Generator)
    assert get_worker_info() is None
    with pytest.raises(Exception):  # frozen, as torch's
        seen[0].id = 5


def test_worker_init_fn_error_reaches_the_consumer() -> None:
    def init(worker_id: int) -> None:
        raise KeyError("no config")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker thread 0 while running worker_init_fn"):
        list(DataLoader(Squares(4), num_workers=1, worker_init_fn=init))


def test_worker_error_names_the_index_and_keeps_the_original() -> None:
    ds = Squares(10, fail_at=6)
    it = iter(DataLoader(ds, batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    assert next(it).tolist() == [4, 9]
    assert next(it).tolist() == [16, 25]
    with pytest.raises(ValueError) as info:
        next(it)
    msg = str(info.value)
    assert msg.startswith("Caught ValueError in DataLoader worker thread 1 while fetching index 6.")
    assert "bad sample 6" in msg
    assert isinstance(info.value.__cause__, ValueError) and str(info.value.__cause__) == "bad sample 6"
    assert next(it).tolist() == [64, 81]  # the loader goes on after an error, as torch's does
    del it


def test_collate_error_names_the_batch() -> None:
    def collate(batch: list[int]) -> Any:
        raise TypeError("cannot collate")

    with pytest.raises(TypeError, match=r"while collating the batch of indices \[0, 1\]"):
        next(iter(DataLoader(Squares(4), batch_size=2, num_workers=1, collate_fn=collate)))


def test_timeout_raises_torchs_error() -> None:
    dl = DataLoader(Squares(4, delay=0.3), batch_size=1, num_workers=1, timeout=0.05)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.05 seconds$"):
        next(iter(dl))


def test_prefetch_is_bounded() -> None:
    ds = Squares(100)
    it = iter(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=3))
    assert next(it).tolist() == [0, 1]
    # one batch consumed, num_workers * prefetch_factor in flight, nothing more
    assert settled_reads(ds, (1 + 2 * 3) * 2) == (1 + 2 * 3) * 2
    next(it)
    assert settled_reads(ds, (2 + 2 * 3) * 2) == (2 + 2 * 3) * 2
    del it


def settled_reads(ds: Squares, expected: int) -> int:
    """``ds.reads`` once the workers have had time to reach ``expected`` reads, and a little more to pass it."""
    deadline = time.monotonic() + 5
    while ds.reads < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    return ds.reads


def test_samplers_given_to_the_loader() -> None:
    assert [b.tolist() for b in DataLoader(Squares(5), batch_sampler=[[3, 1], [0]])] == [[9, 1], [0]]
    assert [b.tolist() for b in DataLoader(Squares(5), sampler=[4, 2], num_workers=1)] == [[16], [4]]
    sampler = RandomSampler(range(6), generator=ag.Generator().manual_seed(0))
    assert sorted(v for b in DataLoader(Squares(6), batch_size=4, sampler=sampler) for v in b.tolist()) == [
        i * i for i in range(6)]


def test_workers_are_threads_and_none_outlive_the_pass() -> None:
    ds = Squares(20)
    before = worker_threads()
    assert before == []
    list(DataLoader(ds, batch_size=2, num_workers=3))
    assert len(ds.threads) == 3 and threading.get_ident() not in ds.threads
    assert worker_threads() == []


def test_breaking_out_joins_the_workers() -> None:
    for _ in DataLoader(Squares(50, delay=0.001), batch_size=2, num_workers=2):
        assert len(worker_threads()) == 2
        break
    assert worker_threads() == []


def test_persistent_workers_keep_their_threads() -> None:
    ds = Squares(8)
    dl = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    first = [b.tolist() for b in dl]
    threads = worker_threads()
    assert len(threads) == 2
    assert [b.tolist() for b in dl] == first and worker_threads() == threads
    assert len(ds.threads) == 2
    # a pass abandoned half-way, then a new one: the stale batches never show up
    it = iter(dl)
    next(it)
    assert [b.tolist() for b in dl] == first
    del dl, it
    gc.collect()
    assert worker_threads() == []


def test_persistent_iterable_dataset_restarts_each_pass() -> None:
    dl = DataLoader(Stream(7), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(3):
        assert sorted(v for b in dl for v in b.tolist()) == list(range(7))
    del dl


@pytest.mark.parametrize("num_workers", [0, 2])
def test_same_seed_same_order(num_workers: int) -> None:
    def order(seed: int) -> list[list[int]]:
        dl = DataLoader(Squares(20), batch_size=3, shuffle=True, num_workers=num_workers,
                        generator=ag.Generator().manual_seed(seed))
        return [b.tolist() for b in dl]

    assert order(0) == order(0) != order(1)
    ag.manual_seed(3)
    a = [b.tolist() for b in DataLoader(Squares(20), batch_size=3, shuffle=True, num_workers=num_workers)]
    ag.manual_seed(3)
    assert [b.tolist() for b in DataLoader(Squares(20), batch_size=3, shuffle=True, num_workers=num_workers)] == a


def test_training_loop_from_a_tensor_dataset() -> None:
    g = ag.Generator().manual_seed(0)
    x = ag.randn(256, 3, generator=g)
    y = x @ ag.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    ag.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = ag.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=2, generator=g)
    losses = []
    for _ in range(5):
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward_sync()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < 0.01 * losses[0]


# ----- async for --------------------------------------------------------------------------

@pytest.mark.parametrize("num_workers", [0, 2])
async def test_async_for_gives_the_same_batches(num_workers: int) -> None:
    dl = DataLoader(Squares(10), batch_size=4, num_workers=num_workers)
    assert [b.tolist() async for b in dl] == [b.tolist() for b in dl]
    dl = DataLoader(Stream(9), batch_size=2, num_workers=num_workers)
    assert sorted([v async for b in dl for v in b.tolist()]) == list(range(9))


async def test_async_without_workers_loads_off_the_loop_on_demand() -> None:
    ds = Squares(9)
    infos = []

    class Probe(Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> int:
            infos.append(get_worker_info())
            return ds[i]

    loop_thread = threading.get_ident()
    got = []
    async for b in DataLoader(Probe(), batch_size=2):
        got.append(b.tolist())
        assert ds.reads == 2 * len(got)  # nothing read ahead
    assert got == [[0, 1], [4, 9]]
    assert loop_thread not in ds.threads and len(ds.threads) == 1
    assert infos == [None] * 4


@pytest.mark.no_blocking(max_ms=200)
@pytest.mark.parametrize("num_workers", [0, 2])
async def test_async_for_never_blocks_the_loop(num_workers: int) -> None:
    # every batch takes 0.3 s of blocking sample code: on the loop the watchdog would fail the test
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        got = [b.tolist() async for b in DataLoader(Squares(4, delay=0.15), batch_size=2, num_workers=num_workers)]
        tg.cancel_scope.cancel()
    assert got == [[0, 1], [4, 9]] and ticks > 10


@pytest.mark.parametrize("num_workers", [0, 1, 3])
async def test_cancelling_the_consumer_joins_the_workers(num_workers: int) -> None:
    ds = Squares(100, delay=0.05)
    seen = []
    with anyio.move_on_after(0.3) as scope:
        async for b in DataLoader(ds, batch_size=2, num_workers=num_workers):
            seen.append(b)
    assert scope.cancelled_caught
    assert worker_threads() == []  # joined before the cancellation got through
    reads = ds.reads
    await anyio.sleep(0.1)
    assert ds.reads == reads  # and nothing reads the dataset any more


async def test_cancelling_persistent_workers_joins_them_too() -> None:
    dl = DataLoader(Squares(100, delay=0.05), batch_size=2, num_workers=2, persistent_workers=True)
    with anyio.move_on_after(0.2):
        async for _ in dl:
            pass
    assert worker_threads() == []
    assert len([b async for b in DataLoader(Squares(6), batch_size=2, num_workers=2)]) == 3


async def test_async_prefetch_is_bounded() -> None:
    ds = Squares(100)
    it = DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=2).__aiter__()
    assert (await it.__anext__()).tolist() == [0, 1]
    deadline = time.monotonic() + 5
    while ds.reads < (1 + 2 * 2) * 2 and time.monotonic() < deadline:
        await anyio.sleep(0.01)
    await anyio.sleep(0.1)
    assert ds.reads == (1 + 2 * 2) * 2
    await it.aclose()
    assert worker_threads() == []


@pytest.mark.parametrize("num_workers", [0, 2])
async def test_async_worker_error_names_the_index(num_workers: int) -> None:
    got = []
    with pytest.raises(ValueError) as info:
        async for b in DataLoader(Squares(10, fail_at=5), batch_size=2, num_workers=num_workers):
            got.append(b.tolist())
    assert got == [[0, 1], [4, 9]]
    if num_workers:
        assert str(info.value).startswith("Caught ValueError in DataLoader worker thread 0 while fetching index 5.")
    else:  # the loading thread of num_workers=0 raises the dataset's own error, as torch's main process does
        assert str(info.value) == "bad sample 5"
        if hasattr(info.value, "__notes__"):
            assert "index 5" in info.value.__notes__[0]


async def test_async_timeout() -> None:
    dl = DataLoader(Squares(4, delay=0.3), num_workers=1, timeout=0.05)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.05 seconds$"):
        async for _ in dl:
            pass


async def test_async_same_seed_same_order() -> None:
    async def order(seed: int) -> list[list[int]]:
        dl = DataLoader(Squares(20), batch_size=3, shuffle=True, num_workers=2,
                        generator=ag.Generator().manual_seed(seed))
        return [b.tolist() async for b in dl]

    assert await order(5) == await order(5) != await order(6)


async def test_async_training_loop() -> None:
    g = ag.Generator().manual_seed(1)
    x = ag.randn(128, 2, generator=g)
    y = x @ ag.tensor([[2.0], [-1.0]])
    ag.manual_seed(1)
    model = nn.Linear(2, 1)
    opt = ag.optim.SGD(model.parameters(), lr=0.1)
    first = last = None
    for _ in range(4):
        async for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=g):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            await loss.backward()
            opt.step()
            first = loss.item() if first is None else first
            last = loss.item()
    assert last < 0.01 * first


def test_no_warnings_from_pin_memory() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(DataLoader(Squares(4), batch_size=2, pin_memory=True))) == 2


@pytest.mark.parametrize("num_workers", [0, 2])
async def test_dataset_code_runs_as_in_a_plain_thread(num_workers: int) -> None:
    # the threads start from a task, with a copy of its context, yet no event loop runs in them:
    # a dataset may compute a gradient with backward_sync (which refuses inside a running loop)
    class Grads(Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> ag.Tensor:
            x = ag.tensor(float(i), requires_grad=True)
            (x * x).backward_sync()
            return x.grad

    assert [b.tolist() async for b in DataLoader(Grads(), batch_size=2, num_workers=num_workers)] == [
        [0.0, 2.0], [4.0, 6.0]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_dataset_longer_than_reported_warns(num_workers: int) -> None:
    class Liar(Stream):
        def __len__(self) -> int:
            return 2

    dl = DataLoader(Liar(4), batch_size=None, num_workers=num_workers)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match=r"Length of IterableDataset .* was reported to be 2\(when accessing "
                                         r"len\(dataloader\)\), but [34] samples have been fetched"):
        assert sorted(dl) == [0, 1, 2, 3]


async def test_a_prefetched_batch_is_still_a_checkpoint() -> None:
    # a loop body that never awaits must not starve the loop's other tasks, even when every batch is ready
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            await anyio.sleep(0)
            turns += 1

    ds = Squares(10)
    it = DataLoader(ds, batch_size=1, num_workers=1, prefetch_factor=10).__aiter__()
    deadline = time.monotonic() + 5
    while ds.reads < 10 and time.monotonic() < deadline:
        await anyio.sleep(0.01)
    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        await anyio.sleep(0.01)
        got, seen = [], []
        async for b in it:
            got.append(b.item())
            seen.append(turns)  # the other task's turns so far, batch after batch
        tg.cancel_scope.cancel()
    assert got == [i * i for i in range(10)]
    assert seen[-1] - seen[0] >= 5


def test_random_sampler_replacement_is_lazy() -> None:
    # makemore's InfiniteDataLoader: num_samples=int(1e10) must not allocate 1e10 indices up front
    s = RandomSampler(range(7), replacement=True, num_samples=int(1e10), generator=ag.Generator().manual_seed(3))
    it = iter(s)
    first = [next(it) for _ in range(3000)]
    assert len(s) == int(1e10) and set(first) == set(range(7))
    # the chunked draws are the same stream as one draw of the same length
    a = list(RandomSampler(range(7), replacement=True, num_samples=3000, generator=ag.Generator().manual_seed(3)))
    assert a == first
