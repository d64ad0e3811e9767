"""RAdam (rectified Adam, Liu et al. 2019), as torch.optim.RAdam: decoupled weight decay, maximize."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer, update_moments_
from ._inplace import add_, real_view, scratch_like, step_state, zeros_state
from .adam import _check_betas
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["RAdam"]


class RAdam(ElementwiseOptimizer):
    r"""For step t and each parameter p with gradient g:

        g = -g if maximize
        weight_decay:  p = p * (1 - lr * weight_decay) if decoupled_weight_decay else g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        m_hat = m / (1 - beta1^t)
        rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p = p - lr * m_hat * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r
        otherwise:  p = p - lr * m_hat
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
        foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        _check_impl_flags(self, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["exp_avg"] = zeros_state(p._data)
        state["exp_avg_sq"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        beta1, beta2 = hp["betas"]
        step = float(state["step"]._data)
        exp_avg = real_view(state["exp_avg"]._data)
        exp_avg_sq = real_view(state["exp_avg_sq"]._data)
        tmp = scratch_like(x)
        update_moments_(exp_avg, exp_avg_sq, g, beta1, beta2, tmp)
        bias_correction2 = 1 - beta2**step
        update = (exp_avg / (1 - beta1**step)) * hp["lr"]
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            update = update * (bias_correction2**0.5 / (np.sqrt(exp_avg_sq) + hp["eps"])) * rect
        add_(x, update, -1.0, tmp)
