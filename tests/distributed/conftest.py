"""Fixtures of the distributed tests: one Dask cluster for the whole session, a driver per test.

The session cluster is a Dask scheduler and two worker processes started
with Dask's own command line on 127.0.0.1 (no nanny, no dashboard), named
``worker0`` and ``worker1`` like the embedded cluster's. Each test joins it
with ``dist.init(address=...)`` on its own event loop (``dist_cluster``) and
leaves it, after checking that every worker is back to no context and no
pass. Tests that kill workers or need the embedded cluster start their own.

Test modules are pickled by value, so the workers (which cannot import them)
run the functions the tests send.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

import _dist_helpers
import aiograd.distributed as dist
from _dist_helpers import assert_all_released, cluster_env

try:
    import cloudpickle
    import distributed  # noqa: F401
except ImportError:  # the "distributed" extra is not installed: nothing here can run
    collect_ignore_glob = ["test_*.py"]
else:
    cloudpickle.register_pickle_by_value(_dist_helpers)  # the workers run its functions too

WORKER_NAMES = ["worker0", "worker1"]


@pytest.fixture(autouse=True, scope="module")
def _pickle_test_module_by_value(request: pytest.FixtureRequest) -> Iterator[None]:
    cloudpickle.register_pickle_by_value(request.module)
    yield
    cloudpickle.unregister_pickle_by_value(request.module)


async def _wait_for_workers(address: str, n: int, timeout: float) -> None:
    from distributed import Client

    async with Client(address, asynchronous=True, timeout=timeout) as client:
        await client.wait_for_workers(n, timeout=timeout)


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a Dask scheduler with two workers, started with Dask's command line on 127.0.0.1."""
    d = tmp_path_factory.mktemp("dask")
    scheduler_file = d / "scheduler.json"
    env = cluster_env()
    common = ["--scheduler-file", str(scheduler_file)]
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": open(d / "cluster.log", "wb"), "env": env,
                             "cwd": str(d)}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--dashboard-address", "127.0.0.1:0", *common], **quiet)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise RuntimeError(f"the Dask scheduler did not start; see {d / 'cluster.log'}")
            time.sleep(0.05)
        time.sleep(0.1)  # the file is written in one go, but be safe
        address = json.loads(scheduler_file.read_text())["address"]
        for name in WORKER_NAMES:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--host", "127.0.0.1", "--no-nanny",
                 "--no-dashboard", "--nthreads", "1", "--name", name, *common], **quiet))
        asyncio.run(_wait_for_workers(address, len(WORKER_NAMES), 60))
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:  # pragma: no cover
                p.kill()
                p.wait()
        quiet["stderr"].close()


@pytest_asyncio.fixture
async def dist_cluster(dask_cluster: str) -> AsyncIterator[str]:
    """This test's driver, joined to the session cluster; every process released at the end."""
    await dist.init(address=dask_cluster, rpc_timeout=30)
    try:
        yield dask_cluster
        await assert_all_released()
    finally:
        await dist.shutdown()
