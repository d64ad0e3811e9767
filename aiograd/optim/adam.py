"""Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW (bias-corrected moments, amsgrad, maximize)."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _bump, _grad_array

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba, 2014) with torch's update. For step t and gradient g:

        g = -g if maximize
        Adam: g = g + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g      (amsgrad: v_max = max(v_max, v), used below)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    _decoupled = False

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, in place."""
        loss = self._run_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr = group["lr"]
                beta1, beta2 = group["betas"]
                eps = group["eps"]
                wd = group["weight_decay"]
                amsgrad = group["amsgrad"]
                maximize = group["maximize"]
                for p in group["params"]:
                    g = _grad_array(p, maximize)
                    if g is None:
                        continue
                    x = p._data
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = np.zeros_like(x)
                        state["exp_avg_sq"] = np.zeros_like(x)
                        if amsgrad:
                            state["max_exp_avg_sq"] = np.zeros_like(x)
                    state["step"] += 1
                    t = state["step"]
                    m, v = state["exp_avg"], state["exp_avg_sq"]
                    buf = state.get("_buf")
                    if buf is None or buf.shape != x.shape:
                        buf = state["_buf"] = np.empty_like(x)
                    if maximize:
                        np.negative(g, out=buf)
                        g = buf.copy()
                    if wd != 0:
                        if self._decoupled:
                            x *= 1 - lr * wd
                        else:
                            g = g + wd * x
                    # m = m + (1 - beta1) * (g - m)   (torch uses lerp)
                    np.subtract(g, m, out=buf)
                    buf *= 1 - beta1
                    m += buf
                    # v = beta2 * v + (1 - beta2) * g * g
                    v *= beta2
                    np.multiply(g, g, out=buf)
                    buf *= 1 - beta2
                    v += buf
                    bc1 = 1 - beta1**t
                    bc2_sqrt = math.sqrt(1 - beta2**t)
                    step_size = lr / bc1
                    if amsgrad:
                        vmax = state["max_exp_avg_sq"]
                        np.maximum(vmax, v, out=vmax)
                        np.sqrt(vmax, out=buf)
                    else:
                        np.sqrt(v, out=buf)
                    buf /= bc2_sqrt
                    buf += eps
                    np.divide(m, buf, out=buf)
                    buf *= step_size
                    x -= buf
                    _bump(p)
        return loss

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        for s in sd["state"].values():
            s.pop("_buf", None)
        return sd


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay`` before the step."""

    _decoupled = True

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
