"""One training step of an MLP 784-512-512-10 (ReLU, cross-entropy, batch 256, float32).

Rows:
- step: forward + backward + Adam, for aiograd (nn.Sequential, optim.Adam,
  F.cross_entropy), HIPS autograd (autograd.numpy, hand-written Adam), torch CPU
  (1 thread, default threads), and a hand-written numpy forward+backward+Adam
  (the floor);
- backward: the backward alone (forward untimed) vs the numpy floor's backward;
- memory: tracemalloc peak during backward (forward traced too, so arrays
  the graph keeps alive count) for aiograd, HIPS and the numpy floor.
Target (e): aiograd backward <= 1.1x the numpy floor, peak memory <= the floor's.
"""

from __future__ import annotations

import functools
import gc
import inspect
import tracemalloc
from typing import Any, Callable

import numpy as np

from benchmarks import _harness as H

BENCH = "mlp"
SIZES = (784, 512, 512, 10)
BATCH, QUICK_BATCH = 256, 64
LR = 1e-3
TARGET_BACKWARD, TARGET_MEMORY = 1.1, 1.0
FLOOR = "numpy floor"


def make_data(batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 inputs and int64 labels."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((batch, SIZES[0]), dtype=np.float32), rng.integers(0, SIZES[-1], batch)


def init_params(seed: int = 1) -> list[np.ndarray]:
    """[W1, b1, W2, b2, W3, b3] with W of shape (in, out), He-scaled, float32."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        out.append((rng.standard_normal((fan_in, fan_out), dtype=np.float32) * np.sqrt(2.0 / fan_in))
                   .astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


# ---------------------------------------------------------------- numpy floor


def np_forward(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, tuple]:
    """Forward pass; returns the loss and what the backward needs."""
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1
    z1 += b1
    a1 = np.maximum(z1, 0, out=z1)
    z2 = a1 @ w2
    z2 += b2
    a2 = np.maximum(z2, 0, out=z2)
    logits = a2 @ w3
    logits += b3
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    loss = float(np.mean(np.log(s[:, 0]) - logits[rows, y]))
    e /= s
    return loss, (x, y, a1, a2, e)


def np_backward(params: list[np.ndarray], cache: tuple) -> list[np.ndarray]:
    """Backward pass of :func:`np_forward` (ReLU masks from the activations)."""
    _, _, w2, _, w3, _ = params
    x, y, a1, a2, probs = cache
    d = probs.copy()
    d[np.arange(len(y)), y] -= 1.0
    d /= np.float32(len(y))
    gw3, gb3 = a2.T @ d, d.sum(axis=0)
    d = d @ w3.T
    d *= a2 > 0
    gw2, gb2 = a1.T @ d, d.sum(axis=0)
    d = d @ w2.T
    d *= a1 > 0
    gw1, gb1 = x.T @ d, d.sum(axis=0)
    return [gw1, gb1, gw2, gb2, gw3, gb3]


class NumpyAdam:
    """Adam (torch's default hyper-parameters) over a list of numpy arrays, in place."""

    def __init__(self, params: list[np.ndarray], lr: float = LR) -> None:
        self.params, self.lr, self.t = params, lr, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads: list[np.ndarray], b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> None:
        """One update of every parameter from ``grads``."""
        self.t += 1
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + eps)


# ---------------------------------------------------------------- engines
# Each engine is (step, setup_backward, backward): step() runs one training step;
# setup_backward() runs a forward and returns state; backward(state) runs its backward.


def numpy_engine(x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable, Callable]:
    """The hand-written floor."""
    params = init_params()
    opt = NumpyAdam(params)

    def step() -> None:
        _, cache = np_forward(params, x, y)
        opt.step(np_backward(params, cache))

    return step, (lambda: np_forward(params, x, y)[1]), (lambda cache: np_backward(params, cache))


def hips_engine(x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable, Callable]:
    """HIPS autograd: autograd.numpy forward, ``grad``/``make_vjp``, numpy Adam."""
    autograd = H.optional_import("autograd")
    anp = H.optional_import("autograd.numpy")
    if autograd is None or anp is None:
        raise ModuleNotFoundError("autograd")
    params = init_params()
    opt = NumpyAdam(params)
    rows = np.arange(len(y))

    def loss_fn(ps: list[Any]) -> Any:
        w1, b1, w2, b2, w3, b3 = ps
        h = anp.maximum(anp.matmul(x, w1) + b1, 0.0)
        h = anp.maximum(anp.matmul(h, w2) + b2, 0.0)
        logits = anp.matmul(h, w3) + b3
        m = anp.max(logits, axis=1, keepdims=True)
        lse = anp.log(anp.sum(anp.exp(logits - m), axis=1)) + m[:, 0]
        return anp.mean(lse - logits[rows, y])

    grad = autograd.grad(loss_fn)

    def step() -> None:
        opt.step(grad(params))

    return step, (lambda: autograd.make_vjp(loss_fn)(params)[0]), (lambda vjp: vjp(np.float32(1.0)))


def torch_engine(x: np.ndarray, y: np.ndarray, threads: int | None) -> tuple[Callable, Callable, Callable]:
    """torch CPU with ``threads`` intra-op threads (None: torch's default)."""
    torch = H.import_torch(threads)
    if torch is None:
        raise ModuleNotFoundError("torch")
    nn, F = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> None:
        H.import_torch(threads)
        opt.zero_grad()
        F.cross_entropy(model(tx), ty).backward()
        opt.step()

    def setup_backward() -> Any:
        H.import_torch(threads)
        opt.zero_grad()
        return F.cross_entropy(model(tx), ty)

    return step, setup_backward, (lambda loss: loss.backward())


def aiograd_engine(x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable, Callable]:
    """aiograd: nn.Sequential of nn.Linear/nn.ReLU, F.cross_entropy, optim.Adam; async step/backward."""
    ag = H.import_aiograd()
    if ag is None:
        raise ModuleNotFoundError("aiograd")
    import aiograd.nn as nn
    import aiograd.nn.functional as F
    import aiograd.optim as optim

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = optim.Adam(model.parameters(), lr=LR)
    tx, ty = ag.tensor(x), ag.tensor(y)

    async def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(tx), ty)
        await loss.backward()
        opt.step()

    def setup_backward() -> Any:
        opt.zero_grad()
        return F.cross_entropy(model(tx), ty)

    async def backward(loss: Any) -> None:
        await loss.backward()

    return step, setup_backward, backward


