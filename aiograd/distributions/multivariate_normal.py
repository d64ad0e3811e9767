"""The multivariate normal distribution, parameterized by a covariance matrix, a precision
matrix, or the lower Cholesky factor of the covariance (``scale_tril``), exactly one."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..linalg import cholesky, inv, solve
from .._random import randn
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(m: Tensor, v: Tensor) -> Tensor:
    return (m @ v.unsqueeze(-1)).squeeze(-1)


def _mahalanobis(scale_tril: Tensor, diff: Tensor) -> Tensor:
    """``|L^-1 diff|^2`` over the last dimension, with L and diff broadcast over their batches."""
    shape = np.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1]))
    n = diff.shape[-1]
    L = scale_tril.expand(shape + (n, n))
    d = diff.expand(shape + (n,))
    z = solve(L, d.unsqueeze(-1)).squeeze(-1)
    return (z * z).sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution over vectors of mean ``loc`` and covariance ``L L^T``."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = scale_tril if scale_tril is not None else (
            covariance_matrix if covariance_matrix is not None else precision_matrix)
        assert given is not None
        if given.dim() < 2:
            name = ("scale_tril" if scale_tril is not None else
                    "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = np.broadcast_shapes(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch_shape + (n, n))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch_shape + (n, n))
        else:
            assert precision_matrix is not None
            self.precision_matrix = precision_matrix.expand(batch_shape + (n, n))
        self.loc = loc.expand(batch_shape + (n,))
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = cholesky(inv(precision_matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> "MultivariateNormal":
        new = self._expand_params(MultivariateNormal, batch_shape, _instance,
                                  {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2, "scale_tril": 2})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + (n, n))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return (L @ L.mT).expand(self._batch_shape + (n, n))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return inv(L @ L.mT).expand(self._batch_shape + (n, n))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L * L).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if tuple(h.shape) == self._batch_shape else h.expand(self._batch_shape)
