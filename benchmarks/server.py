"""An aiohttp server that trains: /health latency and /train throughput with 4 /train requests in flight.

The server (its own process, 127.0.0.1, default environment: every BLAS and
aiograd thread variable removed; ``gc.freeze()`` after start-up, for every
handler) has ``/health`` (answers at once) and
``/train`` (one SGD step of an MLP 784-512-512-10 at batch 256, float32). This
process drives it: 4 keep-alive connections post /train back to back while a
fifth connection probes /health sequentially (one probe every 20 ms, at most
300, bounded in time); it reports /health p50/p99/max, /train requests per
second over the probing window and failed requests. Each handler runs on a
quiet machine and again beside one busy process (``yes > /dev/null``, which this
benchmark starts and stops). Handlers:

- aiograd, the documented pattern (docs/server.md): forward in ``ag.offload``,
  ``await loss.backward()``, ``await opt.step_async()``; no lock;
- the same with BLAS at every core (AIOGRAD_NUM_THREADS = cores), and with
  the adaptive sizing off (AIOGRAD_ADAPTIVE_THREADS=0: every kernel at cores - 1,
  the default before issue 19), with the BLAS workers at the process's
  priority (AIOGRAD_BLAS_WORKER_NICE=0), and with the jobs on the executor
  thread at the process's priority (AIOGRAD_EXECUTOR_NICE=0): what the default
  (executor jobs at every core while the machine is idle, NOTE [Adaptive BLAS
  threads], their BLAS workers below the loop, NOTE [BLAS workers yield], and
  the jobs themselves below it while the machine is quiet, NOTE [Jobs run
  below the loop]) is measured against;
- aiograd, naive: under an asyncio.Lock, forward, ``await loss.backward()``,
  ``opt.step()``, forward and step on the loop's thread;
- torch, blocking: under the lock, forward, ``loss.backward()``, ``opt.step()``;
- torch, backward in ``asyncio.to_thread`` under the lock.

Targets (issue 8): the pattern's /health p99 <= 5 ms quiet and <= 10 ms busy,
0 failed requests, /train req/s >= torch's to_thread row in both conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from benchmarks import _harness as H

BENCH = "server"
SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01
CLIENTS = 4
PROBES, QUICK_PROBES = 300, 100
PROBE_EVERY = 0.020  # seconds between two /health probes
MAX_SECONDS = 20.0  # bound on one measurement window
WARMUP_STEPS = 3  # /train requests per client before measuring
TARGET_QUIET_P99, TARGET_BUSY_P99 = 5.0, 10.0
PATTERN = "aiograd pattern"
TORCH_THREAD = "torch to_thread"


def handlers() -> list[tuple[str, str, str, dict[str, str]]]:
    """(row name, module, handler, extra environment) for each server measured."""
    cores = str(os.cpu_count() or 1)
    return [
        (PATTERN, "aiograd", "pattern", {}),
        (f"aiograd pattern, BLAS {cores} threads", "aiograd", "pattern", {"AIOGRAD_NUM_THREADS": cores}),
        (f"aiograd pattern, adaptive off (BLAS {max(1, int(cores) - 1)})", "aiograd", "pattern",
         {"AIOGRAD_ADAPTIVE_THREADS": "0"}),
        ("aiograd pattern, BLAS workers not lowered", "aiograd", "pattern", {"AIOGRAD_BLAS_WORKER_NICE": "0"}),
        ("aiograd pattern, jobs not lowered", "aiograd", "pattern", {"AIOGRAD_EXECUTOR_NICE": "0"}),
        ("aiograd naive", "aiograd", "naive", {}),
        ("torch blocking", "torch", "blocking", {}),
        (TORCH_THREAD, "torch", "to_thread", {}),
    ]


# ---------------------------------------------------------------- the server (its own process)


def _batch() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32), rng.integers(0, SIZES[-1], BATCH)


def aiograd_app(handler: str) -> Any:
    """The aiohttp application training an aiograd MLP with ``handler`` ("pattern" or "naive")."""
    from aiohttp import web

    import aiograd as ag
    import aiograd.nn as nn
    import aiograd.nn.functional as F
    import aiograd.optim as optim

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = optim.SGD(model.parameters(), lr=LR)
    xa, ya = _batch()
    x, y = ag.tensor(xa), ag.tensor(ya)
    lock = asyncio.Lock()

    def compute_loss() -> Any:
        return F.cross_entropy(model(x), y)

    async def train_pattern(request: web.Request) -> web.Response:
        loss = await ag.offload(compute_loss)
        await loss.backward()
        await opt.step_async()
        return web.json_response({"loss": loss.item()})

    async def train_naive(request: web.Request) -> web.Response:
        async with lock:
            opt.zero_grad()
            loss = compute_loss()
            await loss.backward()
            opt.step()
        return web.json_response({"loss": loss.item()})

    return _app({"pattern": train_pattern, "naive": train_naive}[handler])


def torch_app(handler: str) -> Any:
    """The aiohttp application training a torch MLP (default threads) with ``handler``."""
    import torch
    from aiohttp import web

    nn, F = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xa, ya = _batch()
    x, y = torch.from_numpy(xa), torch.from_numpy(ya)
    lock = asyncio.Lock()

    async def train_blocking(request: web.Request) -> web.Response:
        async with lock:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return web.json_response({"loss": loss.item()})

    async def train_to_thread(request: web.Request) -> web.Response:
        async with lock:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            await asyncio.to_thread(loss.backward)
            opt.step()
        return web.json_response({"loss": loss.item()})

    return _app({"blocking": train_blocking, "to_thread": train_to_thread}[handler])


def _app(train: Any) -> Any:
    from aiohttp import web

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.add_routes([web.get("/health", health), web.post("/train", train)])
    return app


async def serve(module: str, handler: str) -> None:
    """Serve on 127.0.0.1 (a free port, printed as 'PORT n') until stdin closes."""
    from aiohttp import web

    app = aiograd_app(handler) if module == "aiograd" else torch_app(handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    # What a long-running server does after loading (docs/server.md): the objects made at
    # start-up leave the collector's sight, so no full collection of them pauses the loop.
    gc.collect()
    gc.freeze()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"PORT {port}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # the driver closes stdin to stop us
    await runner.cleanup()


# ---------------------------------------------------------------- the driver (this process)


class _Conn:
    """One keep-alive HTTP/1.1 connection (a minimal client: the driver must stay light)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> "_Conn":
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def request(self, method: str, path: str) -> int:
        """Send a request, read the whole response, return its status."""
        self.writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(lines[0].split()[1])

    def close(self) -> None:
        self.writer.close()


