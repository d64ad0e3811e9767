"""NAdam (Adam with Nesterov momentum, Dozat 2016), as torch.optim.NAdam: momentum decay, decoupled decay."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer, update_moments_
from ._inplace import addcdiv_, mul_, real_view, scratch_like, step_state, zeros_state
from .adam import _check_betas
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["NAdam"]


class NAdam(ElementwiseOptimizer):
    r"""For step t and each parameter p with gradient g:

        g = -g if maximize
        weight_decay:  p = p * (1 - lr * weight_decay) if decoupled_weight_decay else g = g + weight_decay * p
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));  mu_prod = mu_1 * ... * mu_t
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - mu_prod) * g / denom
              - lr * mu_{t+1} / (1 - mu_prod * mu_{t+1}) * m / denom

    ``mu_product`` is kept as a float32 0-d state (float64 with that default dtype), as torch.
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
        capturable: bool = False, differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        _check_impl_flags(self, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["mu_product"] = step_state(1.0)
        state["exp_avg"] = zeros_state(p._data)
        state["exp_avg_sq"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        beta1, beta2 = hp["betas"]
        lr, momentum_decay = hp["lr"], hp["momentum_decay"]
        step = float(state["step"]._data)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = float(mul_(state["mu_product"]._data, mu))
        exp_avg = real_view(state["exp_avg"]._data)
        exp_avg_sq = real_view(state["exp_avg_sq"]._data)
        tmp = scratch_like(x)
        update_moments_(exp_avg, exp_avg_sq, g, beta1, beta2, tmp)
        denom = np.divide(exp_avg_sq, 1 - beta2**step, out=scratch_like(x))
        np.sqrt(denom, out=denom)
        np.add(denom, hp["eps"], out=denom)
        addcdiv_(x, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product), tmp)
        addcdiv_(x, exp_avg, denom, -lr * mu_next / (1.0 - mu_product * mu_next), tmp)
