"""Gradient checking: numeric Jacobians by central differences against the analytic ones.

``await gradcheck(func, inputs)`` (or ``gradcheck(func, inputs)`` where no event
loop runs) follows ``torch.autograd.gradcheck``:

* the numeric Jacobian of every (output, input) pair is built column by
  column: each element of each input that requires grad is moved by ``±eps``
  in place (on ``x._data``, so no version counter moves and no graph sees
  it) and the outputs are differenced, ``(f(x + eps) - f(x - eps)) / 2eps``;
* the analytic Jacobian is built row by row: one ``await grad(output, inputs,
  grad_outputs=unit vector, retain_graph=True, allow_unused=True)`` per
  element of each output. It is built twice and the two must agree within
  ``nondet_tol`` (a backward that is not reentrant, e.g. one that mutates
  what it saved, is caught here);
* they must agree within ``atol + rtol * |numeric|``, else
  ``GradcheckError`` names the output and input and shows both Jacobians.

Jacobians are laid out as torch does: ``J[input][output]`` has shape
``(input.numel(), output.numel())``.

``fast_mode=True`` checks one random projection ``u^T J v`` per pair instead
of the full Jacobians (torch's fast mode), which costs two evaluations and
one backward per pair.

``gradgradcheck`` gradchecks ``inputs, grad_outputs -> grad(func(inputs),
inputs, grad_outputs, create_graph=True)``, which checks second derivatives.

Finite differences at ``eps=1e-6`` need double precision: inputs that
require grad must be float64 (torch warns; aiograd refuses).

A sparse COO input is checked at its specified entries (torch's ``masked``
semantics): its values are moved one at a time, and its analytic gradient
(sparse or dense) is read at its indices; a sparse output counts as the dense
tensor it stands for.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Callable, Coroutine, Sequence

import numpy as np

from .._aio import run_without_loop, running_loop_kind
from .._sparse import SparseCOO
from ..tensor import Tensor
from . import run_grad as grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """The analytic gradient of a function disagrees with its numeric gradient."""


# ----- helpers -------------------------------------------------------------------------


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


async def _call(func: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, ...]:
    out = func(*inputs)
    if inspect.isawaitable(out):
        out = await out
    outs = _as_tuple(out)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"gradcheck: func must return Tensors, but output {i} is a {type(o).__name__}")
    return outs


def _is_float(t: Tensor) -> bool:
    return t._data.dtype.kind in "fc"


def _diff_inputs(inputs: tuple[Any, ...]) -> list[int]:
    idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them do")
    for i in idx:
        dt = inputs[i]._data.dtype
        if dt != np.float64:
            raise ValueError(
                f"gradcheck: input {i} requires grad but has dtype {dt}; gradcheck needs float64 inputs "
                f"(central differences at eps=1e-6 are not precise enough in {dt}): pass x.double()"
            )
        if inputs[i].grad_fn is not None:
            # Perturbing a non-leaf in place would not reach the graph that made it.
            raise ValueError(
                f"gradcheck: input {i} is not a leaf (it has grad_fn {inputs[i].grad_fn.name()}); "
                "pass leaf tensors (x.detach().requires_grad_())"
            )
    return idx


def _fmt(a: np.ndarray) -> str:
    with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=400):
        return np.array2string(a)


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _entries(x: Tensor) -> np.ndarray:
    """The numbers of ``x`` that gradcheck moves: a dense tensor's array, a sparse one's values."""
    d = x._data
    return d.values if d.__class__ is SparseCOO else d


def _dense(a: Any) -> Any:
    return a.to_dense() if a.__class__ is SparseCOO else a


def _grad_entries(x: Tensor, g: Tensor) -> np.ndarray:
    """The gradient ``g`` of ``x`` read at ``_entries(x)``."""
    d = x._data
    if d.__class__ is SparseCOO:
        return d.gather(g._data)
    return _dense(g._data)


class _Perturb:
    """Write ``x[idx] = value`` straight into the tensor's array (no version bump), and undo it."""

    def __init__(self, x: Tensor) -> None:
        self.x = x
        self.orig_array = x._data
        if not x._data.flags.writeable:
            x._data = x._data.copy()
        self.backup = x._data.copy()

    def restore(self) -> None:
        if self.x._data is self.orig_array:
            np.copyto(self.orig_array, self.backup)
        else:
            self.x._data = self.orig_array


async def _eval_float(func: Callable[..., Any], inputs: tuple[Any, ...]) -> list[np.ndarray]:
    outs = await _call(func, inputs)
    return [np.array(_dense(o._data), dtype=np.float64) for o in outs]


# ----- Jacobians -------------------------------------------------------------------------


