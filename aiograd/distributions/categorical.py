"""Families over categories: Categorical (an index), OneHotCategorical (a one-hot vector) and
Multinomial (counts over ``total_count`` draws).

Each takes ``probs`` (nonnegative weights along the last dimension, normalized here) or
``logits`` (unnormalized log probabilities, normalized by logsumexp), exactly one.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops import lgamma
from ..tensor import arange, as_tensor, eye
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits, rng
from ..nn.functional import one_hot
from .discrete import Binomial

__all__ = ["Categorical", "OneHotCategorical", "Multinomial"]


def _sample_indices(probs: np.ndarray, n: int) -> np.ndarray:
    """``n`` category draws for each row of ``probs`` (rows x categories): shape (n, rows)."""
    cdf = np.cumsum(probs, axis=-1)
    cdf /= cdf[:, -1:]
    u = rng().random((n, probs.shape[0], 1))
    return np.minimum((u > cdf[None]).sum(-1), probs.shape[-1] - 1)


class Categorical(Distribution):
    """A category index in ``[0, K)`` drawn with probabilities ``probs`` (or ``softmax(logits)``)
    over the last dimension; the leading dimensions are the batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            assert logits is not None
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Categorical":
        new = self._expand_params(Categorical, batch_shape, _instance, {"probs": 1, "logits": 1})
        new._param = new.probs if "probs" in self.__dict__ and self._param is self.probs else new.logits
        new._num_events = self._num_events
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), math.nan)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)
        with no_grad():
            p = self.probs.detach().numpy().reshape(-1, self._num_events)
            n = int(np.prod(sample_shape)) if sample_shape else 1
            idx = _sample_indices(p, n)
            return as_tensor(idx.reshape(self._extended_shape(sample_shape)).astype(np.int64))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        # the index is data, not a graph: built in numpy, so log_prob costs a gather and a squeeze
        idx = np.asarray(value.detach().numpy()).astype(np.int64)[..., None]
        logits = self.logits
        batch = np.broadcast_shapes(idx.shape[:-1], tuple(logits.shape[:-1]))
        if tuple(logits.shape[:-1]) != batch:
            logits = logits.expand(batch + (self._num_events,))
        if idx.shape[:-1] != batch:
            idx = np.ascontiguousarray(np.broadcast_to(idx, batch + (1,)))
        return logits.gather(-1, Tensor._wrap(idx, logits.device)).squeeze(-1)

    def entropy(self) -> Tensor:
        lowest = float(np.finfo(self.logits.detach().numpy().dtype).min)
        logits = self.logits.clamp(min=lowest)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """A one-hot vector of length K whose hot index is Categorical(probs or logits)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "OneHotCategorical":
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return one_hot(self.probs.argmax(-1), self.probs.shape[-1]).to(self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        idx = self._categorical.sample(sample_shape)
        return one_hot(idx, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self._event_shape[0]
        values = eye(n, dtype=self._param.dtype).reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + self._batch_shape + (n,)) if expand else values

    def __repr__(self) -> str:
        return "OneHotCategorical(" + repr(self._categorical)[len("Categorical("):]


class Multinomial(Distribution):
    """Counts over K categories from ``total_count`` draws of Categorical(probs or logits)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Multinomial":
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)
        with no_grad():
            k = self._event_shape[0]
            p = self._categorical.probs.detach().numpy().reshape(-1, k)
            n = int(np.prod(sample_shape)) if sample_shape else 1
            idx = _sample_indices(p, n * self.total_count).reshape(self.total_count, n, -1)
            counts = (idx[..., None] == np.arange(k)).sum(0)  # (n, rows, k)
            return as_tensor(counts.reshape(self._extended_shape(sample_shape)).astype(p.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        shape = np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape))
        logits, value = self.logits.expand(shape), value.expand(shape)
        # 0 * log 0 = 0: a category of zero probability that is never drawn adds nothing
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0.0)
        log_powers = (logits * value).sum(-1)
        log_factorials = lgamma(value.sum(-1) + 1) - lgamma(value + 1).sum(-1)
        return log_factorials + log_powers

    def entropy(self) -> Tensor:
        # H = -E[log n!] + sum_i E[log x_i!] - n sum_i p_i log p_i, x_i ~ Binomial(n, p_i)
        n = self.total_count
        binomial = Binomial(total_count=n, probs=self.probs, validate_args=False)
        support = binomial.enumerate_support(False)  # (n + 1, 1, ..., 1)
        weights = binomial.log_prob(support).exp()
        expected_log_fact = (weights * lgamma(support + 1)).sum(0)
        cat_entropy = self._categorical.entropy()
        return n * cat_entropy - math.lgamma(n + 1) + expected_log_fact.sum(-1)

    def __repr__(self) -> str:
        return "Multinomial(" + repr(self._categorical)[len("Categorical("):]
