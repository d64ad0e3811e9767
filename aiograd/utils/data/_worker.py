"""The DataLoader's worker threads: what each one knows (``get_worker_info``), how it fetches
batches, and the results board where the consumer, in a thread or on an event loop, waits for them.

NOTE [Worker threads]: torch's DataLoader workers are processes, each with a
copy of the dataset; aiograd's are threads of this process sharing the one
dataset object. numpy releases the GIL in its kernels, so decoding and
augmenting arrays in several threads runs in parallel; pure-Python sample code
does not. Each worker owns a task queue (``SimpleQueue``) and runs in a copy
of the context that started it (grad mode and other context variables as the
consumer had them). Tasks are ``(epoch, idx, index)``: ``idx`` numbers the
batch in send order, ``index`` is the sampler's batch of indices (a count, for
an iterable dataset). A worker answers each task on the shared ``_Results``
board, keyed by ``idx``; an answer of an older epoch (a persistent loader
reset mid-pass) is dropped there, under its lock, so the consumer never sees
it. A worker stops when it reads ``None`` from its queue, or, between two
samples, when the pool's ``stop`` event is set, so shutting a pool down waits
for at most one sample per worker, never a whole batch.

NOTE [Waking the consumer]: a consumer thread waits on the board's condition
variable. A consumer task on an event loop registers a one-shot wake-up, a
function posting ``Event.set`` to its loop through ``_aio.thread_poster()``
(``call_soon_threadsafe`` on asyncio and uvloop, the trio token's
``run_sync_soon`` on trio), and awaits the event: the loop never blocks, and
whichever answer arrives first (a batch, an error, a worker's exit) wakes it.
The check and the registration happen under the board's lock, so an answer
posted in between cannot be missed.
"""

from __future__ import annotations

import contextvars
import dataclasses
import queue
import random
import threading
from typing import Any, Callable, Optional

import anyio
import numpy as np

from ... import _aio
from ..._generator import Generator
from ._collate import default_collate
from .dataset import _row_source, _rows

__all__ = ["WorkerInfo", "get_worker_info"]


@dataclasses.dataclass(frozen=True)
class WorkerRNG:
    """Random number generators of one worker thread, seeded from ``WorkerInfo.seed``.

    Threads share the process's global generators (``random``, ``np.random``,
    ``ag.manual_seed``'s), so a worker cannot reseed them as torch's worker
    processes do; a dataset that wants per-worker random augmentations draws
    from these instead."""

    random_generator: random.Random
    torch_generator: Generator
    numpy_generator: np.random.Generator


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What a DataLoader worker thread knows about itself (``get_worker_info()`` inside one).

    ``id`` (0 to ``num_workers - 1``), ``num_workers``, ``seed`` (the
    loader's base seed plus ``id``: a new base seed each pass, drawn from the
    loader's ``generator``), ``dataset`` (the loader's dataset object itself,
    shared by all workers, not a copy), ``rng`` (generators seeded from
    ``seed``) and ``worker_method`` (``"thread"``)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Optional[WorkerRNG] = None
    worker_method: str = "thread"


