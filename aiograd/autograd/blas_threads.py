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
- And a job does not widen while the loop runs such a node (NOTE [Loop
  products hold BLAS narrow]).
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
neighbour shows in the next reading and the jobs stay narrow; before that, a
wide job whose BLAS worker waited for a core ends the wide period at once
(NOTE [A starved worker ends the wide period]).

The BLAS library's workers run below the process's priority while they
help a wide job (NOTE [BLAS workers yield]), so that whoever else wants a
core they use gets the larger share of it.

Off where the load cannot be read (no ``/proc/stat``: not Linux), where the
user chose a size (``set_num_threads``, AIOGRAD_NUM_THREADS, a BLAS
environment variable), and with AIOGRAD_ADAPTIVE_THREADS=0.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable

from .background import ask_long_slice, nice_by_env, open_schedstat, run_delay

__all__ = ["AdaptiveThreads", "BlasWorkers", "MachineLoad", "ADAPTIVE_ENV_VAR", "WORKER_NICE_ENV_VAR"]

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


WORKER_NICE_ENV_VAR = "AIOGRAD_BLAS_WORKER_NICE"


def worker_nice_by_env() -> int:
    """How far below the process the BLAS workers run (NOTE [BLAS workers yield]): 10, or
    AIOGRAD_BLAS_WORKER_NICE (0 leaves them at the process's priority)."""
    return nice_by_env(WORKER_NICE_ENV_VAR, BlasWorkers.nice_step)


def _thread_cpu_of(tid: int) -> float:
    """CPU seconds of thread ``tid`` of this process (Linux: the per-thread CPU clock of a kernel thread id,
    the clock ``pthread_getcpuclockid`` returns for a pthread, built from the id as glibc builds it)."""
    return time.clock_gettime((~tid << 3) | 6)


