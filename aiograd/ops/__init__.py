"""Differentiable primitives, one module per family, each with its derivative rules.

Importing this package attaches every op to ``Tensor`` as a method as well.
"""

from . import _common  # noqa: F401  (installs numpy dispatch on Tensor)
from . import convert, elementwise, index, inplace, linalg, nn, reduce, shape
from .convert import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .index import *  # noqa: F401,F403
from .inplace import *  # noqa: F401,F403

# The ops themselves, not the family modules (so `from .ops import *` never
# shadows a package such as aiograd.nn with aiograd.ops.nn).
__all__ = sorted(
    {name for mod in (convert, elementwise, linalg, nn, reduce, shape, index, inplace) for name in mod.__all__}
)

# The public functions check their Tensor arguments (NOTE [Operands] in _common.py);
# Tensor methods and numpy dispatch keep the unwrapped ops.
from ._common import checked as _checked  # noqa: E402

for _name in __all__:
    globals()[_name] = _checked(globals()[_name])
del _name
