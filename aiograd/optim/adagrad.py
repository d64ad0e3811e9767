"""Adagrad (Duchi et al., 2011), as torch.optim.Adagrad: lr decay, initial accumulator, maximize."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer
from ._inplace import addcdiv_, addcmul_, real_view, scratch_like, step_state, zeros_state
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["Adagrad"]


class Adagrad(ElementwiseOptimizer):
    r"""For step t and each parameter p with gradient g:

        g = -g if maximize;  g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g * g                       (sum starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(sum) + eps)

    As torch, the state of every parameter given to the constructor exists from the start.
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
        initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
        maximize: bool = False, differentiable: bool = False, fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        _check_impl_flags(self, foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p], group)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        # as torch: the constructor's initial_accumulator_value, (v + vj) for a complex parameter
        init = self.defaults["initial_accumulator_value"]
        state["step"] = step_state()
        state["sum"] = zeros_state(p._data, init * (1 + 1j) if p._data.dtype.kind == "c" else init)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        step = float(state["step"]._data)
        clr = hp["lr"] / (1 + (step - 1) * hp["lr_decay"])
        state_sum = real_view(state["sum"]._data)
        tmp = scratch_like(x)
        addcmul_(state_sum, g, g, 1, tmp)
        std = np.sqrt(state_sum, out=scratch_like(x))
        np.add(std, hp["eps"], out=std)
        addcdiv_(x, g, std, -clr, tmp)
