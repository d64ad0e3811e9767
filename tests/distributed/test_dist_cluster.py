"""aiograd.distributed._cluster: the embedded local cluster, joining one, loop backends, killed workers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

import aiograd as ag
import aiograd.distributed as dist
from _dist_helpers import Recorder, cluster_env, slow_on_backward, wait_until_started

pytestmark = pytest.mark.distributed


async def sleep_for(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


def _listening(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        for c in p.net_connections(kind="inet"):
            if c.status == psutil.CONN_LISTEN:
                out.append(c.laddr.ip)
    return out


def _new_children(me: psutil.Process, before: set[int]) -> list[str]:
    """Child processes started since ``before``, but multiprocessing's resource tracker (one per
    process, started with the first worker process and kept by Python until exit)."""
    out = []
    for p in me.children(recursive=True):
        if p.pid in before:
            continue
        try:
            cmd = " ".join(p.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "resource_tracker" not in cmd:
            out.append(cmd)
    return out


def test_import_aiograd_does_not_import_dask() -> None:
    code = (
        "import sys, aiograd, aiograd.distributed as dist\n"
        "assert dist.init and dist.rpc_async\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'tornado')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=cluster_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_calls_before_init_say_so() -> None:
    with pytest.raises(RuntimeError, match=r"not initialized: call `await dist.init\(\)` first"):
        dist.workers()
    with pytest.raises(RuntimeError, match="not initialized"):
        dist.get_worker_name()


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_init_refuses_trio_clearly() -> None:
    with pytest.raises(RuntimeError, match="Dask distributed, which needs an asyncio event loop"):
        await dist.init(n_workers=1)
    with pytest.raises(RuntimeError, match="needs an asyncio event loop"):
        await dist.rpc_async("worker0", abs, args=(1,))


@pytest.mark.asyncio
async def test_joining_an_existing_cluster(dask_cluster: str) -> None:
    await dist.init(address=dask_cluster)
    try:
        assert dist.workers() == ["worker0", "worker1"]
        with pytest.raises(RuntimeError, match="already initialized"):
            await dist.init(address=dask_cluster)
        assert await dist.rpc_async("worker0", dist.get_worker_name) == "worker0"
    finally:
        await dist.shutdown()
    await dist.shutdown()  # idempotent


@pytest.mark.asyncio
async def test_local_cluster_listens_on_loopback_only_and_shutdown_leaves_nothing() -> None:
    me = psutil.Process()
    threads_before = set(threading.enumerate())
    children_before = {p.pid for p in me.children(recursive=True)}
    await dist.init(n_workers=2)
    try:
        assert dist.workers() == ["worker0", "worker1"]
        assert dist.get_worker_name() == "driver"
        assert await dist.rpc_async("worker1", dist.get_worker_name) == "worker1"
        cluster = [me] + [p for p in me.children(recursive=True) if p.pid not in children_before]
        assert len(cluster) >= 3  # this process (scheduler, nannies, driver) and two workers
        ips = _listening(cluster)
        assert len(ips) >= 6 and set(ips) == {"127.0.0.1"}, ips
    finally:
        await dist.shutdown()
    for _ in range(100):
        left = _new_children(me, children_before)
        if not left:
            break
        await asyncio.sleep(0.05)
    assert left == []
    # Dask keeps one process-wide offload thread once used (not aiograd's): it may stay.
    left = [t.name for t in set(threading.enumerate()) - threads_before if t.is_alive()]
    assert [n for n in left if not n.startswith("Dask-Offload")] == []
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def _kill_and_expect_lost(worker: str, pending: "asyncio.Future[object]") -> None:
    """SIGKILL ``worker``'s process; ``pending`` must fail with WorkerLostError naming it within 10 s."""
    os.kill(await dist.rpc_async(worker, os.getpid, timeout=5), signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(dist.WorkerLostError, match=worker):
        await pending
    assert time.monotonic() - t0 < 10


@pytest.mark.asyncio
async def test_joining_a_tls_scheduler_without_security_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"TLS scheduler: pass the driver's certificates, .*security=.*Security\(tls_ca_file"):
        await dist.init(address="tls://127.0.0.1:1")


