"""Special functions: values at their edges (poles, infinities, the ends of a domain) and gradients
there, as torch 2.13 gives them (hard-coded); integer inputs; polygamma's two argument orders.
Gradients over shapes: tests/op_rows.py."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
from helpers import t64

INF, NAN = float("inf"), float("nan")


def test_values_at_the_edges() -> None:
    np.testing.assert_array_equal(ag.erfinv(ag.tensor([-1.0, 1.0, 1.5, 0.0])).numpy(), [-INF, INF, NAN, 0.0])
    np.testing.assert_array_equal(ag.lgamma(ag.tensor([0.0, -1.0, INF, -INF])).numpy(), [INF, INF, INF, INF])
    np.testing.assert_array_equal(ag.digamma(ag.tensor([0.0, -1.0, NAN])).numpy(), [-INF, NAN, NAN])
    assert ag.sinc(ag.tensor(0.0)).item() == 1.0
    # torch's trigamma (reflection formula): finite at the poles, as its kernel computes them
    np.testing.assert_allclose(ag.polygamma(1, ag.tensor([-1.0, -2.0, 0.5], dtype=ag.float64)).numpy(),
                               [6.580790147320947e32, 1.6451975368302367e32, 4.934802202073678], rtol=1e-12)


def test_integer_inputs_give_the_default_float() -> None:
    for op in (ag.erfc, ag.erfinv, ag.lgamma, ag.digamma, ag.sinc, ag.logit, ag.expm1, ag.asinh, ag.deg2rad):
        assert op(ag.tensor([0, 1])).dtype == np.float32
    assert ag.polygamma(1, ag.tensor([1, 2])).dtype == np.float32
    assert ag.xlogy(ag.tensor([1, 2]), ag.tensor([3, 4])).dtype == np.float32


def test_polygamma_argument_orders_and_errors() -> None:
    x = ag.tensor([0.5, 1.5])
    want = ag.polygamma(2, x).numpy()
    np.testing.assert_array_equal(x.polygamma(2).numpy(), want)
    np.testing.assert_array_equal(ag.polygamma(x, 2).numpy(), want)  # torch's OpInfo order, taken too
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ag.polygamma(-1, x)
    y = t64([0.5, 1.5])
    assert y.clone().polygamma_(1).grad_fn.name() == "PolygammaBackward1"


def test_xlogy_at_zero_as_torch() -> None:
    x, y = t64([0.0, 2.0, 0.0, 1.0]), t64([0.0, 0.0, -1.0, NAN])
    out = ag.xlogy(x, y)
    np.testing.assert_array_equal(out.detach().numpy(), [0.0, -INF, 0.0, NAN])
    gx, gy = ag.grad_sync(out.sum(), [x, y])
    np.testing.assert_array_equal(gx.numpy(), [0.0, -INF, 0.0, NAN])
    np.testing.assert_array_equal(gy.numpy(), [NAN, INF, -0.0, NAN])
    (g0,) = ag.grad_sync(ag.xlogy(x, 0.0).sum(), [x])
    np.testing.assert_array_equal(g0.numpy(), [0.0, -INF, 0.0, -INF])
    (gn,) = ag.grad_sync(ag.xlogy(x, -1.0).sum(), [x])
    np.testing.assert_array_equal(gn.numpy(), [0.0, NAN, 0.0, NAN])


def test_xlogy_gradient_at_zero_with_a_positive_other_is_log_other() -> None:
    """torch's rule: d/dx is 0 only where x == 0 and y <= 0; at x == 0 with y > 0 it is log(y)."""
    x = t64([0.0, 0.0, 0.0, 1.0, 0.0])
    y = t64([2.0, 0.5, 0.0, 3.0, NAN])
    gx, gy = ag.grad(ag.xlogy(x, y).sum(), [x, y])
    np.testing.assert_allclose(gx.numpy(), [np.log(2.0), np.log(0.5), 0.0, np.log(3.0), NAN])
    np.testing.assert_array_equal(gy.numpy()[:3], [0.0, 0.0, NAN])
    x2, y2 = t64([0.0, 0.5, 1.5]), t64([0.7, 2.0, 1.1])
    assert ag.gradgradcheck(ag.xlogy, (x2, y2))


def test_logit_gradient_outside_its_domain() -> None:
    x = t64([0.0, 1.0, -0.5, 1.5, 0.3, -0.0])
    (g,) = ag.grad_sync(ag.logit(x).sum(), [x])
    np.testing.assert_array_equal(g.numpy()[:4], [INF, INF, NAN, NAN])
    assert g.numpy()[5] == INF  # as at +0.0
    (ge,) = ag.grad_sync(ag.logit(x, 0.2).sum(), [x])
    np.testing.assert_allclose(ge.numpy(), [0, 0, 0, 0, 1 / 0.21, 0])
    np.testing.assert_allclose(ag.logit(ag.tensor([0.0, 1.0]), eps=0.25).numpy(), np.log([1 / 3, 3]), rtol=1e-6)


def test_sinc_gradient_at_zero() -> None:
    x = t64([0.0, 1e-3])
    (g,) = ag.grad_sync(ag.sinc(x).sum(), [x], create_graph=True)
    assert g.detach().numpy()[0] == 0.0
    (gg,) = ag.grad_sync(g.sum(), [x])
    assert np.isfinite(gg.numpy()).all()  # the formula runs on 1 at 0 (torch's gives NaN there)
