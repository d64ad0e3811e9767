"""The update loop shared by the optimizers whose update of a parameter reads only that parameter, its
gradient and its own state (everything in torch.optim but LBFGS).

``ElementwiseOptimizer._update_group`` walks the parameters that have a gradient,
creates their state on first use (``_init_state``), counts the step, turns the
gradient into the one the update uses (``prepared_grad``: maximize, then weight
decay, coupled or decoupled, as every torch optimizer does first) and hands the
real views of parameter and gradient to ``_update_param``, which writes with the
functions of ``_inplace`` (NOTE [Optimizer arrays]).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ._inplace import addcmul_, lerp_, mul_, real_view, scalar
from .optimizer import Optimizer, _bump, _check_fused_param, _grad_array

__all__ = ["ElementwiseOptimizer", "prepared_grad", "hyperparameters", "update_moments_"]


def hyperparameters(group: dict[str, Any]) -> dict[str, Any]:
    """A group's settings with Tensors read out as Python numbers (``lr``, ``betas``, ...), once per step."""
    out: dict[str, Any] = {}
    for key, value in group.items():
        if key in ("params", "param_names"):
            continue
        out[key] = tuple(scalar(v) for v in value) if isinstance(value, tuple) else scalar(value)
    return out


def prepared_grad(p: Tensor, grad: np.ndarray, hp: dict[str, Any]) -> np.ndarray:
    """The gradient an update uses, as a real view: negated when maximizing, plus ``weight_decay * p``;
    with ``decoupled_weight_decay`` the parameter is scaled by ``1 - lr * weight_decay`` instead."""
    g = -grad if hp["maximize"] else grad
    weight_decay = hp["weight_decay"]
    if weight_decay != 0:
        if hp.get("decoupled_weight_decay"):
            mul_(p._data, 1 - hp["lr"] * weight_decay)
        else:
            g = g + weight_decay * p._data
    return real_view(np.asarray(g))


def update_moments_(
    exp_avg: np.ndarray, exp_avg_sq: np.ndarray, g: np.ndarray, beta1: float, beta2: float, scratch: np.ndarray
) -> None:
    """Adam's moment estimates, in place: ``m += (1 - beta1)(g - m)``, ``v = beta2 v + (1 - beta2) g^2``."""
    lerp_(exp_avg, g, 1 - beta1, scratch)
    mul_(exp_avg_sq, beta2)
    addcmul_(exp_avg_sq, g, g, 1 - beta2, scratch)


class ElementwiseOptimizer(Optimizer):
    """Base of the optimizers that update each parameter from its gradient and state alone."""

    def _init_state(self, p: Tensor, state: dict[str, Any], hp: dict[str, Any]) -> None:
        """Fill the empty ``state`` of ``p`` (its first step; ``hp`` are its group's settings)."""
        raise NotImplementedError

    def _update_param(self, x: np.ndarray, g: np.ndarray, state: dict[str, Any], hp: dict[str, Any]) -> None:
        """Update the parameter ``x`` (a real view) in place from the prepared gradient ``g``."""
        raise NotImplementedError

    def _update_group(self, group: dict[str, Any]) -> None:
        hp = hyperparameters(group)
        for p in group["params"]:
            grad = _grad_array(p)
            if grad is None:
                continue
            if hp.get("fused"):
                _check_fused_param(p)
            state = self.state[p]
            if not state:
                self._init_state(p, state, hp)
            state["step"]._data += 1
            self._update_param(real_view(p._data), prepared_grad(p, grad, hp), state, hp)
            _bump(p)