_current_worker: contextvars.ContextVar[WorkerInfo | None] = contextvars.ContextVar(
    "aiograd_dataloader_worker", default=None)


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of the DataLoader worker thread calling it, None anywhere else.

    An ``IterableDataset`` uses it in ``__iter__`` to give each worker its own
    share of the stream:

        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
    """
    return _current_worker.get()


def _make_worker_info(worker_id: int, num_workers: int, seed: int, dataset: Any) -> WorkerInfo:
    rng = WorkerRNG(random.Random(seed), Generator().manual_seed(seed), np.random.default_rng(seed))
    return WorkerInfo(worker_id, num_workers, seed, dataset, rng)


# ----- fetching one batch ---------------------------------------------------------------

class Exhausted:
    """A worker's answer once its iterable dataset's stream has ended (no more batches from it)."""

    __slots__ = ()


EXHAUSTED = Exhausted()


class _Stopped(Exception):
    """The pool is shutting down: the batch being fetched is abandoned."""


class Fetcher:
    """Fetches and collates the batch for one task; remembers what it was reading, so an error
    names the sample (``where``)."""

    def __init__(self, dataset: Any, iterable: bool, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool, stop: threading.Event | None = None) -> None:
        self.dataset = dataset
        self.iterable = iterable
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.stop = stop
        self.ended = False
        self.read = 0  # samples read from an iterable dataset's stream so far
        self.at: Any = None  # the index (or stream position) being read, for error messages
        self.stage = "sample"
        self._stream: Any = None
        self.tensor_rows = (_row_source(dataset) if not iterable and auto_collation and collate_fn is default_collate
                            else None)

    def where(self) -> str:
        """What the fetcher was doing when the last error happened, in the user's terms."""
        if self.stage == "collate":
            return f"collating the batch of {self._what(self.at)}"
        return f"fetching {self._what(self.at)}"

    def _what(self, at: Any) -> str:
        if self.iterable:
            return f"sample {self.read} of the dataset's iterator"
        return f"indices {at}" if isinstance(at, list) else f"index {at}"

    def fetch(self, index: Any) -> Any:
        """The collated batch for ``index``, or ``EXHAUSTED`` when an iterable dataset has no more."""
        self.stage = "sample"
        if self.iterable:
            return self._fetch_stream(index)
        ds = self.dataset
        if not self.auto_collation:
            self.at = index
            data = ds[index]
        elif self.tensor_rows is not None:
            self.at = list(index)
            return _rows(self.tensor_rows, index)
        elif callable(getattr(ds, "__getitems__", None)):
            self.at = list(index)
            data = ds.__getitems__(index)
        else:
            data = []
            stop = self.stop
            for i in index:
                if stop is not None and stop.is_set():
                    raise _Stopped
                self.at = i
                data.append(ds[i])
            self.at = list(index)
        self.stage = "collate"
        return self.collate_fn(data)

    def _fetch_stream(self, index: Any) -> Any:
        if self.ended:
            return EXHAUSTED
        if self._stream is None:
            self._stream = iter(self.dataset)
        if not self.auto_collation:
            try:
                data = next(self._stream)
            except StopIteration:
                self.ended = True
                return EXHAUSTED
            self.read += 1
        else:
            data = []
            stop = self.stop
            for _ in index:
                if stop is not None and stop.is_set():
                    raise _Stopped
                try:
                    data.append(next(self._stream))
                except StopIteration:
                    self.ended = True
                    break
                self.read += 1
            if not data or (self.drop_last and len(data) < len(index)):
                return EXHAUSTED
        self.stage = "collate"
        return self.collate_fn(data)


class Failure:
    """A worker's answer when fetching a batch raised: the exception, which worker, and where."""

    __slots__ = ("exc", "worker_id", "where")

    def __init__(self, exc: BaseException, worker_id: int | None, where: str) -> None:
        self.exc = exc
        self.worker_id = worker_id
        self.where = where

    def reraise(self) -> None:
        """Raise in the consumer: from a worker, torch's "Caught X in DataLoader worker ..." of the
        same type, chained to the original (whose traceback shows where in the dataset it failed);
        from the loading thread of ``num_workers=0``, the original itself, with a note on 3.11+."""
        exc = self.exc
        if self.worker_id is None:
            if hasattr(exc, "add_note"):
                exc.add_note(f"(raised in the DataLoader's loading thread while {self.where})")
            raise exc
        msg = (f"Caught {type(exc).__name__} in DataLoader worker thread {self.worker_id} "
               f"while {self.where}.\nOriginal error: {exc}")
        if isinstance(exc, KeyError):
            msg = _KeyErrorMessage(msg)
        try:
            new = type(exc)(msg)
        except Exception:
            new = RuntimeError(msg)
        raise new from exc


class _KeyErrorMessage(str):
    """A KeyError's message printed as written (KeyError shows its argument's repr otherwise)."""

    def __repr__(self) -> str:
        return str(self)


# ----- the results board ----------------------------------------------------------------