async def drive(port: int, probes: int) -> dict[str, Any]:
    """4 /train clients back to back and a sequential /health probe; the measurements."""
    trains = [await _Conn.open(port) for _ in range(CLIENTS)]
    probe = await _Conn.open(port)
    stop = asyncio.Event()
    done: list[float] = []
    failed = 0

    async def client(conn: _Conn, warmup: asyncio.Event) -> None:
        nonlocal failed
        for _ in range(WARMUP_STEPS):
            if await conn.request("POST", "/train") != 200:
                failed += 1
        warmup.set()
        while not stop.is_set():
            try:
                ok = await conn.request("POST", "/train") == 200
            except (OSError, asyncio.IncompleteReadError):
                ok = False
            if ok:
                done.append(time.perf_counter())
            else:
                failed += 1

    warm = [asyncio.Event() for _ in trains]
    tasks = [asyncio.create_task(client(c, w)) for c, w in zip(trains, warm)]
    try:
        await asyncio.wait_for(asyncio.gather(*(w.wait() for w in warm)), 120)
        lat: list[float] = []
        t0 = time.perf_counter()
        while len(lat) < probes and time.perf_counter() - t0 < MAX_SECONDS:
            s = time.perf_counter()
            if await probe.request("GET", "/health") != 200:
                failed += 1
            lat.append((time.perf_counter() - s) * 1e3)
            await asyncio.sleep(PROBE_EVERY)
        t1 = time.perf_counter()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 60)  # the requests in flight finish
    finally:
        for t in tasks:
            t.cancel()
        for c in trains + [probe]:
            c.close()
    n = sum(1 for t in done if t0 <= t <= t1)
    return {"latencies_ms": lat, "trained": n, "seconds": t1 - t0, "failed": failed}


