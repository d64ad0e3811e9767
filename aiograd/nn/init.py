"""Parameter initialisation, as torch.nn.init: every function writes in place under
no_grad (bumping the tensor's version) and returns the tensor.

Random draws come from aiograd's generator, or from the ``generator=`` given, so
``ag.manual_seed`` makes them reproducible. The names without the trailing
underscore (``normal``, ``xavier_uniform``...) are torch's deprecated aliases: they
warn and do the same.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable, TypeVar

import numpy as np

from .._generator import Generator, rng_of
from ..autograd.grad_mode import no_grad
from .._dtypes import torch_dtype_name
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse",
]

F = TypeVar("F", bound=Callable[..., Any])


def _write(tensor: Tensor, values: Any) -> Tensor:
    with no_grad():
        tensor._data[...] = values
        tensor._bump_version()
    return tensor


def _check_floating(tensor: Tensor, kernel: str) -> None:
    """torch's error for a random fill of an integer tensor."""
    if tensor._data.dtype.kind not in "fc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(tensor._data.dtype)}'")


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The recommended gain for a nonlinearity (torch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    shape = tensor._data.shape
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with U(a, b)."""
    _check_floating(tensor, "check_uniform_bounds")
    return _write(tensor, rng_of(generator, "uniform_").uniform(a, b, tensor._data.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2)."""
    _check_floating(tensor, "normal_kernel_cpu")
    return _write(tensor, rng_of(generator, "normal_").normal(mean, std, tensor._data.shape))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b].

    Drawn by inverting the normal CDF on a uniform sample of [cdf(a), cdf(b)], so a
    window far in a tail costs no more than one near the mean (as torch does it).
    """
    from scipy import special  # a core dependency (pyproject.toml), imported on first use as in ops/pointwise/special.py

    _check_floating(tensor, "check_uniform_bounds")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
            "incorrect.", UserWarning, stacklevel=2,
        )
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    lo = special.ndtr((a - mean) / std)
    hi = special.ndtr((b - mean) / std)
    u = rng_of(generator, "trunc_normal_").uniform(2 * lo - 1, 2 * hi - 1, tensor._data.shape)
    values = special.erfinv(u) * (std * math.sqrt(2.0)) + mean
    return _write(tensor, np.clip(values, a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    return _write(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return _write(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return _write(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only): keeps a Linear layer's inputs as they are."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(tensor._data.shape[0], tensor._data.shape[1]))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta (3-, 4- or 5-D convolution weights): a convolution that keeps as many
    input channels as it can, each of the ``groups`` for its own slice of output channels."""
    shape = tensor._data.shape
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    centre = tuple(s // 2 for s in shape[2:])
    values = np.zeros(shape, tensor._data.dtype)
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _empty_is_noop(tensor: Tensor) -> bool:
    if 0 in tensor._data.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015).

    ``fan`` is the tensor's fan-in or fan-out (``mode``), ``gain`` is
    ``calculate_gain(nonlinearity, a)`` (``a``: the negative slope of a leaky ReLU).
    """
    if _empty_is_noop(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan), ``fan`` and ``gain`` as in ``kaiming_uniform_``."""
    if _empty_is_noop(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix scaled by ``gain`` (Saxe et al., 2013): the tensor read as
    ``shape[0]`` rows of the other dimensions flattened has orthonormal rows (or columns,
    whichever are fewer). Made as the Q of the QR decomposition of a normal sample, its signs
    fixed by R's diagonal so that Q is uniformly distributed."""
    shape = tensor._data.shape
    if len(shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor._data.size == 0:
        return tensor  # nothing to fill, as torch
    _check_floating(tensor, "normal_kernel_cpu")
    rows = shape[0]
    cols = tensor._data.size // rows
    flat = rng_of(generator, "orthogonal_").standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, gain * q.reshape(shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A sparse 2-D matrix (Martens, 2010): N(0, std^2) values with ``ceil(sparsity * rows)``
    zeros in every column, at rows drawn at random."""
    shape = tensor._data.shape
    if len(shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _check_floating(tensor, "normal_kernel_cpu")
    rows, cols = shape
    num_zeros = int(math.ceil(sparsity * rows))
    rng = rng_of(generator, "sparse_")
    values = rng.normal(0.0, std, shape)
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return _write(tensor, values)


def _deprecated(fn: F) -> F:
    """torch's deprecated alias of ``fn`` (named without the trailing underscore): warns, then calls it."""
    old = fn.__name__[:-1]

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated: ``{fn.__name__}`` (warns)."
    return alias  # type: ignore[return-value]


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
