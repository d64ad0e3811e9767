"""aiograd.distributed on a local Dask cluster (2 worker processes), beside plain Dask.

(1) Per-call overhead: ``await dist.rpc_async(w, echo, args=(x,))`` with a
    16-float32 tensor, outside a context and inside one with ``x`` requiring
    grad (Send/Recv recorded), 200 calls in a row per sample, µs per call;
    beside the same call through plain Dask (``client.submit(echo, array,
    workers=[w])``, awaited) and the bare Dask comm round trip between the
    same two processes: Dask's own ``echo`` handler of the worker, called
    through the very connection pool ``rpc_async`` uses (the driver's
    server's), with the tensor's 64 bytes. That is the floor any call over
    Dask's comms pays; target (issue 23): ``rpc_async`` <= 1.5x it.
(2) A model-parallel MLP training step (784-512 ReLU on worker0, 512-10 on
    worker1, batch 128, float32, cross-entropy): forward through both
    workers, ``dist.backward``, ``DistributedOptimizer`` SGD step, ms per
    step; beside the same model and step in the driver alone.
(3) 8 MB transfers (1M float64), MB/s: the gradient of an 8 MB tensor the
    driver sent travelling back from a worker in ``dist.backward`` (the
    backward alone is timed); an 8 MB result of ``rpc_async`` (made by the
    call, and one the worker already holds); an 8 MB argument of
    ``rpc_async`` (driver -> worker); and an 8 MB result of
    ``client.submit``; a sample is the mean of 8 calls. Target (issue 23):
    a result the worker holds moves worker -> driver as fast as an argument
    driver -> worker (ratio >= 0.9).

Samples of the engines compared in one table are taken round-robin (see
_harness.py); the load average is printed with the tables.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, Awaitable, Callable

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable, and keep this
    _HERE = os.path.dirname(os.path.abspath(__file__))  # file from shadowing Dask's ``distributed``
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path.insert(0, os.path.dirname(_HERE))

import numpy as np  # noqa: E402

from benchmarks import _harness as H  # noqa: E402

BENCH = "distributed"
CALLS, QUICK_CALLS = 200, 50
MLP = (784, 512, 10)
BATCH = 128
BIG = 1 << 20  # float64 elements: 8 MB
TRANSFERS, QUICK_TRANSFERS = 8, 2  # 8 MB calls per sample of (3)
BARE = "Dask comm round trip (echo, same pool)"
RPC_TARGET = 1.5  # issue 23: rpc_async <= 1.5x the bare round trip
HELD, ARGUMENT = "aiograd rpc_async (a result the worker holds)", "aiograd rpc_async (driver -> worker argument)"
DIRECTION_TARGET = 0.9  # issue 23: worker -> driver as fast as driver -> worker (within 10%)


# ----- functions the workers run (this module is pickled by value) ---------------------------


def echo(x: Any) -> Any:
    return x


def make_stage(index: int) -> Any:
    import aiograd as ag

    ag.manual_seed(index)
    linear = ag.nn.Linear(MLP[index], MLP[index + 1])
    return ag.nn.Sequential(linear, ag.nn.ReLU()) if index == 0 else linear


def weighted_sum(x: Any) -> Any:
    return (x * 0.5).sum()


def make_big(n: int) -> Any:
    import aiograd as ag

    return ag.ones(n, dtype=ag.float64)


def held_big(n: int) -> Any:
    """A tensor the worker already holds: the transfer alone, without making 8 MB on the worker."""
    import aiograd as ag
    import aiograd.distributed as dist

    return dist.worker_local(f"benchmarks.held_big.{n}", lambda: ag.ones(n, dtype=ag.float64))


def take(x: Any) -> None:
    return None


def make_big_array(n: int) -> np.ndarray:
    return np.ones(n)


# ----- samplers ------------------------------------------------------------------------------


class _TimedInside(H.Sampler):
    """One sample = the seconds a coroutine reports (it times only its own timed part)."""

    def __init__(self, fn: Callable[[], Awaitable[float]], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(lambda _: None)
        self.fn, self.loop = fn, loop

    def __call__(self) -> float:
        return self.loop.run_until_complete(self.fn())


def _calls(loop: asyncio.AbstractEventLoop, n: int, call: Callable[[], Awaitable[Any]],
           setup: Callable[[], Awaitable[Any]] | None = None) -> H.Sampler:
    async def sample() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            await call()
        return (time.perf_counter() - t0) / n

    return _TimedInside(sample, loop)


def per_call_rows(loop: asyncio.AbstractEventLoop, repeat: int, calls: int) -> list[dict[str, Any]]:
    ag = H.import_aiograd()
    import aiograd.distributed as dist
    from aiograd.distributed._state import process

    client = process.driver.client
    w = dist.workers()[0]
    address = process.driver.agent.directory[w]
    x_plain = ag.randn(16)
    x_grad = ag.randn(16, requires_grad=True)
    arr = np.ones(16, np.float32)
    pool = process.driver.agent.pool  # the driver's server's ConnectionPool: the one rpc_async sends through
    raw = x_plain.numpy().tobytes()

    def in_context() -> H.Sampler:
        async def sample() -> float:
            async with dist.context():
                t0 = time.perf_counter()
                for _ in range(calls):
                    await dist.rpc_async(w, echo, args=(x_grad,))
                return (time.perf_counter() - t0) / calls

        return _TimedInside(sample, loop)

    case = f"per call, 16 float32 ({calls} calls in a row)"
    return H.sampled_rows(BENCH, case, "us", [
        ("aiograd rpc_async", "aiograd", lambda: _calls(loop, calls, lambda: dist.rpc_async(w, echo, args=(x_plain,)))),
        ("aiograd rpc_async, in a context (grad)", "aiograd", in_context),
        ("Dask client.submit", "distributed",
         lambda: _calls(loop, calls, lambda: client.submit(echo, arr, workers=[address], pure=False))),
        (BARE, "distributed", lambda: _calls(loop, calls, lambda: pool(address).echo(data=raw))),
    ], repeat, value=lambda t: t.median * 1e6)


def mlp_rows(loop: asyncio.AbstractEventLoop, repeat: int) -> list[dict[str, Any]]:
    ag = H.import_aiograd()
    import aiograd.distributed as dist
    import aiograd.nn.functional as F

    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((BATCH, MLP[0]), dtype=np.float32))
    y = ag.tensor(rng.integers(0, MLP[-1], BATCH))
    w0, w1 = dist.workers()[:2]

    def distributed_step() -> H.Sampler:
        stages = [dist.remote(w0, make_stage, args=(0,)), dist.remote(w1, make_stage, args=(1,))]

        async def params() -> list[Any]:
            return [p for s in stages for p in await dist.parameter_rrefs(s)]

        opt = dist.DistributedOptimizer(ag.optim.SGD, loop.run_until_complete(params()), lr=0.01)

        async def step() -> float:
            t0 = time.perf_counter()
            async with dist.context() as cid:
                h = await stages[0].rpc_async().forward(x)
                loss = F.cross_entropy(await stages[1].rpc_async().forward(h), y)
                await dist.backward(cid, [loss])
                await opt.step(cid)
            return time.perf_counter() - t0

        return _TimedInside(step, loop)

    def local_step() -> H.Sampler:
        model = ag.nn.Sequential(make_stage(0), make_stage(1))
        opt = ag.optim.SGD(model.parameters(), lr=0.01)

        async def step() -> float:
            t0 = time.perf_counter()
            opt.zero_grad()
            await F.cross_entropy(model(x), y).backward()
            opt.step()
            return time.perf_counter() - t0

        return _TimedInside(step, loop)

    case = f"MLP {'-'.join(map(str, MLP))} step, batch {BATCH}"
    return H.sampled_rows(BENCH, case, "ms", [
        ("aiograd, layers on 2 workers", "aiograd", distributed_step),
        ("aiograd, all in the driver", "aiograd", local_step),
    ], repeat)


def transfer_rows(loop: asyncio.AbstractEventLoop, repeat: int, transfers: int) -> list[dict[str, Any]]:
    ag = H.import_aiograd()
    import aiograd.distributed as dist
    from aiograd.distributed._state import process

    client = process.driver.client
    w = dist.workers()[0]
    address = process.driver.agent.directory[w]
    mb = BIG * 8 / 1e6
    x = ag.ones(BIG, dtype=ag.float64, requires_grad=True)
    x_plain = ag.ones(BIG, dtype=ag.float64)

    def gradient_back() -> H.Sampler:
        async def sample() -> float:
            async with dist.context() as cid:
                loss = await dist.rpc_async(w, weighted_sum, args=(x,))
                t0 = time.perf_counter()
                await dist.backward(cid, [loss])
                return time.perf_counter() - t0

        return _TimedInside(sample, loop)

    def result_of(call: Callable[[], Awaitable[Any]]) -> H.Sampler:
        async def sample() -> float:  # the mean of a few calls: one 8 MB call is a few ms, at the mercy of load
            t0 = time.perf_counter()
            for _ in range(transfers):
                await call()
            return (time.perf_counter() - t0) / transfers

        return _TimedInside(sample, loop)

    case = f"{mb:.0f} MB (float64), one way"
    return H.sampled_rows(BENCH, case, "MB/s", [
        ("aiograd dist.backward (the gradient)", "aiograd", gradient_back),
        ("aiograd rpc_async (the result)", "aiograd", lambda: result_of(lambda: dist.rpc_async(w, make_big, args=(BIG,)))),
        # The row above also times making 8 MB on the worker (allocation, fill, page faults);
        # these two time the transfer alone, one per direction, for comparison.
        (HELD, "aiograd", lambda: result_of(lambda: dist.rpc_async(w, held_big, args=(BIG,)))),
        (ARGUMENT, "aiograd", lambda: result_of(lambda: dist.rpc_async(w, take, args=(x_plain,)))),
        ("Dask client.submit (the result)", "distributed",
         lambda: result_of(lambda: client.submit(make_big_array, BIG, workers=[address], pure=False))),
    ], repeat, value=lambda t: mb / t.median)


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 23's two targets, from rows of the same run."""
    def value(engine: str) -> float | None:
        return next((r["value"] for r in rows if r["engine"] == engine and r["value"] is not None), None)

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    return [
        H.target_line("rpc_async / bare Dask comm round trip", ratio(value("aiograd rpc_async"), value(BARE)),
                      "<=", RPC_TARGET),
        H.target_line("8 MB worker -> driver / driver -> worker", ratio(value(HELD), value(ARGUMENT)),
                      ">=", DIRECTION_TARGET),
    ]


