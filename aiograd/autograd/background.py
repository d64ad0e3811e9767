"""A device executor's jobs run below the event loop's priority while the machine is quiet.

NOTE [Jobs run below the loop]: an executor thread computes for as long as
jobs are queued (a server's next forward, the next request's backward). At
the process's priority, it shares a core with the loop whenever every core
is taken (by our own wide jobs' BLAS workers on an idle machine), and Linux's
scheduler then lets it finish its time slice before the loop, woken by a
request, gets the core: the loop waits for the next scheduler tick (4 ms at
the common HZ=250). That was most of the quiet server's /health tail (issue
19; ``sched_switch`` traces of ``benchmarks/server.py``: the loop runnable
beside the executor thread for 3-5 ms, switched in at a tick, while the
other core ran a lowered BLAS worker). So while the machine is quiet, each
job runs on the executor's *background thread*, ``nice_step`` levels below
the process (the BLAS workers' step, NOTE [BLAS workers yield]), with a long
time slice (NOTE [A long slice lets the loop in]): the loop, and anybody
else at the process's priority, takes a shared core as soon as it wakes, and
the job gets every cycle nobody else wants.

Only while the machine is quiet: a thread that far down gets a tenth of the
core it shares with a busy process (a server beside two busy processes on 2
cores trained at 5 req/s with its jobs lowered, against 57 without). So jobs
run below the loop only after the adaptive sizing's readings of the load
(NOTE [Adaptive BLAS threads]) have found other processes using at most
``quiet_below`` of a core for ``quiet_for_s`` (1 s): beside a busy process,
and where a neighbour comes and goes, they stay on the executor thread at the
process's priority. A neighbour that arrives after a quiet second catches
one job below it; the background thread measures its own run delay (time
runnable but not on a core, Linux's schedstat) during each job, and a job
that waited ``starved_share`` of its time or more for a core *starved*: the
jobs after it run on the executor thread until the machine has been quiet
for ``quiet_for_s`` again (``AdaptiveThreads.unsettle``).

The executor thread waits (asleep, on a lock) while its background thread
runs the job, so jobs stay one at a time and in the executor's order, as if
the executor thread ran them itself, for two thread wake-ups a job (about
40 us: ``await ag.offload(f)`` of an empty ``f`` on the 2-core VM).

Linux only (elsewhere a thread's priority is not its own), and only where the
adaptive sizing reads the load (off with AIOGRAD_ADAPTIVE_THREADS=0 or a
chosen BLAS size); off with AIOGRAD_EXECUTOR_NICE=0.
"""

from __future__ import annotations

import os
import sys
import threading
from time import perf_counter
from typing import Any, Callable, TypeVar, cast

__all__ = ["BackgroundThread", "EXECUTOR_NICE_ENV_VAR", "executor_nice_by_env", "nice_by_env", "ask_long_slice",
           "open_schedstat", "run_delay"]

T = TypeVar("T")

EXECUTOR_NICE_ENV_VAR = "AIOGRAD_EXECUTOR_NICE"


def nice_by_env(variable: str, default: int) -> int:
    """How many nice levels below the process a thread runs: ``default``, or the environment
    ``variable`` (an integer from 0 to 19; 0: not lowered)."""
    env = os.environ.get(variable, "").strip()
    if not env:
        return default
    if not env.isdigit() or int(env) > 19:
        raise ValueError(f"{variable} must be an integer from 0 to 19, got {env!r}")
    return int(env)


def executor_nice_by_env(default: int) -> int:
    """How far below the process an executor's jobs run (NOTE [Jobs run below the loop]): ``default``,
    or AIOGRAD_EXECUTOR_NICE (0: on the executor thread itself, at the process's priority)."""
    return nice_by_env(EXECUTOR_NICE_ENV_VAR, default)


# NOTE [A long slice lets the loop in]: lowering a thread is not enough for the loop to get
# its core at once. Linux's EEVDF scheduler lets the thread on a core finish its time slice
# when another wakes (the loop waited for the next tick beside a lowered thread), unless the
# woken thread asks for a shorter slice than the running one. So the background thread and
# the BLAS workers ask for ``LONG_SLICE_NS`` (the default slice is 0.75-3 ms): the loop, at
# the default, is then the shorter, and takes the core as soon as it wakes. Set with
# ``sched_setattr``, the only call that sets a fair thread's slice (Linux 6.12 and later;
# older kernels ignore the request; elsewhere nothing is asked).
LONG_SLICE_NS = 20_000_000
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "arm64": 274}.get(os.uname().machine if hasattr(os, "uname") else "")


