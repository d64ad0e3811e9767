"""``ag.accelerator``: torch's device-agnostic accelerator API, answering that there is none.

``ag.accelerator.current_accelerator()`` is None and ``is_available()`` False, so
code written as ``device = ag.accelerator.current_accelerator() if
ag.accelerator.is_available() else "cpu"`` runs on the CPU; what needs a device
raises torch's error.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
    "synchronize", "empty_cache",
]

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """False: aiograd computes on the CPU."""
    return False


def current_accelerator(check_available: bool = False) -> Any:
    """None: there is no accelerator."""
    return None


def device_count() -> int:
    """0 accelerator devices."""
    return 0


def current_device_index() -> int:
    """Raises: there is no accelerator device."""
    raise RuntimeError(_NONE)


def set_device_index(device: Any) -> None:
    """Raises: there is no accelerator device."""
    raise RuntimeError(_NONE)


def synchronize(device: Any = None) -> None:
    """Raises: there is no accelerator device."""
    raise RuntimeError(_NONE)


def empty_cache() -> None:
    """Raises: there is no accelerator device."""
    raise RuntimeError(_NONE)
