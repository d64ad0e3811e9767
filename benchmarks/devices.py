"""Two independent heavy branches on two CPU devices vs the same graph on one device.

Branch A: ``xa.to(cpu:1)`` then 8 chained matmuls with weights created on cpu:1;
branch B: the same on cpu:0; ``loss = a.sum().to(cpu:0) + b.sum()``. Every
input and weight requires grad. Only ``await loss.backward()`` is timed; the
speedup is (all on cpu:0) / (split over cpu:0 and cpu:1). numpy rows give the
same kernels run serially and on two Python threads: the speedup this machine
allows. BLAS is limited to 1 thread when threadpoolctl is installed (so each
device is one core), and also reported at the default thread count (aiograd's,
docs/server.md: the cores minus one, shared by the executors started).
Target (c): speedup >= 1.7.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import numpy as np

from benchmarks import _harness as H

BENCH = "devices"
DEPTH, SIZE = 8, 1024
QUICK_SIZE = 512
TARGET_SPEEDUP = 1.7
UNIT = "ms"


def make_arrays(size: int) -> list[list[np.ndarray]]:
    """[input, w1..w8] for each of the two branches (float32, O(1) activations)."""
    rng = np.random.default_rng(0)
    return [[rng.standard_normal((size, size), dtype=np.float32)]
            + [rng.standard_normal((size, size), dtype=np.float32) / np.float32(np.sqrt(size)) for _ in range(DEPTH)]
            for _ in range(2)]


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[str]:
    """Limit BLAS to ``n`` threads with threadpoolctl (None: leave it); yields a label."""
    tpc = H.optional_import("threadpoolctl")
    if tpc is None:
        yield "BLAS default (threadpoolctl not installed)"
        return
    current = max((i.get("num_threads", 0) for i in tpc.threadpool_info() if i.get("user_api") == "blas"),
                  default=0)
    if n is None:
        yield f"BLAS {current} threads (default)"
        return
    with H.blas_threads(n):
        yield f"BLAS {n} thread{'s' if n > 1 else ''}"


# ---------------------------------------------------------------- aiograd


def _aiograd_setup(ag: Any, branches: list[list[np.ndarray]], devs: tuple[Any, Any]) -> Any:
    """Build loss = sum(branch A on devs[0]) + sum(branch B on devs[1]), reduced on cpu:0."""
    cpu0 = ag.device("cpu")
    sums = []
    for arrays, dev in zip(branches, devs):
        x = ag.tensor(arrays[0], requires_grad=True)
        h = x.to(dev)
        for w in arrays[1:]:
            h = h @ ag.tensor(w, requires_grad=True, device=dev)
        sums.append(h.sum().to(cpu0))
    return sums[0] + sums[1]


def aiograd_sampler(branches: list[list[np.ndarray]], split: bool, loop: Any) -> H.Sampler:
    """Backward with branch A on cpu:1 (split) or on cpu:0, awaited on ``loop``."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    devs = (ag.device("cpu:1") if split else ag.device("cpu"), ag.device("cpu"))

    async def timed(loss: Any) -> None:
        await loss.backward()

    return H.AsyncSampler(timed, lambda: _aiograd_setup(ag, branches, devs), loop=loop)


# ---------------------------------------------------------------- numpy reference


def _forward_activations(arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(inputs of each matmul, weights) of one branch: what its backward needs."""
    hs = [arrays[0]]
    for w in arrays[1:-1]:
        hs.append(hs[-1] @ w)
    return hs, arrays[1:]


def _numpy_branch_backward(saved: tuple[list[np.ndarray], list[np.ndarray]]) -> None:
    """The kernels of one branch's backward: h.T @ g and g @ W.T per matmul."""
    hs, ws = saved
    g = np.ones_like(hs[0])
    for h, w in zip(reversed(hs), reversed(ws)):
        _ = h.T @ g
        g = g @ w.T


def numpy_sampler(branches: list[list[np.ndarray]], parallel: bool) -> H.Sampler:
    """Wall time of both branches' backward kernels (forward untimed), serial or on two threads."""
    saved = [_forward_activations(arrays) for arrays in branches]
    pool = ThreadPoolExecutor(max_workers=2) if parallel else None

    def timed(_: Any) -> None:
        if pool is None:
            for item in saved:
                _numpy_branch_backward(item)
        else:
            list(pool.map(_numpy_branch_backward, saved))

    return H.Sampler(timed, on_close=pool.shutdown if pool is not None else None)


# ---------------------------------------------------------------- driver


def _measure_config(label: str, branches: list[list[np.ndarray]], repeat: int) -> list[dict[str, Any]]:
    loop = H.new_loop()
    try:
        rows = H.sampled_rows(BENCH, label, UNIT, [
            ("numpy kernels, serial", "numpy", lambda: numpy_sampler(branches, False)),
            ("numpy kernels, 2 threads", "numpy", lambda: numpy_sampler(branches, True)),
            ("aiograd, all on cpu:0", "aiograd", lambda: aiograd_sampler(branches, False, loop)),
            ("aiograd, cpu:0 + cpu:1", "aiograd", lambda: aiograd_sampler(branches, True, loop)),
        ], repeat)
    finally:
        H.close_loop(loop)
    for r in rows:
        if r["engine"] == "aiograd, cpu:0 + cpu:1" and r["value"] is None and "cpu:1" in r["note"]:
            r["note"] = "not available: " + r["note"]
    _add_speedups(rows)
    return rows


def _add_speedups(rows: list[dict[str, Any]]) -> None:
    vals = {r["engine"]: r["value"] for r in rows}
    pairs = {"numpy kernels, 2 threads": "numpy kernels, serial",
             "aiograd, cpu:0 + cpu:1": "aiograd, all on cpu:0"}
    for r in rows:
        base = vals.get(pairs.get(r["engine"], ""))
        r["speedup"] = base / r["value"] if base and r["value"] else None


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Measure one- vs two-device backward (BLAS 1 thread, then default); print and return rows."""
    size = QUICK_SIZE if quick else SIZE
    branches = make_arrays(size)
    rows: list[dict[str, Any]] = []
    for n in (1, None):
        with blas_threads(n) as label:
            rows += _measure_config(label, branches, repeat)
        if label.startswith("BLAS default (threadpoolctl"):
            break
    H.print_table(f"devices: 2 branches x {DEPTH} matmuls {size}x{size}, backward time", rows,
                  extra_cols=("speedup",))
    H.print_targets(_targets(rows))
    return rows


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["engine"] == "aiograd, cpu:0 + cpu:1":
            out.append(H.target_line(f"(c) {r['case']}: 2-device speedup", r.get("speedup"), ">=",
                                     TARGET_SPEEDUP))
    return out
