"""Products offloaded while a busy neighbour comes and goes: how long the worst one takes.

A process offloads one float32 product (512x784 @ 784x512, about 3 ms at one
BLAS thread) after another for ``SECONDS`` (``ag.offload``, or
``asyncio.to_thread`` for the peers) while it starts a busy process (``yes >
/dev/null``) and stops it again every ``TOGGLE`` seconds. It reports the
products' p50, p99 and maximum wall time. Each row is its own process in the
default environment (every BLAS and aiograd thread variable removed) plus the
row's own.

What it shows: a product whose BLAS threads wait for one another stalls when
a neighbour takes one of their cores. aiograd's jobs run wide (every core)
only while the last reading of the machine's load left cores free (NOTE
[Adaptive BLAS threads]), so a neighbour that starts meanwhile catches a wide
product; how long that product then takes depends on how far below the
process the BLAS workers run (NOTE [BLAS workers yield]) and the executor's
jobs (NOTE [Jobs run below the loop]): the rows compare the default (both
10 nice levels down while the machine is quiet), the workers left at the
process's priority, the jobs left on the executor thread at the process's
priority, and no wide jobs at all.
torch (its default threads) and numpy (its default BLAS threads, every core)
run the same products in ``asyncio.to_thread``.

Standalone: ``python benchmarks/neighbour.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import _harness as H  # noqa: E402
from benchmarks.server import busy_process  # noqa: E402

BENCH = "neighbour"
UNIT = "ms max"
SHAPE = (512, 784, 512)
SECONDS, QUICK_SECONDS = 8.0, 3.0
TOGGLE = 0.25  # seconds between starting and stopping the busy process
WARMUP = 30  # products before timing (the workers are found and lowered during these)

ROWS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("aiograd (default)", "aiograd", {}),
    ("aiograd, BLAS workers not lowered", "aiograd", {"AIOGRAD_BLAS_WORKER_NICE": "0"}),
    ("aiograd, jobs not lowered", "aiograd", {"AIOGRAD_EXECUTOR_NICE": "0"}),
    ("aiograd, adaptive off", "aiograd", {"AIOGRAD_ADAPTIVE_THREADS": "0"}),
    ("torch (default threads)", "torch", {}),
    ("numpy (default BLAS threads)", "numpy", {}),
)


# ---------------------------------------------------------------- the measured process


def _product(engine: str) -> Any:
    """An async function that runs one product off the loop, for ``engine``."""
    import numpy as np

    rng = np.random.default_rng(0)
    m, k, n = SHAPE
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    if engine == "aiograd":
        import aiograd as ag

        async def run() -> None:
            await ag.offload(np.matmul, a, b)
        return run
    if engine == "torch":
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        async def run_torch() -> None:
            await asyncio.to_thread(torch.matmul, ta, tb)
        return run_torch

    async def run_numpy() -> None:
        await asyncio.to_thread(np.matmul, a, b)
    return run_numpy


async def _measure(engine: str, seconds: float) -> list[float]:
    """Product wall times (s) while the neighbour toggles every TOGGLE seconds."""
    run = _product(engine)
    for _ in range(WARMUP):
        await run()
    times: list[float] = []
    neighbour: subprocess.Popen | None = None
    switched = time.perf_counter()
    end = switched + seconds
    try:
        while time.perf_counter() < end:
            now = time.perf_counter()
            if now - switched >= TOGGLE:
                switched = now
                if neighbour is None:
                    neighbour = busy_process()
                else:
                    neighbour.kill()
                    neighbour.wait()
                    neighbour = None
            t0 = time.perf_counter()
            await run()
            times.append(time.perf_counter() - t0)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return times


def _child(engine: str, seconds: float) -> None:
    times = asyncio.run(_measure(engine, seconds))
    print("\x1e" + json.dumps(times))


# ---------------------------------------------------------------- the driver


def measure_row(case: str, engine: str, module: str, extra: dict[str, str], seconds: float) -> dict[str, Any]:
    """One row, measured in its own process."""
    if H.optional_import(module) is None:
        return H.missing(BENCH, case, engine, UNIT, module)
    try:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.neighbour", "--child", module, str(seconds)],
                              capture_output=True, text=True, timeout=seconds * 4 + 120,
                              env=H.default_environment(extra))
        if proc.returncode != 0 or "\x1e" not in proc.stdout:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the measured process failed: {last}")
        ms = [t * 1e3 for t in json.loads(proc.stdout.rsplit("\x1e", 1)[1])]
    except Exception as exc:
        return H.failed(BENCH, case, engine, UNIT, exc)
    return H.row(BENCH, case, engine, max(ms), UNIT, "", p50_ms=H.percentile(ms, 50),
                 p99_ms=H.percentile(ms, 99), products=len(ms))


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Every row once (``repeat`` is not used: one long window per row), print the table."""
    seconds = QUICK_SECONDS if quick else SECONDS
    case = f"{'x'.join(map(str, SHAPE))} float32, neighbour every {TOGGLE} s"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = [measure_row(case, engine, module, extra, seconds) for engine, module, extra in ROWS]
    H.print_table(f"neighbour: offloaded products while a busy process starts and stops ({seconds:.0f} s a row; "
                  f"1-min load {load if load is None else round(load, 2)} at the start)", rows,
                  baselines=("aiograd, adaptive off",), extra_cols=("p50_ms", "p99_ms", "products"))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point (``--child ENGINE SECONDS`` is the measured process)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"{QUICK_SECONDS:.0f} s a row instead of {SECONDS:.0f}")
    p.add_argument("--child", nargs=2, metavar=("ENGINE", "SECONDS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child[0], float(args.child[1]))
        return
    run(quick=args.quick)


if __name__ == "__main__":
    main()
