"""Helpers shared by the distributed tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiograd as ag
import aiograd.distributed as dist

REPO = Path(__file__).resolve().parents[2]


def cluster_env() -> dict[str, str]:
    """The environment of cluster processes: this checkout's aiograd, one BLAS thread."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    return env


async def workers_state() -> dict[str, dict[str, int]]:
    """Every worker's ``dist.debug_info()``."""
    return {w: await dist.rpc_async(w, dist.debug_info) for w in dist.workers()}


async def assert_all_released() -> None:
    """No process holds a context or runs a pass (DESIGN.md §4: back to 0 after any outcome)."""
    zero = {"num_current_backward_passes": 0, "num_autograd_contexts": 0}
    assert dist.debug_info() == zero
    assert await workers_state() == {w: zero for w in dist.workers()}


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def get(self) -> list[str]:
        return self.events


class SlowBackward(ag.Function):
    @staticmethod
    def forward(ctx: object, x: ag.Tensor, recorder: Recorder) -> ag.Tensor:
        ctx.recorder = recorder  # type: ignore[attr-defined]
        return x * 1.0

    @staticmethod
    async def backward(ctx: object, g: ag.Tensor) -> tuple[ag.Tensor, None]:
        ctx.recorder.events.append("started")  # type: ignore[attr-defined]
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            ctx.recorder.events.append("cancelled")  # type: ignore[attr-defined]
            raise
        return g, None


async def slow_on_backward(x: ag.Tensor, recorder: dist.RRef) -> ag.Tensor:
    return SlowBackward.apply(x, recorder.local_value())


async def wait_until_started(recorder: dist.RRef) -> None:
    """Until SlowBackward's backward runs on the recorder's worker."""
    while "started" not in await recorder.rpc_async().get():
        await asyncio.sleep(0.02)
