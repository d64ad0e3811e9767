"""Write tests/data/distributions_reference.json: torch.distributions' values (float64) for the
cases tests/test_distributions.py checks aiograd.distributions against.

Run from the repository root with torch installed (the `bench` extra):
    python tests/data/make_distributions_reference.py
Each case names a family, its constructor arguments (nested lists; ``"int:"`` keys are ints)
and values; the file stores what torch returns for log_prob, cdf, icdf, entropy, mean, mode,
variance and stddev (null where torch raises NotImplementedError), and for each KL pair
torch registers among the families, kl_divergence(p, q).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.distributions as D
import torch.distributions.kl as kl

torch.set_default_dtype(torch.float64)

OUT = Path(__file__).with_name("distributions_reference.json")

P = [0.2, 0.5, 0.9]
LOGITS3 = [[0.3, -1.2, 2.0], [0.0, 0.5, -0.5]]

# name -> (constructor kwargs, values for log_prob, unit values for icdf)
CASES: list[tuple[str, str, dict, list, list | None]] = [
    ("normal", "Normal", {"loc": [0.0, 1.5, -2.0], "scale": [1.0, 0.5, 3.0]}, [0.3, 1.0, -7.0], [0.1, 0.5, 0.95]),
    ("uniform", "Uniform", {"low": [0.0, -1.0, 2.0], "high": [1.0, 3.0, 2.5]}, [0.3, 2.0, 2.1], [0.1, 0.5, 0.95]),
    ("exponential", "Exponential", {"rate": [0.5, 1.0, 4.0]}, [0.3, 2.0, 0.01], [0.1, 0.5, 0.95]),
    ("laplace", "Laplace", {"loc": [0.0, 1.0, -2.0], "scale": [1.0, 0.3, 2.0]}, [0.3, 1.5, -5.0], [0.1, 0.5, 0.95]),
    ("cauchy", "Cauchy", {"loc": [0.0, 1.0, -2.0], "scale": [1.0, 0.3, 2.0]}, [0.3, 1.5, -5.0], [0.1, 0.5, 0.95]),
    ("gumbel", "Gumbel", {"loc": [0.0, 1.0, -2.0], "scale": [1.0, 0.3, 2.0]}, [0.3, 1.5, -5.0], [0.1, 0.5, 0.95]),
    ("gamma", "Gamma", {"concentration": [0.5, 2.0, 7.5], "rate": [1.0, 0.3, 2.0]}, [0.3, 4.0, 3.1], None),
    ("chi2", "Chi2", {"df": [1.0, 3.0, 10.0]}, [0.3, 4.0, 9.0], None),
    ("beta", "Beta", {"concentration1": [0.5, 2.0, 5.0], "concentration0": [0.7, 3.0, 1.5]}, [0.3, 0.5, 0.9], None),
    ("dirichlet", "Dirichlet", {"concentration": [[0.5, 2.0, 1.5], [3.0, 1.0, 4.0]]},
     [[0.2, 0.5, 0.3], [0.1, 0.6, 0.3]], None),
    ("studentt", "StudentT", {"df": [1.5, 3.0, 30.0], "loc": [0.0, 1.0, -1.0], "scale": [1.0, 2.0, 0.5]},
     [0.3, 4.0, -1.2], None),
    ("studentt_lowdf", "StudentT", {"df": [0.8, 2.0, 2.5]}, [0.3, 4.0, -1.2], None),
    ("lognormal", "LogNormal", {"loc": [0.0, 1.0, -1.0], "scale": [1.0, 0.5, 2.0]}, [0.3, 4.0, 1.2], [0.1, 0.5, 0.95]),
    ("bernoulli_probs", "Bernoulli", {"probs": P}, [1.0, 0.0, 1.0], None),
    ("bernoulli_logits", "Bernoulli", {"logits": [-3.0, 0.0, 25.0]}, [1.0, 0.0, 0.0], None),
    ("binomial", "Binomial", {"total_count": [10.0, 10.0, 10.0], "probs": P}, [3.0, 0.0, 10.0], None),
    ("binomial_logits", "Binomial", {"total_count": [5.0, 5.0, 5.0], "logits": [-1.0, 0.5, 2.0]}, [2.0, 5.0, 1.0], None),
    ("geometric", "Geometric", {"probs": P}, [0.0, 3.0, 1.0], None),
    ("geometric_logits", "Geometric", {"logits": [-1.0, 0.5, 2.0]}, [0.0, 3.0, 1.0], None),
    ("poisson", "Poisson", {"rate": [0.5, 3.0, 12.0]}, [0.0, 2.0, 15.0], None),
    ("categorical_probs", "Categorical", {"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]}, [2.0, 0.0], None),
    ("categorical_logits", "Categorical", {"logits": LOGITS3}, [1.0, 2.0], None),
    ("onehot", "OneHotCategorical", {"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]},
     [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], None),
    ("multinomial", "Multinomial", {"int:total_count": 5, "probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]},
     [[1.0, 1.0, 3.0], [5.0, 0.0, 0.0]], None),
    ("multinomial_logits", "Multinomial", {"int:total_count": 3, "logits": LOGITS3},
     [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], None),
    ("mvn_cov", "MultivariateNormal", {"loc": [[0.0, 1.0], [2.0, -1.0]], "covariance_matrix": [[2.0, 0.3], [0.3, 0.5]]},
     [[0.5, 0.2], [1.0, -2.0]], None),
    ("mvn_tril", "MultivariateNormal", {"loc": [0.0, 1.0, -1.0],
                                        "scale_tril": [[1.5, 0.0, 0.0], [0.3, 0.7, 0.0], [-0.2, 0.4, 2.0]]},
     [0.5, 0.2, 1.0], None),
    ("mvn_prec", "MultivariateNormal", {"loc": [0.0, 1.0], "precision_matrix": [[2.0, -0.4], [-0.4, 1.0]]},
     [[0.5, 0.2], [1.0, -2.0]], None),
    ("relaxed_bernoulli", "RelaxedBernoulli", {"temperature": [0.5, 0.5, 0.5], "probs": P}, [0.3, 0.6, 0.95], None),
    ("relaxed_onehot", "RelaxedOneHotCategorical", {"temperature": [0.7], "logits": LOGITS3},
     [[0.2, 0.3, 0.5], [0.1, 0.8, 0.1]], None),
]

METHODS = ["log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"]


def build(cls: str, kwargs: dict) -> D.Distribution:
    args = {}
    for k, v in kwargs.items():
        if k.startswith("int:"):
            args[k[4:]] = v
        else:
            args[k] = torch.tensor(v)
    return getattr(D, cls)(**args)


def values(t: torch.Tensor) -> list:
    return [x if math.isfinite(x) else repr(x) for x in t.reshape(-1).tolist()], list(t.shape)


def run(case: tuple) -> dict:
    name, cls, kwargs, vals, icdf_vals = case
    d = build(cls, kwargs)
    out: dict = {"name": name, "cls": cls, "kwargs": kwargs, "value": vals, "icdf_value": icdf_vals,
                 "batch_shape": list(d.batch_shape), "event_shape": list(d.event_shape)}
    for m in METHODS:
        try:
            if m in ("log_prob", "cdf"):
                r = getattr(d, m)(torch.tensor(vals))
            elif m == "icdf":
                if icdf_vals is None:
                    raise NotImplementedError
                r = d.icdf(torch.tensor(icdf_vals))
            elif m == "entropy":
                r = d.entropy()
            else:
                r = getattr(d, m)
        except NotImplementedError:
            out[m] = None
            continue
        out[m] = values(r.to(torch.float64))
    return out


# KL cases: one instance per family (batch of 2), paired as torch registers them
KL_FAMILIES = {
    "Bernoulli": ("Bernoulli", {"probs": [0.3, 0.8]}),
    "Binomial": ("Binomial", {"total_count": [6.0, 6.0], "probs": [0.3, 0.8]}),
    "Categorical": ("Categorical", {"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]}),
    "OneHotCategorical": ("OneHotCategorical", {"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]}),
    "Geometric": ("Geometric", {"probs": [0.3, 0.8]}),
    "Poisson": ("Poisson", {"rate": [0.5, 4.0]}),
    "Normal": ("Normal", {"loc": [0.2, -1.0], "scale": [1.0, 2.5]}),
    "Uniform": ("Uniform", {"low": [0.1, 0.3], "high": [0.6, 0.9]}),
    "Beta": ("Beta", {"concentration1": [0.7, 2.0], "concentration0": [1.5, 3.0]}),
    "Gamma": ("Gamma", {"concentration": [0.8, 3.0], "rate": [1.5, 0.5]}),
    "Dirichlet": ("Dirichlet", {"concentration": [[0.5, 2.0, 1.5], [3.0, 1.0, 4.0]]}),
    "Exponential": ("Exponential", {"rate": [0.5, 2.0]}),
    "Laplace": ("Laplace", {"loc": [0.2, -1.0], "scale": [1.0, 0.5]}),
    "Cauchy": ("Cauchy", {"loc": [0.2, -1.0], "scale": [1.0, 0.5]}),
    "Gumbel": ("Gumbel", {"loc": [0.2, -1.0], "scale": [1.0, 0.5]}),
    "MultivariateNormal": ("MultivariateNormal", {"loc": [[0.0, 1.0], [2.0, -1.0]],
                                                  "covariance_matrix": [[2.0, 0.3], [0.3, 0.5]]}),
}
# a second instance for same-family pairs
KL_OTHER = {
    "Bernoulli": {"probs": [0.6, 0.1]},
    "Binomial": {"total_count": [6.0, 6.0], "probs": [0.6, 0.1]},
    "Categorical": {"probs": [[0.5, 0.25, 0.25], [0.1, 0.7, 0.2]]},
    "OneHotCategorical": {"probs": [[0.5, 0.25, 0.25], [0.1, 0.7, 0.2]]},
    "Geometric": {"probs": [0.5, 0.2]},
    "Poisson": {"rate": [2.0, 1.0]},
    "Normal": {"loc": [1.0, 0.5], "scale": [0.5, 1.5]},
    "Uniform": {"low": [0.0, 0.4], "high": [0.8, 1.0]},
    "Beta": {"concentration1": [2.0, 0.5], "concentration0": [1.0, 0.9]},
    "Gamma": {"concentration": [2.0, 1.2], "rate": [0.7, 2.0]},
    "Dirichlet": {"concentration": [[1.0, 1.0, 1.0], [0.5, 2.5, 2.0]]},
    "Exponential": {"rate": [1.5, 0.3]},
    "Laplace": {"loc": [1.0, 0.0], "scale": [2.0, 0.7]},
    "Cauchy": {"loc": [1.0, 0.0], "scale": [2.0, 0.7]},
    "Gumbel": {"loc": [1.0, 0.0], "scale": [2.0, 0.7]},
    "MultivariateNormal": {"loc": [0.5, 0.0], "scale_tril": [[1.2, 0.0], [-0.4, 0.8]]},
}
# composite pairs checked through their bases
KL_EXTRA = [
    ("Independent", ("Independent", {"base": ("Normal", {"loc": [[0.2, -1.0]], "scale": [[1.0, 2.5]]}), "int:n": 1}),
     ("Independent", {"base": ("Normal", {"loc": [[1.0, 0.5]], "scale": [[0.5, 1.5]]}), "int:n": 1})),
    ("LogNormal", ("LogNormal", {"loc": [0.2, -1.0], "scale": [1.0, 2.5]}),
     ("LogNormal", {"loc": [1.0, 0.5], "scale": [0.5, 1.5]})),
    ("Chi2", ("Chi2", {"df": [1.0, 4.0]}), ("Chi2", {"df": [3.0, 2.5]})),
    ("Chi2-Gamma", ("Chi2", {"df": [1.0, 4.0]}), ("Gamma", {"concentration": [2.0, 1.2], "rate": [0.7, 2.0]})),
]


def build_any(spec: tuple) -> D.Distribution:
    cls, kwargs = spec
    if cls == "Independent":
        return D.Independent(build_any(kwargs["base"]), kwargs["int:n"])
    return build(cls, kwargs)


def kl_cases() -> list[dict]:
    pairs = sorted((a.__name__, b.__name__) for a, b in kl._KL_REGISTRY
                   if a.__name__ in KL_FAMILIES and b.__name__ in KL_FAMILIES)
    out = []
    for a, b in pairs:
        p = KL_FAMILIES[a]
        q = (b, KL_OTHER[b]) if a == b else KL_FAMILIES[b]
        out.append({"p": list(p), "q": list(q), "kl": values(kl.kl_divergence(build(*p), build(*q)))})
    for name, p, q in KL_EXTRA:
        out.append({"p": list(p), "q": list(q), "kl": values(kl.kl_divergence(build_any(p), build_any(q)))})
    return out


def transform_cases() -> list[dict]:
    x = torch.tensor([-1.5, 0.2, 2.0])
    out = []
    for name, t in [("ExpTransform", D.ExpTransform()), ("SigmoidTransform", D.SigmoidTransform()),
                    ("TanhTransform", D.TanhTransform()),
                    ("AffineTransform", D.AffineTransform(torch.tensor([1.0, -2.0, 0.5]), torch.tensor([2.0, -0.5, 3.0])))]:
        y = t(x)
        out.append({"name": name, "x": x.tolist(), "y": y.tolist(), "inv": t.inv(y).tolist(),
                    "ladj": t.log_abs_det_jacobian(x, y).tolist()})
    comp = D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.TanhTransform()])
    y = comp(x)
    out.append({"name": "Compose(Affine(0.5, 2), Tanh)", "x": x.tolist(), "y": y.tolist(),
                "inv": comp.inv(y).tolist(), "ladj": comp.log_abs_det_jacobian(x, y).tolist()})
    s = D.SoftmaxTransform()
    out.append({"name": "SoftmaxTransform", "x": x.tolist(), "y": s(x).tolist()})
    # a TransformedDistribution: Normal through Affine then Sigmoid
    td = D.TransformedDistribution(D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])),
                                   [D.AffineTransform(0.3, 2.0), D.SigmoidTransform()])
    v = torch.tensor([0.4, 0.9])
    out.append({"name": "TransformedDistribution", "value": v.tolist(), "log_prob": td.log_prob(v).tolist(),
                "cdf": td.cdf(v).tolist()})
    # a decreasing affine map: cdf flips
    td2 = D.TransformedDistribution(D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])),
                                    [D.AffineTransform(0.3, -2.0)])
    out.append({"name": "TransformedDistributionNeg", "value": v.tolist(), "log_prob": td2.log_prob(v).tolist(),
                "cdf": td2.cdf(v).tolist(), "icdf": td2.icdf(torch.tensor([0.2, 0.7])).tolist()})
    return out


def mixture_case() -> dict:
    mix = D.MixtureSameFamily(D.Categorical(torch.tensor([[0.3, 0.7], [0.5, 0.5]])),
                              D.Normal(torch.tensor([[-1.0, 2.0], [0.0, 0.5]]), torch.tensor([[0.5, 1.0], [1.0, 2.0]])))
    v = torch.tensor([0.3, -1.0])
    return {"value": v.tolist(), "log_prob": mix.log_prob(v).tolist(), "cdf": mix.cdf(v).tolist(),
            "mean": mix.mean.tolist(), "variance": mix.variance.tolist()}


def standard_gamma_grad_case() -> dict:
    """torch's implicit reparameterization gradient dx/dalpha of a Gamma(alpha, 1) sample x."""
    alpha = torch.tensor([0.3, 0.7, 1.0, 2.5, 10.0, 0.3, 2.5, 40.0])
    x = torch.tensor([0.05, 0.5, 1.0, 2.0, 9.0, 2.0, 0.4, 38.0])
    return {"alpha": alpha.tolist(), "x": x.tolist(), "grad": torch._standard_gamma_grad(alpha, x).tolist()}


def main() -> None:
    data = {"torch": torch.__version__, "cases": [run(c) for c in CASES], "kl": kl_cases(),
            "transforms": transform_cases(), "mixture": mixture_case(),
            "standard_gamma_grad": standard_gamma_grad_case()}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT} ({len(data['cases'])} cases, {len(data['kl'])} KL pairs)")


if __name__ == "__main__":
    main()