@pytest.mark.asyncio
async def test_a_killed_worker_fails_rpc_and_backward_within_10_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Destructive: its own cluster, of three workers (one per way of leaving)."""
    import aiograd.distributed._agent as agent_module

    monkeypatch.setattr(agent_module, "LOST_KEPT_S", 0.5)  # departed workers leave the driver's maps
    await dist.init(n_workers=3)
    try:
        # A killed process: its connections break at once.
        departed = {await dist.rpc_async("worker0", _my_address)}
        call = asyncio.ensure_future(dist.rpc_async("worker0", sleep_for, args=(60.0,)))
        await asyncio.sleep(0.3)
        await _kill_and_expect_lost("worker0", call)

        # A hung process that the scheduler removes: its connections stay open, so only
        # Dask's worker-removal event can end the call.
        pid = await dist.rpc_async("worker1", os.getpid)
        address = await dist.rpc_async("worker1", _my_address)
        departed.add(address)
        call = asyncio.ensure_future(dist.rpc_async("worker1", sleep_for, args=(60.0,)))
        await asyncio.sleep(0.3)
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            scheduler = dist_process().driver.cluster.scheduler
            await scheduler.remove_worker(address, stimulus_id="test-unresponsive", close=False)
            with pytest.raises(dist.WorkerLostError, match="worker1.* left the cluster"):
                await call
            assert time.monotonic() - t0 < 10
        finally:
            os.kill(pid, signal.SIGKILL)

        # A worker killed while its part of a backward pass runs.
        departed.add(await dist.rpc_async("worker2", _my_address))
        recorder = dist.remote("worker2", Recorder)
        x = ag.tensor([1.0, 2.0], requires_grad=True)
        async with dist.context() as cid:
            out = await dist.rpc_async("worker2", slow_on_backward, args=(x, recorder))
            task = asyncio.ensure_future(dist.backward(cid, [out.sum()]))
            await wait_until_started(recorder)
            await _kill_and_expect_lost("worker2", task)
            assert dist.debug_info()["num_current_backward_passes"] == 0
            t0 = time.monotonic()
        assert time.monotonic() - t0 < 1.0  # the release does not wait on the lost worker
        assert dist.debug_info() == {"num_current_backward_passes": 0, "num_autograd_contexts": 0}
        # The departed addresses leave the driver's maps (LOST_KEPT_S). The nannies of the local
        # cluster may restart the killed workers meanwhile: they join at new addresses.
        agent = dist_process().driver.agent  # type: ignore[attr-defined]
        for _ in range(100):
            if not departed & (set(agent._lost) | set(agent.names)):
                break
            await asyncio.sleep(0.05)
        assert not departed & set(agent._lost) and not departed & set(agent.names)
    finally:
        await dist.shutdown()


def _my_address() -> str:
    from aiograd.distributed._state import current_agent

    return current_agent().address


def dist_process() -> object:
    from aiograd.distributed._state import process

    return process


def _make_tls_files(d: "os.PathLike[str]") -> dict[str, str]:
    """A throwaway CA and one certificate for 127.0.0.1, made with the openssl command line."""
    import pathlib

    p = pathlib.Path(d)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=p)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=aiograd-test-ca",
        "-keyout", "ca-key.pem", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "key.pem", "-out", "req.pem")
    (p / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "req.pem", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "1",
        "-extfile", "ext.cnf", "-out", "cert.pem")
    return {"ca": str(p / "ca.pem"), "cert": str(p / "cert.pem"), "key": str(p / "key.pem")}


@pytest.mark.asyncio
async def test_a_tls_cluster_carries_calls_and_backward_encrypted(tmp_path: "os.PathLike[str]") -> None:
    from distributed.security import Security

    files = _make_tls_files(tmp_path)
    security = Security(tls_ca_file=files["ca"], tls_client_cert=files["cert"], tls_client_key=files["key"],
                        tls_scheduler_cert=files["cert"], tls_scheduler_key=files["key"],
                        tls_worker_cert=files["cert"], tls_worker_key=files["key"], require_encryption=True)
    await dist.init(n_workers=1, security=security)
    try:
        agent = dist_process().driver.agent  # type: ignore[attr-defined]
        assert agent.address.startswith("tls://127.0.0.1:")  # the driver's own server too
        assert all(a.startswith("tls://") for a in agent.directory.values())
        x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
        async with dist.context() as cid:
            y = await dist.rpc_async("worker0", _square, args=(x,))
            await dist.backward(cid, [y.sum()])
            assert dist.get_gradients(cid)[x].tolist() == [2.0, 4.0]
    finally:
        await dist.shutdown()


def _square(x: ag.Tensor) -> ag.Tensor:
    return x * x
