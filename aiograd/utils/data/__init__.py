"""aiograd.utils.data: torch's Dataset, Sampler and DataLoader API, with worker threads and
``async for``.

    from aiograd.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=2)
    for xb, yb in loader: ...            # as in torch
    async for xb, yb in loader: ...      # on an event loop: batches prepared off the loop

Workers are threads of this process, not processes (NOTE [Worker threads]);
``async for`` never runs dataset code on the loop and stops its threads when
the consuming task is cancelled (NOTE [Async iteration]).
"""

from __future__ import annotations

from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .distributed import DistributedSampler
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
    "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler", "DistributedSampler",
    "DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
]
