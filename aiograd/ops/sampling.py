"""Random sampling from tensors of parameters: bernoulli, multinomial, normal, poisson, and the
in-place fills bernoulli_, normal_, uniform_.

Every op draws from aiograd's generators (``generator=``: an ``ag.Generator``, or None for the
default one that ``ag.manual_seed`` seeds), so a seeded run repeats. As in torch, a sample is
not reparameterized: the nodes recorded for parameters that require grad give them a zero
gradient (bernoulli with a number ``p``, like torch's, has no derivative at all).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._generator import Generator, rng_of
from ..autograd.graph import Node, Shape, record
from ..device import DeviceLike
from ..tensor import DTypeLike, Tensor, _make, _resolve_dtype, _shape_args, get_default_dtype, new_tensor
from ._common import broadcast_shapes, common_device, needs_grad
from ._table import OpTable
from .pointwise.elementwise import NotImplementedBackward, zeros_like_grad
from .inplace import _inplace
from .._dtypes import torch_dtype_name as _torch_dtype_name
from .movement.shape import _index

SAMPLING = OpTable("sampling")


class _ZeroGradient(Node):
    """A sample's node: each parameter input gets zeros of its shape (torch's derivative of a
    sample that is not reparameterized)."""

    __slots__ = ("shapes",)
    shapes: tuple[Shape, ...]

    def __init__(self, shapes: tuple[Shape, ...]) -> None:
        self._init_node()
        self.shapes = shapes

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        return [zeros_like_grad(g, s) if self.should_compute_output(i) else None for i, s in enumerate(self.shapes)]


class NormalBackward0(_ZeroGradient):
    """normal_ in place."""

    __slots__ = ()


class NormalBackward1(_ZeroGradient):
    """normal(Tensor mean, float std)."""

    __slots__ = ()


class NormalBackward2(_ZeroGradient):
    """normal(float mean, Tensor std)."""

    __slots__ = ()


class NormalBackward3(_ZeroGradient):
    """normal(Tensor mean, Tensor std)."""

    __slots__ = ()


class BernoulliBackward0(_ZeroGradient):
    """bernoulli(Tensor probabilities)."""

    __slots__ = ()


class BernoulliBackward2(_ZeroGradient):
    """bernoulli_ in place."""

    __slots__ = ()


class PoissonBackward0(_ZeroGradient):
    __slots__ = ()


class UniformBackward0(_ZeroGradient):
    """uniform_ in place."""

    __slots__ = ()


def _sample(values: np.ndarray, inputs: tuple[Any, ...], node: type[_ZeroGradient], device: Any) -> Tensor:
    out = new_tensor(values, device)
    if needs_grad(*inputs):
        record(node(tuple(np.shape(x._data) if isinstance(x, Tensor) else () for x in inputs)), inputs, (out,))
    return out


def _floating(x: Tensor, kernel: str) -> None:
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_torch_dtype_name(x.dtype)}'")


# ----- bernoulli ---------------------------------------------------------------------------------


def _bernoulli_p(p: Any, op: str) -> Any:
    """A probability: a number in [0, 1], or a tensor of them."""
    if isinstance(p, Tensor):
        pd = p._data
        if not ((pd >= 0) & (pd <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        return pd
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")
    return p


@SAMPLING.op(nodes=(BernoulliBackward0,))
def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
    """0 or 1 drawn with probability ``input`` of a 1 (elementwise), or ``p`` for every element
    when given; in ``input``'s shape and dtype."""
    rng = rng_of(generator, "bernoulli")
    if p is not None:
        prob = _bernoulli_p(p, "bernoulli_")
        out = new_tensor((rng.random(input.shape) < prob).astype(input.dtype), input._device)
        if needs_grad(input):
            record(NotImplementedBackward("bernoulli"), (input,), (out,))
        return out
    _floating(input, "bernoulli_tensor_cpu_p_")
    prob = _bernoulli_p(input, "bernoulli")
    return _sample((rng.random(input.shape) < prob).astype(input.dtype), (input,), BernoulliBackward0, input._device)


# ----- multinomial --------------------------------------------------------------------------------


def _sample_rows(probs: np.ndarray, n: int, replacement: bool, rng: np.random.Generator) -> np.ndarray:
    """``n`` category indices per row of ``probs`` (rows x categories, each row summing above 0).

    With replacement: inverse-CDF sampling, all rows in one ``searchsorted`` (row r's CDF is
    shifted to [r, r + 1], which keeps the concatenated CDFs sorted). Without: the ``n``
    smallest of ``E / p`` with E ~ Exp(1) (an exponential race, which draws categories one
    after another in proportion to the probabilities left; a zero-probability category comes
    last, as torch samples it only when the others run out).
    """
    rows, cats = probs.shape
    if replacement:
        cdf = np.cumsum(probs, axis=1)
        cdf /= cdf[:, -1:]
        offsets = np.arange(rows, dtype=np.float64)[:, None]
        u = rng.random((rows, n))
        flat = np.searchsorted((cdf + offsets).reshape(-1), (u + offsets).reshape(-1), side="right")
        return np.minimum(flat.reshape(rows, n) - np.arange(rows)[:, None] * cats, cats - 1)
    with np.errstate(divide="ignore"):
        keys = rng.exponential(size=(rows, cats)) / probs
    if n < cats:
        part = np.argpartition(keys, n - 1, axis=1)[:, :n]
        order = np.argsort(np.take_along_axis(keys, part, 1), axis=1, kind="stable")
        return np.take_along_axis(part, order, 1)
    return np.argsort(keys, axis=1, kind="stable")[:, :n]