def ask_long_slice(tid: int) -> bool:
    """Ask Linux for a long time slice for thread ``tid``, keeping its policy (the default one) and
    niceness (NOTE [A long slice lets the loop in]); whether the kernel took the request."""
    if _SCHED_SETATTR is None or not sys.platform.startswith("linux"):
        return False
    import ctypes  # only once a thread is lowered: ctypes takes about a millisecond to import
    import struct

    try:
        nice = os.getpriority(os.PRIO_PROCESS, tid)
        # struct sched_attr, first version: size, policy (SCHED_OTHER), flags, nice, priority, runtime...
        attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, 0, 0, nice, 0, LONG_SLICE_NS, 0, 0), 48)
        return int(ctypes.CDLL(None, use_errno=True).syscall(_SCHED_SETATTR, tid, attr, 0)) == 0
    except (OSError, AttributeError):
        return False


def open_schedstat(tid: int) -> int:
    """A descriptor of Linux's ``/proc/self/task/<tid>/schedstat`` for ``run_delay``: kept open, a read
    is about 2 us, an open and read about 19."""
    return os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)


def run_delay(fd: int) -> float:
    """Seconds the thread of schedstat descriptor ``fd`` has spent runnable but waiting for a core."""
    return int(os.pread(fd, 64, 0).split()[1]) / 1e9


def _own_run_delay() -> Callable[[], float]:
    """A reader of the calling thread's run delay; a reader of 0.0 where there is none."""
    try:
        fd = open_schedstat(threading.get_native_id())
    except OSError:
        return lambda: 0.0

    def read() -> float:
        try:
            return run_delay(fd)
        except (OSError, ValueError, IndexError):
            return 0.0
    return read


class BackgroundThread:
    """Runs an executor's jobs, one at a time, on a thread below the process's priority
    (NOTE [Jobs run below the loop]).

    ``run(fn, *args)`` is called on the executor thread, which waits for the result;
    ``last_starved`` then says whether the job waited most of its time for a core.
    ``wanted()`` is False where the thread cannot run lower (not Linux, lowering refused,
    or ``nice_step`` 0). The thread starts with the first job and lives until ``stop``.
    """

    starved_share = 0.75  # a job that waited this share of its time for a core starved
    starved_min_s = 0.001  # shorter jobs are not judged (a scheduler tick's wait is noise)

    def __init__(self, name: str, nice_step: int, initializer: Callable[[], None] = lambda: None,
                 clock: Callable[[], float] = perf_counter) -> None:
        """``name``: the thread's; ``nice_step``: how far below the process it runs (0: never used);
        ``initializer``: called on the thread before its first job (marks it as an executor thread)."""
        self.name = name
        self.nice_step = nice_step if sys.platform.startswith("linux") else 0
        self._initializer = initializer
        self._clock = clock
        self._go = threading.Lock()  # released by ``run``: a job is ready
        self._done = threading.Lock()  # released by the thread: the job's result is ready
        self._go.acquire()
        self._done.acquire()
        self._job: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self._result: tuple[bool, Any] = (True, None)
        self._elapsed = 0.0  # the last job's wall time and run delay, measured on the thread
        self._delay = 0.0
        self._thread: threading.Thread | None = None
        self.lowered = False  # the thread runs below the process (known once it started)
        self.last_starved = False  # the last job waited ``starved_share`` of its time or more for a core
        self.starved = 0  # jobs that starved
        self.jobs = 0  # jobs run here

    @property
    def thread(self) -> threading.Thread | None:
        """The thread jobs run on (None before the first job and after ``stop``)."""
        return self._thread

    def wanted(self) -> bool:
        """Whether jobs can run below the loop here: enabled, and the thread (once started) lowered."""
        return bool(self.nice_step) and (self._thread is None or self.lowered)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the background thread; the calling executor thread waits for it.
        Its exception, if any, is raised here."""
        if self._thread is None:
            self._start()
        self._job = (fn, args)
        self._go.release()
        self._done.acquire()
        ok, value = self._result
        self._result = (True, None)  # drop the reference: the result belongs to the caller now
        self.jobs += 1
        self.last_starved = self._elapsed >= self.starved_min_s and self._delay >= self.starved_share * self._elapsed
        self.starved += self.last_starved
        if ok:
            return cast(T, value)
        raise value

    def _start(self) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), name=self.name, daemon=True)
        self._thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        self._initializer()
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + self.nice_step)
            self.lowered = True
        except (OSError, AttributeError):  # not permitted here: ``wanted`` turns it down from now on
            self.lowered = False
        if self.lowered:
            ask_long_slice(tid)
        delay_of = _own_run_delay()
        ready.set()
        while True:
            self._go.acquire()
            job, self._job = self._job, None
            if job is None:  # ``stop``
                self._done.release()
                return
            fn, args = job
            t0, d0 = self._clock(), delay_of()
            try:
                self._result = (True, fn(*args))
            except BaseException as e:  # handed to the executor thread, which raises it
                self._result = (False, e)
            self._elapsed, self._delay = self._clock() - t0, delay_of() - d0
            self._done.release()

    def stop(self) -> None:
        """End the thread (after the job it runs, if any); a later job starts a new one."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._job = None
        self._go.release()
        self._done.acquire()
        thread.join()