ENGINES: list[tuple[str, str, Callable]] = [  # sampled round-robin in this process
    (FLOOR, "numpy", numpy_engine),
    ("aiograd", "aiograd", aiograd_engine),
    ("HIPS autograd", "autograd", hips_engine),
    ("torch (1 thread)", "torch", lambda x, y: torch_engine(x, y, 1)),
]
TORCH_DEFAULT = "torch (default threads)"  # measured in its own process (see H.run_isolated)


def torch_default_samples(kind: str, batch: int, repeat: int) -> list[float]:
    """Samples (s) of torch with its default threads, for H.run_isolated: kind 'step' or 'backward'."""
    x, y = make_data(batch)
    step, setup_backward, backward = torch_engine(x, y, None)
    if kind == "step":
        return H.measure(lambda _: step(), None, repeat).samples
    return H.measure(backward, setup_backward, repeat).samples


# ---------------------------------------------------------------- measurements


def _sampler(fn: Callable, setup: Callable | None, loop: Any) -> H.Sampler:
    """A sampler for ``fn(setup())``: awaited on ``loop`` if ``fn`` is a coroutine function."""
    if inspect.iscoroutinefunction(fn):
        return H.AsyncSampler(fn, setup, loop=loop)
    return H.Sampler(fn, setup)


def step_sampler(factory: Callable, x: np.ndarray, y: np.ndarray, loop: Any) -> H.Sampler:
    """Sampler of one training step (forward + backward + Adam)."""
    step = factory(x, y)[0]
    if inspect.iscoroutinefunction(step):
        async def timed(_: Any) -> None:
            await step()
        return _sampler(timed, None, loop)
    return _sampler(lambda _: step(), None, loop)


def backward_sampler(factory: Callable, x: np.ndarray, y: np.ndarray, loop: Any) -> H.Sampler:
    """Sampler of the backward alone (its forward runs in the untimed setup)."""
    _, setup_backward, backward = factory(x, y)
    return _sampler(backward, setup_backward, loop)


def peak_backward_bytes(setup_backward: Callable, backward: Callable) -> tuple[int, int]:
    """(tracemalloc peak during backward, bytes traced when it started); forward traced too."""
    state = setup_backward()
    _call(backward, state)  # warm-up
    del state
    gc.collect()
    tracemalloc.start()
    try:
        state = setup_backward()
        gc.collect()
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _call(backward, state)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, start


