"""L-BFGS with an optional strong-Wolfe line search, as torch.optim.LBFGS; its closure may be ``async def``.

L-BFGS evaluates the closure many times per ``step`` (once per iteration, more
in the line search), and an aiograd closure awaits ``loss.backward()``. So the
algorithm is written once, as a generator that *yields* each time it needs the
loss and gradient at the current parameters and is sent the closure's result
(NOTE [L-BFGS as a generator]). ``step`` drives it: with a plain closure it
calls the closure and returns the first loss, as torch; with an ``async def``
closure it returns a coroutine that awaits the closure at each request::

    async def closure():
        opt.zero_grad()
        loss = model_loss()
        await loss.backward()
        return loss

    loss = await opt.step(closure)

Vectors are the parameters flattened and concatenated (complex parameters as
their (real, imaginary) pairs); scalars computed from them keep the parameters'
dtype, as torch's 0-d tensors do, so the iterates follow torch's in float32.
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Generator, Iterable

import numpy as np

from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from ._inplace import add_, copy_, real_view, scalar
from .optimizer import Optimizer, _bump, _check_lr

__all__ = ["LBFGS"]

# What the algorithm's generator yields (nothing: "evaluate the closure now"), is sent
# (the closure's loss) and returns (the first loss, which ``step`` returns).
_Evaluations = Generator[None, Any, Any]


class LBFGS(Optimizer):
    """Limited-memory BFGS (as torch, after minFunc). One parameter group only.

    ``step(closure)`` needs a closure that zeroes the gradients, recomputes the loss,
    runs backward and returns the loss; an ``async def`` closure makes ``step`` return
    an awaitable (see the module docstring).
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1, max_iter: int = 20, max_eval: int | None = None,
        tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    # ----- driving the algorithm ------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; return the loss of the first closure call.

        With an ``async def`` closure this returns an awaitable that does the same.
        """
        if closure is None or not callable(closure):
            raise TypeError(
                "LBFGS.step() needs a closure: a function that zeroes the gradients, recomputes the loss, "
                "runs backward and returns the loss (it may be async def)"
            )
        algorithm = self._iterate()
        with no_grad():
            next(algorithm)  # runs up to the first evaluation request
        with enable_grad():
            first = closure()
        if inspect.isawaitable(first):
            return self._drive_async(algorithm, closure, first)
        return self._drive_sync(algorithm, closure, first)

    @staticmethod
    def _drive_sync(algorithm: _Evaluations, closure: Callable[[], Any], loss: Any) -> Any:
        while True:
            done, result = _resume(algorithm, loss)
            if done:
                return result
            with enable_grad():
                loss = closure()
            if inspect.isawaitable(loss):
                raise TypeError("LBFGS closure returned an awaitable after returning a loss; make it always async")

    @staticmethod
    async def _drive_async(algorithm: _Evaluations, closure: Callable[[], Any], pending: Awaitable[Any]) -> Any:
        with enable_grad():
            loss = await pending
        while True:
            done, result = _resume(algorithm, loss)
            if done:
                return result
            with enable_grad():
                loss = closure()
                if inspect.isawaitable(loss):
                    loss = await loss

    # ----- flat vectors ---------------------------------------------------------------------
    def _gather_flat_grad(self) -> np.ndarray:
        views = []
        for p in self._params:
            if p._grad is None:
                views.append(np.zeros(real_view(p._data).size, dtype=p._data.real.dtype))
            else:
                views.append(real_view(p._grad._data).reshape(-1))
        return np.concatenate(views)

    def _add_grad(self, step_size: Any, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            x = real_view(p._data)
            n = x.size
            add_(x, update[offset:offset + n].reshape(x.shape), step_size)
            offset += n
            _bump(p)

    def _clone_params(self) -> list[np.ndarray]:
        return [p._data.copy() for p in self._params]

    def _set_params(self, values: list[np.ndarray]) -> None:
        for p, v in zip(self._params, values):
            copy_(p._data, v)
            _bump(p)

    def _directional_evaluate(self, x: list[np.ndarray], t: Any, d: np.ndarray) -> _Evaluations:
        """Loss and flat gradient at ``x + t * d``; the parameters are left at ``x``."""
        self._add_grad(t, d)
        loss = float((yield))
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    # ----- the algorithm (NOTE [L-BFGS as a generator]) ---------------------------------------
    # NOTE [L-BFGS as a generator]
    # ``_iterate`` and ``_strong_wolfe`` never call the closure: each ``yield`` asks the
    # driver to evaluate it (with gradients enabled) and resumes with the loss, the
    # gradients now in ``.grad``. Everything between two yields runs under no_grad. The
    # same code thus serves a plain and an async closure, and the update order is torch's.
    def _iterate(self) -> _Evaluations:
        group = self.param_groups[0]
        lr = scalar(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = yield
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d = _from_state(state.get("d"))
        t = _from_state(state.get("t"))
        old_dirs = _from_state(state.get("old_dirs"))
        old_stps = _from_state(state.get("old_stps"))
        ro = _from_state(state.get("ro"))
        H_diag = _from_state(state.get("H_diag"))
        prev_flat_grad = _from_state(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        al = _from_state(state.get("al"))

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:  # update the memory only on sufficient curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                # two-loop recursion: d = -H g
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q += old_dirs[i] * -al[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += old_stps[i] * (al[i] - be_i)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            # the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_params()
                loss, flat_grad, t, ls_func_evals = yield from self._strong_wolfe(
                    x_init, t, d, loss, flat_grad, gtd, tolerance_change=tolerance_change,
                    max_ls=max_eval - current_evals,
                )
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float((yield))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _to_state(d)
        state["t"] = _to_state(t)
        state["old_dirs"] = _to_state(old_dirs)
        state["old_stps"] = _to_state(old_stps)
        state["ro"] = _to_state(ro)
        state["H_diag"] = _to_state(H_diag)
        state["prev_flat_grad"] = _to_state(prev_flat_grad)
        state["prev_loss"] = prev_loss
        if al is not None:
            state["al"] = _to_state(al)
        return orig_loss

    def _strong_wolfe(
        self, x: list[np.ndarray], t: Any, d: np.ndarray, f: float, g: np.ndarray, gtd: Any,
        c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25,
    ) -> _Evaluations:
        """A step length satisfying the strong Wolfe conditions (bracketing, then cubic zoom)."""
        d_norm = np.abs(d).max()
        g = g.copy()
        f_new, g_new = yield from self._directional_evaluate(x, t, d)
        ls_func_evals = 1
        gtd_new = g_new.dot(d)

        t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
        done = False
        ls_iter = 0
        bracket: list[Any] = []
        bracket_f: list[Any] = []
        bracket_g: list[Any] = []
        bracket_gtd: list[Any] = []
        # bracketing phase
        while ls_iter < max_ls:
            if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
                bracket, bracket_f = [t_prev, t], [f_prev, f_new]
                bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
                break
            if abs(gtd_new) <= -c2 * gtd:
                bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
                done = True
                break
            if gtd_new >= 0:
                bracket, bracket_f = [t_prev, t], [f_prev, f_new]
                bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
                break
            # extrapolate
            min_step = t + 0.01 * (t - t_prev)
            max_step = t * 10
            tmp = t
            t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
            t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
            f_new, g_new = yield from self._directional_evaluate(x, t, d)
            ls_func_evals += 1
            gtd_new = g_new.dot(d)
            ls_iter += 1
        if ls_iter == max_ls:  # reached the maximum number of evaluations
            bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

        # zoom phase: shrink the bracket until a point satisfies the conditions
        insuf_progress = False
        low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
        while not done and ls_iter < max_ls:
            if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
                break
            t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
            # keep away from the bracket's ends unless no progress was made
            eps = 0.1 * (max(bracket) - min(bracket))
            if min(max(bracket) - t, t - min(bracket)) < eps:
                if insuf_progress or t >= max(bracket) or t <= min(bracket):
                    t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                    insuf_progress = False
                else:
                    insuf_progress = True
            else:
                insuf_progress = False
            f_new, g_new = yield from self._directional_evaluate(x, t, d)
            ls_func_evals += 1
            gtd_new = g_new.dot(d)
            ls_iter += 1
            if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
                bracket[high_pos], bracket_f[high_pos] = t, f_new
                bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
                low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
            else:
                if abs(gtd_new) <= -c2 * gtd:
                    done = True
                elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                    bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                    bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
                bracket[low_pos], bracket_f[low_pos] = t, f_new
                bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
        return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _resume(algorithm: _Evaluations, loss: Any) -> tuple[bool, Any]:
    """Send ``loss`` to the algorithm and run it (under no_grad) to its next request: (finished, its result)."""
    try:
        with no_grad():
            algorithm.send(loss)
    except StopIteration as finished:
        return True, finished.value
    return False, None


def _cubic_interpolate(
    x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: tuple[Any, Any] | None = None
) -> Any:
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _to_state(value: Any) -> Any:
    """numpy arrays and scalars as Tensors (torch keeps 0-d tensors), lists element by element."""
    if isinstance(value, list):
        return [_to_state(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._wrap(np.array(value))
    return value


def _from_state(value: Any) -> Any:
    """The inverse of ``_to_state``: 0-d Tensors become numpy scalars, others arrays."""
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    if isinstance(value, Tensor):
        return value._data[()] if value._data.ndim == 0 else value._data.copy()
    return value