def _foreign_threads() -> list[int]:
    """Kernel ids of this process's threads that Python did not start (a native library's pools)."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []
    known = {t.native_id for t in threading.enumerate()}
    return [t for t in tids if t not in known]


class BlasWorkers:
    """Finds the BLAS library's worker threads during a wide job and lowers their priority;
    their run delay then tells a wide job that they starved (NOTE [A starved worker ends the
    wide period]).

    NOTE [BLAS workers yield]: a wide job's kernel runs on the executor thread and on the
    BLAS library's own workers. The workers only get work while jobs run wide, that is while
    the machine had cores to spare (NOTE [Adaptive BLAS threads]); they should take spare
    cores only. At the default priority, a request that wakes the loop during a wide kernel
    (or during the spin OpenBLAS's workers keep up after one) shares a core with a worker
    for a scheduler slice: that was the quiet server's /health tail (issue 19). So the
    workers run ``nice_step`` above the process's niceness: the loop gets the larger share
    of a core it shares with one, and an idle machine still gives them its cores. The
    thread that runs the narrow kernels and the first share of a wide one is lowered as
    far only while the machine is quiet (NOTE [Jobs run below the loop]), so a busy
    machine (where jobs stay narrow) sees no change. Lowered, a worker also asks for a long
    time slice (NOTE [A long slice lets the loop in]).

    How far down is a trade between two measurements (issue 19, 2-core VM; the server
    benchmark's quiet /health p99 pooled over 8 rounds, and ``benchmarks/neighbour.py``'s
    longest product while a busy process starts and stops every 0.25 s):

    - nice 10 (the default): /health p99 5.1 ms, the loop waiting for a core 10% of the
      time; the longest product 157-174 ms, since a worker 10 levels down gets about a
      tenth of a core that a newly started process shares with it, and the kernel waits
      for its share;
    - nice 3: 5.4 ms; 54-56 ms. Nice 0 (not lowered): 6.2 ms; 37-48 ms. With the adaptive
      sizing off (no wide job): 13-30 ms;
    - Linux's SCHED_IDLE policy (measured, not offered): any other thread that
      wakes takes the worker's core at once, and the scheduler places a waking thread on
      a core that runs only such threads as on an idle one. The loop waited 2% of the
      time; over 11 runs beside the default, /health p99 was 2.1-3.5 ms in 8 and 5.8-7.3
      in 3 (median 3.1 ms against 5.1), for 10% less /train throughput (the median of the
      11 ratios: the loop now preempts the worker mid-kernel, and the executor waits for
      it). But a worker in that policy gets almost nothing beside a busy process: one wide
      product took 3.5-5.5 s when a neighbour started, and that would last as long as the
      neighbour does. Not safe on a machine anybody shares.

    The tail is not the loop's own work: its run delay (``/proc/<tid>/schedstat``) fell
    from 10% to 2% of the time with the idle policy and nothing else changed. Measured and
    not kept (same benchmark): OpenBLAS's ``OPENBLAS_THREAD_TIMEOUT``, read only when
    OpenBLAS loads (workers that sleep at once: a tail 0.7-1.2 ms lower for 6-12% less
    throughput, as each kernel must wake them; after 2^16-2^22 cycles: 7-22% less and no
    better tail); a shorter or longer EEVDF slice (``sched_setattr``) for the loop, the
    executor or the workers alone (no change beyond the noise, or a worse tail: the loop,
    at the executor's priority, could not preempt it; with the executor's jobs lowered
    too, a long slice for the lowered threads is what lets the loop in); the products of
    ``linear`` split in row bands between the executor and a helper thread of aiograd's,
    in place of BLAS workers (no spin, but 9-16% less throughput and no better tail: the
    helper woke too late to take its share); and narrow jobs whenever the loop thread was
    runnable, or for a period after one in which the loop waited for a core more than 3%
    or 5% of the time (about 10% less throughput, no better tail).

    Which threads are the workers: those Python did not start whose CPU clock advanced by
    at least ``share`` of a wide job's time during it. Checked around one wide job a
    period until found (a small product runs on one thread and shows none); once per
    process (a forked child starts looking again: its workers are new threads).
    Linux only; a thread this cannot renice is left as it is.
    """

    nice_step = 10
    share = 0.25
    min_job_s = 0.0005  # shorter jobs cannot show a worker's share above clock noise

    def __init__(self, nice_step: int | None = None, threads: Callable[[], list[int]] = _foreign_threads,
                 cpu_of: Callable[[int], float] = _thread_cpu_of,
                 renice: Callable[[int, int], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 delay_of: Callable[[int], float] | None = None) -> None:
        """``nice_step``: how many nice levels down (0: the workers are found, not lowered);
        ``renice(tid, step)`` lowers a thread, ``delay_of(tid)`` reads its run delay (injected by tests)."""
        if nice_step is not None:
            self.nice_step = nice_step
        self._threads, self._cpu_of, self._clock = threads, cpu_of, clock
        self._renice = renice or self._setpriority
        self._lengthen: Callable[[int], Any] = ask_long_slice if renice is None else (lambda tid: None)
        self._delay_of = delay_of or self._schedstat_delay
        self._delay_files: dict[int, int] = {}  # tid -> an open descriptor of its schedstat
        self.found: list[int] = []  # the workers (NOTE [A starved worker ends the wide period])
        self.lowered: list[int] = []
        self.done = not sys.platform.startswith("linux")
        self._start: tuple[float, dict[int, float]] | None = None

    @staticmethod
    def _setpriority(tid: int, step: int) -> None:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, 0) + step)

    def _schedstat_delay(self, tid: int) -> float:
        """Seconds thread ``tid`` of this process has spent waiting for a core, through its schedstat
        file, kept open (read twice a wide job)."""
        fd = self._delay_files.get(tid)
        if fd is None:
            fd = self._delay_files[tid] = open_schedstat(tid)
        return run_delay(fd)

    def run_delay(self) -> float | None:
        """Seconds the workers found have waited for a core in all (None: none found, or unreadable)."""
        if not self.found:
            return None
        try:
            return sum(self._delay_of(tid) for tid in self.found)
        except (OSError, ValueError, IndexError):  # the thread ended, or no schedstat here
            return None

    def reset(self) -> None:
        """In a forked child: the workers are new threads, not yet found (and the open schedstat
        files are the parent's threads')."""
        for fd in self._delay_files.values():
            os.close(fd)
        self._delay_files = {}
        self.found = []
        self.lowered = []
        self.done = not sys.platform.startswith("linux")
        self._start = None

    def watch(self) -> None:
        """Before a wide job: note the foreign threads' CPU clocks."""
        clocks = {}
        for tid in self._threads():
            try:
                clocks[tid] = self._cpu_of(tid)
            except OSError:  # the thread ended
                pass
        self._start = (self._clock(), clocks)

    def check(self) -> None:
        """After that job: lower the threads that worked during it, if the job was long enough to tell."""
        start, self._start = self._start, None
        if start is None:
            return
        t0, clocks = start
        elapsed = self._clock() - t0
        if elapsed < self.min_job_s:
            return
        workers = []
        for tid, c0 in clocks.items():
            try:
                if self._cpu_of(tid) - c0 >= self.share * elapsed:
                    workers.append(tid)
            except OSError:
                pass
        if not workers:
            return
        self.found = workers
        for tid in workers if self.nice_step else ():
            try:
                self._renice(tid, self.nice_step)
            except OSError:  # not permitted, or the thread ended
                continue
            self.lowered.append(tid)
            self._lengthen(tid)  # NOTE [A long slice lets the loop in]
        self.done = True


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
    starved_share = 0.5  # a worker that waited this share of a wide job for a core ends the wide period
    starved_min_s = 0.001  # shorter wide jobs are not judged (a wait of a few scheduler ticks is noise)
    quiet_below = 0.5  # cores other processes may use for the machine to count as quiet (NOTE [Jobs run below the loop])
    quiet_for_s = 1.0  # how long the machine must have been quiet before jobs run below the loop

    def __init__(self, set_threads: Callable[[int], None], read: Callable[[], tuple[float, float] | None],
                 clock: Callable[[], float] = time.perf_counter,
                 untouched: Callable[[], bool] = lambda: True, workers: BlasWorkers | None = None) -> None:
        """``untouched()``: no size was set from outside since (a BLAS variable, a threadpoolctl limit);
        ``workers``: lowers the BLAS workers' priority (NOTE [BLAS workers yield]), None: left alone."""
        self.workers = workers
        self._look = False  # this wide job is the period's look for the workers
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
        self.held = 0  # jobs kept narrow by a product on the loop (NOTE [Loop products hold BLAS narrow])
        self.loop_holds = 0  # BLAS nodes the loop runs now (NOTE [Loop products hold BLAS narrow])
        self.narrow_until = 0.0  # when the loop's holds end at the latest, on ``clock``
        self.widen = False  # the last reading allows wide jobs
        self.load: tuple[float, float] | None = None  # the last reading
        self.quiet = False  # other processes idle for ``quiet_for_s`` (NOTE [Jobs run below the loop])
        self._quiet_from: float | None = None  # when the readings began to find them idle
        self.starved = 0  # wide periods ended early (NOTE [A starved worker ends the wide period])
        self._job = threading.local()  # ``start``: (clock, workers' run delay) when this thread's job widened
        self._lock = threading.Lock()

    def configure(self, active: bool, narrow: int, wide: int) -> None:
        """Set the two sizes (the caller has just applied ``narrow``) and whether to switch between them."""
        with self._lock:
            self.narrow, self.wide = narrow, max(narrow, wide)
            self.active = active and self.wide > self.narrow
            self.current = narrow
            self.widen = False
            self.quiet = False
            self._quiet_from = None
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
                    self._note_quiet(now)
                    # only where narrow jobs use no worker at all (NOTE [BLAS workers yield])
                    self._look = self.workers is not None and not self.workers.done and self.narrow == 1
        if self.widen and self.current != self.wide and self._untouched() and self._widen():
            workers = self.workers
            if self._look:
                self._look = False
                assert workers is not None
                workers.watch()
            elif workers is not None and workers.found:
                delay = workers.run_delay()
                self._job.start = None if delay is None else (self._clock(), delay)

    def _note_quiet(self, now: float) -> None:
        """After a reading (under the lock): is the machine quiet, and since how long?"""
        if self.load is None or self.load[0] > self.quiet_below:
            self._quiet_from = None
        elif self._quiet_from is None:
            self._quiet_from = now
        self.quiet = self._quiet_from is not None and now - self._quiet_from >= self.quiet_for_s

    def unsettle(self) -> None:
        """A job below the loop starved (NOTE [Jobs run below the loop]): the jobs run at the process's
        priority until the machine has been quiet for ``quiet_for_s`` again, counted from now."""
        with self._lock:
            self.quiet = False
            self._quiet_from = self._clock()

    def after_job(self) -> None:
        """Called on an executor thread after each job: back to narrow (NOTE [Adaptive BLAS threads]),
        and the wide period ends if a worker starved (NOTE [A starved worker ends the wide period])."""
        if not self.active:
            return
        start = getattr(self._job, "start", None)  # set by this thread's job, if it widened
        if start is not None:
            self._job.start = None
        if self.current != self.narrow:
            self._apply(self.narrow)
            if self.workers is not None:
                self.workers.check()
                if start is not None:
                    self._judge(*start)

    # NOTE [A starved worker ends the wide period]: jobs run wide for a period after a
    # reading that found the cores free, and a process that starts meanwhile shares a core
    # with a BLAS worker (lowered: it gets a small share, NOTE [BLAS workers yield]). A wide
    # product waits for its slowest thread, so each wide job until the next reading
    # stalls. The worker's own run delay (time runnable but not on a core, Linux's
    # schedstat) says so at once: when the workers waited ``starved_share`` or more of a
    # wide job, the jobs after it run narrow, and the next reading of the load comes a
    # full period later, measured from now, so that it sees the newcomer and not the idle
    # time before it. The job that caught the newcomer is not saved, only the ones after
    # it: with a busy process starting and stopping every 0.25 s (``benchmarks/
    # neighbour.py``, 2-core VM, two runs against the tree before), the 99th percentile
    # of products of about 3 ms fell from 62-129 ms to 17-20 ms (adaptive sizing off, or
    # torch: 10-11 ms), and the longest stayed at 157-174 ms. On a quiet machine the loop,
    # when it wakes, takes a worker's core for a moment, a few percent of a job: in the
    # server benchmark the rule ended 9 periods early in a server's life (about 2,000
    # wide jobs), and the quiet /health p99 and throughput were those of the tree without
    # it (4.77 against 4.86 ms, 74.4 against 73.1 req/s; 6 rounds).
    def _judge(self, t0: float, delay0: float) -> None:
        """After a wide job that started at ``t0`` with the workers' run delay at ``delay0``."""
        assert self.workers is not None
        elapsed = self._clock() - t0
        if elapsed < self.starved_min_s:
            return
        delay = self.workers.run_delay()
        if delay is None or delay - delay0 < self.starved_share * elapsed:
            return
        with self._lock:
            self.widen = False
            self.starved += 1
            self._next = self._clock() + self.period_s
            self._read()  # the next reading measures from now

    def is_wide(self) -> bool:
        """Whether an executor job runs with wide BLAS now (the loop's BLAS calls would wait for it)."""
        return self.current != self.narrow

    # NOTE [Loop products hold BLAS narrow]: the BLAS size is one setting for the whole
    # process, and OpenBLAS runs one threaded product at a time. So a product the loop
    # runs inline while an executor job runs wide waits for that job's product, and so
    # does every coroutine behind it: ``auto`` sends a BLAS node to the executor while a
    # job is wide. That check alone leaves a race: the loop sees BLAS narrow, starts the
    # node, and a job starting meanwhile widens BLAS under the node's next product (the
    # server benchmark caught the loop stalled 15 ms and more in the second product of a
    # linear layer's backward, beside the executor's forward of the next request; its
    # /health probes waited up to 179 ms). So
    # before it runs a BLAS node inline, the loop *holds* BLAS narrow until the node has
    # run (``release_hold``), and a job that would widen meanwhile runs narrow. The two
    # sides write their own mark before they read the other's (the loop: the hold, then
    # ``current``; the executor: ``current``, then the hold), so one of them always sees
    # the other: either the loop sees the job wide and hands the node over, or the job
    # sees the hold and stays narrow. A hold also ends on its own after twice the node's
    # predicted time (at least ``OffloadPolicy.hold_min_s``, longer than a turn the
    # engine may give other coroutines before the node runs): a node that raises, and
    # so never releases, keeps jobs narrow for that long at most. Released when the node
    # ends, a hold keeps narrow only the jobs that start during the node's own run (the
    # time bound alone, 2 ms a node, measured the same in the server benchmark: the
    # /health p99 and the throughput against torch's moved less than between runs).
    def hold_narrow(self, seconds: float) -> bool:
        """Called on the loop before it runs a BLAS node inline: executor jobs that start before
        ``release_hold``, or in the next ``seconds``, stay narrow. False (and no hold) when a job already
        runs wide: then the node goes to the executor."""
        now = self._clock()
        if now >= self.narrow_until:
            self.loop_holds = 0  # holds past their time are over (a node that raised never released its own)
        if now + seconds > self.narrow_until:
            self.narrow_until = now + seconds
        self.loop_holds += 1  # first the hold...
        if self.current == self.narrow:  # ...then the look at the executor's size
            return True
        self.release_hold()
        return False

    def release_hold(self) -> None:
        """The loop's BLAS node has run: its hold ends (the last one lets jobs widen again)."""
        if self.loop_holds > 0:
            self.loop_holds -= 1
        if not self.loop_holds:
            self.narrow_until = 0.0

    def _widen(self) -> bool:
        """Widen BLAS for the job about to start, unless the loop holds it narrow; whether it widened."""
        with self._lock:
            if self.current == self.wide:
                return True
            self.current = self.wide  # first the mark the loop reads...
            if self.loop_holds and self._clock() < self.narrow_until:  # ...then the loop's hold
                self.current = self.narrow
                self.held += 1
                return False
            self._set_threads(self.wide)
            self.switches += 1
            return True

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
                "switches": self.switches, "held": self.held, "starved": self.starved, "load": self.load}
