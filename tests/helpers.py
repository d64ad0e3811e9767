"""Helpers shared by the test files: float64 tensors, value samplers, and gradient checks."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import aiograd as ag


def t64(a: Any, requires_grad: bool = True) -> ag.Tensor:
    """A float64 tensor (gradcheck needs double precision)."""
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def c64(a: Any) -> ag.Tensor:
    """A float64 constant: a tensor that does not require grad."""
    return t64(a, requires_grad=False)


def rnd(*shape: int, seed: int = 0) -> np.ndarray:
    """Standard normal float64 values of ``shape``."""
    return np.random.default_rng(seed).standard_normal(shape)


Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def uniform(lo: float = -2.0, hi: float = 2.0, kinks: Sequence[float] = ()) -> Sampler:
    """Uniform values in [lo, hi), kept at least 0.05 away from each kink (where a derivative jumps)."""

    def sample(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        x = rng.uniform(lo, hi, shape)
        for k in kinks:
            x = np.where(np.abs(x - k) < 0.05, k + 0.1 * np.sign(x - k + 1e-12), x)
        return x

    return sample


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values at least 0.1 apart (no ties, even under a finite-difference step), in random order."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.1 + rng.uniform(0, 0.01, n)).reshape(shape)


def check_grads(fn: Callable[..., Any], inputs: Sequence[Any], second: bool = True) -> None:
    """gradcheck (and gradgradcheck) of ``fn`` at ``inputs``, outside an event loop."""
    assert ag.gradcheck(fn, tuple(inputs))
    if second:
        assert ag.gradgradcheck(fn, tuple(inputs))