async def _numeric_jacobian(
    func: Callable[..., Any], inputs: tuple[Any, ...], diff_idx: list[int], out_sizes: list[int], eps: float
) -> list[list[np.ndarray]]:
    """``J[k][j]`` of shape (numel of input diff_idx[k], numel of output j), by central differences."""
    jac: list[list[np.ndarray]] = []
    for i in diff_idx:
        x = inputs[i]
        p = _Perturb(x)
        try:
            data = _entries(x)
            n = data.size
            rows = [np.zeros((n, s)) for s in out_sizes]
            for flat in range(n):
                idx = np.unravel_index(flat, data.shape) if data.ndim else ()
                orig = data[idx].copy()
                data[idx] = orig - eps
                lo = await _eval_float(func, inputs)
                data[idx] = orig + eps
                hi = await _eval_float(func, inputs)
                data[idx] = orig
                for j, (a, b) in enumerate(zip(hi, lo)):
                    rows[j][flat] = ((a - b) / (2 * eps)).reshape(-1)
        finally:
            p.restore()
        jac.append(rows)
    return jac


async def _analytic_jacobian(
    outputs: tuple[Tensor, ...], inputs: tuple[Any, ...], diff_idx: list[int]
) -> tuple[list[list[np.ndarray]], list[str]]:
    """``J[k][j]`` computed row by row with one ``grad`` call per output element, plus problems found."""
    diff_inputs = [inputs[i] for i in diff_idx]
    jac = [[np.zeros((_entries(inputs[i]).size, o._data.size)) for o in outputs] for i in diff_idx]
    problems: list[str] = []
    for j, o in enumerate(outputs):
        if not o._requires_grad or not _is_float(o):
            continue  # a non-differentiable output: its analytic Jacobian is zero
        n = o._data.size
        for flat in range(n):
            unit = np.zeros(n, dtype=o._data.dtype)
            unit[flat] = 1
            gs = await grad(
                o, diff_inputs, grad_outputs=Tensor._wrap(unit.reshape(o.shape), o._device),
                retain_graph=True, allow_unused=True,
            )
            for k, (i, g) in enumerate(zip(diff_idx, gs)):
                if g is None:
                    continue
                x = inputs[i]
                if g.shape != x.shape:
                    problems.append(f"Gradient has incorrect shape for input {i}: got {list(g.shape)}, "
                                    f"expected {list(x.shape)}")
                    continue
                if g._data.dtype != x._data.dtype:
                    problems.append(f"Gradient has dtype mismatch for input {i}: got {g._data.dtype}, "
                                    f"expected {x._data.dtype}")
                if g._device is not x._device:
                    problems.append(f"Gradient has device mismatch for input {i}: got {g._device}, "
                                    f"expected {x._device}")
                jac[k][j][:, flat] = np.asarray(_grad_entries(x, g), dtype=np.float64).reshape(-1)
    return jac, problems


