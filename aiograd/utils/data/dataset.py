"""Datasets, as ``torch.utils.data``: map-style (``__getitem__`` + ``__len__``) and iterable ones,
and the ways to combine and split them.

A map-style ``Dataset`` answers ``dataset[i]`` for ``0 <= i < len(dataset)``; an
``IterableDataset`` is a stream (``iter(dataset)``). ``TensorDataset`` pairs
tensors along their first dimension; ``ConcatDataset`` and ``ChainDataset``
join datasets end to end; ``StackDataset`` zips them; ``Subset`` picks
indices; ``random_split`` cuts a dataset into random, non-overlapping
``Subset`` s.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Any, Generic, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from ..._generator import Generator, default_generator, rng_of
from ...tensor import Tensor

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
    "Subset", "random_split",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__(index)`` and usually ``__len__``.

    A subclass may also define ``__getitems__(indices)`` returning the list of
    samples of a whole batch; the DataLoader then asks for a batch in one call.
    ``a + b`` is ``ConcatDataset([a, b])``.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset[T_co]") -> "ConcatDataset[T_co]":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset that is a stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker thread calls ``iter(dataset)`` on the
    same object (torch gives each worker process its own copy): ``__iter__``
    must return a fresh iterator each time, and may use ``get_worker_info()``
    to give each worker its own share of the stream. ``a + b`` is
    ``ChainDataset([a, b])``.
    """

    def __add__(self, other: Dataset[T_co]) -> "ChainDataset":  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the rows of tensors of equal first dimension: ``dataset[i]`` is
    ``tuple(t[i] for t in tensors)``.

    A DataLoader batches one with a gather per tensor, not a Tensor per sample
    (NOTE [TensorDataset batches]).
    """

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].size(0))


class StackDataset(Dataset[Any]):
    """Datasets of equal length zipped: positional ones give tuple samples, keyword ones dict samples.

        StackDataset(images, labels)[i] == (images[i], labels[i])
        StackDataset(x=images, y=labels)[i] == {"x": images[i], "y": labels[i]}
    """

    datasets: tuple[Any, ...] | dict[str, Any]

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                "but both types are given."
            )
        parts: Sequence[Any] = args or list(kwargs.values())
        if not parts:
            raise ValueError("At least one dataset should be passed")
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else dict(kwargs)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[Any]) -> list[Any]:
        def column(d: Any) -> list[Any]:
            getitems = getattr(d, "__getitems__", None)
            if not callable(getitems):
                return [d[i] for i in indices]
            items = getitems(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
            return list(items)

        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        tcols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in tcols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets end to end: index ``i`` runs through the first, then the second..."""

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        """The running total of the lengths of ``sequence``'s datasets."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset[Any]):
    """Iterable datasets one after the other, chained lazily (each is iterated when reached)."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order: ``subset[i] == dataset[indices[i]]``."""

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        inner = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset[T], lengths: Sequence[int | float], generator: Generator | None = default_generator
) -> list[Subset[T]]:
    """Split ``dataset`` into random, non-overlapping ``Subset`` s of the given lengths.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to
    1: then each split gets ``floor(len(dataset) * fraction)`` samples and the
    samples left over go one each to the splits in order, as torch does.
    The permutation draws from ``generator`` (``ag.Generator().manual_seed(s)``
    for a split that does not move the default generator).
    """
    n = len(dataset)  # type: ignore[arg-type]
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        counts: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(math.floor(n * frac))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = rng_of(generator, "random_split").permutation(n).tolist()
    out: list[Subset[T]] = []
    for end, length in zip(itertools.accumulate(lengths), lengths):
        out.append(Subset(dataset, order[int(end) - int(length):int(end)]))
    return out


# NOTE [TensorDataset batches]: ``default_collate`` of a batch of TensorDataset
# rows stacks ``t[i]`` over the batch's indices for each tensor, which equals
# indexing each tensor once with all the indices. So when a DataLoader's
# dataset is exactly a TensorDataset of tensors that need no gradient, or a
# ``Subset`` of one (as ``random_split`` makes), and its ``collate_fn`` is
# ``default_collate``, the fetcher gathers each tensor's rows in one numpy
# ``take`` (``_rows``) instead of making a Tensor per sample and stacking them:
# same values, dtypes and list shape, a tenth of the time (a shuffled pass over
# 60000 float32 rows of 784 in batches of 64: 0.22 s against 2.2 s through
# per-sample indexing and ``default_collate``). Exact types only: a subclass
# may change what ``__getitem__`` returns.

def _row_source(dataset: Any) -> tuple[tuple[Tensor, ...], list[Sequence[int]]] | None:
    """For a TensorDataset of tensors that need no gradient, or Subsets of one (``random_split``'s
    parts), its tensors and the index lists of the Subsets from the outermost in; else None
    (NOTE [TensorDataset batches])."""
    maps: list[Sequence[int]] = []
    while type(dataset) is Subset:
        maps.append(dataset.indices)
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or any(t.requires_grad for t in dataset.tensors):
        return None
    return dataset.tensors, maps


def _rows(source: tuple[tuple[Tensor, ...], list[Sequence[int]]], indices: Sequence[int]) -> list[Tensor]:
    """Each tensor's rows at ``indices`` (mapped through the Subsets), one gather per tensor."""
    tensors, maps = source
    for m in maps:
        indices = [m[i] for i in indices]
    idx = np.asarray(indices, dtype=np.intp)
    n = tensors[0].shape[0]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = int(idx.max()) if idx.max() >= n else int(idx.min())
        raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {n}")
    return [Tensor._wrap(np.take(t._data, idx, axis=0), t._device) for t in tensors]
