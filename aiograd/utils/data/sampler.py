"""Samplers, as ``torch.utils.data``: the order in which a DataLoader visits a map-style dataset.

A sampler is an iterable of indices (``BatchSampler``: of lists of indices).
The random ones draw from an aiograd ``Generator`` (``generator=``), or, when
none is given, from a fresh stream seeded by the default generator at the
start of each pass, so ``ag.manual_seed(s)`` makes every run visit the same
order. The orders are not torch's (another random number generator), but
the rules are: a permutation per pass, draws with replacement, multinomial
draws by weight.
"""

from __future__ import annotations

import itertools
from typing import Any, Generic, Iterable, Iterator, Sequence, Sized, TypeVar

import numpy as np

from ..._generator import Generator, default_generator, rng_of
from ...ops import multinomial
from ...tensor import as_tensor

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler",
]

T_co = TypeVar("T_co", covariant=True)

_SEED_RANGE = 1 << 63


def _pass_rng(generator: Generator | None, op: str) -> np.random.Generator:
    """The stream a random pass draws from: ``generator``'s own, or, for None, a fresh one seeded
    from the default generator (so other draws during the pass do not change its order)."""
    if generator is None:
        return np.random.default_rng(int(default_generator._rng.integers(0, _SEED_RANGE)))
    return rng_of(generator, op)


class Sampler(Generic[T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (indices, or lists of indices for a
    batch sampler) and, for ``len(loader)``, ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


_DRAW_CHUNK = 1024  # indices drawn at once by RandomSampler(replacement=True)


class RandomSampler(Sampler[int]):
    """Indices in random order: a fresh permutation each pass, or, with ``replacement=True``,
    ``num_samples`` independent draws.

    Without replacement, ``num_samples`` larger than the dataset chains whole
    permutations (then part of one). ``generator`` is an aiograd ``Generator``.
    """

    data_source: Sized
    replacement: bool

    def __init__(
        self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices a pass yields (``len(data_source)`` unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = _pass_rng(self.generator, "RandomSampler")
        if self.replacement:
            # NOTE [Lazy draws]: a sampler with a huge num_samples (makemore's "infinite" loader
            # asks for 1e10) must not allocate them all; draw a chunk at a time, as torch draws 32.
            left = self.num_samples
            while left > 0:
                chunk = min(left, _DRAW_CHUNK)
                yield from rng.integers(0, n, size=chunk).tolist()
                left -= chunk
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a fresh random order each pass."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = rng_of(self.generator, "SubsetRandomSampler")
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``range(len(weights))``, each drawn with probability proportional
    to its weight (the weights need not sum to one); without replacement an index is drawn at most
    once."""

    num_samples: int
    replacement: bool

    def __init__(
        self, weights: Sequence[float], num_samples: int, replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from multinomial(self.weights, self.num_samples, self.replacement,
                               generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size``; the last, shorter one is
    dropped when ``drop_last``.

        list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler: Sampler[Any] | Iterable[Any], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler[None]):
    """The index stream of an iterable dataset: None forever (the dataset decides what comes next)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None

