"""aiograd's random number generators: ``Generator`` (torch.Generator's methods over numpy's
PCG64), the default one behind every random function, and the module-level seeding
functions (``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state``, ``set_rng_state``).

A random function takes ``generator=`` (a Generator, or None for the default one), as
torch's do, so a seeded Generator gives a reproducible stream independent of the others.
"""

from __future__ import annotations

import json
import operator
from typing import Any

import numpy as np

from .device import CPU, Device, DeviceLike
from .tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "rng_of", "default_stream"]

_SEEDS = 1 << 64


def _fresh_seed() -> int:
    return int(np.random.default_rng().integers(0, _SEEDS, dtype=np.uint64))


class Generator:
    """A random number generator, as ``torch.Generator``: ``manual_seed`` returns it, so
    ``ag.Generator().manual_seed(0)`` is a seeded stream to pass as ``generator=``."""

    __slots__ = ("_rng", "_seed", "_device")

    def __init__(self, device: DeviceLike = "cpu") -> None:
        self._device = Device(device)
        self._seed = _fresh_seed()
        self._rng = np.random.default_rng(self._seed)

    @property
    def device(self) -> Device:
        return self._device

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from ``seed`` (an int in [-2**63, 2**64); negative ones wrap, as torch)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            try:
                seed = operator.index(seed)
            except TypeError:
                raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}") from None
        seed = int(seed)
        if not -(1 << 63) <= seed < _SEEDS:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % _SEEDS
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Restart the stream from a fresh non-deterministic seed, and return that seed."""
        self.manual_seed(_fresh_seed())
        return self._seed

    def initial_seed(self) -> int:
        """The seed the stream was last started from."""
        return self._seed

    def get_state(self) -> Any:
        """The generator's state as a uint8 tensor (for ``set_state``)."""
        text = json.dumps(self._rng.bit_generator.state).encode()
        return Tensor._wrap(np.frombuffer(text, np.uint8).copy(), self._device)

    def set_state(self, new_state: Any) -> "Generator":
        """Restore a state ``get_state`` returned."""
        if not isinstance(new_state, Tensor) or new_state.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        try:
            state = json.loads(new_state._data.tobytes().decode())
            self._rng.bit_generator.state = state
        except (ValueError, TypeError, KeyError):
            raise RuntimeError("the RNG state is not a state that get_state() returned") from None
        return self

    @property
    def numpy_generator(self) -> np.random.Generator:
        """The numpy Generator that draws this stream's numbers."""
        return self._rng


default_generator = Generator(CPU)


def rng_of(generator: Any, op: str) -> np.random.Generator:
    """The numpy generator of a ``generator=`` argument (the default one for None)."""
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be Generator, not {type(generator).__name__}")
    return generator._rng


def default_stream() -> np.random.Generator:
    """The default generator's numpy stream (ops without a ``generator=`` argument draw from it)."""
    return default_generator.numpy_generator


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (behind rand, randn, dropout, init, multinomial...); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from a fresh non-deterministic seed, and return that seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last started from."""
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The default generator's state, as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(new_state)
