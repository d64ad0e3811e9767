"""The normal CDF kernel (aiograd/ops/pointwise/_normal_cdf.py, NOTE [Fast Phi]): float64 is scipy's
ndtr itself; the fitted float32 form keeps float32's accuracy, in the lower tail too; shapes and
dtypes are the input's."""

from __future__ import annotations

import numpy as np
import scipy.special

from aiograd.ops.pointwise._normal_cdf import phi


def test_float64_is_scipy_ndtr() -> None:
    x = np.linspace(-40, 40, 8001)
    np.testing.assert_array_equal(phi(x), scipy.special.ndtr(x))


def test_float32_is_as_accurate_as_float32_allows() -> None:
    x = np.linspace(-12, 12, 24001).astype(np.float32)
    ref = scipy.special.ndtr(x.astype(np.float64))
    got = phi(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=4e-7)
    low = x < -4  # the lower tail keeps its relative accuracy (no cancellation in 1 + erf)
    np.testing.assert_allclose(got[low], ref[low], rtol=1e-5, atol=0)


def test_shape_and_dtype_are_the_inputs() -> None:
    assert phi(np.float32(0.5).reshape(())).shape == ()
    assert phi(np.zeros((2, 3), np.float16)).dtype == np.float16
    np.testing.assert_allclose(phi(np.array([0.0], np.float32)), [0.5], rtol=3e-7)
    assert np.isnan(phi(np.array([np.nan], np.float32))).all()
