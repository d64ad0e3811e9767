"""``DistributedSampler``: each of ``num_replicas`` data-parallel replicas reads its own share of a
dataset, as ``torch.utils.data.distributed.DistributedSampler``."""

from __future__ import annotations

import math
from typing import Any, Iterator

from ..._generator import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """The indices of replica ``rank`` out of ``num_replicas``: every ``num_replicas``-th index of a
    common order, starting at ``rank``.

    The common order is ``range(len(dataset))``, or with ``shuffle`` a permutation
    seeded by ``seed + epoch`` (call ``set_epoch(epoch)`` before each pass so
    the order changes, identically on every replica). Unless ``drop_last``, the
    order is padded by repeating its start so that every replica gets
    ``ceil(len(dataset) / num_replicas)`` indices; with it, the tail that does
    not divide evenly is dropped. aiograd has no default process group:
    ``num_replicas`` and ``rank`` are required.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            raise RuntimeError(
                "Requires distributed package to be available: aiograd has no default process group, "
                "pass num_replicas= and rank= (the number of replicas and this one's index)")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            order = Generator().manual_seed(self.seed + self.epoch).numpy_generator.permutation(n).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[: self.total_size]
        elif order:
            pad = self.total_size - len(order)
            order += (order * math.ceil(pad / len(order)))[:pad]
        return iter(order[self.rank: self.total_size: self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The pass about to start: with ``shuffle``, each epoch has its own order."""
        self.epoch = epoch
