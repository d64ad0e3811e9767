"""Where the microseconds of one small ``rpc_async`` go, in both processes, beside the bare Dask round trip.

``python benchmarks/distributed_timeline.py [--calls N]``: starts a local
cluster of 2 workers, wraps (in the driver and in worker0) Dask's TCP
``read``/``write``, aiograd's ``encode``/``decode``, the worker's call handler
and ``run_function``, stamps each step with ``time.perf_counter_ns``
(CLOCK_MONOTONIC, the same clock in every process of the machine), makes N
calls of ``rpc_async(worker0, echo, args=(x,))`` (16 float32) and N bare Dask
``echo`` requests through the same connection pool, and prints the median
of each segment. The wrappers add a few µs per step; compare the two rows,
and run it on an idle machine for absolute figures (quote the load).
Not one of ``python -m benchmarks``'s benchmarks: a profiling tool for issue 23.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import statistics
import sys
import time
import types
from typing import Any

if __package__ in (None, ""):  # run as a script: keep this file's folder from shadowing Dask's ``distributed``
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path.append(os.path.dirname(_HERE))  # last: an aiograd on PYTHONPATH (another tree) comes first


def echo(x: Any) -> Any:
    return x


def install(dask_worker: Any = None) -> bool:
    """Wrap the steps of a round trip in this process; stamps go to ``sys.modules["__timeline"].ev``."""
    from distributed.comm import tcp

    from aiograd.distributed import _agent, _wire

    ev: list[tuple[Any, ...]] = []
    mod = types.ModuleType("__timeline")
    mod.ev = ev  # type: ignore[attr-defined]
    sys.modules["__timeline"] = mod
    now = time.perf_counter_ns
    TCP = tcp.TCP
    oread, owrite = TCP.read, TCP.write

    async def read(self: Any, deserializers: Any = None) -> Any:
        msg = await oread(self, deserializers)
        ev.append(("rd1", now(), id(self), msg.get("op") if isinstance(msg, dict) else None))
        return msg

    async def write(self: Any, msg: Any, serializers: Any = None, on_error: str = "message") -> Any:
        ev.append(("wr0", now(), id(self)))
        return await owrite(self, msg, serializers, on_error)

    TCP.read, TCP.write = read, write  # type: ignore[method-assign]

    def stamped(fn: Any, name: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            ev.append((name + "0", now(), 0))
            try:
                return fn(*a, **k)
            finally:
                ev.append((name + "1", now(), 0))
        return wrapper

    _wire.encode = stamped(_wire.encode, "enc")  # type: ignore[assignment]
    _wire.Payload.decode = stamped(_wire.Payload.decode, "dec")  # type: ignore[method-assign]
    orun = _agent.Agent.run_function

    async def run_function(self: Any, *a: Any) -> Any:
        ev.append(("rf0", now(), 0))
        try:
            return await orun(self, *a)
        finally:
            ev.append(("rf1", now(), 0))

    _agent.Agent.run_function = run_function  # type: ignore[method-assign]
    if dask_worker is not None:  # the handler was bound when the agent started: bind it again
        agent = next(p.agent for p in dask_worker.plugins.values() if getattr(p, "agent", None) is not None)
        dask_worker.handlers["aiograd_call"] = agent.handlers["aiograd_call"] = agent._handler(agent._on_call)
    return True


def stamped_echo(x: Any) -> Any:
    sys.modules["__timeline"].ev.append(("fn", time.perf_counter_ns(), 0))
    return x


def events(dask_worker: Any = None) -> list[tuple[Any, ...]]:
    ev = sys.modules["__timeline"].ev
    out = list(ev)
    ev.clear()
    return out


def segments(dev: list[tuple[Any, ...]], wev: list[tuple[Any, ...]]) -> dict[str, list[float]]:
    """Per call: the driver's steps, the two Dask legs and the worker's steps (µs)."""
    comms = {e[2] for e in wev if e[0] == "rd1" and e[3] in ("aiograd_call", "echo")}
    W = sorted((e for e in wev if not (e[0] in ("rd1", "wr0") and e[2] not in comms)), key=lambda e: e[1])
    wt = [e[1] for e in W]
    out: dict[str, list[float]] = {}

    def add(k: str, v: float) -> None:
        out.setdefault(k, []).append(v / 1000)

    def first(evs: list[Any], name: str) -> Any:
        return next((e[1] for e in evs if e[0] == name), None)

    def last(evs: list[Any], name: str) -> Any:
        return next((e[1] for e in reversed(evs) if e[0] == name), None)

    i = 0
    while i < len(dev):
        if dev[i][0] != "call0":
            i += 1
            continue
        j = i + 1
        while dev[j][0] != "call1":
            j += 1
        de, t0, t1 = dev[i:j + 1], dev[i][1], dev[j][1]
        i = j + 1
        we = W[bisect.bisect_left(wt, t0):bisect.bisect_right(wt, t1)]
        d_wr0, d_rd1, w_rd1, w_wr0 = first(de, "wr0"), last(de, "rd1"), first(we, "rd1"), first(we, "wr0")
        if None in (d_wr0, d_rd1, w_rd1, w_wr0):
            continue
        add("whole call", t1 - t0)
        add("driver: before the request", d_wr0 - t0)
        if first(de, "enc0"):
            add("  of which encoding", first(de, "enc1") - first(de, "enc0"))
        add("Dask: request -> worker has read it", w_rd1 - d_wr0)
        add("worker: read -> reply written", w_wr0 - w_rd1)
        for a, b, name in (("dec0", "dec1", "  decoding"), ("rf0", "fn", "  to the function's thread"),
                           ("fn", "rf1", "  back to the loop"), ("enc0", "enc1", "  encoding the reply")):
            x, y = first(we, a), first(we, b)
            if x and y:
                add(name, y - x)
        add("Dask: reply written -> driver has read it", d_rd1 - w_wr0)
        add("driver: after the reply", t1 - d_rd1)
        if last(de, "dec0"):
            add("  of which decoding", last(de, "dec1") - last(de, "dec0"))
    return out


async def main(calls: int) -> None:
    import aiograd as ag
    import aiograd.distributed as dist
    from aiograd.distributed._state import process

    await dist.init(n_workers=2)
    try:
        w = dist.workers()[0]
        agent = process.driver.agent
        address = agent.directory[w]
        client = process.driver.client
        x = ag.randn(16)
        raw = x.numpy().tobytes()
        install()
        await client.run(install, workers=[address])
        ev = sys.modules["__timeline"].ev  # type: ignore[attr-defined]
        now = time.perf_counter_ns
        kinds = {"rpc_async": lambda: dist.rpc_async(w, stamped_echo, args=(x,)),
                 "bare Dask round trip": lambda: agent.pool(address).echo(data=raw)}
        table = {}
        for kind, f in kinds.items():
            for _ in range(100):
                await f()
            await client.run(events, workers=[address])
            ev.clear()
            for _ in range(calls):
                ev.append(("call0", now(), 0))
                await f()
                ev.append(("call1", now(), 0))
            dev = ev[:]
            wev = (await client.run(events, workers=[address]))[address]
            table[kind] = {k: statistics.median(v) for k, v in segments(dev, wev).items()}
        print(f"median µs per call, {calls} calls each, load average {os.getloadavg()[0]:.2f}")
        names = list(table["rpc_async"])
        print(f"{'':44s}" + "".join(f"{k:>22s}" for k in table))
        for n in names:
            print(f"{n:44s}" + "".join(f"{t[n]:22.1f}" if n in t else f"{'':22s}" for t in table.values()))
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    import argparse

    import cloudpickle

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker need not import benchmarks
    asyncio.run(main(p.parse_args().calls))
