"""Entry point: ``python -m benchmarks [names...] [--repeat N] [--quick] [--save] [--blas-threads N]``."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import json
import os
import platform
import sys
import time
from typing import Any, Iterator

from benchmarks import BENCHMARKS
from benchmarks import _harness as H

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description="aiograd benchmark suite")
    p.add_argument("names", nargs="*", metavar="name", help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per measurement, median reported (min 5)")
    p.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run under a minute")
    p.add_argument("--save", action="store_true", help="write results as JSON to benchmarks/results/")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="limit numpy's BLAS threads (needs threadpoolctl); default: aiograd's setting "
                        "(the cores minus one), or the BLAS environment variables if set")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    return args


@contextlib.contextmanager
def blas_limit(n: int | None) -> Iterator[None]:
    """Apply --blas-threads for the whole run (threadpoolctl), or do nothing."""
    if n is None:
        yield
        return
    try:
        with H.blas_threads(n):
            yield
    except ImportError as exc:
        sys.exit(f"--blas-threads: {exc}")


def environment() -> dict[str, Any]:
    """Versions, CPU count and load: what a reader needs to trust (or distrust) the numbers."""
    env: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(),
                           "cpus": os.cpu_count(), "loadavg_1m": _loadavg()}
    for mod in ("numpy", "aiograd", "autograd", "torch", "uvloop"):
        m = H.import_aiograd() if mod == "aiograd" else H.optional_import(mod)
        env[mod] = getattr(m, "__version__", "installed") if m is not None else "not available"
    tpc = H.optional_import("threadpoolctl")
    if tpc is not None:
        env["blas"] = [f"{i.get('internal_api')} {i.get('num_threads')} threads"
                       for i in tpc.threadpool_info() if i.get("user_api") == "blas"]
    return env


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def save(results: dict[str, Any]) -> str:
    """Write the results JSON under benchmarks/results/ and return its path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(RESULTS_DIR, f"results-{stamp}.json")
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1, default=str)
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks and print one table per benchmark."""
    args = parse_args(argv)
    names = args.names or list(BENCHMARKS)
    env = environment()
    print("environment: " + ", ".join(f"{k}={v}" for k, v in env.items()))
    if env["loadavg_1m"] and env["cpus"] and env["loadavg_1m"] > 0.5:
        print(f"warning: load average {env['loadavg_1m']} before starting: other processes share the CPUs")
    results: dict[str, Any] = {"env": env, "argv": sys.argv, "repeat": args.repeat, "quick": args.quick,
                               "results": {}}
    t_all = time.perf_counter()
    with blas_limit(args.blas_threads):
        for name in names:
            t0, load0 = time.perf_counter(), _loadavg()
            module = importlib.import_module(f"benchmarks.{name}")
            results["results"][name] = module.run(repeat=args.repeat, quick=args.quick)
            load1 = _loadavg()
            results.setdefault("loadavg", {})[name] = [load0, load1]
            print(f"   ({name}: {time.perf_counter() - t0:.1f} s, 1-min load average {load0} -> {load1})")
    print(f"\ntotal: {time.perf_counter() - t_all:.1f} s")
    if args.save:
        print(f"saved {save(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
