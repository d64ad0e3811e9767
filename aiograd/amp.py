"""``ag.amp``: torch's mixed-precision entry points, so training scripts written for them run.

Scripts such as nanoGPT's ``train.py`` build a ``GradScaler`` and an ``autocast``
context unconditionally and switch them off with ``enabled=`` (or by running on the
CPU). aiograd computes in the dtype each tensor has, so:

* ``GradScaler`` is the real loss scaler (scale the loss, unscale the gradients,
  skip the step on inf/NaN, grow or back off the scale), as torch's; asked for
  ``"cuda"``, which aiograd does not have, it warns and disables itself, as torch's
  CPU build does.
* ``autocast`` (also ``ag.autocast``) is a context manager and decorator that is a
  no-op when disabled or when its device is ``"cuda"`` (with torch's warning); an
  enabled CPU autocast raises, because aiograd has no per-op dtype policy yet.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

from ._warn import warn_user
from .autograd.grad_mode import no_grad
from .tensor import Tensor

__all__ = ["GradScaler", "autocast", "is_autocast_available", "CudaAmp"]

_F = TypeVar("_F", bound=Callable[..., Any])


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` can be enabled for ``device_type``: never, in aiograd (see the module doc)."""
    return False


class autocast:
    """torch's ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``.

    Disabled (``enabled=False``) or for ``"cuda"`` (which aiograd lacks: warned, then
    disabled, as torch without CUDA), it changes nothing. Enabled for the CPU it
    raises ``NotImplementedError``: computing in a lower precision per op is not built.
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda":
            warn_user("CUDA is not available or torch_xla is imported. Disabling autocast.")
            self._enabled = False
        if self._enabled:
            raise NotImplementedError(
                f"aiograd does not implement autocast for device_type '{device_type}': it computes in each "
                "tensor's own dtype; pass enabled=False or use contextlib.nullcontext()")

    def __enter__(self) -> "autocast":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def __call__(self, func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class _OptState:
    """What the scaler knows about one optimizer within an iteration (reset by ``update``)."""

    __slots__ = ("unscaled", "stepped", "found_inf")

    def __init__(self) -> None:
        self.unscaled = False
        self.stepped = False
        self.found_inf = False


class GradScaler:
    """Dynamic loss scaling, as ``torch.amp.GradScaler``.

    ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()``: the loss is
    multiplied by the scale; ``step`` divides the gradients by it (or ``unscale_`` does,
    earlier, for clipping) and skips ``opt.step()`` when any gradient is inf or NaN;
    ``update`` halves the scale after such a step (``backoff_factor``) and doubles it
    (``growth_factor``) after ``growth_interval`` clean steps in a row.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            warn_user("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._scale: float | None = None
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker = 0
        self._per_optimizer: dict[int, _OptState] = {}

    def is_enabled(self) -> bool:
        """Whether scaling happens (False after ``enabled=False`` or a ``"cuda"`` request)."""
        return self._enabled

    def _state(self, optimizer: Any) -> _OptState:
        st = self._per_optimizer.get(id(optimizer))
        if st is None:
            st = self._per_optimizer[id(optimizer)] = _OptState()
        return st

    def _check_scale(self, funcname: str) -> float:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration.")
        return self._scale

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list/tuple/iterable of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = self._init_scale
            self._growth_tracker = self._init_growth_tracker
        s = self._scale
        if isinstance(outputs, Tensor):
            return outputs * s
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (once per iteration), noting inf/NaN."""
        if not self._enabled:
            return
        scale = self._check_scale("unscale_")
        st = self._state(optimizer)
        if st.stepped:  # torch's stage order: UNSCALED, then STEPPED; the later stage is the one named
            raise RuntimeError("unscale_() is being called after step().")
        if st.unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = 1.0 / scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    g.mul_(inv)
                    if not found and not bool(np.isfinite(g._data).all()):
                        found = True
        st.found_inf = found
        st.unscaled = True

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` did) and call ``optimizer.step(*args, **kwargs)`` when the
        gradients are finite; return its result, or None when the step is skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        st = self._state(optimizer)
        if st.stepped:
            raise RuntimeError("step() has already been called since the last update().")
        if not st.unscaled:
            self.unscale_(optimizer)
        st.stepped = True
        if st.found_inf:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off or grow the scale from this iteration's steps (or set ``new_scale``), and reset them."""
        if not self._enabled:
            return
        scale = self._check_scale("update")
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        else:
            found_inf = any(st.found_inf for st in self._per_optimizer.values())
            if found_inf:
                self._scale = scale * self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale = scale * self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with inf/NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = new_interval

    def state_dict(self) -> dict[str, Any]:
        """torch's keys (``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker``); empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        self._growth_tracker = self._init_growth_tracker


class _CudaGradScaler(GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: deprecated in torch for ``GradScaler("cuda", ...)``,
    which in aiograd (no CUDA) warns and disables itself when enabled."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warn_user("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                  "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class _CudaAutocast(autocast):
    """``torch.cuda.amp.autocast(...)``: deprecated in torch for ``autocast("cuda", ...)``, a no-op here."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        warn_user("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                  "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning)
        super().__init__("cuda", dtype, enabled, cache_enabled)


class CudaAmp:
    """``ag.cuda.amp``: the deprecated CUDA spellings of ``GradScaler`` and ``autocast``
    (``torch.cuda.amp.GradScaler(enabled=...)`` in nanoGPT's ``train.py``)."""

    GradScaler = _CudaGradScaler
    autocast = _CudaAutocast
