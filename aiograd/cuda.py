"""``ag.cuda``: the answers of torch built without CUDA, so that device-agnostic code takes its CPU path.

``device = "cuda" if ag.cuda.is_available() else "cpu"`` picks ``"cpu"``; the seeding
and cache calls that such code makes unconditionally do nothing, and what needs a
CUDA device raises, as torch's CPU build does.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "is_bf16_supported", "synchronize", "current_device", "get_device_name", "set_device", "get_rng_state",
]

from .amp import CudaAmp as amp  # noqa: E402  torch.cuda.amp.GradScaler / autocast (deprecated spellings)

_NO_CUDA = "aiograd has no CUDA devices (its tensors are numpy arrays); check ag.cuda.is_available() first"


def is_available() -> bool:
    """False: aiograd computes with numpy on the CPU."""
    return False


def device_count() -> int:
    """0 CUDA devices."""
    return 0


def is_initialized() -> bool:
    """False: there is nothing to initialise."""
    return False


def manual_seed(seed: int) -> None:
    """Does nothing (no CUDA generator to seed); ``ag.manual_seed`` seeds aiograd's."""


def manual_seed_all(seed: int) -> None:
    """Does nothing, as ``manual_seed``."""


def seed() -> None:
    """Does nothing (no CUDA generator)."""


def seed_all() -> None:
    """Does nothing (no CUDA generator)."""


def empty_cache() -> None:
    """Does nothing (no CUDA memory cached)."""


def memory_allocated(device: Any = None) -> int:
    """0 bytes."""
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """0 bytes."""
    return 0


def memory_reserved(device: Any = None) -> int:
    """0 bytes."""
    return 0


def max_memory_reserved(device: Any = None) -> int:
    """0 bytes."""
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False."""
    return False


def synchronize(device: Any = None) -> None:
    """Raises (no CUDA device to wait for), as torch's CPU build does."""
    raise AssertionError(_NO_CUDA)


def current_device() -> int:
    """Raises (no CUDA device), as torch's CPU build does."""
    raise AssertionError(_NO_CUDA)


def get_device_name(device: Any = None) -> str:
    """Raises (no CUDA device), as torch's CPU build does."""
    raise AssertionError(_NO_CUDA)


def set_device(device: Any) -> None:
    """Raises (no CUDA device)."""
    raise AssertionError(_NO_CUDA)


def get_rng_state(device: Any = "cuda") -> Any:
    """Raises (no CUDA generator), as torch's CPU build does."""
    raise AssertionError(_NO_CUDA)