def measure_server(module: str, handler: str, extra_env: dict[str, str], probes: int) -> dict[str, Any]:
    """Start the server process, drive it, stop it."""
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.server", "--serve", module, handler],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=H.default_environment(extra_env),
                            text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the {module} server did not start (exit code {proc.poll()})")
        return H.run_async(lambda: drive(int(line.split()[1]), probes))
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def busy_process() -> subprocess.Popen:
    """One other process that keeps a core busy (stopped by the caller): ``yes > /dev/null``
    as in the issue, or a Python busy loop where there is no ``yes``."""
    yes = shutil.which("yes")
    command = [yes] if yes else [sys.executable, "-c", "while True: pass"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


def run(repeat: int = 5, quick: bool = False, rounds: int = 1, only: str = "",
        conditions: tuple[str, ...] = ("quiet", "busy")) -> list[dict[str, Any]]:
    """Every handler quiet and busy, ``rounds`` times round-robin; pooled percentiles; print the table."""
    probes = QUICK_PROBES if quick else PROBES
    pooled: dict[tuple[str, str], dict[str, Any]] = {}
    for _ in range(rounds):
        for condition in conditions:
            busy = busy_process() if condition == "busy" else None
            try:
                for name, module, handler, env in handlers():
                    if only and not any(part in name for part in only.split(",")):
                        continue
                    acc = pooled.setdefault((condition, name), {"latencies_ms": [], "trained": 0, "seconds": 0.0,
                                                                "failed": 0, "load": [], "module": module})
                    acc["load"].append(os.getloadavg()[0])
                    if H.optional_import(module) is None or H.optional_import("aiohttp") is None:
                        acc["missing"] = True
                        continue
                    try:
                        r = measure_server(module, handler, env, probes)
                    except Exception as exc:
                        acc["error"] = exc
                        continue
                    for k in ("latencies_ms",):
                        acc[k] += r[k]
                    for k in ("trained", "seconds", "failed"):
                        acc[k] += r[k]
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
    rows = [_row(condition, name, acc) for (condition, name), acc in pooled.items()]
    H.print_table(f"server: MLP {'-'.join(map(str, SIZES))} batch {BATCH}, {CLIENTS} /train in flight, "
                  f"/health probed (ms); default environment", rows,
                  extra_cols=("p50_ms", "max_ms", "train_req_s", "failed", "probes", "load_1m"))
    H.print_targets(_targets(rows))
    return rows


def _row(condition: str, name: str, acc: dict[str, Any]) -> dict[str, Any]:
    unit = "ms p99"
    if acc.get("missing"):
        return H.missing(BENCH, condition, name, unit, acc["module"])
    if "error" in acc:
        return H.failed(BENCH, condition, name, unit, acc["error"])
    lat = acc["latencies_ms"]
    load = acc["load"]
    return H.row(BENCH, condition, name, H.percentile(lat, 99), unit,
                 p50_ms=H.percentile(lat, 50), max_ms=max(lat) if lat else None,
                 train_req_s=acc["trained"] / acc["seconds"] if acc["seconds"] else None,
                 failed=acc["failed"], probes=len(lat), load_1m=round(sum(load) / len(load), 2))


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for condition, limit in (("quiet", TARGET_QUIET_P99), ("busy", TARGET_BUSY_P99)):
        out.append(H.target_line(f"{condition}: {PATTERN} /health p99", H.value_of(rows, condition, PATTERN),
                                 "<=", limit, " ms"))
        mine = _field(rows, condition, PATTERN, "train_req_s")
        ref = _field(rows, condition, TORCH_THREAD, "train_req_s")
        ratio = mine / ref if mine is not None and ref else None
        out.append(H.target_line(f"{condition}: {PATTERN} /train req/s vs {TORCH_THREAD}", ratio, ">=", 1.0))
        failed = _field(rows, condition, PATTERN, "failed")
        out.append(f"{condition}: {PATTERN} failed requests = {failed} (== 0) "
                   f"{H.verdict(None if failed is None else failed == 0)}")
    return out


def _field(rows: list[dict[str, Any]], case: str, engine: str, key: str) -> Any:
    for r in rows:
        if r["case"] == case and r["engine"] == engine:
            return r.get(key)
    return None


def main(argv: list[str] | None = None) -> None:
    """Standalone entry point (also the server processes' entry point, with --serve)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--serve", nargs=2, metavar=("MODULE", "HANDLER"), help=argparse.SUPPRESS)
    p.add_argument("--rounds", type=int, default=1, help="measurements per handler and condition, pooled")
    p.add_argument("--quick", action="store_true", help=f"{QUICK_PROBES} probes instead of {PROBES}")
    p.add_argument("--only", default="", help="only the handlers whose name contains one of these comma-separated texts")
    p.add_argument("--conditions", default="quiet,busy", help="quiet, busy or both (default)")
    args = p.parse_args(argv)
    if args.serve:
        asyncio.run(serve(*args.serve))
    else:
        run(quick=args.quick, rounds=args.rounds, only=args.only, conditions=tuple(args.conditions.split(",")))


if __name__ == "__main__":
    main()
