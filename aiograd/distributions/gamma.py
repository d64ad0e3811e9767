"""The gamma family and the families drawn from gamma samples: Gamma, Chi2, Beta, Dirichlet, StudentT.

Their reparameterized samples come from ``standard_gamma`` (NOTE [Gamma reparameterization]
in utils.py), so gradients reach the concentrations.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ..ops import digamma, lgamma, stack, where, xlogy
from .._random import randn
from ..tensor import Tensor, full
from ..tensor import arange as ag_arange
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, gammainc, standard_gamma, tiny

__all__ = ["Gamma", "Chi2", "Beta", "Dirichlet", "StudentT"]


class Gamma(Distribution):
    """The gamma distribution of shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: Optional[bool] = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.concentration.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Gamma":
        return self._expand_params(Gamma, batch_shape, _instance,
                                   {"concentration": 0, "rate": 0})

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration, shape) / self.rate.expand(shape)
        return x.clamp(min=tiny(x.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, r = self.concentration, self.rate
        return xlogy(a, r) + xlogy(a - 1, value) - r * value - lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: Optional[bool] = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, full((), 0.5, dtype=df.dtype).expand(tuple(df.shape)),
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Chi2":
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)  # type: ignore[return-value]

    @property
    def df(self) -> Tensor:
        return self.concentration * 2

    def __repr__(self) -> str:
        df = self.df
        return f"Chi2(df: {df.item() if df.numel() == 1 else tuple(df.shape)})"


def _dirichlet_rsample(concentration: Tensor, shape: tuple[int, ...]) -> Tensor:
    g = standard_gamma(concentration, shape)
    return g / g.sum(-1, keepdim=True)


def _dirichlet_mode(c: Tensor) -> Tensor:
    """The mode of Dirichlet(c): ``(c - 1)+`` normalized. Where every concentration is below 1
    the density is unbounded at every vertex; that case gives the first vertex, as torch does."""
    cm1 = (c - 1).clamp(min=0.0)
    total = cm1.sum(-1, keepdim=True)
    below = (c < 1).all(-1, keepdim=True)
    first = (ag_arange(c.shape[-1]) == 0).to(c.dtype)
    return where(below, first, cm1 / where(below, total + 1, total))


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of the last dimension of ``concentration``."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: Optional[bool] = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Dirichlet":
        return self._expand_params(Dirichlet, batch_shape, _instance,
                                   {"concentration": 1})

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return _dirichlet_rsample(self.concentration, self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0**2 * (c0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(c0) - (k - c0) * digamma(c0) - ((c - 1.0) * digamma(c)).sum(-1)


class Beta(Distribution):
    """The beta distribution on [0, 1] with shape parameters ``concentration1`` (alpha) and
    ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Optional[bool] = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(tuple(self.concentration1.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Beta":
        return self._expand_params(Beta, batch_shape, _instance,
                                   {"concentration1": 0, "concentration0": 0})

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return _dirichlet_mode(stack([self.concentration1, self.concentration0], -1)).select(-1, 0)

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        both = stack([self.concentration1, self.concentration0], -1)
        return _dirichlet_rsample(both, shape + (2,)).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return xlogy(a - 1.0, value) + xlogy(b - 1.0, 1.0 - value) + lgamma(a + b) - lgamma(a) - lgamma(b)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t = a + b
        return (lgamma(a) + lgamma(b) - lgamma(t) - (a - 1) * digamma(a) - (b - 1) * digamma(b)
                + (t - 2) * digamma(t))


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: Optional[bool] = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "StudentT":
        return self._expand_params(StudentT, batch_shape, _instance,
                                   {"df": 0, "loc": 0, "scale": 0})

    @property
    def mean(self) -> Tensor:
        return self.loc.masked_fill(self.df <= 1, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        v = (self.scale**2 * df / (df - 2).clamp(min=tiny(df.dtype)))
        v = v.masked_fill((df <= 2) & (df > 1), math.inf)
        return v.masked_fill(df <= 1, math.nan)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # y = x / sqrt(chi2(df) / df), x standard normal
        shape = self._extended_shape(sample_shape)
        x = randn(shape, dtype=self.df.dtype)
        chi2 = 2 * standard_gamma(0.5 * self.df, shape)
        return self.loc + self.scale * x * (chi2 / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + lgamma(0.5 * df)
             - lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * (y**2 / df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
