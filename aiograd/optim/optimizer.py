"""Optimizer: the base class of aiograd's optimizers, as torch.optim.Optimizer.

Parameters are split into ``param_groups`` (dicts holding ``params`` and the
hyperparameters, defaults filled from ``defaults``); per-parameter state
(momentum buffers, moment estimates) lives in ``state``. ``step()`` updates
``p._data`` in place under no_grad and bumps each parameter's version, so a
graph that saved the old value notices.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

from ..tensor import Tensor

__all__ = ["Optimizer"]


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()


class Optimizer:
    """Holds parameter groups and state; subclasses implement ``step``."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + type(params).__name__
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (missing ones from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default, as torch)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                elif g.grad_fn is None and g._data.flags.writeable:
                    g._data[...] = 0
                    g._version_counter.value += 1
                else:
                    p._grad = Tensor._wrap(np.zeros_like(g._data), g._device)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        raise NotImplementedError

    def _run_closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad

        with enable_grad():
            return closure()

    # ----- state_dict -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` as torch."""
        index: dict[int, int] = {}
        groups = []
        start = 0
        for g in self.param_groups:
            ids = list(range(start, start + len(g["params"])))
            for i, p in zip(ids, g["params"]):
                index[id(p)] = i
            start += len(ids)
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = ids
            groups.append(packed)
        state = {}
        for p, s in self.state.items():
            state[index[id(p)]] = {
                k: (Tensor._wrap(v.copy()) if isinstance(v, np.ndarray) else copy.deepcopy(v)) for k, v in s.items()
            }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and state saved by ``state_dict`` (same parameter layout)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(self.param_groups, groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = {}
        for g, saved in zip(self.param_groups, groups):
            for p, i in zip(g["params"], saved["params"]):
                id_map[i] = p
            for k, v in saved.items():
                if k != "params":
                    g[k] = v
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = id_map[i]
            self.state[p] = {
                k: (np.array(v._data if isinstance(v, Tensor) else v, dtype=p._data.dtype)
                    if isinstance(v, (Tensor, np.ndarray)) else copy.deepcopy(v))
                for k, v in s.items()
            }


def _grad_array(p: Tensor, maximize: bool = False) -> np.ndarray | None:
    """The gradient array of ``p`` (None when it has none)."""
    g = p._grad
    if g is None:
        return None
    if g._data.shape != p._data.shape:
        raise RuntimeError(f"gradient of shape {list(g.shape)} does not match parameter of shape {list(p.shape)}")
    return g._data


def _bump(p: Tensor) -> None:
    p._version_counter.value += 1