class Results:
    """Where worker threads post their answers and the consumer waits for them
    (NOTE [Worker threads], NOTE [Waking the consumer])."""

    def __init__(self, workers: int) -> None:
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.done: dict[int, Any] = {}
        self.epoch = 0
        self.alive = workers
        self._wake: Callable[[], None] | None = None

    def _notify(self) -> Callable[[], None] | None:
        """Wake every waiter; call with the lock held, then call what it returns without it."""
        self.cond.notify_all()
        wake, self._wake = self._wake, None
        return wake

    def put(self, epoch: int, idx: int, answer: Any) -> None:
        with self.lock:
            if epoch != self.epoch:
                return
            self.done[idx] = answer
            wake = self._notify()
        if wake is not None:
            wake()

    def worker_exited(self) -> None:
        with self.lock:
            self.alive -= 1
            wake = self._notify()
        if wake is not None:
            wake()

    def new_epoch(self) -> int:
        """Forget every answer; answers still coming for the old epoch will be dropped."""
        with self.lock:
            self.epoch += 1
            self.done.clear()
            return self.epoch

    def wait(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """Block this thread until ``ready()`` (checked under the lock); False on timeout."""
        with self.lock:
            return self.cond.wait_for(ready, timeout)

    async def await_(self, ready: Callable[[], bool]) -> bool:
        """Wait on the event loop, without blocking it, until ``ready()`` (checked under the lock);
        False when it was ready at once (nothing was awaited)."""
        waited = False
        while True:
            with self.lock:
                if ready():
                    return waited
                event = _aio.Event()
                self._wake = _poster_of(event)
            waited = True
            try:
                await event.wait()
            finally:
                with self.lock:
                    self._wake = None


def _poster_of(event: Any) -> Callable[[], None]:
    post = _aio.thread_poster()

    def wake() -> None:
        try:
            post(event.set)
        except Exception:  # noqa: BLE001 - the loop is closed or finished: nobody waits any more
            pass

    return wake


# ----- the worker threads ---------------------------------------------------------------

@dataclasses.dataclass
class WorkerSpec:
    """What every worker of a pool is given (the same for all but the ``WorkerInfo``)."""

    dataset: Any
    iterable: bool
    auto_collation: bool
    collate_fn: Callable[[Any], Any]
    drop_last: bool
    init_fn: Callable[[int], None] | None
    base_seed: int
    visible: bool  # False: the loading thread of num_workers=0, which is no "worker" (no info, no init_fn)


THREAD_NAME = "aiograd-DataLoader-worker"


def _worker_loop(worker_id: int, num_workers: int, spec: WorkerSpec, tasks: "queue.SimpleQueue[Any]",
                 results: Results, stop: threading.Event) -> None:
    """One worker thread's life: run ``worker_init_fn``, then answer tasks until told to stop."""
    try:
        label: int | None = None
        init_failure: Failure | None = None
        if spec.visible:
            label = worker_id
            _current_worker.set(_make_worker_info(worker_id, num_workers, spec.base_seed + worker_id, spec.dataset))
            if spec.init_fn is not None:
                try:
                    spec.init_fn(worker_id)
                except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                    init_failure = Failure(exc, worker_id, "running worker_init_fn")
        fetcher: Fetcher | None = None
        epoch = -1
        while True:
            task = tasks.get()
            if task is None or stop.is_set():
                return
            task_epoch, idx, index = task
            if task_epoch != results.epoch:
                continue  # a task of a pass that was reset: nobody waits for it
            if init_failure is not None:
                results.put(task_epoch, idx, init_failure)
                continue
            if task_epoch != epoch or fetcher is None:
                fetcher = Fetcher(spec.dataset, spec.iterable, spec.auto_collation, spec.collate_fn,
                                  spec.drop_last, stop)
                epoch = task_epoch
            try:
                answer = fetcher.fetch(index)
            except _Stopped:
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                answer = Failure(exc, label, fetcher.where())
            results.put(task_epoch, idx, answer)
            # NOTE [Worker threads]: a failure's traceback will hold the consumer's frames (and so the
            # iterator) once re-raised there; this running frame must not keep it alive
            answer = None
    finally:
        results.worker_exited()


class WorkerPool:
    """``num_workers`` threads answering tasks on one ``Results`` board (NOTE [Worker threads])."""

    def __init__(self, num_workers: int, spec: WorkerSpec) -> None:
        self.results = Results(num_workers)
        self.stop = threading.Event()
        self.queues: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(num_workers)]
        self.threads: list[threading.Thread] = []
        self.closed = False
        for i in range(num_workers):
            ctx = contextvars.copy_context()  # one copy each: a context runs in one thread at a time
            th = threading.Thread(
                target=ctx.run, args=(_worker_loop, i, num_workers, spec, self.queues[i], self.results, self.stop),
                name=f"{THREAD_NAME}-{i}", daemon=True)
            self.threads.append(th)
        for th in self.threads:
            th.start()

    def send(self, worker_id: int, task: tuple[int, int, Any]) -> None:
        self.queues[worker_id].put(task)

    def shutdown(self) -> None:
        """Tell every worker to stop (after at most its current sample); does not wait."""
        if self.closed:
            return
        self.closed = True
        self.stop.set()
        for q in self.queues:
            q.put(None)

    def join(self) -> None:
        """Shut down and wait for every worker thread to end (not from a worker thread itself)."""
        self.shutdown()
        me = threading.current_thread()
        for th in self.threads:
            if th is not me:
                th.join()

    async def ajoin(self) -> None:
        """Shut down and wait, without blocking the event loop and shielded from cancellation,
        until every worker thread has ended."""
        self.shutdown()
        with anyio.CancelScope(shield=True):
            await self.results.await_(lambda: self.results.alive == 0)
        for th in self.threads:
            th.join()  # each has reported its exit: this returns at once

