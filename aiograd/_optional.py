"""Optional dependencies, imported on first use with an error that names the extra to install.

matplotlib (``profile.timeline()``), graphviz (``ag.viz.make_dot``) and tqdm
(``backward(progress=True)``) belong to the ``viz`` extra: importing aiograd
never imports them, and using a feature without its package says what to
install instead of failing with a bare ``ModuleNotFoundError``. safetensors
(``aiograd.serialization.save_safetensors`` / ``load_safetensors``) belongs to
the ``serialization`` extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, feature: str, extra: str = "viz") -> ModuleType:
    """Import ``module`` for ``feature``; if it is missing, raise an ImportError naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        package = module.split(".", 1)[0]
        raise ModuleNotFoundError(
            f"{feature} needs the optional package {package!r}, which is not installed; "
            f"install it with: pip install 'aiograd[{extra}]'",
            name=package,
        ) from err
