"""Adamax (the infinity-norm variant of Adam, Kingma & Ba), as torch.optim.Adamax."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer
from ._inplace import addcdiv_, lerp_, maximum_, mul_, real_view, scratch_like, step_state, zeros_state
from .adam import _check_betas
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["Adamax"]


class Adamax(ElementwiseOptimizer):
    r"""For step t and each parameter p with gradient g:

        g = -g if maximize;  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
        differentiable: bool = False, capturable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        _check_impl_flags(self, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["exp_avg"] = zeros_state(p._data)
        state["exp_inf"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        beta1, beta2 = hp["betas"]
        step = float(state["step"]._data)
        exp_avg = real_view(state["exp_avg"]._data)
        exp_inf = real_view(state["exp_inf"]._data)
        tmp = scratch_like(x)
        lerp_(exp_avg, g, 1 - beta1, tmp)
        mul_(exp_inf, beta2)
        norm = np.abs(g, out=scratch_like(x))
        maximum_(exp_inf, np.add(norm, hp["eps"], out=norm))
        addcdiv_(x, exp_avg, exp_inf, -hp["lr"] / (1 - beta1**step), tmp)
