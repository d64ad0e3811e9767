"""Phi, the standard normal CDF, as an array kernel: scipy's ndtr, and in float32 a fitted form
that is faster (NOTE [Fast Phi] has the figures).

Exact GELU (``x * Phi(x)``, aiograd/ops/nn/activation.py) is its one user. The fitted kernel is
kept for speed alone: scipy.special.ndtr is the reference it is measured against, and float64
(which gradcheck needs) always runs ndtr. A leaf of the op modules: it imports only the lazy
scipy.special loader.
"""

from __future__ import annotations

import numpy as np

from ._scipy import scipy_special as _scipy_special

__all__ = ["phi"]

_SQRT1_2 = 0.70710678118654752440


# NOTE [Fast Phi]
# Exact GELU needs Phi(x) = (1 + erf(x / sqrt 2)) / 2. scipy's ndtr computes it in double
# precision at ~13 ns an element, 25x torch's vectorised GELU: the largest cost of a small
# transformer's step. For float32 (and float16, computed in float32) ``_phi_float32`` evaluates
#     erfc(a) = t * exp(-a^2 + P(t)),   a = |x| / sqrt 2,   t = 1 / (1 + a / 2),
# with P a degree-9 polynomial fitted here (least squares on Chebyshev nodes of t in (0, 1],
# i.e. every a >= 0) to log(erfcx(a) / t): relative error of erfc below 1.1e-7, so
# Phi(-|x|) = erfc(a) / 2 keeps its relative accuracy in the lower tail, where 1 + erf(x / sqrt 2)
# in float32 cancels (torch's GELU is off by up to 1e-2 relative there). Then Phi(x) = q + u (1 - 2q)
# with q = Phi(-|x|) and u = 1.0 where x > 0: arithmetic, because np.where and where= masks are
# 40-70x slower than a plain pass on random signs. About 28 elementwise passes in three buffers
# (each fresh 1 MB buffer costs page faults: ~0.3 ms under load): ~0.8 ms for 262,144 elements
# against ndtr's ~3.5 ms. float64 keeps ndtr (gradcheck
# needs double precision). Measured against ndtr in float64 over x in [-12, 12]: GELU's
# error is at most 4e-7 absolute (torch's: 1.1e-6), 2e-6 relative for |x| < 4 (torch: 7e-3).
_PHI_POLY = (-1.265512239003081, 1.0000245096328912, 0.3740773866621059, 0.09690060362458817,
             -0.18679185442986795, 0.28014885976099435, -1.1371720406705759, 1.4903131134532788,
             -0.8230498008702344, 0.17106152157393859)  # P(t), constant term first


def _phi_float32(x: np.ndarray) -> np.ndarray:
    """Phi(x), the standard normal CDF, of a float32 array (at least 1-d) as a new float32 array (NOTE [Fast Phi])."""
    f32 = np.float32
    t = np.abs(x)
    t *= f32(0.5 * _SQRT1_2)
    t += f32(1)
    np.divide(f32(1), t, out=t)
    p = np.multiply(x, x)
    p *= f32(-0.5)  # -a^2, then P(t) added term by term (Horner's scheme in a second buffer)
    horner = np.multiply(t, f32(_PHI_POLY[-1]))
    for c in _PHI_POLY[-2:0:-1]:
        horner += f32(c)
        horner *= t
    p += horner
    p += f32(_PHI_POLY[0])
    np.exp(p, out=p)
    p *= t  # erfc(|x| / sqrt 2)
    p *= f32(0.5)  # q = Phi(-|x|)
    upper = np.greater(x, f32(0), out=t)  # 1.0 where x > 0, else 0.0
    flip = np.multiply(p, f32(-2), out=horner)
    flip += f32(1)
    flip *= upper
    p += flip  # q + (1 - 2q) = 1 - q above 0; q itself below (no cancellation in the lower tail)
    return p


def phi(x: np.ndarray) -> np.ndarray:
    """Phi(x) in ``x``'s floating dtype: the fast float32 form (float16 through float32), else scipy's ndtr."""
    if x.dtype in (np.float32, np.float16):  # a 0-d array goes as 1-d: ufuncs return scalars for 0-d
        out = _phi_float32(x.astype(np.float32, copy=False).reshape(x.shape or (1,)))
        return out.reshape(x.shape).astype(x.dtype, copy=False)
    return _scipy_special().ndtr(x)
