"""RMSprop (Hinton's lecture 6e), as torch.optim.RMSprop: centered variant, momentum, maximize."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer
from ._inplace import add_, addcdiv_, addcmul_, lerp_, mul_, real_view, scratch_like, step_state, zeros_state
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["RMSprop"]


class RMSprop(ElementwiseOptimizer):
    r"""For each parameter p with gradient g:

        g = -g if maximize;  g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        centered:  g_avg = alpha * g_avg + (1 - alpha) * g;  avg = sqrt(v - g_avg^2) + eps
        otherwise: avg = sqrt(v) + eps
        momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
        otherwise:     p = p - lr * g / avg
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
        weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
        foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        _check_impl_flags(self, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["square_avg"] = zeros_state(p._data)
        if hp["momentum"] > 0:
            state["momentum_buffer"] = zeros_state(p._data)
        if hp["centered"]:
            state["grad_avg"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        alpha = hp["alpha"]
        square_avg = real_view(state["square_avg"]._data)
        tmp = scratch_like(x)
        mul_(square_avg, alpha)
        addcmul_(square_avg, g, g, 1 - alpha, tmp)
        avg = scratch_like(x)
        if hp["centered"]:
            grad_avg = real_view(state["grad_avg"]._data)
            lerp_(grad_avg, g, 1 - alpha, tmp)
            np.multiply(grad_avg, grad_avg, out=avg)
            np.subtract(square_avg, avg, out=avg)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(square_avg, out=avg)
        np.add(avg, hp["eps"], out=avg)
        if hp["momentum"] > 0:
            buf = real_view(state["momentum_buffer"]._data)
            mul_(buf, hp["momentum"])
            addcdiv_(buf, g, avg, 1, tmp)
            add_(x, buf, -hp["lr"], tmp)
        else:
            addcdiv_(x, g, avg, -hp["lr"], tmp)