def _loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Start a local cluster of 2 workers, measure (1)-(3), print and return rows."""
    if H.import_aiograd() is None or H.optional_import("distributed") is None:
        return [H.missing(BENCH, "all", "aiograd.distributed", "", "distributed")]
    import cloudpickle

    import aiograd.distributed as dist

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import benchmarks
    loop = H.new_loop()
    rows: list[dict[str, Any]] = []
    try:
        loop.run_until_complete(dist.init(n_workers=2))
        print(f"   load average (1, 5, 15 min) at start: {_loadavg()}")
        for title, fn, extra in [
            ("distributed: per-call overhead (lower is better)", lambda: per_call_rows(loop, repeat, QUICK_CALLS if quick else CALLS), (BARE, "Dask client.submit")),
            ("distributed: model-parallel MLP step (lower is better)", lambda: mlp_rows(loop, repeat), ("aiograd, all in the driver",)),
            ("distributed: 8 MB transfer throughput (higher is better)", lambda: transfer_rows(loop, repeat, QUICK_TRANSFERS if quick else TRANSFERS), (ARGUMENT, "Dask client.submit (the result)")),
        ]:
            got = H.guarded(BENCH, title, "aiograd.distributed", "", fn)
            H.print_table(title, got, baselines=extra, extra_cols=("spread",))
            rows.extend(got)
        H.print_targets(_targets(rows))
        print(f"   load average (1, 5, 15 min) at end: {_loadavg()}")
    finally:
        loop.run_until_complete(dist.shutdown())
        H.close_loop(loop)
    return rows


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description="aiograd.distributed overheads beside plain Dask")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    run(args.repeat, args.quick)
