"""``ag.backends.mps``: Apple's Metal backend, neither built nor available."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: aiograd computes with numpy on the CPU."""
    return False


def is_built() -> bool:
    """False."""
    return False
