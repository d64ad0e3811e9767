"""``ag.backends.cudnn``: not available; its flags may be set and change nothing."""

from __future__ import annotations

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]

#: settable, as torch's; aiograd has no cuDNN, so they change nothing
enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: there is no cuDNN."""
    return False


def version() -> None:
    """None: there is no cuDNN."""
    return None
