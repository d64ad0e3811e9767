"""Small helpers of aiograd.nn."""

from __future__ import annotations

import sys


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside aiograd (the user's line)."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("aiograd."):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