def _close(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


# ----- gradcheck -------------------------------------------------------------------------


def _completes_outside_a_loop(check: Callable[..., Coroutine[Any, Any, bool]]) -> Callable[..., Any]:
    """``check`` as a coroutine inside a running event loop, run to its bool where no loop runs
    (NOTE [Sync outside a loop]): with the loop-free driver, or on a loop of its own
    (``asyncio.run``) when ``func`` is a coroutine function, which may suspend."""

    @functools.wraps(check)
    def run(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        coro = check(func, *args, **kwargs)
        if running_loop_kind() is not None:
            return coro
        if inspect.iscoroutinefunction(func):
            return asyncio.run(coro)
        return run_without_loop(lambda: coro)

    return run


@_completes_outside_a_loop
async def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences (torch.autograd.gradcheck).

    ``func`` may be a function or a coroutine function and returns a Tensor
    or a tuple of Tensors. Inputs that do not require grad are passed
    through unchecked; those that do must be float64 leaves. Returns True,
    or raises ``GradcheckError`` (returns False with ``raise_exception=False``).
    Inside a running event loop the result is awaited (``assert await
    ag.gradcheck(f, (x,))``); where none runs the bool is returned at once.
    """
    inputs = _as_tuple(inputs)
    diff_idx = _diff_inputs(inputs)
    outputs = await _call(func, inputs)
    out_sizes = [o._data.size for o in outputs]

    if fast_mode:
        return await _fast_gradcheck(func, inputs, outputs, diff_idx, eps, atol, rtol, raise_exception)

    numeric = await _numeric_jacobian(func, inputs, diff_idx, out_sizes, eps)

    for j, o in enumerate(outputs):
        if o._requires_grad and _is_float(o):
            continue
        for k, i in enumerate(diff_idx):
            if not _close(numeric[k][j], np.zeros_like(numeric[k][j]), atol, 0.0):
                return _fail(
                    f"Numerical gradient for function expected to be zero: output {j} does not require "
                    f"grad (it is not differentiable) but depends on input {i}:\n"
                    f"numerical:{_fmt(numeric[k][j])}",
                    raise_exception,
                )

    analytic, problems = await _analytic_jacobian(outputs, inputs, diff_idx)
    if problems:
        return _fail(problems[0], raise_exception)
    # NOTE [Reentrant backward check]: a second analytic pass must give the same Jacobian.
    again, _ = await _analytic_jacobian(outputs, inputs, diff_idx)
    for k, i in enumerate(diff_idx):
        for j in range(len(outputs)):
            if not _close(analytic[k][j], again[k][j], nondet_tol, 0.0):
                return _fail(
                    f"Backward is not reentrant, i.e., running backward with same input and grad_output "
                    f"multiple times gives different values, although analytical gradient matches numerical "
                    f"gradient. The tolerance for nondeterminism was {nondet_tol}. (output {j}, input {i})",
                    raise_exception,
                )

    for k, i in enumerate(diff_idx):
        for j in range(len(outputs)):
            n, a = numeric[k][j], analytic[k][j]
            if not _close(a, n, atol, rtol):
                return _fail(
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n",
                    raise_exception,
                )
    return True


async def _fast_gradcheck(
    func: Callable[..., Any],
    inputs: tuple[Any, ...],
    outputs: tuple[Tensor, ...],
    diff_idx: list[int],
    eps: float,
    atol: float,
    rtol: float,
    raise_exception: bool,
) -> bool:
    """torch's fast mode: compare ``u^T J v`` for random unit-norm ``u``, ``v``, per (output, input) pair."""
    rng = np.random.default_rng(0)
    us = []
    for o in outputs:
        u = rng.standard_normal(o._data.size)
        us.append(u / max(float(np.linalg.norm(u)), 1e-300))
    for i in diff_idx:
        x = inputs[i]
        entries = _entries(x)
        v = rng.standard_normal(entries.size)
        v = (v / max(float(np.linalg.norm(v)), 1e-300)).reshape(entries.shape)
        p = _Perturb(x)
        try:
            data = _entries(x)
            base = p.backup.values if p.backup.__class__ is SparseCOO else p.backup
            np.subtract(base, eps * v, out=data)
            lo = await _eval_float(func, inputs)
            np.add(base, eps * v, out=data)
            hi = await _eval_float(func, inputs)
        finally:
            p.restore()
        for j, o in enumerate(outputs):
            num = float(np.dot(((hi[j] - lo[j]) / (2 * eps)).reshape(-1), us[j]))
            ana = 0.0
            if o._requires_grad and _is_float(o):
                (g,) = await grad(
                    o, [x], grad_outputs=Tensor._wrap(us[j].reshape(o.shape).astype(o._data.dtype), o._device),
                    retain_graph=True, allow_unused=True,
                )
                if g is not None:
                    if g.shape != x.shape:
                        return _fail(
                            f"Gradient has incorrect shape for input {i}: got {list(g.shape)}, "
                            f"expected {list(x.shape)}",
                            raise_exception,
                        )
                    ana = float(np.dot(np.asarray(_grad_entries(x, g), dtype=np.float64).reshape(-1), v.reshape(-1)))
            if not abs(ana - num) <= atol + rtol * abs(num):
                return _fail(
                    f"Jacobian mismatch for output {j} with respect to input {i} (fast mode: u^T J v for "
                    f"random u, v),\nnumerical:{num!r}\nanalytical:{ana!r}\n"
                    "Rerun with fast_mode=False to see the full Jacobians.",
                    raise_exception,
                )
    return True


# ----- gradgradcheck -------------------------------------------------------------------


@_completes_outside_a_loop
async def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    fast_mode: bool = False,
) -> bool:
    """Check second derivatives: gradcheck ``(inputs, grad_outputs) -> grad(func(inputs), inputs,
    grad_outputs, create_graph=True)`` (torch.autograd.gradgradcheck).

    Without ``grad_outputs``, random ones in [-1, 1) are drawn (float64,
    requiring grad; non-contiguous with ``gen_non_contig_grad_outputs``).
    """
    inputs = _as_tuple(inputs)
    diff_idx = _diff_inputs(inputs)
    if grad_outputs is None:
        outs = [o for o in await _call(func, inputs) if o._requires_grad and _is_float(o)]
        rng = np.random.default_rng(0)
        gos = []
        for o in outs:
            if gen_non_contig_grad_outputs:
                base = rng.uniform(-1, 1, o.shape + (2,))
                arr = base[..., 0]
            else:
                arr = rng.uniform(-1, 1, o.shape)
            t = Tensor._wrap(np.asarray(arr, dtype=np.float64), o._device)
            t.requires_grad_(True)
            gos.append(t)
        tupled_grad_outputs = tuple(gos)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_inputs_n = len(inputs)

    async def new_func(*args: Any) -> tuple[Tensor, ...]:
        input_args = args[:diff_inputs_n]
        gouts = args[diff_inputs_n:]
        outs = tuple(o for o in await _call(func, input_args) if o._requires_grad and _is_float(o))
        if len(outs) != num_outputs:
            raise ValueError(
                f"gradgradcheck: func has {len(outs)} differentiable outputs but {num_outputs} grad_outputs were given"
            )
        diff = [input_args[i] for i in diff_idx]
        gs = await grad(outs, diff, gouts, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    the_check = gradcheck.__wrapped__  # type: ignore[attr-defined]  # the coroutine: this check already runs
    return await the_check(
        new_func, inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
        raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode,
    )
