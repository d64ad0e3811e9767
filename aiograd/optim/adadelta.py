"""Adadelta (Zeiler, 2012), as torch.optim.Adadelta: weight decay, maximize."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer
from ._inplace import add_, addcmul_, mul_, real_view, scratch_like, step_state, zeros_state
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["Adadelta"]


class Adadelta(ElementwiseOptimizer):
    r"""For each parameter p with gradient g:

        g = -g if maximize;  g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1.0, rho: float = 0.9, eps: float = 1e-6,
        weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
        maximize: bool = False, differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        _check_impl_flags(self, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["square_avg"] = zeros_state(p._data)
        state["acc_delta"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        rho, eps = hp["rho"], hp["eps"]
        square_avg = real_view(state["square_avg"]._data)
        acc_delta = real_view(state["acc_delta"]._data)
        tmp = scratch_like(x)
        mul_(square_avg, rho)
        addcmul_(square_avg, g, g, 1 - rho, tmp)
        std = np.add(square_avg, eps, out=scratch_like(x))
        np.sqrt(std, out=std)
        delta = np.add(acc_delta, eps, out=scratch_like(x))
        np.sqrt(delta, out=delta)
        np.divide(delta, std, out=delta)
        np.multiply(delta, g, out=delta)
        mul_(acc_delta, rho)
        addcmul_(acc_delta, delta, delta, 1 - rho, tmp)
        add_(x, delta, -hp["lr"], tmp)