def _call(fn: Callable, arg: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return H.run_async(lambda: fn(arg))
    return fn(arg)


def memory_row(case: str, name: str, module: str, factory: Callable, x: np.ndarray,
               y: np.ndarray) -> dict[str, Any]:
    """tracemalloc peak row for one numpy-backed engine."""
    try:
        _, setup_backward, backward = factory(x, y)
    except ModuleNotFoundError as exc:
        return H.missing(BENCH, case, name, "MB peak", module, exc)
    except Exception as exc:
        return H.failed(BENCH, case, name, "MB peak", exc)
    return _memory_row(case, name, setup_backward, backward)


def _memory_row(case: str, name: str, setup_backward: Callable, backward: Callable) -> dict[str, Any]:
    try:
        peak, start = peak_backward_bytes(setup_backward, backward)
    except Exception as exc:
        return H.failed(BENCH, case, name, "MB peak", exc)
    return H.row(BENCH, case, name, peak / 2**20, "MB peak", at_start_MB=start / 2**20,
                 added_MB=(peak - start) / 2**20)


# ---------------------------------------------------------------- correctness cross-check


def check_aiograd_grads(x: np.ndarray, y: np.ndarray) -> str:
    """Compare aiograd's parameter gradients with the numpy floor's on the same weights."""
    ag = H.import_aiograd()
    if ag is None:
        return "aiograd not available"
    try:
        import aiograd.nn as nn
        import aiograd.nn.functional as F

        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        loss = F.cross_entropy(model(ag.tensor(x)), ag.tensor(y))
        H.run_async(lambda: loss.backward())
        ps = list(model.parameters())
        params = [ps[i].detach().numpy().T.copy() if i % 2 == 0 else ps[i].detach().numpy() for i in range(6)]
        floor_loss, cache = np_forward(params, x, y)
        ref = np_backward(params, cache)
        got = [ps[i].grad.numpy().T if i % 2 == 0 else ps[i].grad.numpy() for i in range(6)]
        ok = abs(float(loss.item()) - floor_loss) < 1e-4 and all(
            np.allclose(g, r, rtol=1e-3, atol=1e-5) for g, r in zip(got, ref))
        return "gradients match the numpy floor" if ok else "GRADIENT/LOSS MISMATCH vs the numpy floor"
    except Exception as exc:
        return f"cross-check failed: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- driver


def run(repeat: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Measure step, backward and memory for every engine; print three tables; return rows."""
    batch = QUICK_BATCH if quick else BATCH
    x, y = make_data(batch)
    suffix = f"(batch {batch})"
    rows: list[dict[str, Any]] = []
    loop = H.new_loop()
    try:
        for key, make in (("step", step_sampler), ("backward", backward_sampler)):
            rows += H.sampled_rows(BENCH, f"{key} {suffix}", "ms", [
                (name, module, functools.partial(make, factory, x, y, loop))
                for name, module, factory in ENGINES], repeat)
            rows.append(H.isolated_row(BENCH, f"{key} {suffix}", TORCH_DEFAULT, "ms", "torch",
                                       "benchmarks.mlp:torch_default_samples", key, batch, repeat))
    finally:
        H.close_loop(loop)
    rows += [memory_row(f"memory {suffix}", name, module, factory, x, y)
             for name, module, factory in ENGINES if not name.startswith("torch")]
    for key, title, extra in (
        ("step", "forward + backward + Adam", ("spread",)),
        ("backward", "backward only (forward untimed)", ("spread",)),
        ("memory", "tracemalloc peak during backward (forward arrays included)", ("at_start_MB", "added_MB")),
    ):
        part = [r for r in rows if r["case"].startswith(key)]
        H.print_table(f"mlp {'-'.join(map(str, SIZES))}, {title}", part,
                      baselines=(FLOOR,) + (("torch (1 thread)",) if key != "memory" else ()),
                      extra_cols=extra)
    check = check_aiograd_grads(x, y)
    print(f"   aiograd correctness: {check}")
    H.print_targets(_targets(rows, suffix))
    return rows + [H.row(BENCH, "check", "aiograd", None, "", check)]


def _targets(rows: list[dict[str, Any]], suffix: str) -> list[str]:
    out = []
    for key, limit, label in (("backward", TARGET_BACKWARD, "backward time"),
                              ("memory", TARGET_MEMORY, "peak memory")):
        a = H.value_of(rows, f"{key} {suffix}", "aiograd")
        f = H.value_of(rows, f"{key} {suffix}", FLOOR)
        r = a / f if a is not None and f else None
        out.append(H.target_line(f"(e) mlp {label}: aiograd/numpy floor", r, "<=", limit))
    return out
