"""SGD with momentum, dampening, weight decay, Nesterov momentum and maximize, as torch.optim.SGD."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _bump, _grad_array, required

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent. For each parameter, with g its gradient:

        g = -g if maximize;  g = g + weight_decay * p
        buf = g (first step) | momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf      (when momentum != 0)
        p = p - lr * g
    """

    def __init__(
        self, params: Iterable[Any], lr: float = required, momentum: float = 0, dampening: float = 0,
        weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
    ) -> None:
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, in place."""
        loss = self._run_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr = group["lr"]
                momentum = group["momentum"]
                dampening = group["dampening"]
                wd = group["weight_decay"]
                nesterov = group["nesterov"]
                maximize = group["maximize"]
                for p in group["params"]:
                    g = _grad_array(p, maximize)
                    if g is None:
                        continue
                    x = p._data
                    if wd != 0 or maximize or momentum != 0:
                        d = np.multiply(g, -1 if maximize else 1, dtype=x.dtype)
                        if wd != 0:
                            d += wd * x
                        if momentum != 0:
                            state = self.state[p]
                            buf = state.get("momentum_buffer")
                            if buf is None:
                                buf = state["momentum_buffer"] = d.copy()
                            else:
                                buf *= momentum
                                buf += (1 - dampening) * d
                            if nesterov:
                                d += momentum * buf
                            else:
                                d[...] = buf
                        d *= lr
                        x -= d
                    else:
                        x -= lr * g
                    _bump(p)
        return loss