@SAMPLING.op()
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """``num_samples`` category indices (int64) drawn from the weights of each row of ``input``
    (1-d, or 2-d: one row each; the weights need not sum to 1). Without ``replacement`` each
    category is drawn at most once per row."""
    xd = input._data
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {_torch_dtype_name(input.dtype)}"
        )
    if xd.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n = _index(num_samples, "num_samples")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    cats = xd.shape[-1]
    if not replacement and n > cats:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    probs = xd.reshape(-1, cats).astype(np.float64)
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if probs.shape[0] and (probs.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if probs.shape[0] == 0:
        out = np.zeros((0, n), np.int64)
    else:
        out = _sample_rows(probs, n, replacement, rng_of(generator, "multinomial")).astype(np.int64)
    return new_tensor(out.reshape(xd.shape[:-1] + (n,)), input._device)


# ----- normal / poisson ----------------------------------------------------------------------------


def _check_std(std: Any) -> None:
    if isinstance(std, Tensor):
        if (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


@SAMPLING.op(nodes=(NormalBackward1, NormalBackward2, NormalBackward3), method=False)
def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Normal samples, in torch's forms: ``normal(mean, std)`` with a tensor of means and/or of
    standard deviations (broadcast; the result's shape), or ``normal(mean, std, size)`` with two
    numbers (``dtype``, ``device``, ``requires_grad`` as for ``randn``)."""
    rng = rng_of(generator, "normal")
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal(): with a number mean and std, give the size: normal(mean, std, size)")
        _check_std(std)
        d = _resolve_dtype(dtype) or get_default_dtype()
        values = rng.normal(float(mean), float(std), _shape_args((size,)))
        return _make(values.astype(d), device, requires_grad)
    if size is not None:
        raise TypeError("normal(): size is only given with a number mean and std")
    _check_std(std)
    for t in (mean, std):
        if isinstance(t, Tensor):
            _floating(t, "normal_kernel_cpu")
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        shape = broadcast_shapes(mean.shape, std.shape)
        node: type[_ZeroGradient] = NormalBackward3
        dt = np.result_type(mean._data, std._data)
        dev = common_device(mean, std)
    elif isinstance(mean, Tensor):
        shape, node, dt, dev = mean.shape, NormalBackward1, mean.dtype, mean._device
    else:
        shape, node, dt, dev = std.shape, NormalBackward2, std.dtype, std._device
    md = mean._data if isinstance(mean, Tensor) else mean
    sd = std._data if isinstance(std, Tensor) else std
    values = (md + sd * rng.standard_normal(shape)).astype(dt)
    return _sample(values, tuple(t for t in (mean, std) if isinstance(t, Tensor)), node, dev)


@SAMPLING.op(nodes=(PoissonBackward0,), method=False)
def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with rates ``input`` (non-negative), in its shape and dtype."""
    _floating(input, "poisson_cpu")
    if (input._data < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    values = rng_of(generator, "poisson").poisson(input._data).astype(input.dtype)
    return _sample(values, (input,), PoissonBackward0, input._device)


# ----- in-place fills ------------------------------------------------------------------------------


def _fill_inplace(self: Tensor, values: np.ndarray, node: type[_ZeroGradient]) -> Tensor:
    """Write a sample over ``self`` (NOTE [In-place ops] in inplace.py): its old value gets a zero gradient."""

    def outofplace(a: Tensor) -> Tensor:
        return _sample(values.astype(a.dtype), (a,), node, a._device)

    return _inplace(self, (), outofplace, lambda d: np.copyto(d, values, casting="unsafe"))


@SAMPLING.op(nodes=(BernoulliBackward2,), export=False)
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 0 or 1, a 1 drawn with probability ``p`` (a number, or a tensor broadcast to this one)."""
    prob = _bernoulli_p(p, "bernoulli_")
    values = rng_of(generator, "bernoulli_").random(self.shape) < prob
    return _fill_inplace(self, values, BernoulliBackward2)


@SAMPLING.op(nodes=(NormalBackward0,), export=False)
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with normal samples of ``mean`` and ``std``."""
    _check_std(std)
    _floating(self, "normal_kernel_cpu")
    values = rng_of(generator, "normal_").normal(mean, std, self.shape)
    return _fill_inplace(self, values, NormalBackward0)


@SAMPLING.op(nodes=(UniformBackward0,), export=False)
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with uniform samples in [a, b) (torch names them ``from`` and ``to``)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    _floating(self, "check_uniform_bounds")
    values = rng_of(generator, "uniform_").uniform(a, b, self.shape)
    return _fill_inplace(self, values, UniformBackward0)


__all__ = SAMPLING.exports(__name__)
