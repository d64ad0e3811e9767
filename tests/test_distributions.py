"""aiograd.distributions against torch.distributions' values (tests/data/distributions_reference.json,
written by tests/data/make_distributions_reference.py), and the API's behaviour: shapes,
sampling (seeded, moments), rsample gradients, validation errors, expand, KL dispatch."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.distributions as D
from aiograd.distributions import constraints, transforms
from helpers import check_grads

REF = json.loads((Path(__file__).parent / "data" / "distributions_reference.json").read_text())
CASES = {c["name"]: c for c in REF["cases"]}


def t64(v: Any, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(np.asarray(v, dtype=np.float64), requires_grad=requires_grad)


def build(cls: str, kwargs: dict[str, Any]) -> D.Distribution:
    args: dict[str, Any] = {}
    for k, v in kwargs.items():
        if k.startswith("int:"):
            args[k[4:]] = v
        elif k == "base":
            continue
        else:
            args[k] = t64(v)
    if cls == "Independent":
        return D.Independent(build(*kwargs["base"]), kwargs["int:n"])
    return getattr(D, cls)(**args)  # type: ignore[no-any-return]


def expected(entry: list[Any]) -> np.ndarray:
    flat, shape = entry
    return np.array([float(x) for x in flat], dtype=np.float64).reshape(shape)


def assert_close(actual: ag.Tensor, want: np.ndarray) -> None:
    a = actual.numpy().astype(np.float64)
    assert a.shape == want.shape
    np.testing.assert_allclose(a, want, rtol=1e-10, atol=1e-10, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name: str) -> None:
    case = CASES[name]
    d = build(case["cls"], case["kwargs"])
    assert list(d.batch_shape) == case["batch_shape"]
    assert list(d.event_shape) == case["event_shape"]
    for method in ["log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"]:
        want = case[method]
        if want is None:
            continue  # torch raises NotImplementedError: nothing to compare
        if method in ("log_prob", "cdf"):
            got = getattr(d, method)(t64(case["value"]))
        elif method == "icdf":
            got = d.icdf(t64(case["icdf_value"]))
        elif method == "entropy":
            got = d.entropy()
        else:
            got = getattr(d, method)
        try:
            assert_close(got.to(ag.float64), expected(want))
        except AssertionError as e:
            raise AssertionError(f"{name}.{method}: {e}") from None


@pytest.mark.parametrize("i", range(len(REF["kl"])))
def test_kl_matches_torch(i: int) -> None:
    case = REF["kl"][i]
    p, q = build(*case["p"]), build(*case["q"])
    assert_close(D.kl_divergence(p, q), expected(case["kl"]))


def test_transforms_match_torch() -> None:
    made = {
        "ExpTransform": transforms.ExpTransform(),
        "SigmoidTransform": transforms.SigmoidTransform(),
        "TanhTransform": transforms.TanhTransform(),
        "AffineTransform": transforms.AffineTransform(t64([1.0, -2.0, 0.5]), t64([2.0, -0.5, 3.0])),
        "Compose(Affine(0.5, 2), Tanh)": transforms.ComposeTransform(
            [transforms.AffineTransform(0.5, 2.0), transforms.TanhTransform()]),
        "SoftmaxTransform": transforms.SoftmaxTransform(),
    }
    byname = {c["name"]: c for c in REF["transforms"]}
    for name, t in made.items():
        case = byname[name]
        x = t64(case["x"])
        y = t(x)
        assert_close(y, np.array(case["y"]))
        if "ladj" in case:
            assert_close(t.inv(y), np.array(case["inv"]))
            assert_close(t.log_abs_det_jacobian(x, y), np.array(case["ladj"]))
    base = D.Normal(t64([0.0, 1.0]), t64([1.0, 0.5]))
    td = D.TransformedDistribution(base, [transforms.AffineTransform(0.3, 2.0), transforms.SigmoidTransform()])
    case = byname["TransformedDistribution"]
    assert_close(td.log_prob(t64(case["value"])), np.array(case["log_prob"]))
    assert_close(td.cdf(t64(case["value"])), np.array(case["cdf"]))
    td2 = D.TransformedDistribution(base, [transforms.AffineTransform(0.3, -2.0)])
    case = byname["TransformedDistributionNeg"]
    assert_close(td2.log_prob(t64(case["value"])), np.array(case["log_prob"]))
    assert_close(td2.cdf(t64(case["value"])), np.array(case["cdf"]))
    assert_close(td2.icdf(t64([0.2, 0.7])), np.array(case["icdf"]))
    assert repr(td) == "TransformedDistribution()"


def test_transform_inverse_and_composition() -> None:
    t = transforms.ExpTransform()
    assert t.inv.inv is t and t.inv == transforms.ExpTransform().inv
    assert repr(t.inv) == "_InverseTransform(ExpTransform())"
    comp = transforms.ComposeTransform([transforms.AffineTransform(1.0, 2.0), transforms.ExpTransform()])
    x = t64([0.1, -0.4])
    assert_close(comp.inv(comp(x)), x.numpy())
    assert comp.sign == 1 and comp.bijective
    # ladj of the inverse is minus the forward one, at the matching points
    y = comp(x)
    assert_close(comp.inv.log_abs_det_jacobian(y, x), -comp.log_abs_det_jacobian(x, y).numpy())
    assert repr(comp) == "ComposeTransform(\n    AffineTransform(),\n    ExpTransform()\n)"


def test_mixture_same_family_matches_torch() -> None:
    case = REF["mixture"]
    mix = D.MixtureSameFamily(D.Categorical(t64([[0.3, 0.7], [0.5, 0.5]])),
                              D.Normal(t64([[-1.0, 2.0], [0.0, 0.5]]), t64([[0.5, 1.0], [1.0, 2.0]])))
    v = t64(case["value"])
    assert_close(mix.log_prob(v), np.array(case["log_prob"]))
    assert_close(mix.cdf(v), np.array(case["cdf"]))
    assert_close(mix.mean, np.array(case["mean"]))
    assert_close(mix.variance, np.array(case["variance"]))
    assert mix.batch_shape == (2,) and mix.event_shape == ()
    ag.manual_seed(3)
    assert mix.sample((5,)).shape == (5, 2)
    assert mix.expand((4, 2)).sample().shape == (4, 2)
    assert repr(mix).startswith("MixtureSameFamily(\n  Categorical(probs: (2, 2)")


# ----- sampling ------------------------------------------------------------------------------


def families() -> dict[str, D.Distribution]:
    """One instance of every family, batch shape (2,) (float64 parameters)."""
    return {
        "Normal": D.Normal(t64([0.5, -1.0]), t64([1.0, 2.0])),
        "Uniform": D.Uniform(t64([0.0, -1.0]), t64([1.0, 3.0])),
        "Exponential": D.Exponential(t64([0.5, 2.0])),
        "Laplace": D.Laplace(t64([0.5, -1.0]), t64([1.0, 2.0])),
        "Cauchy": D.Cauchy(t64([0.5, -1.0]), t64([1.0, 2.0])),
        "Gumbel": D.Gumbel(t64([0.5, -1.0]), t64([1.0, 2.0])),
        "Gamma": D.Gamma(t64([0.5, 3.0]), t64([1.0, 2.0])),
        "Chi2": D.Chi2(t64([1.0, 4.0])),
        "Beta": D.Beta(t64([0.5, 3.0]), t64([2.0, 1.5])),
        "Dirichlet": D.Dirichlet(t64([[0.5, 2.0, 1.5], [3.0, 1.0, 4.0]])),
        "StudentT": D.StudentT(t64([5.0, 10.0]), t64([0.5, -1.0]), t64([1.0, 2.0])),
        "LogNormal": D.LogNormal(t64([0.0, -1.0]), t64([0.5, 0.3])),
        "Bernoulli": D.Bernoulli(t64([0.2, 0.7])),
        "Binomial": D.Binomial(t64([10.0, 4.0]), t64([0.2, 0.7])),
        "Geometric": D.Geometric(t64([0.2, 0.7])),
        "Poisson": D.Poisson(t64([0.5, 6.0])),
        "Categorical": D.Categorical(t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
        "OneHotCategorical": D.OneHotCategorical(t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
        "Multinomial": D.Multinomial(5, t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
        "MultivariateNormal": D.MultivariateNormal(t64([[0.0, 1.0], [2.0, -1.0]]),
                                                   t64([[2.0, 0.3], [0.3, 0.5]])),
        "RelaxedBernoulli": D.RelaxedBernoulli(t64(0.5), t64([0.2, 0.7])),
        "RelaxedOneHotCategorical": D.RelaxedOneHotCategorical(t64(0.5), t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
        "Independent": D.Independent(D.Normal(t64([[0.5, -1.0]]).expand(2, 2), t64([1.0, 2.0])), 1),
        "MixtureSameFamily": D.MixtureSameFamily(D.Categorical(t64([[0.3, 0.7], [0.5, 0.5]])),
                                                 D.Normal(t64([[-1.0, 2.0], [0.0, 0.5]]), t64([[0.5, 1.0], [1.0, 2.0]]))),
        "TransformedDistribution": D.TransformedDistribution(D.Normal(t64([0.0, 1.0]), t64([1.0, 0.5])),
                                                             [transforms.AffineTransform(0.3, 2.0),
                                                              transforms.TanhTransform()]),
    }


FAMILIES = sorted(families())


@pytest.mark.parametrize("name", FAMILIES)
def test_sample_shapes_and_support(name: str) -> None:
    d = families()[name]
    ag.manual_seed(0)
    for sample_shape in [(), (4,), (2, 3)]:
        x = d.sample(sample_shape)
        assert x.shape == tuple(sample_shape) + d.batch_shape + d.event_shape, name
        assert not x.requires_grad
        lp = d.log_prob(x)  # validate_args is on: the sample lies in the support
        assert lp.shape == tuple(sample_shape) + d.batch_shape
        assert bool(ag.isfinite(lp).all()), name
    if d.has_rsample:
        assert d.rsample((3,)).shape == (3,) + d.batch_shape + d.event_shape


@pytest.mark.parametrize("name", FAMILIES)
def test_same_seed_same_samples(name: str) -> None:
    d = families()[name]
    ag.manual_seed(123)
    a = d.sample((5,)).numpy()
    ag.manual_seed(123)
    b = d.sample((5,)).numpy()
    c = d.sample((5,)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) or name in ("Bernoulli",)


MOMENT_FAMILIES = [n for n in FAMILIES if n not in ("Cauchy", "TransformedDistribution", "RelaxedBernoulli",
                                                     "RelaxedOneHotCategorical")]


@pytest.mark.parametrize("name", MOMENT_FAMILIES)
def test_sample_moments(name: str) -> None:
    """The sample mean lies within 5 standard errors of ``mean``, the sample variance within 15%."""
    d = families()[name]
    n = 20000
    ag.manual_seed(2024)
    x = d.sample((n,)).numpy().astype(np.float64)
    mean, var = d.mean.numpy(), d.variance.numpy()
    finite = np.isfinite(var)
    se = np.sqrt(np.where(finite, var, 1.0) / n)
    assert np.all(np.abs(x.mean(0) - mean)[finite] <= 5 * se[finite] + 1e-12), (name, x.mean(0), mean)
    assert np.allclose(x.var(0)[finite], var[finite], rtol=0.15, atol=1e-3), (name, x.var(0), var)


def test_relaxed_samples_approach_their_discrete_counterparts_at_low_temperature() -> None:
    ag.manual_seed(5)
    p = t64([0.2, 0.7])
    x = D.RelaxedBernoulli(t64(0.05), p).sample((20000,)).numpy()
    np.testing.assert_allclose((x > 0.5).mean(0), [0.2, 0.7], atol=0.02)
    y = D.RelaxedOneHotCategorical(t64(0.05), t64([0.2, 0.3, 0.5])).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(y.argmax(-1), minlength=3) / 20000, [0.2, 0.3, 0.5], atol=0.02)
    np.testing.assert_allclose(y.sum(-1), 1.0)


def test_sample_is_not_recorded_but_rsample_is() -> None:
    loc = t64([0.0, 1.0], requires_grad=True)
    d = D.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    assert not D.Bernoulli(t64([0.3], requires_grad=True)).has_rsample
    with pytest.raises(NotImplementedError):
        D.Bernoulli(t64([0.3])).rsample()


# ----- gradients ---------------------------------------------------------------------------


RSAMPLE = {
    "Normal": (lambda a, b: D.Normal(a, b), [[0.5, -1.0], [1.0, 2.0]]),
    "Uniform": (lambda a, b: D.Uniform(a, a + b), [[0.5, -1.0], [1.0, 2.0]]),
    "Exponential": (lambda a: D.Exponential(a), [[0.5, 2.0]]),
    "Laplace": (lambda a, b: D.Laplace(a, b), [[0.5, -1.0], [1.0, 2.0]]),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), [[0.5, -1.0], [1.0, 2.0]]),
    "Gumbel": (lambda a, b: D.Gumbel(a, b), [[0.5, -1.0], [1.0, 2.0]]),
    "Gamma": (lambda a, b: D.Gamma(a, b), [[0.7, 3.0], [1.0, 2.0]]),
    "Chi2": (lambda a: D.Chi2(a), [[1.5, 4.0]]),
    "Beta": (lambda a, b: D.Beta(a, b), [[0.7, 3.0], [2.0, 1.5]]),
    "Dirichlet": (lambda a: D.Dirichlet(a), [[[0.7, 2.0, 1.5], [3.0, 1.0, 4.0]]]),
    "StudentT": (lambda a, b, c: D.StudentT(a, b, c), [[5.0, 3.0], [0.5, -1.0], [1.0, 2.0]]),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), [[0.0, -1.0], [0.5, 0.3]]),
    # scale_tril's upper entries are read too (L @ eps), so gradcheck's steps there must pass validation
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(a, scale_tril=b, validate_args=False),
                           [[[0.0, 1.0]], [[[1.0, 0.0], [0.3, 0.8]]]]),
    "RelaxedBernoulli": (lambda a, b: D.RelaxedBernoulli(a, b), [[0.5], [0.2, 0.7]]),
    "RelaxedOneHotCategorical": (lambda a, b: D.RelaxedOneHotCategorical(a, b), [[0.5], [[0.2, 0.3, 0.5]]]),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE))
def test_rsample_gradcheck(name: str) -> None:
    """rsample is differentiable in every parameter: reseeding before each draw fixes the noise,
    so finite differences see the pathwise derivative (NOTE [Gamma reparameterization])."""
    make, params = RSAMPLE[name]

    def draw(*ps: ag.Tensor) -> ag.Tensor:
        ag.manual_seed(7)
        return make(*ps).rsample((3,))

    check_grads(draw, [t64(p, requires_grad=True) for p in params], second=False)


LOG_PROB_GRADS = {
    "Normal": (lambda a, b: D.Normal(a, b), [[0.5, -1.0], [1.0, 2.0]], [0.3, 0.1]),
    "Gamma": (lambda a, b: D.Gamma(a, b), [[0.7, 3.0], [1.0, 2.0]], [0.3, 2.0]),
    "Beta": (lambda a, b: D.Beta(a, b), [[0.7, 3.0], [2.0, 1.5]], [0.3, 0.6]),
    "StudentT": (lambda a, b, c: D.StudentT(a, b, c), [[5.0, 3.0], [0.5, -1.0], [1.0, 2.0]], [0.3, 0.1]),
    "Dirichlet": (lambda a: D.Dirichlet(a), [[[0.7, 2.0, 1.5]]], [[0.2, 0.5, 0.3]]),
    "Categorical": (lambda a: D.Categorical(logits=a), [[[0.3, -1.0, 2.0]]], [2.0]),
    "Bernoulli": (lambda a: D.Bernoulli(logits=a), [[0.3, -1.0]], [1.0, 0.0]),
    "Poisson": (lambda a: D.Poisson(a), [[0.5, 3.0]], [1.0, 4.0]),
    # a covariance B B^T + I: cholesky's gradient is that of a symmetric input (as torch's)
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(a, b @ b.mT + ag.eye(2, dtype=ag.float64)),
                           [[0.0, 1.0], [[1.0, 0.3], [-0.2, 0.5]]], [0.5, 0.2]),
}


@pytest.mark.parametrize("name", sorted(LOG_PROB_GRADS))
def test_log_prob_and_entropy_gradcheck(name: str) -> None:
    make, params, value = LOG_PROB_GRADS[name]
    check_grads(lambda *ps: make(*ps).log_prob(t64(value)), [t64(p, requires_grad=True) for p in params])
    if name != "Poisson":
        check_grads(lambda *ps: make(*ps).entropy(), [t64(p, requires_grad=True) for p in params], second=False)


def test_standard_gamma_gradient_matches_torchs() -> None:
    """dx/dalpha of a Gamma(alpha, 1) draw at fixed cdf value, against torch's _standard_gamma_grad
    (itself an approximation: they agree to about 1e-4)."""
    import scipy.special as sp

    from aiograd.distributions.utils import _StandardGamma

    case = REF["standard_gamma_grad"]
    alpha = t64(case["alpha"], requires_grad=True)
    u = sp.gammainc(np.array(case["alpha"]), np.array(case["x"]))
    x = _StandardGamma.apply(alpha, u)
    np.testing.assert_allclose(x.detach().numpy(), case["x"], rtol=1e-9)
    x.sum().backward_sync()
    assert alpha.grad is not None
    np.testing.assert_allclose(alpha.grad.numpy(), case["grad"], rtol=1e-3)


def test_gamma_cdf_is_differentiable_in_value_only() -> None:
    check_grads(lambda v: D.Gamma(t64([0.7, 3.0]), t64([1.0, 2.0])).cdf(v), [t64([0.4, 2.0], True)], second=False)
    a = t64([0.7, 3.0], requires_grad=True)
    out = D.Gamma(a, t64([1.0, 2.0])).cdf(t64([0.4, 2.0])).sum()
    with pytest.raises(NotImplementedError, match="derivative for aten::igamma is not implemented"):
        out.backward_sync()


async def test_policy_gradient_on_the_loop() -> None:
    """The score-function estimator an agent uses: log_prob of sampled actions times a return."""
    logits = t64([[0.1, 0.2, -0.3]], requires_grad=True)
    ag.manual_seed(0)
    d = D.Categorical(logits=logits)
    action = d.sample((8,))
    loss = -(d.log_prob(action) * 2.0).mean() - 0.01 * d.entropy().mean()
    await loss.backward()
    assert logits.grad is not None and logits.grad.shape == (1, 3)
    # the gradient of sum log softmax at the drawn actions
    counts = np.bincount(action.numpy().ravel(), minlength=3)
    z = logits.detach().numpy()
    p = np.exp(z) / np.exp(z).sum()
    score = (counts - 8 * p) / 8
    ent_grad = -p * (np.log(p) - (p * np.log(p)).sum())
    np.testing.assert_allclose(logits.grad.numpy(), -2.0 * score - 0.01 * ent_grad, rtol=1e-10, atol=1e-12)


# ----- validation ----------------------------------------------------------------------------


def test_parameter_validation_messages_are_torchs() -> None:
    with pytest.raises(ValueError) as e:
        D.Normal(ag.tensor([0.0, 1.0]), ag.tensor([-1.0, 1.0]))
    assert str(e.value).startswith(
        "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: (2,), scale: (2,)) "
        "to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n")
    with pytest.raises(ValueError, match=r"parameter probs .* constraint Simplex\(\)"):
        D.Categorical(t64([-0.5, 1.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli(probs=t64(0.3), logits=t64(1.0))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.MultivariateNormal(t64([0.0]))
    with pytest.raises(ValueError, match=r"PositiveDefinite\(\)"):
        D.MultivariateNormal(t64([0.0, 0.0]), t64([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"constraint IntegerGreaterThan\(lower_bound=0\)"):
        D.Binomial(t64(2.5), t64(0.3))


def test_value_validation_messages_are_torchs() -> None:
    with pytest.raises(ValueError) as e:
        D.Uniform(0.0, 1.0).log_prob(ag.tensor([2.0]))
    assert str(e.value).startswith(
        "Expected value argument (Tensor of shape (1,)) to be within the support "
        "(Interval(lower_bound=0.0, upper_bound=1.0)) of the distribution Uniform(low: 0.0, high: 1.0), "
        "but found invalid values:\n")
    with pytest.raises(ValueError, match=r"support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)"):
        D.Categorical(t64([0.5, 0.5])).log_prob(ag.tensor(3))
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape: \(3,\) vs \(2,\)\."):
        D.Normal(t64([0.0, 1.0]), 1.0).log_prob(t64([0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"The right-most size of value must match event_shape: \(2, 3\) vs \(2,\)\."):
        D.MultivariateNormal(t64([0.0, 1.0]), t64([[1.0, 0.0], [0.0, 1.0]])).log_prob(t64(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)  # type: ignore[arg-type]


def test_validate_args_off() -> None:
    d = D.Normal(t64([0.0]), t64([-1.0]), validate_args=False)
    assert d.batch_shape == (1,) and d.stddev.item() == -1.0
    assert D.Uniform(0.0, 1.0, validate_args=False).log_prob(t64(2.0)).item() == -math.inf
    D.Distribution.set_default_validate_args(False)
    try:
        D.Exponential(t64(-1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Exponential(t64(-1.0))


def test_constraints() -> None:
    assert constraints.positive.check(t64([1.0, 0.0, -1.0])).tolist() == [True, False, False]
    assert constraints.nonnegative.check(t64([1.0, 0.0, -1.0])).tolist() == [True, True, False]
    assert constraints.real.check(t64([1.0, math.nan])).tolist() == [True, False]
    assert constraints.simplex.check(t64([[0.2, 0.8], [0.5, 0.6]])).tolist() == [True, False]
    assert constraints.integer_interval(0, 3).check(t64([0.0, 3.0, 1.5, 4.0])).tolist() == [True, True, False, False]
    assert constraints.independent(constraints.positive, 1).check(t64([[1.0, 2.0], [1.0, -1.0]])).tolist() == \
        [True, False]
    assert constraints.lower_cholesky.check(t64([[1.0, 0.0], [2.0, 1.0]])).item()
    assert not constraints.lower_cholesky.check(t64([[1.0, 1.0], [2.0, 1.0]])).item()
    assert repr(constraints.unit_interval) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    assert constraints.is_dependent(D.Uniform.support) and constraints.is_dependent(D.Uniform.arg_constraints["low"])
    assert D.Uniform(0.0, 2.0).support.check(t64(1.5)).item()
    assert repr(D.Categorical(t64([1.0, 1.0, 1.0])).support) == "IntegerInterval(lower_bound=0, upper_bound=2)"
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(t64(1.0))


# ----- shapes, expand, Independent ---------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_expand(name: str) -> None:
    d = families()[name]
    e = d.expand((3,) + d.batch_shape)
    assert type(e) is type(d)
    assert e.batch_shape == (3,) + d.batch_shape and e.event_shape == d.event_shape
    ag.manual_seed(1)
    x = d.sample()
    np.testing.assert_allclose(e.log_prob(x).numpy(), np.broadcast_to(d.log_prob(x).numpy(), e.batch_shape))
    assert e.sample((2,)).shape == (2, 3) + d.batch_shape + d.event_shape


def test_batch_event_shapes_and_broadcasting() -> None:
    d = D.Normal(t64([[0.0], [1.0]]), t64([1.0, 2.0, 3.0]))
    assert d.batch_shape == (2, 3) and d.event_shape == ()
    assert d.log_prob(t64(0.5)).shape == (2, 3)
    assert D.Normal(0.0, 1.0).batch_shape == ()
    assert D.Normal(0.0, 1.0).loc.dtype == ag.get_default_dtype()
    assert D.Normal(t64(0.0), 1.0).scale.dtype == ag.float64
    m = D.MultivariateNormal(t64(np.zeros((4, 2))), t64(np.eye(2)))
    assert m.batch_shape == (4,) and m.event_shape == (2,)
    assert m.log_prob(t64(np.zeros((5, 1, 2)))).shape == (5, 4)
    c = D.Categorical(logits=t64(np.zeros((4, 3))))
    assert c.batch_shape == (4,) and c.enumerate_support().shape == (3, 4)
    assert c.log_prob(c.enumerate_support()).shape == (3, 4)


def test_independent() -> None:
    base = D.Normal(t64(np.zeros((3, 2))), t64(np.ones((3, 2))))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (3,) and ind.event_shape == (2,)
    x = t64(np.arange(6.0).reshape(3, 2))
    assert_close(ind.log_prob(x), base.log_prob(x).numpy().sum(-1))
    assert_close(ind.entropy(), base.entropy().numpy().sum(-1))
    assert ind.has_rsample and repr(ind) == "Independent(Normal(loc: (3, 2), scale: (3, 2)), 1)"
    assert repr(ind.support) == "IndependentConstraint(Real(), 1)"
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= len"):
        D.Independent(base, 3)


def test_reprs() -> None:
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Categorical(t64([1.0, 1.0, 1.0]))) == "Categorical(probs: (3,))"
    assert repr(D.MultivariateNormal(t64([0.0, 0.0]), t64(np.eye(2)))) == \
        "MultivariateNormal(loc: (2,), covariance_matrix: (2, 2))"
    assert repr(D.Chi2(t64(3.0))) == "Chi2(df: 3.0)"
    assert repr(D.LogNormal(0.0, 1.0)) == "LogNormal(loc: 0.0, scale: 1.0)"


# ----- KL dispatch -------------------------------------------------------------------------------


def test_every_pair_torch_registers_among_the_families_is_registered() -> None:
    """The fixture's same-family and cross-family cases are torch's _KL_REGISTRY keys restricted to
    these families (tests/data/make_distributions_reference.py): each has its own entry here."""
    from aiograd.distributions.kl import _KL_REGISTRY

    pairs = {(c["p"][0], c["q"][0]) for c in REF["kl"]}
    direct = {(p, q) for p, q in pairs if p not in ("Independent", "LogNormal", "Chi2")}
    assert len(direct) == 54
    for p, q in direct:
        assert (getattr(D, p), getattr(D, q)) in _KL_REGISTRY, (p, q)


def test_enumerate_support() -> None:
    b = D.Bernoulli(t64([0.2, 0.7]))
    assert b.enumerate_support().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert b.enumerate_support(expand=False).shape == (2, 1)
    assert D.Binomial(t64([3.0, 3.0]), t64([0.2, 0.7])).enumerate_support().shape == (4, 2)
    oh = D.OneHotCategorical(t64([0.2, 0.3, 0.5]))
    np.testing.assert_allclose(oh.log_prob(oh.enumerate_support()).exp().numpy(), [0.2, 0.3, 0.5])
    c = D.Categorical(t64([0.2, 0.3, 0.5]))
    np.testing.assert_allclose(c.log_prob(c.enumerate_support()).exp().numpy(), [0.2, 0.3, 0.5])
    with pytest.raises(NotImplementedError):
        D.Normal(0.0, 1.0).enumerate_support()


def test_kl_unregistered_pair_raises_like_torch() -> None:
    with pytest.raises(NotImplementedError, match=r"No KL\(p \|\| q\) is implemented for p type Normal and q type Cauchy"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))


def test_register_kl_for_user_pairs_and_subclasses() -> None:
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(t64(0.0), t64(1.0)), D.Normal(t64(1.0), t64(2.0))
    # a subclass uses its parent's rule until it has its own
    assert_close(D.kl_divergence(p, q), D.kl_divergence(D.Normal(t64(0.0), t64(1.0)), q).numpy())

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p: Any, q: Any) -> ag.Tensor:
        return t64(42.0)

    assert D.kl_divergence(p, q).item() == 42.0
    assert D.kl_divergence(q, p).item() != 42.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_kl_infinite_and_zero_cases() -> None:
    n = D.Normal(t64([0.0]), t64([1.0]))
    assert D.kl_divergence(n, D.Uniform(t64([0.0]), t64([1.0]))).item() == math.inf
    assert D.kl_divergence(n, n).item() == 0.0
    u = D.Uniform(t64([0.0]), t64([2.0]))
    assert D.kl_divergence(u, D.Uniform(t64([0.5]), t64([3.0]))).item() == math.inf
    c = D.Categorical(t64([0.5, 0.5, 0.0]))
    assert D.kl_divergence(c, D.Categorical(t64([0.5, 0.3, 0.2]))).item() < math.inf
    assert D.kl_divergence(D.Categorical(t64([0.5, 0.3, 0.2])), c).item() == math.inf


def test_kl_is_differentiable() -> None:
    check_grads(lambda a, b: D.kl_divergence(D.Normal(a, b), D.Normal(t64(0.3), t64(2.0))),
                [t64([0.5, -1.0], True), t64([1.0, 2.0], True)])
    check_grads(lambda a: D.kl_divergence(D.Gamma(a, t64(1.0)), D.Gamma(t64(2.0), t64(0.5))),
                [t64([0.5, 3.0], True)])


def test_distributions_is_an_attribute_of_aiograd() -> None:
    assert ag.distributions is D
    assert "distributions" in ag.__all__
