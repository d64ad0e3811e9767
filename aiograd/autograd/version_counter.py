"""The version counter: a leaf module (NOTE [Layers] in autograd/__init__.py), so that Tensor,
the graph and saved tensors can all name it without importing one another."""

from __future__ import annotations

__all__ = ["VersionCounter"]


class VersionCounter:
    """Counts in-place modifications; shared between a tensor and its views, and read by
    saved tensors (NOTE [Saved tensors] in saved.py) to detect a change after they were saved."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0
