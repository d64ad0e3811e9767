"""The Device value: where a tensor lives (``cpu``, ``cpu:1``...).

A leaf module: it imports nothing of aiograd, so every layer (tensors, ops,
the graph, the executors) can name a device without an import cycle. What
runs on a device (its executor thread, its ready queue, the offload policy)
lives in ``aiograd.autograd.executors``.

``cpu`` (same as ``cpu:0``) is the default. Extra CPU devices ``cpu:1``,
``cpu:2``... are created on demand; each has its own executor so that two
independent branches of a graph can run their numpy kernels in parallel.
"""

from __future__ import annotations

import re
from typing import Union

__all__ = ["Device", "device", "DeviceLike", "CPU"]

_DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


class Device:
    """A device name: ``type`` ("cpu") and ``index`` (0 for the default cpu)."""

    __slots__ = ("type", "index", "_name", "__weakref__")

    type: str
    index: int
    _name: str

    def __new__(cls, spec: "DeviceLike" = "cpu", index: int | None = None) -> "Device":
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"device must be a string like 'cpu' or 'cpu:1', got {type(spec).__name__}")
        m = _DEVICE_RE.match(spec.strip())
        if m is None:
            raise RuntimeError(f"Expected a device like 'cpu' or 'cpu:1', got {spec!r}")
        kind = m.group(1)
        idx = int(m.group(2)) if m.group(2) is not None else (index if index is not None else 0)
        key = (kind, idx)
        cached = _DEVICES.get(key)
        if cached is not None:
            return cached
        if kind == "cuda":
            raise RuntimeError(
                f"device {spec!r} is not available: aiograd has no CUDA backend installed; use 'cpu' or 'cpu:N'"
            )
        dev = object.__new__(cls)
        dev.type = kind
        dev.index = idx
        dev._name = kind if (kind == "cpu" and idx == 0) else f"{kind}:{idx}"
        _DEVICES[key] = dev
        return dev

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})" if self.index else f"device(type='{self.type}')"

    def __str__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except (RuntimeError, TypeError):
                return False
        return self is other

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (Device, (self._name,))


_DEVICES: dict[tuple[str, int], Device] = {}

DeviceLike = Union[Device, str]

CPU = Device("cpu")


def device(spec: DeviceLike = "cpu") -> Device:
    """Return the device named ``spec`` (``"cpu"``, ``"cpu:1"``...)."""
    return Device(spec)
