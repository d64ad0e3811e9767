"""Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW (bias-corrected moments, amsgrad, maximize)."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from ._elementwise import ElementwiseOptimizer, update_moments_
from ._inplace import addcdiv_, maximum_, real_view, scalar, scratch_like, step_state, zeros_state
from .optimizer import _check_impl_flags, _check_lr, _check_nonnegative

__all__ = ["Adam", "AdamW"]


class Adam(ElementwiseOptimizer):
    r"""Adam (Kingma & Ba, 2014) with torch's update. For step t and gradient g:

        g = -g if maximize
        weight_decay:  p = p * (1 - lr * weight_decay) if decoupled_weight_decay else g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g      (amsgrad: v_max = max(v_max, v), used below)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    ``lr`` and ``betas`` may be 1-element Tensors (not with ``foreach=True``, as torch).
    ``foreach`` and ``fused`` are accepted and change nothing; ``capturable`` and
    ``differentiable`` are refused when True.
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-3, betas: tuple[Any, Any] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
        maximize: bool = False, capturable: bool = False, differentiable: bool = False,
        fused: bool | None = None, decoupled_weight_decay: bool = False,
    ) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        both_float = isinstance(betas[0], float) and isinstance(betas[1], float)
        both_tensor = isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)
        if not (both_float or both_tensor):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor) and foreach and not capturable:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        _check_impl_flags(self, foreach=foreach, fused=fused, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        if group["foreach"] and isinstance(group["lr"], Tensor) and not group["capturable"]:
            raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
        super()._update_group(group)

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        state["step"] = step_state()
        state["exp_avg"] = zeros_state(p._data)
        state["exp_avg_sq"] = zeros_state(p._data)
        if hp["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_state(p._data)

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        beta1, beta2 = hp["betas"]
        step = float(state["step"]._data)
        m, v = real_view(state["exp_avg"]._data), real_view(state["exp_avg_sq"]._data)
        tmp = scratch_like(x)
        update_moments_(m, v, g, beta1, beta2, tmp)
        if hp["amsgrad"]:
            v = maximum_(real_view(state["max_exp_avg_sq"]._data), v)
        denom = np.sqrt(v, out=scratch_like(x))
        np.divide(denom, (1 - beta2**step) ** 0.5, out=denom)
        np.add(denom, hp["eps"], out=denom)
        addcdiv_(x, m, denom, -hp["lr"] / (1 - beta1**step), tmp)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay`` before the step."""

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-3, betas: tuple[Any, Any] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
        foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def _check_betas(betas: tuple[Any, Any]) -> None:
    """torch's range check on (beta1, beta2): each in [0, 1) (a Tensor must hold one element)."""
    for i in (0, 1):
        if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
            raise ValueError(f"Tensor betas[{i}] must be 1-element")
        if not 0.0 <= scalar(betas[i]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {scalar(betas[i])}")
