"""Warnings that point at the user's line, however many aiograd frames lie between.

A fixed ``stacklevel`` breaks as soon as a call passes through one more aiograd frame (a
generated operand-checking wrapper, a module's ``forward``, a functional alias), and the warning
then names aiograd's own source instead of the line the user must change.
"""

from __future__ import annotations

import sys
import warnings


def _is_aiograd(module: object) -> bool:
    name = str(module or "")
    return name == "aiograd" or name.startswith("aiograd.")


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning raised by the caller at the first frame outside aiograd."""
    level = 1
    frame = sys._getframe(1)
    while frame.f_back is not None and _is_aiograd(frame.f_globals.get("__name__")):
        frame = frame.f_back
        level += 1
    return level


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the user's line (the first caller outside aiograd)."""
    level = 2  # 1 is this function, 2 its caller
    frame = sys._getframe(1)
    while frame.f_back is not None and _is_aiograd(frame.f_globals.get("__name__")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
