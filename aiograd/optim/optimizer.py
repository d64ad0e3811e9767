"""Optimizer: the base class of aiograd's optimizers, as torch.optim.Optimizer.

Parameters are split into ``param_groups`` (dicts holding ``params`` and the
hyperparameters, defaults filled from ``defaults``; ``param_names`` too when
the parameters were given as ``named_parameters()``); per-parameter state
(momentum buffers, moment estimates, step counters, as Tensors) lives in
``state``. ``step()`` updates ``p._data`` in place under no_grad and bumps each
parameter's version, so a graph that saved the old value notices. ``await
step_async()`` makes the same update off the event loop, copy-on-write, so that
passes still in flight over the old values are unharmed (NOTE [Step off the loop]).

A built-in optimizer implements ``_update_group(group)``; ``step`` (here)
evaluates the closure and runs it over every group. A closure may be
``async def`` (it awaits ``loss.backward()``): ``step`` then returns an
awaitable that runs the closure and then the update, ``loss = await
opt.step(closure)``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain
from typing import Any, Awaitable, Callable, Iterable

import numpy as np

from ..autograd import executors
from ..autograd.backward_call import StepCall, check_backward_awaited
from ..autograd.backward_call import pending as _backward_pending
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.accumulate import accumulate_into_grad, grad_lock
from ..autograd.graph import RemovableHandle, VersionCounter
from ..tensor import Tensor
from ._inplace import scalar, step_state

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()

StepHook = Callable[["Optimizer", tuple, dict], Any]
_global_step_pre_hooks: "OrderedDict[int, StepHook]" = OrderedDict()
_global_step_post_hooks: "OrderedDict[int, StepHook]" = OrderedDict()


def register_optimizer_step_pre_hook(hook: StepHook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; it may return new (args, kwargs)."""
    return RemovableHandle(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: StepHook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return RemovableHandle(_global_step_post_hooks, hook)


def _with_step_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a class's ``step`` so the registered step hooks run around it, after a check that
    no ``backward()`` of this task was left un-awaited (NOTE [Forgotten await]).

    A ``step`` reached through ``super().step()`` from an overriding subclass
    runs bare: the subclass's own wrapper already runs the hooks. When ``step``
    returns an awaitable (an async closure), the post hooks run once it is done.
    """

    @functools.wraps(step)
    def hooked(self: "Optimizer", *args: Any, **kwargs: Any) -> Any:
        if type(self).step is not hooked:
            return step(self, *args, **kwargs)
        if _backward_pending() is not None:  # NOTE [Forgotten await]
            check_backward_awaited()
        for pre in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        if inspect.isawaitable(out):
            return _post_hooks_after(self, out, args, kwargs)
        self._run_step_post_hooks(args, kwargs)
        return out

    hooked._with_step_hooks = True  # type: ignore[attr-defined]
    return hooked


async def _post_hooks_after(opt: "Optimizer", pending: Awaitable[Any], args: tuple, kwargs: dict) -> Any:
    out = await pending
    opt._run_step_post_hooks(args, kwargs)
    return out


def _call_closure(closure: Callable[[], Any]) -> Any:
    """Run the closure with gradients enabled (an async closure's coroutine is returned, not awaited)."""
    with enable_grad():
        return closure()


async def _await_closure(pending: Awaitable[Any]) -> Any:
    with enable_grad():
        return await pending


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses implement ``_update_group`` (or ``step``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not getattr(cls.__dict__["step"], "_with_step_hooks", False):
            cls.step = _with_step_hooks(cls.__dict__["step"])  # type: ignore[method-assign]

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, StepHook] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, StepHook] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("step_pre", "step_post", "state_dict_pre", "state_dict_post",
                     "load_state_dict_pre", "load_state_dict_post"):
            self.__dict__.setdefault(f"_optimizer_{name}_hooks", OrderedDict())
        # A checkpoint from an older version may lack newer hyperparameters: fill them from defaults.
        for group in self.param_groups:
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    # ----- parameter groups ---------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (missing ones from ``defaults``).

        ``params`` may hold Tensors or ``(name, tensor)`` pairs (``named_parameters()``); with
        names, they are kept under ``param_names``, and every group must have them.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    f"all optimizer param groups should be with/without names. cannot add param group {which} "
                    "to the optimizer"
                )
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default, as torch)."""
        if _backward_pending() is not None:
            check_backward_awaited()
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                elif g.grad_fn is None and g._data.flags.writeable:
                    g._data[...] = 0
                    g._bump_version()
                else:
                    p._grad = Tensor._wrap(np.zeros_like(g._data), g._device)

    # ----- step ---------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, in place; return the closure's loss (or None).

        ``closure`` re-evaluates the model and returns the loss. When it is ``async
        def`` (or returns an awaitable), ``step`` returns an awaitable instead: the
        closure and then the update run when it is awaited, ``loss = await
        opt.step(closure)``.
        """
        if closure is None:
            self._update()
            return None
        loss = _call_closure(closure)
        if inspect.isawaitable(loss):
            return self._update_after(loss)
        self._update()
        return loss

    async def _update_after(self, pending: Awaitable[Any]) -> Any:
        loss = await _await_closure(pending)
        self._update()
        return loss

    def _update(self) -> None:
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)

    def _update_group(self, group: dict[str, Any]) -> None:
        """Update the parameters of one group in place (built-in optimizers implement this)."""
        raise NotImplementedError(f"{type(self).__name__} must implement step() (or _update_group())")

    # NOTE [Step off the loop]: ``step_async`` is ``step()`` then ``zero_grad()``,
    # run on aiograd's cpu executor, and safe while other tasks train the same
    # parameters:
    # - It takes the gradients present when called (on the loop thread, before
    #   its first await) and sets ``.grad`` to None, so a gradient committed by
    #   another pass meanwhile is kept for the next step: every gradient is
    #   applied exactly once, none is lost to another task's zero_grad().
    # - Copy-on-write: the class's own ``step`` (hooks included) runs on a shallow
    #   clone of this optimizer whose params and state are private copies; then
    #   the new state and each parameter's new array and version counter replace
    #   the old ones (plain assignments, no arithmetic). Arrays that graphs in
    #   flight saved are never written, so their backward passes do not fail
    #   ("modified by an inplace operation") and compute the gradient of what
    #   their forward really used. The copies take the gradient's memory layout
    #   (``_private_copy``), so a parameter may come back Fortran-ordered.
    # - The executor has one thread: steps run one after another in call order,
    #   and never beside a forward run through ``ag.offload``, which therefore
    #   sees all of one update or none of it.
    # - A step that is cancelled before it starts, or that raises, changes
    #   nothing and gives its gradients back to ``.grad``; a step that has
    #   started when its caller is cancelled is applied in full before the
    #   cancellation is raised (NOTE [Offload and cancellation]).
    def step_async(self) -> StepCall:
        """``step()`` then ``zero_grad()``, off the event loop and copy-on-write (NOTE [Step off the loop]).

        Safe while other tasks run passes over the same parameters: their passes
        keep the values they saw, and every gradient is applied by exactly one step.
        Nothing happens until the result is awaited, ``await opt.step_async()``; a
        forgotten ``await`` is reported as ``backward()``'s is (NOTE [Forgotten await]).
        """
        return StepCall(self._step_async, (), {}, "opt.step_async()")

    async def _step_async(self) -> None:
        grads = self._take_grads()
        if not grads:
            return
        job = executors.submit(self._step_on_copies, grads)
        try:
            await executors.await_job(job)
        except BaseException:
            if job.cancelled() or (job.done() and job.exception() is not None):
                self._give_back(grads)
            raise

    def _take_grads(self) -> dict[Tensor, Tensor]:
        """Each parameter's ``.grad``, taken (set to None) atomically (NOTE [Atomic accumulation])."""
        grads = {}
        for group in self.param_groups:
            for p in group["params"]:
                with grad_lock(p):
                    g, p._grad = p._grad, None
                if g is not None:
                    grads[p] = g
        return grads

    def _give_back(self, grads: dict[Tensor, Tensor]) -> None:
        for p, g in grads.items():
            accumulate_into_grad(p, g if g.grad_fn is not None else g._data, owned=False)

    def _step_on_copies(self, grads: dict[Tensor, Tensor]) -> None:
        """On the executor: ``step`` on private copies of params and state, then publish them."""
        copies = {p: _private_copy(p, grads.get(p)) for group in self.param_groups for p in group["params"]}
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.param_groups = [{**g, "params": [copies[p] for p in g["params"]]} for g in self.param_groups]
        clone.state = defaultdict(dict, {copies[p]: _copy_state(s, copies[p]._data) if p in copies else s
                                         for p, s in self.state.items()})
        type(self).step(clone)  # the class's step: an instance attribute (an LR scheduler's wrapper) calls self
        originals = {id(c): p for p, c in copies.items()}
        for group, done in zip(self.param_groups, clone.param_groups):
            for k, v in done.items():
                if k != "params" and group.get(k) is not v:
                    group[k] = v
        for k, v in clone.__dict__.items():
            if k not in ("param_groups", "state") and self.__dict__.get(k) is not v:
                self.__dict__[k] = v
        self.state = defaultdict(dict, {originals.get(id(c), c): s for c, s in clone.state.items()})
        self._opt_called = True  # an LR scheduler's order check: the optimizer has stepped
        for p in grads:
            c = copies[p]
            # Counter first: a reader between the two lines sees the old array under the new counter.
            p._version_counter = c._version_counter
            p._data = c._data

    # ----- hooks ----------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: StepHook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None | (args, kwargs)`` runs before each ``step``."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: StepHook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[["Optimizer"], None], prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs before ``state_dict`` builds its result."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` runs on ``state_dict``'s result."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None | state_dict`` runs before ``load_state_dict`` reads it."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[["Optimizer"], None], prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _run_step_post_hooks(self, args: tuple, kwargs: dict) -> None:
        for post in chain(self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()):
            post(self, args, kwargs)

    # ----- state_dict ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, as torch.

        Parameters are numbered in group order; the per-parameter state dicts are the
        optimizer's own (not copies), as torch's are: deep-copy to keep a snapshot.
        """
        for pre in self._optimizer_state_dict_pre_hooks.values():
            pre(self)
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {(index[id(p)] if isinstance(p, Tensor) else p): s for p, s in self.state.items()}
        result: dict[str, Any] = {"state": state, "param_groups": groups}
        for post in self._optimizer_state_dict_post_hooks.values():
            out = post(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and state saved by ``state_dict`` (same parameter layout).

        Floating state Tensors are copied and cast to their parameter's dtype, except the
        ``step`` counters, which keep theirs (as torch).
        """
        state_dict = state_dict.copy()
        for pre in self._optimizer_load_state_dict_pre_hooks.values():
            out = pre(self, state_dict)
            if out is not None:
                state_dict = out
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(self.param_groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = {
            i: p for g, saved in zip(self.param_groups, saved_groups) for i, p in zip(saved["params"], g["params"])
        }
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _cast_state(param, val, key) for key, val in v.items()}
            else:
                state[k] = v
        for g, saved in zip(self.param_groups, saved_groups):
            saved["params"] = g["params"]
            if "param_names" in g and "param_names" not in saved:
                saved["param_names"] = g["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for post in self._optimizer_load_state_dict_post_hooks.values():
            post(self)


Optimizer.step = _with_step_hooks(Optimizer.step)  # type: ignore[method-assign]


def _register(store: "OrderedDict[int, Any]", hook: Any, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(store, hook)
    if prepend:
        store.move_to_end(handle.id, last=False)
    return handle


def _typename(obj: Any) -> str:
    return "aiograd.Tensor" if isinstance(obj, Tensor) else type(obj).__name__


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """A copy of one loaded state value: Tensors (and arrays) cast to ``param``'s floating dtype."""
    if isinstance(value, (Tensor, np.ndarray)):
        arr = value._data if isinstance(value, Tensor) else value
        if key != "step" and param._data.dtype.kind == "f":
            arr = arr.astype(param._data.dtype)
        return Tensor._wrap(np.array(arr, copy=True), param._device)
    if key in ("step", "mu_product") and isinstance(value, (int, float)):
        return step_state(float(value))  # a checkpoint that kept these as numbers (older torch)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return copy.deepcopy(value)


# ----- shared by the optimizers ---------------------------------------------------------------


def _grad_array(p: Tensor) -> np.ndarray | None:
    """The gradient array of ``p`` (None when it has none)."""
    g = p._grad
    if g is None:
        return None
    if g._data.shape != p._data.shape:
        raise RuntimeError(f"gradient of shape {list(g.shape)} does not match parameter of shape {list(p.shape)}")
    return g._data


def _private_copy(p: Tensor, g: Tensor | None) -> Tensor:
    """A stand-in for ``p`` in ``step_async``: a copy to update if ``p`` has a gradient, else read-only.

    The copy takes the gradient's memory layout, so that the update's elementwise
    passes read both in order: a Linear weight's gradient arrives transposed
    (Fortran-ordered), and a C-ordered parameter against it makes every pass ~15x
    slower. The values are unchanged; only the first step pays the reordering.
    """
    if g is None:
        arr = p._data.view()
        arr.flags.writeable = False  # a step that writes a parameter without a gradient fails loudly
    else:
        arr = _copy_like(p._data, g._data)
    c = Tensor._wrap(arr, p._device)
    c._requires_grad = p._requires_grad
    c._grad = g
    c._version_counter = VersionCounter(p._version_counter)  # a counter of its own at p's value
    return c


def _copy_like(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A copy of ``a`` (its dtype) in ``like``'s memory layout when they have one shape, else in ``a``'s."""
    out = np.empty_like(like if like.shape == a.shape else a, dtype=a.dtype)
    np.copyto(out, a)
    return out


def _copy_state(state: dict[str, Any], like: np.ndarray) -> dict[str, Any]:
    """One parameter's state with its arrays copied (in the layout of ``like``, the parameter's copy)."""
    return {k: Tensor._wrap(_copy_like(v._data, like), v._device) if isinstance(v, Tensor)
            else _copy_like(v, like) if isinstance(v, np.ndarray) else v for k, v in state.items()}


def _bump(p: Tensor) -> None:
    p._bump_version()


def _check_lr(lr: Any) -> None:
    """Validate ``lr`` as torch does: a non-negative number or a 1-element Tensor."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr._data.dtype.kind not in "biuf":
            raise TypeError(f"Tensor lr must be real, but got dtype {lr.dtype}")
    elif not isinstance(lr, (int, float, np.integer, np.floating)):  # bool is an int, as torch lets it be
        raise TypeError(f"lr must be a float or a 1-element Tensor, but got {type(lr).__name__}")
    if not 0.0 <= scalar(lr):
        raise ValueError(f"Invalid learning rate: {scalar(lr)}")


def _check_nonnegative(**values: Any) -> None:
    """torch's range checks: ``Invalid <name> value: <v>`` for the first negative one, in the order given."""
    for name, value in values.items():
        if not 0.0 <= scalar(value):
            raise ValueError(f"Invalid {name} value: {value}")


def _check_impl_flags(
    opt: Optimizer, *, foreach: Any = None, fused: Any = None, capturable: Any = False, differentiable: Any = False
) -> None:
    """Accept torch's implementation switches where they change nothing on numpy; refuse the rest.

    ``foreach`` and ``fused`` choose among torch's kernels for the same update: on numpy
    they change nothing and are accepted (with torch's own consistency errors).
    ``capturable`` (CUDA graphs) and ``differentiable`` (autograd through ``step``)
    would change what ``step`` does and are refused with a message saying so.
    """
    name = type(opt).__name__
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise RuntimeError(
            f"{name}(differentiable=True) is not supported: aiograd's optimizers update parameters in place "
            "outside the autograd graph, so no gradient can flow through step(). Leave differentiable=False."
        )
    if capturable:
        raise RuntimeError(
            f"{name}(capturable=True) is not supported: it makes an optimizer safe to capture in a CUDA graph, "
            "and aiograd's parameters are numpy arrays. Leave capturable=False."
        )


def _check_fused_param(p: Tensor) -> None:
    """torch's ``fused=True`` runs only on real floating parameters."""
    if p._data.dtype.kind != "f":
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of supported devices: ['cpu'] "
            f"but {p.dtype} and cpu"
        )
