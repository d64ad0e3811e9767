"""BLAS threads that widen to every core while the machine has them to spare.

NOTE [Adaptive BLAS threads]: by default aiograd gives a BLAS kernel the cores
left after the event loop's thread (NOTE [BLAS threads] in executors.py): one
thread on a 2-core machine, so that the loop always finds a core and a kernel
never stalls waiting for a BLAS thread that another process preempted. On an
idle machine that leaves a core unused. So each executor job (an offloaded
backward kernel, an ``ag.offload`` call, a ``step_async``) may run *wide*:

- Once a period (``period_s``, 0.1 s), before a job, the executor thread
  reads the load: the machine's busy CPU time (``/proc/stat``) less this
  process's gives the other processes' load, the CPU clock of the thread that
  hands work to the executors (``pthread_getcpuclockid``: the event loop's)
  gives the loop's. If the two together used at most ``widen_below`` (0.5) of
  a core, the jobs of the next period run wide.
- A job that may run wide sets BLAS to every core (shared by the executors)
  when it starts and back to the narrow size when it ends: between jobs, and
  so for any kernel that starts on the loop meanwhile, BLAS is narrow.
- While a job runs wide, ``auto`` sends the backward nodes that are BLAS
  products (``BLAS_NODES`` in executors.py) to the executor instead of running
  them on the loop: OpenBLAS lets one threaded product run at a time, so a
  product started on the loop would wait for the executor's to end (a 0.15 ms
  product beside a 512x784x512 one: 0.15 ms median at one thread, 1.2 ms
  median and 8.5 ms p99 at two). That wait was the loop's lag.
- A size set from outside holds: an aiograd or BLAS variable, or a
  ``threadpool_limits`` block to another size, keeps jobs narrow while set.

Resizing goes through the BLAS libraries' own setters kept from one call to
the next (about 3 us a call; ``threadpool_limits`` costs 2-3 ms a call: it
lists the loaded libraries each time), and only when the size changes.

Why the load decides: the harm of a wide kernel is a thread more than the
cores can run at once. A kernel whose BLAS threads wait for one another then
stalls while one of them is preempted (a 512x784x512 product took 9.5 ms at
one thread and 64 ms at two beside a load of 5), and OpenBLAS's workers spin
for a while after a kernel (about 25 ms of CPU in the 50 ms after a
two-thread product), taking a core from whoever else wants it. A busy
neighbour shows in the next reading and the jobs stay narrow; at worst one
period runs wide beside it.

Off where the load cannot be read (no ``/proc/stat``: not Linux), where the
user chose a size (``set_num_threads``, AIOGRAD_NUM_THREADS, a BLAS
environment variable), and with AIOGRAD_ADAPTIVE_THREADS=0.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

__all__ = ["AdaptiveThreads", "MachineLoad", "ADAPTIVE_ENV_VAR"]

ADAPTIVE_ENV_VAR = "AIOGRAD_ADAPTIVE_THREADS"


def adaptive_enabled_by_env() -> bool:
    """False when AIOGRAD_ADAPTIVE_THREADS says 0/false/no/off."""
    return os.environ.get(ADAPTIVE_ENV_VAR, "").strip().lower() not in ("0", "false", "no", "off")


class MachineLoad:
    """The other processes' load and one thread's load, in cores, over the time since the last reading.

    Linux only (``/proc/stat``); ``available`` is False elsewhere, and then nothing widens.
    """

    def __init__(self, stat_path: str = "/proc/stat", clock: Callable[[], float] = time.perf_counter,
                 process_clock: Callable[[], float] = time.process_time,
                 thread_clock: Callable[[int], float] | None = None) -> None:
        """``thread_clock(ident)``: the CPU seconds of thread ``ident`` (default: its POSIX CPU clock)."""
        self.stat_path = stat_path
        self._now, self._process, self._thread_clock = clock, process_clock, thread_clock
        try:
            self._hz = float(os.sysconf("SC_CLK_TCK"))
        except (ValueError, OSError, AttributeError):
            self._hz = 100.0
        self.available = self._machine_busy() is not None and (
            thread_clock is not None or hasattr(time, "pthread_getcpuclockid"))
        self._last: tuple[float, float, float, float] | None = None  # wall, machine busy, process, thread
        self._thread: int | None = None
        self._clock: int | None = None

    def _machine_busy(self) -> float | None:
        """Seconds of CPU time the whole machine has spent busy since boot (every core)."""
        try:
            with open(self.stat_path, "rb") as f:
                fields = f.readline().split()
        except OSError:
            return None
        if not fields or fields[0] != b"cpu":
            return None
        ticks = [int(v) for v in fields[1:]]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
        guest = sum(ticks[8:10])  # counted in user/nice already
        return (sum(ticks) - idle - guest) / self._hz

    def _thread_cpu(self) -> float:
        ident = self._thread
        if ident is None:
            return 0.0
        if self._thread_clock is not None:
            return self._thread_clock(ident)
        clock = self._clock
        if clock is None:
            return 0.0
        try:
            return time.clock_gettime(clock)
        except OSError:  # the thread ended
            self._clock = None
            return 0.0

    def watch(self, ident: int) -> None:
        """Measure the load of the thread ``ident`` (the one handing work to the executors: the loop's)."""
        if ident == self._thread:
            return
        self._thread = ident
        self._clock = None
        if self._thread_clock is None:
            try:
                self._clock = time.pthread_getcpuclockid(ident)
            except (OSError, AttributeError):
                pass
        self._last = None  # a new thread: its clock is compared from the next reading on

    def read(self) -> tuple[float, float] | None:
        """(other processes' load, watched thread's load) in cores since the last call; None the first time."""
        busy = self._machine_busy()
        if busy is None:
            return None
        now = self._now()
        mine = self._process()
        thread = self._thread_cpu()
        last, self._last = self._last, (now, busy, mine, thread)
        if last is None or now - last[0] <= 0:
            return None
        dt = now - last[0]
        other = max(0.0, (busy - last[1]) - (mine - last[2])) / dt
        loop = max(0.0, thread - last[3]) / dt
        return other, loop


class AdaptiveThreads:
    """Sizes BLAS narrow or wide before each executor job (NOTE [Adaptive BLAS threads]).

    ``set_threads(n)`` applies a size; ``read()`` returns (other load, loop load) in
    cores over the last period, or None when unknown (then the size stays narrow);
    ``untouched()`` says that nobody else sized BLAS meanwhile (a limit set from outside
    holds while it is set: no job widens past it). All three are injected so the
    switching can be driven by hand in tests.
    """

    period_s = 0.1  # how often the load is read (on the executor thread, before a job)
    widen_below = 0.5  # cores used by other processes and the loop under which kernels go wide

    def __init__(self, set_threads: Callable[[int], None], read: Callable[[], tuple[float, float] | None],
                 clock: Callable[[], float] = time.perf_counter,
                 untouched: Callable[[], bool] = lambda: True) -> None:
        """``untouched()``: no size was set from outside since (a BLAS variable, a threadpoolctl limit)."""
        self._set_threads = set_threads
        self._untouched = untouched
        self._read = read
        self._clock = clock
        self.narrow = 1
        self.wide = 1
        self.active = False  # adaptive sizing applies (default sizes, enabled, wide > narrow)
        self.current: int | None = None  # the size last applied by this object
        self._next = 0.0
        self.switches = 0
        self.widen = False  # the last reading allows wide jobs
        self.load: tuple[float, float] | None = None  # the last reading
        self._lock = threading.Lock()

    def configure(self, active: bool, narrow: int, wide: int) -> None:
        """Set the two sizes (the caller has just applied ``narrow``) and whether to switch between them."""
        with self._lock:
            self.narrow, self.wide = narrow, max(narrow, wide)
            self.active = active and self.wide > self.narrow
            self.current = narrow
            self.widen = False
            self.load = None
            self._next = 0.0

    def before_job(self) -> None:
        """Called on an executor thread before each job: re-read the load once a period; widen if it allows."""
        if not self.active:
            return
        now = self._clock()
        if now >= self._next:
            with self._lock:
                if now >= self._next and self.active:
                    self._next = now + self.period_s
                    self.load = self._read()
                    self.widen = self.decide(self.load) == self.wide
        if self.widen and self.current != self.wide and self._untouched():
            self._apply(self.wide)

    def after_job(self) -> None:
        """Called on an executor thread after each job: back to narrow (NOTE [Adaptive BLAS threads])."""
        if self.current != self.narrow and self.active:
            self._apply(self.narrow)

    def is_wide(self) -> bool:
        """Whether an executor job runs with wide BLAS now (the loop's BLAS calls would wait for it)."""
        return self.current != self.narrow

    def decide(self, load: tuple[float, float] | None) -> int:
        """The size for a reading: wide only when other processes and the loop left the cores free."""
        if load is None:
            return self.narrow
        other, loop = load
        return self.wide if other + loop <= self.widen_below else self.narrow

    def _apply(self, n: int) -> None:
        with self._lock:
            if n != self.current:
                self._set_threads(n)
                self.current = n
                self.switches += 1

    def stats(self) -> dict[str, Any]:
        return {"active": self.active, "narrow": self.narrow, "wide": self.wide, "current": self.current,
                "switches": self.switches, "load": self.load}
