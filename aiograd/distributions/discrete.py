"""Scalar discrete families: Bernoulli, Binomial, Geometric, Poisson.

Bernoulli, Binomial and Geometric take either ``probs`` or ``logits`` (exactly one); the
other is derived on first read (``lazy_property``), keeping the graph to the given one.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops import lgamma, xlogy
from ..tensor import arange
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits, rng, tiny

__all__ = ["Bernoulli", "Binomial", "Geometric", "Poisson"]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) without overflow or the thresholded branch."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()


def _bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """-(t log sigmoid(l) + (1 - t) log(1 - sigmoid(l))), stable for large |l|."""
    return _softplus(logits) - target * logits


class _ProbsLogits(Distribution):
    """A family parameterized by ``probs`` or ``logits`` (binary ones)."""

    _binary = True

    def _set_probs_logits(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        _one_of(probs, logits)
        if probs is not None:
            res = broadcast_all(probs, *others)
            self.probs = res[0]
        else:
            res = broadcast_all(logits, *others)
            self.logits = res[0]
        self._param = res[0]
        return res[1:]

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)


class Bernoulli(_ProbsLogits):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Optional[bool] = None) -> None:
        self._set_probs_logits(probs, logits)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Bernoulli":
        new = self._expand_params(Bernoulli, batch_shape, _instance, {"probs": 0, "logits": 0})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        p = self.probs
        return (p >= 0.5).to(p.dtype).masked_fill(p == 0.5, math.nan)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs.expand(shape).detach().numpy()
            return Tensor._wrap((rng().random(shape) < p).astype(p.dtype), self.probs.device)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Binomial(_ProbsLogits):
    """The number of successes in ``total_count`` independent Bernoulli trials of ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        (self.total_count,) = self._set_probs_logits(probs, logits, total_count)
        self.total_count = self.total_count.to(self._param.dtype)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Binomial":
        new = self._expand_params(Binomial, batch_shape, _instance, {"total_count": 0, "probs": 0, "logits": 0})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            n = self.total_count.expand(shape).detach().numpy().astype(np.int64)
            p = self.probs.expand(shape).detach().numpy()
            return Tensor._wrap(rng().binomial(n, p).astype(p.dtype), self.probs.device)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, k = self.total_count, value
        log_comb = lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
        # k log p + (n - k) log(1 - p) = k * logits - n * softplus(logits)
        logits = self.logits
        return log_comb + k * logits - n * _softplus(logits)

    def entropy(self) -> Tensor:
        n = int(self.total_count.max().item())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        values = self.enumerate_support(False)
        lp = self.log_prob(values)
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = int(self.total_count.max().item())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(1 + n, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Geometric(_ProbsLogits):
    """The number of failures before the first success in Bernoulli trials of ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Optional[bool] = None) -> None:
        self._set_probs_logits(probs, logits)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                f"of distribution {self!r} to satisfy the constraint Interval(lower_bound=0.0, "
                f"upper_bound=1.0), but found invalid values:\n{self.probs}"
            )

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Geometric":
        new = self._expand_params(Geometric, batch_shape, _instance, {"probs": 0, "logits": 0})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return self.probs * 0

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs.expand(shape).detach().numpy()
            u = np.clip(rng().random(shape).astype(p.dtype), tiny(p.dtype), 1.0)
            with np.errstate(divide="ignore"):
                k = np.floor(np.log(u) / np.log1p(-p))
            return Tensor._wrap(k.astype(p.dtype), self.probs.device)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # k log(1 - p) + log p, with 0 * log 0 = 0 where p == 1 and k == 0
        return xlogy(value, 1 - probs) + probs.log()

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs) / self.probs


class Poisson(Distribution):
    """The number of events of a Poisson process of ``rate`` in unit time."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Poisson":
        return self._expand_params(Poisson, batch_shape, _instance, {"rate": 0})

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            r = self.rate.expand(shape).detach().numpy()
            return Tensor._wrap(rng().poisson(r).astype(r.dtype), self.rate.device)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)
