"""scipy.special, loaded on first use: the kernels of erf and the special functions.

NOTE [erf]: erf and the special functions (erfc, erfinv, lgamma, digamma, polygamma...) are
scipy.special's ufuncs (C, vectorized; scipy is a dependency, pyproject.toml), imported on first
use: importing scipy.special takes a few tenths of a second, which ``import aiograd`` does not pay.
A leaf module: it imports nothing of aiograd.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["scipy_special"]

_special: ModuleType | None = None


def scipy_special() -> ModuleType:
    """The scipy.special module, imported on its first call (NOTE [erf])."""
    global _special
    if _special is None:
        import scipy.special  # on first use, on purpose (NOTE [erf])

        _special = scipy.special
    return _special
