"""SGD with momentum, dampening, weight decay, Nesterov momentum and maximize, as torch.optim.SGD."""

from __future__ import annotations

from typing import Any, Iterable

from ._elementwise import hyperparameters, prepared_grad
from ._inplace import add_, copy_state, mul_, real_view, scalar, scratch_like
from .optimizer import Optimizer, _bump, _check_fused_param, _check_impl_flags, _check_lr, _check_nonnegative, _grad_array

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent. For each parameter p with gradient g:

        g = -g if maximize;  g = g + weight_decay * p
        buf = g (first step) | momentum * buf + (1 - dampening) * g      (when momentum != 0)
        g = g + momentum * buf if nesterov else buf
        p = p - lr * g

    ``lr`` and ``weight_decay`` may be 1-element Tensors. ``foreach`` and ``fused`` are
    accepted and change nothing; ``differentiable=True`` is refused. As torch, no state
    is kept without momentum.
    """

    def __init__(
        self, params: Iterable[Any], lr: Any = 1e-3, momentum: float = 0, dampening: float = 0,
        weight_decay: Any = 0, nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None,
        differentiable: bool = False, fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check_nonnegative(momentum=momentum, weight_decay=scalar(weight_decay))
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_impl_flags(self, foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        hp = hyperparameters(group)
        momentum = hp["momentum"]
        for p in group["params"]:
            grad = _grad_array(p)
            if grad is None:
                continue
            if hp["fused"]:
                _check_fused_param(p)
            x = real_view(p._data)
            g = prepared_grad(p, grad, hp)
            if momentum != 0:
                state = self.state[p]
                if state.get("momentum_buffer") is None:
                    state["momentum_buffer"] = copy_state(g, p._data)
                else:
                    buf = real_view(state["momentum_buffer"]._data)
                    mul_(buf, momentum)
                    add_(buf, g, 1 - hp["dampening"], scratch_like(buf))
                buf = real_view(state["momentum_buffer"]._data)
                g = g + momentum * buf if hp["nesterov"] else buf
            add_(x, g, -hp["lr"], scratch_like(x))
            _bump(p)
