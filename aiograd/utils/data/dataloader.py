"""``DataLoader``: batches from a dataset, with torch's arguments, in a ``for`` loop or an
``async for`` loop.

With ``num_workers=0`` a ``for`` loop fetches each batch in the calling
thread when asked, as torch's does. With ``num_workers > 0`` worker threads
prepare batches ahead (NOTE [Worker threads] in ``_worker.py``): at most
``num_workers * prefetch_factor`` batches are requested and not yet consumed,
handed out round-robin, and returned in sampler order (``in_order=False``:
in order of completion).

NOTE [Async iteration]: ``async for batch in loader`` never runs dataset or
collate code on the event loop. With ``num_workers > 0`` it is the same
worker pool, the consumer awaiting each batch (NOTE [Waking the consumer]);
a batch that is ready at once still costs one checkpoint (a yield to the
loop), so a loop body that never awaits does not starve the loop's other tasks.
With ``num_workers=0`` one loading thread fetches each batch when
``__anext__`` asks for it and not before (no read-ahead: the dataset is never
read while the consumer's own code runs, as with torch's ``num_workers=0``; it
is no worker: ``get_worker_info()`` is None there and ``worker_init_fn`` is not
called; an error it raises reaches the consumer as is). Cancelling the task
that awaits a batch (anyio cancel scope, ``task.cancel()``, a timeout) shuts
the pool down and waits, shielded and without blocking the loop, until every
thread has ended, then lets the cancellation through; this holds for
persistent workers too (the next pass starts new ones). An iterator dropped
half-way (``break``, an exception in the loop body, garbage collection) shuts
its threads down and joins them at once, in the thread that drops it.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, Callable, Generic, Iterable, TypeVar

import anyio

from ... import _aio
from ..._generator import Generator, rng_of
from ._collate import default_collate, default_convert
from ._worker import EXHAUSTED, Failure, Fetcher, WorkerPool, WorkerSpec
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _InfiniteConstantSampler

__all__ = ["DataLoader"]

T_co = TypeVar("T_co", covariant=True)

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=ag.Generator().manual_seed(0))
        for xb, yb in loader: ...                 # plain loop
        async for xb, yb in loader: ...           # on an event loop: batches prepared off the loop

    Arguments are torch's: ``batch_size`` (None turns batching off: one
    sample at a time through ``default_convert``), ``shuffle`` (a
    ``RandomSampler`` drawing from ``generator``), ``sampler``,
    ``batch_sampler``, ``collate_fn`` (``default_collate``), ``drop_last``,
    ``num_workers`` (worker *threads*, not processes: they share the dataset
    object and the process's global random generators; ``get_worker_info()``
    gives each its id and its own seeded generators), ``prefetch_factor``
    (batches in flight per worker, default 2), ``persistent_workers`` (keep
    the threads between passes), ``worker_init_fn(worker_id)`` (called in each
    worker thread), ``timeout`` (seconds to wait for a worker's batch before
    ``RuntimeError``), ``in_order``. ``pin_memory``, ``pin_memory_device`` and
    ``multiprocessing_context`` are accepted and ignored (no accelerator, no
    processes). Bad combinations raise torch's errors.
    """

    dataset: Dataset[T_co]
    batch_size: int | None
    num_workers: int
    drop_last: bool
    timeout: float
    sampler: Any
    prefetch_factor: int | None
    __initialized = False

    def __init__(
        self,
        dataset: Dataset[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
                "multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError(
                "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                f"but got num_workers={num_workers}"
            )
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator: _ThreadedDataLoaderIter | None = None
        self._IterableDataset_len_called: int | None = None  # what len(loader) reported, for a warning
        self.__initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        """What the iterator draws one batch's index from: the batch sampler, or the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> "_BaseDataLoaderIter":
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return self._workers_iter()

    def __aiter__(self) -> "_ThreadedDataLoaderIter":
        """The async iterator (NOTE [Async iteration]): ``async for batch in loader``."""
        if self.num_workers == 0:
            return _ThreadedDataLoaderIter(self, loading_thread=True)
        return self._workers_iter()

    def _workers_iter(self) -> "_ThreadedDataLoaderIter":
        if not self.persistent_workers:
            return _ThreadedDataLoaderIter(self)
        it = self._iterator
        if it is None or it._pool.closed:
            it = self._iterator = _ThreadedDataLoaderIter(self)
        else:
            it._reset(self)
        return it

    def __len__(self) -> int:
        if self._iterable:
            n = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """What every iterator over a DataLoader shares: the index stream and the fetching arguments."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        # one draw from the loader's generator per pass, as torch (the workers' seeds come from it)
        self._base_seed = int(rng_of(loader.generator, "DataLoader").integers(0, 1 << 63))
        self._num_yielded = 0
        self._len_reported = loader._IterableDataset_len_called

    def _yielded(self) -> None:
        """Count a batch handed out; warn as torch does once an iterable dataset gives more than
        ``len(loader)`` said."""
        self._num_yielded += 1
        if self._iterable and self._len_reported is not None and self._num_yielded > self._len_reported:
            hint = (" With worker threads, this could be caused by not splitting the stream between workers "
                    "with get_worker_info() in the dataset's __iter__." if self._num_workers > 0 else "")
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {self._len_reported}"
                          f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched."
                          + hint, stacklevel=3)

    def __iter__(self) -> "_BaseDataLoaderIter":
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __next__(self) -> Any:
        raise NotImplementedError


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers=0`` in a ``for`` loop: each batch fetched in the calling thread when asked."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = Fetcher(self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                                self._drop_last)

    def __next__(self) -> Any:
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        if data is EXHAUSTED:
            raise StopIteration
        self._yielded()
        return data


