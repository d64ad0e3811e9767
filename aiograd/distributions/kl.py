"""``kl_divergence(p, q)``: KL(p || q) from a registry of closed forms keyed by pairs of
distribution types, and ``register_kl`` to add pairs.

Lookup follows the types' method resolution orders: among the registered pairs that
``(type(p), type(q))`` are subclasses of, the one whose classes are nearest (by position in
the MROs, p's first) wins, so a subclass (Chi2 of Gamma, LogNormal of TransformedDistribution)
uses its parent's rule unless it has its own. The result of a lookup is cached per pair.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..ops import digamma, erf, lgamma, xlogy
from ..tensor import Tensor, full
from .categorical import Categorical, OneHotCategorical
from .continuous import Cauchy, Exponential, Gumbel, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Geometric, Poisson, _softplus
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .multivariate_normal import MultivariateNormal, _mahalanobis
from .transformed import TransformedDistribution
from .utils import sum_rightmost
from ..linalg import solve

__all__ = ["kl_divergence", "register_kl"]

KLFn = Callable[[Any, Any], Tensor]
_KL_REGISTRY: dict[tuple[type, type], KLFn] = {}
_KL_MEMOIZE: dict[tuple[type, type], KLFn] = {}

_EULER = 0.57721566490153286061
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def register_kl(type_p: type, type_q: type) -> Callable[[KLFn], KLFn]:
    """A decorator registering ``fn(p, q)`` as KL(p || q) for p of ``type_p`` and q of ``type_q``
    (subclasses included, unless a nearer pair is registered)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: KLFn) -> KLFn:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch(type_p: type, type_q: type) -> KLFn | None:
    best: tuple[int, int] | None = None
    found = None
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    for (sup_p, sup_q), fn in _KL_REGISTRY.items():
        if issubclass(type_p, sup_p) and issubclass(type_q, sup_q):
            rank = (mro_p.index(sup_p), mro_q.index(sup_q))
            if best is None or rank < best:
                best, found = rank, fn
    return found


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the broadcast batch shapes."""
    key = (type(p), type(q))
    fn = _KL_MEMOIZE.get(key)
    if fn is None:
        fn = _dispatch(*key)
        if fn is None:
            raise NotImplementedError(
                f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type {q.__class__.__name__}"
            )
        _KL_MEMOIZE[key] = fn
    return fn(p, q)


def _infinite_like(t: Tensor) -> Tensor:
    return full(tuple(t.shape), math.inf, dtype=t.dtype)


def _where_inf(mask: Tensor, value: Tensor) -> Tensor:
    return value.masked_fill(mask, math.inf)


# ----- same family -------------------------------------------------------------------------------


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    # p log(p / q) + (1 - p) log((1 - p) / (1 - q)) through logits: log p = -softplus(-l)
    pp = p.probs
    t1 = pp * (_softplus(-q.logits) - _softplus(-p.logits))
    t2 = (1 - pp) * (_softplus(q.logits) - _softplus(p.logits))
    return t1.masked_fill(pp == 0, 0.0) + t2.masked_fill(pp == 1, 0.0)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * _kl_bernoulli_bernoulli(p, q)
    return kl.masked_fill(p.total_count > q.total_count, math.inf)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand(tuple(t.shape)), math.inf)
    t = t.masked_fill((p.probs == 0).expand(tuple(t.shape)), 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # log(p / q) + E[k] log((1 - p) / (1 - q)), E[k] = (1 - p) / p
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale) ** 2
    return 0.5 * (ratio + ((p.loc - q.loc) / q.scale) ** 2 - 1 - ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    kl = ((q.high - q.low) / (p.high - p.low)).log()
    return _where_inf((q.low > p.low) | (q.high < p.high), kl)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * digamma(a1) - lgamma(a1) + lgamma(a2) + a2 * (r1.log() - r2.log())
            + a1 * (r2 - r1) / r1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    t1 = a1 + b1
    lbeta = lambda a, b: lgamma(a) + lgamma(b) - lgamma(a + b)  # noqa: E731
    return (lbeta(a2, b2) - lbeta(a1, b1) + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1)
            + (a2 - a1 + b2 - b1) * digamma(t1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    a0, b0 = a.sum(-1), b.sum(-1)
    return (lgamma(a0) - lgamma(a).sum(-1) - lgamma(b0) + lgamma(b).sum(-1)
            + ((a - b) * (digamma(a) - digamma(a0).unsqueeze(-1))).sum(-1))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    d = (p.loc - q.loc).abs()
    return -ratio.log() + d / q.scale + ratio * (-d / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return (((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2).log() - (4 * p.scale * q.scale).log())


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    return (-ratio.log() - _EULER - 1 + (p.loc - q.loc) / q.scale + _EULER * ratio
            + ((q.loc - p.loc) / q.scale).exp() * lgamma(ratio + 1).exp())


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_log_det = p._half_log_det() * -1 + q._half_log_det()
    n = p.event_shape[0]
    shape = np.broadcast_shapes(tuple(lp.shape[:-2]), tuple(lq.shape[:-2]))
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|_F^2
    m = solve(lq.expand(shape + (n, n)), lp.expand(shape + (n, n)))
    trace = (m * m).sum((-2, -1))
    maha = _mahalanobis(lq, q.loc - p.loc)
    return half_log_det + 0.5 * (trace + maha - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


# ----- across families ---------------------------------------------------------------------------


def _infinity(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) where p's support reaches outside q's: infinite."""
    return _infinite_like(p.mean if not isinstance(p, Poisson) else p.rate)


