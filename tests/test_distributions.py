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