class _ThreadedDataLoaderIter(_BaseDataLoaderIter):
    """Batches prepared on threads: ``num_workers`` workers, or the one loading thread of an
    ``async for`` over a ``num_workers=0`` loader (NOTE [Async iteration])."""

    def __init__(self, loader: DataLoader[Any], loading_thread: bool = False) -> None:
        super().__init__(loader)
        self._in_order = loader.in_order
        if loading_thread:
            workers, self._limit, self._eager = 1, 1, False
        else:
            if not loader.prefetch_factor or loader.prefetch_factor <= 0:
                raise AssertionError("prefetch_factor must be greater than 0 for a DataLoader with workers")
            workers, self._limit, self._eager = self._num_workers, self._num_workers * loader.prefetch_factor, True
        self._workers = workers
        spec = WorkerSpec(self._dataset, self._iterable, self._auto_collation, self._collate_fn, self._drop_last,
                          loader.worker_init_fn, self._base_seed, visible=not loading_thread)
        self._pool = WorkerPool(workers, spec)
        self._results = self._pool.results
        self._start_pass(first=True)

    # ----- the consumer's bookkeeping (on the consumer's thread only) -------------------

    def _reset(self, loader: DataLoader[Any]) -> None:
        """A new pass over the same persistent workers."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_reported = loader._IterableDataset_len_called
        self._start_pass(first=False)

    def _start_pass(self, first: bool) -> None:
        self._epoch = self._results.epoch if first else self._results.new_epoch()
        self._send_idx = 0
        self._outstanding: dict[int, int] = {}  # batch number -> worker, for requests not consumed yet
        self._active = [True] * self._workers  # False once a worker's iterable stream has ended
        self._cycle = itertools.cycle(range(self._workers))
        self._sampler_done = False
        if self._eager:
            self._fill()

    def _fill(self) -> None:
        """Request batches until ``_limit`` are in flight or the indices run out."""
        while len(self._outstanding) < self._limit and self._request():
            pass

    def _request(self) -> bool:
        if self._sampler_done:
            return False
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._sampler_done = True
            return False
        for _ in range(self._workers):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            self._sampler_done = True
            return False
        self._pool.send(wid, (self._epoch, self._send_idx, index))
        self._outstanding[self._send_idx] = wid
        self._send_idx += 1
        return True

    def _ready_idx(self) -> int | None:
        """The batch to hand out next if its answer is in (call with the board's lock held)."""
        done = self._results.done
        if self._in_order:
            first = next(iter(self._outstanding))
            return first if first in done else None
        return next(iter(done), None)

    def _ready(self) -> bool:
        return self._ready_idx() is not None or self._results.alive < self._workers

    def _take(self) -> Any:
        """The next answer (its batch, ``EXHAUSTED`` or a ``Failure``), once ``_ready()``."""
        with self._results.lock:
            idx = self._ready_idx()
            if idx is None:
                raise RuntimeError("DataLoader worker thread exited unexpectedly")
            answer = self._results.done.pop(idx)
        wid = self._outstanding.pop(idx)
        if answer is EXHAUSTED:
            self._active[wid] = False
        if self._eager:
            self._fill()
        return answer

    def _timed_out(self) -> RuntimeError:
        return RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _handout(self, answer: Any) -> Any:
        self._yielded()
        if isinstance(answer, Failure):
            answer.reraise()
        return answer

    # ----- for -------------------------------------------------------------------------

    def __iter__(self) -> "_ThreadedDataLoaderIter":
        return self

    def __next__(self) -> Any:
        while True:
            if self._pool.closed:
                raise StopIteration
            if not self._eager:
                self._fill()
            if not self._outstanding:
                self._end_pass()
                raise StopIteration
            if not self._results.wait(self._ready, self._timeout or None):
                raise self._timed_out()
            answer = self._take()
            if answer is not EXHAUSTED:
                return self._handout(answer)

    def _end_pass(self) -> None:
        if not self._persistent_workers:
            self._pool.join()

    def close(self) -> None:
        """Stop the threads now and wait for them (what dropping the iterator does)."""
        self._pool.join()

    # ----- async for -------------------------------------------------------------------

    def __aiter__(self) -> "_ThreadedDataLoaderIter":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._anext()
        except Exception:
            raise  # StopAsyncIteration, a worker's error, a timeout: the iterator stays as it is
        except BaseException:
            await self._pool.ajoin()  # cancelled (or interrupted): no thread outlives the wait
            raise

    async def _anext(self) -> Any:
        while True:
            if self._pool.closed:
                raise StopAsyncIteration
            if not self._eager:
                self._fill()
            if not self._outstanding:
                if not self._persistent_workers:
                    await self._pool.ajoin()
                raise StopAsyncIteration
            waited = True
            if self._timeout:
                with anyio.move_on_after(self._timeout):
                    waited = await self._results.await_(self._ready)
                with self._results.lock:
                    if not self._ready():
                        raise self._timed_out()
            else:
                waited = await self._results.await_(self._ready)
            if not waited:
                # NOTE [Async iteration]: a batch prefetched in time is still a checkpoint, so a
                # loop body that never awaits does not starve the loop's other tasks
                await _aio.checkpoint()
            answer = self._take()
            if answer is not EXHAUSTED:
                return self._handout(answer)

    async def aclose(self) -> None:
        """Stop the threads and wait for them without blocking the event loop."""
        await self._pool.ajoin()

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None and not pool.closed:
            try:
                pool.join()
            except Exception:  # noqa: BLE001 - at interpreter exit the threads may already be gone
                pass