for _p, _q in [(Exponential, Beta), (Exponential, Uniform), (Gamma, Beta), (Gamma, Uniform), (Gumbel, Beta),
               (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Uniform), (Laplace, Beta), (Laplace, Exponential),
               (Laplace, Gamma), (Laplace, Uniform), (Normal, Beta), (Normal, Exponential), (Normal, Gamma),
               (Normal, Uniform), (Poisson, Bernoulli), (Poisson, Binomial)]:
    register_kl(_p, _q)(_infinity)


def _normal_expected_log(q: Normal, mean: Tensor, second_moment_about_loc: Tensor) -> Tensor:
    """E[log q(x)] for a Normal q given E[(x - q.loc)^2]."""
    return -q.scale.log() - _LOG_SQRT_2PI - second_moment_about_loc / (2 * q.scale**2)


def _gamma_expected_log(q: Gamma, e_x: Tensor, e_log_x: Tensor) -> Tensor:
    a, r = q.concentration, q.rate
    return a * r.log() + (a - 1) * e_log_x - r * e_x - lgamma(a)


def _gumbel_expected_log(q: Gumbel, e_x: Tensor, e_exp: Tensor) -> Tensor:
    """E[log q(x)] for a Gumbel q given E[x] and E[exp(-(x - q.loc) / q.scale)]."""
    return -q.scale.log() - (e_x - q.loc) / q.scale - e_exp


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


def _beta_e_log(p: Beta) -> tuple[Tensor, Tensor]:
    total = p.concentration1 + p.concentration0
    return digamma(p.concentration1) - digamma(total), digamma(p.concentration0) - digamma(total)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    e_log_x, _ = _beta_e_log(p)
    return -p.entropy() - _gamma_expected_log(q, p.mean, e_log_x)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    return -p.entropy() - _normal_expected_log(q, p.mean, p.variance + (p.mean - q.loc) ** 2)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    kl = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low > 0) | (q.high < 1), kl)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    e_log_x = -_EULER - p.rate.log()
    return -p.entropy() - _gamma_expected_log(q, p.mean, e_log_x)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    # E[exp(-x / s)] under Exp(rate) = rate / (rate + 1 / s)
    e_exp = (q.loc / q.scale).exp() * p.rate / (p.rate + 1 / q.scale)
    return -p.entropy() - _gumbel_expected_log(q, p.mean, e_exp)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    m2 = 2 / p.rate**2 - 2 * q.loc / p.rate + q.loc**2
    return -p.entropy() - _normal_expected_log(q, p.mean, m2)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    # E[exp(-x / s)] under Gamma(a, r) = (r / (r + 1 / s))^a
    e_exp = (q.loc / q.scale).exp() * (p.rate / (p.rate + 1 / q.scale)) ** p.concentration
    return -p.entropy() - _gumbel_expected_log(q, p.mean, e_exp)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    return -p.entropy() - _normal_expected_log(q, p.mean, p.variance + (p.mean - q.loc) ** 2)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    return -p.entropy() - _normal_expected_log(q, p.mean, p.variance + (p.mean - q.loc) ** 2)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    return -p.entropy() - _normal_expected_log(q, p.mean, p.variance + (p.loc - q.loc) ** 2)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    # E[exp(-(x - m) / s)] under Normal(mu, sigma) = exp((m - mu) / s + sigma^2 / (2 s^2))
    e_exp = ((q.loc - p.loc) / q.scale + p.scale**2 / (2 * q.scale**2)).exp()
    return -p.entropy() - (-q.scale.log() - (p.loc - q.loc) / q.scale - e_exp)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|x - m| under Normal(mu, sigma): sigma sqrt(2/pi) exp(-d^2 / (2 sigma^2)) + d erf(d / (sigma sqrt 2))
    d = p.loc - q.loc
    e_abs = (p.scale * math.sqrt(2 / math.pi) * (-(d**2) / (2 * p.scale**2)).exp()
             + d * erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + (2 * q.scale).log() + e_abs / q.scale


def _uniform_e_log(p: Uniform) -> tuple[Tensor, Tensor]:
    """E[log x] and E[log(1 - x)] under Uniform(low, high) on [0, 1] (0 log 0 = 0)."""
    lo, hi = p.low, p.high
    width = hi - lo
    e_log_x = (xlogy(hi, hi) - xlogy(lo, lo)) / width - 1
    e_log_1mx = (xlogy(1 - lo, 1 - lo) - xlogy(1 - hi, 1 - hi)) / width - 1
    return e_log_x, e_log_1mx


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    e_log_x, e_log_1mx = _uniform_e_log(p)
    expected = (a - 1) * e_log_x + (b - 1) * e_log_1mx - (lgamma(a) + lgamma(b) - lgamma(a + b))
    kl = -p.entropy() - expected
    return _where_inf((p.high > 1) | (p.low < 0), kl)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    kl = -p.entropy() - q.rate.log() + q.rate * p.mean
    return _where_inf(p.low < 0, kl)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    e_log_x, _ = _uniform_e_log(p)
    kl = -p.entropy() - _gamma_expected_log(q, p.mean, e_log_x)
    return _where_inf(p.low < 0, kl)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    s = q.scale
    e_exp = s * (((q.loc - p.low) / s).exp() - ((q.loc - p.high) / s).exp()) / (p.high - p.low)
    return -p.entropy() - _gumbel_expected_log(q, p.mean, e_exp)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    m2 = (p.high - p.low) ** 2 / 12 + (p.mean - q.loc) ** 2
    return -p.entropy() - _normal_expected_log(q, p.mean, m2)


