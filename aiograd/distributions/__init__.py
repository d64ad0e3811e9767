"""``aiograd.distributions``: torch.distributions' API and families on aiograd tensors.

    import aiograd as ag
    from aiograd.distributions import Categorical, Normal, kl_divergence

    dist = Categorical(logits=policy(obs))
    action = dist.sample()                      # from aiograd's generator (ag.manual_seed)
    loss = -(dist.log_prob(action) * advantage).mean()
    await loss.backward()

A distribution has a ``batch_shape`` and an ``event_shape``; ``sample`` draws without a
graph, ``rsample`` draws differentiably (the reparameterization trick) where
``has_rsample``; ``log_prob``, ``entropy``, ``cdf``, ``icdf``, ``mean``, ``mode``,
``variance`` and ``stddev`` are differentiable in the parameters. Parameters and values are
checked against ``arg_constraints`` and ``support`` unless ``validate_args=False``
(``Distribution.set_default_validate_args``).
"""

from __future__ import annotations

from . import constraints, transforms
from .categorical import Categorical, Multinomial, OneHotCategorical
from .constraints import Constraint
from .continuous import Cauchy, Exponential, Gumbel, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Geometric, Poisson
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .transformed import (ExpRelaxedCategorical, LogitRelaxedBernoulli, LogNormal, RelaxedBernoulli,
                          RelaxedOneHotCategorical, TransformedDistribution)
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, SoftmaxTransform,
                         TanhTransform, Transform, identity_transform)

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ComposeTransform",
    "Constraint", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential", "Gamma",
    "Geometric", "Gumbel", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "SigmoidTransform", "SoftmaxTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "identity_transform", "kl_divergence", "register_kl",
    "transforms",
]
