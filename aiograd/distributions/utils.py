"""Helpers the distribution families share: broadcasting parameters, probabilities and
logits, cached properties, and the differentiable special functions that only
distributions need (the standard gamma sample with its implicit reparameterization
gradient, and the regularized lower incomplete gamma function for Gamma's cdf).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from .._generator import rng_of
from ..autograd.function import Function, once_differentiable
from ..autograd.grad_mode import enable_grad
from ..ops.pointwise._scipy import scipy_special as _scipy_special
from ..tensor import Tensor, get_default_dtype, tensor
from ..ops import lgamma

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
           "standard_gamma", "gammainc", "sum_rightmost", "tiny", "eps"]

T = TypeVar("T")


def eps(dtype: Any) -> float:
    """The machine epsilon of a float dtype."""
    return float(np.finfo(np.dtype(dtype)).eps)


def tiny(dtype: Any) -> float:
    """The smallest positive normal number of a float dtype."""
    return float(np.finfo(np.dtype(dtype)).tiny)


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """``values`` (tensors or numbers) as tensors of one broadcast shape. Numbers take the dtype
    of the first tensor among them, or the default dtype when there is none (as torch)."""
    dtype = None
    for v in values:
        if isinstance(v, Tensor):
            dtype = v.dtype
            break
        if not isinstance(v, (numbers.Number, np.ndarray, np.generic)):
            raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                             "implementing __torch_function__.")
    if dtype is None:
        dtype = get_default_dtype()
    ts = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype) for v in values]
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in ts)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside [eps, 1 - eps] of their dtype, so their logs stay finite."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: the sigmoid for binary ones, the softmax over the last dimension otherwise."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: ``log p - log(1 - p)`` for binary ones, ``log p`` otherwise (clamped)."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


class lazy_property(Generic[T]):
    """A property computed on first read and then stored on the instance, computed with grad
    enabled (a parameter derived lazily, e.g. ``probs`` from ``logits``, keeps its graph).
    Read from the class it returns itself, so validation can skip parameters not yet computed."""

    def __init__(self, wrapped: Callable[[Any], T]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def uniform_open(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Uniform numbers in the open interval (0, 1) of ``dtype`` from aiograd's default generator."""
    rng = rng_of(None, "rsample")
    u = rng.random(shape).astype(dtype, copy=False)
    t = tiny(dtype)
    return np.clip(u, t, 1 - eps(dtype) / 2)


def rng() -> np.random.Generator:
    """aiograd's default numpy generator (the one ``manual_seed`` seeds)."""
    return rng_of(None, "sample")


# ----- the standard gamma sample and its implicit gradient ------------------------------------


def _gammainc_dalpha(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d/da of the regularized lower incomplete gamma P(a, x): central differences in ``a``
    refined by one Richardson step (error of order h**4, h = 1e-3 a)."""
    sp = _scipy_special()
    h = 1e-3 * a

    def central(step: np.ndarray) -> np.ndarray:
        return (sp.gammainc(a + step, x) - sp.gammainc(a - step, x)) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3


class _StandardGamma(Function):
    """A Gamma(alpha, 1) sample drawn as the inverse cdf of a uniform ``u``: ``x = P^-1(alpha, u)``.

    NOTE [Gamma reparameterization]: drawing by the inverse cdf makes the sample a smooth
    function of ``alpha`` for a fixed uniform, and its pathwise derivative is exactly the
    implicit one, ``dx/dalpha = -(dP/dalpha) / (dP/dx)`` (P held at u). So a gradcheck of
    any rsample built on it (Gamma, Chi2, Beta, Dirichlet, StudentT) agrees with finite
    differences once the generator is reseeded before each draw."""

    @staticmethod
    def forward(ctx: Any, alpha: Tensor, u: np.ndarray) -> Tensor:
        a = alpha.detach().numpy()
        x = _scipy_special().gammaincinv(a, u).astype(a.dtype, copy=False)
        x = np.maximum(x, tiny(a.dtype))
        out = Tensor._wrap(x, alpha.device)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> Any:
        alpha, x = ctx.saved_tensors
        a, xv = alpha.detach().numpy(), x.detach().numpy()
        sp = _scipy_special()
        log_density = (a - 1) * np.log(xv) - xv - sp.gammaln(a)
        dx = -_gammainc_dalpha(a, xv) / np.exp(log_density)
        return Tensor._wrap((grad.detach().numpy() * dx).astype(a.dtype, copy=False), grad.device), None


def standard_gamma(alpha: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Gamma(alpha, 1) samples of ``shape`` (alpha broadcast to it), differentiable in alpha."""
    a = alpha.expand(shape) if tuple(alpha.shape) != tuple(shape) else alpha
    u = uniform_open(tuple(shape), a.dtype)
    return _StandardGamma.apply(a, u)


class _GammaInc(Function):
    """The regularized lower incomplete gamma P(a, x), differentiable in ``x`` only (as torch's
    gammainc: the derivative in ``a`` is not implemented)."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, x: Tensor) -> Tensor:
        ctx.save_for_backward(a, x)
        av, xv = a.detach().numpy(), x.detach().numpy()
        return Tensor._wrap(np.asarray(_scipy_special().gammainc(av, xv)).astype(xv.dtype, copy=False), x.device)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("derivative for aten::igamma is not implemented")
        dx = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, grad * dx


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) = gamma(a, x) / Gamma(a), differentiable in ``x``."""
    a, x = broadcast_all(a, x)
    return _GammaInc.apply(a, x)
