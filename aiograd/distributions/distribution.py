"""The ``Distribution`` base class: shapes, validation, sampling entry points and the repr."""

from __future__ import annotations

import warnings
from typing import Any, Optional

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]

Shape = tuple[int, ...]


def _shape(size: Any) -> Shape:
    if isinstance(size, int):
        return (size,)
    return tuple(int(s) for s in size)


class Distribution:
    """A family's parameters with ``batch_shape`` (independent, not identical distributions) and
    ``event_shape`` (the shape of one draw), as ``torch.distributions.Distribution``.

    ``sample(sample_shape)`` draws without recording gradients, ``rsample`` draws
    differentiably where the family has a reparameterization (``has_rsample``); a draw has
    shape ``sample_shape + batch_shape + event_shape``. With ``validate_args`` on (the
    default, see ``set_default_validate_args``) parameters are checked against
    ``arg_constraints`` on construction, and values against ``support`` in ``log_prob``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: Any = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions created without ``validate_args``."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: Optional[bool] = None) -> None:
        self._batch_shape = _shape(batch_shape)
        self._event_shape = _shape(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            arg_constraints = self.arg_constraints
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                    continue  # a parameter derived from another one, not given
                value = getattr(self, param)
                valid = constraint.check(value)
                if not valid.detach().numpy().all():
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    # ----- shapes -------------------------------------------------------------------------

    @property
    def batch_shape(self) -> Shape:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Shape:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Shape:
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Distribution":
        """A new distribution with its batch dimensions expanded to ``batch_shape`` (parameters
        are expanded views, no copies)."""
        raise NotImplementedError

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and getattr(type(self), "__init__") is not getattr(cls, "__init__"):
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls: type, batch_shape: Any, _instance: Any, names: dict[str, int]) -> Any:
        """The common ``expand``: each named parameter (with its number of event dimensions) expanded."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _shape(batch_shape)
        for name, event_dims in names.items():
            if name in self.__dict__:
                value = getattr(self, name)
                tail = tuple(value.shape[value.dim() - event_dims:]) if event_dims else ()
                setattr(new, name, value.expand(batch_shape + tail))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # ----- properties ---------------------------------------------------------------------

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    # ----- sampling and densities -----------------------------------------------------------

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, recorded by no graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterized draw: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _validate_sample(self, value: Any) -> None:
        """Check a value's type, shape and support before ``log_prob`` (torch's messages)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(
                f"The right-most size of value must match event_shape: {tuple(value.shape)} vs {self._event_shape}."
            )
        actual = tuple(value.shape)
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
            return
        assert support is not None
        valid = support.check(value)
        if not valid.detach().numpy().all():
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            parts.append(f"{p}: {v.item() if v.numel() == 1 else tuple(v.shape)}")
        return self.__class__.__name__ + "(" + ", ".join(parts) + ")"
