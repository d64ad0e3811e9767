"""Differentiable primitives, one module per family, each with its op table and derivative rules.

Each family registers its ops in its table (NOTE [Op tables] in _table.py);
importing this package binds them all to ``Tensor`` (methods, operators and
numpy's dispatch) in one place, ``install``.
"""

from ..tensor import Tensor
from . import (
    activation,
    attention,
    contract,
    conv,
    convert,
    diagonal,
    elementwise,
    index,
    inplace,
    join,
    linalg,
    loss,
    nn,
    normalization,
    pad,
    pool,
    rearrange,
    recurrent,
    reduce,
    resample,
    sampling,
    scan,
    scatter,
    search,
    shape,
    sorting,
    sparse,
    special,
)
from ._table import install

# the family modules, named before the star imports rebind ``diagonal`` and ``scatter`` to the ops
_FAMILIES = (activation, attention, contract, conv, convert, diagonal, elementwise, index, inplace, join, linalg, loss,
             nn, normalization, pad, pool, rearrange, recurrent, reduce, resample, sampling, scan, scatter, search,
             shape, sorting, sparse, special)

from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .contract import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .convert import *  # noqa: F401,F403
from .diagonal import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .index import *  # noqa: F401,F403
from .inplace import *  # noqa: F401,F403
from .join import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pad import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .rearrange import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .resample import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .scan import *  # noqa: F401,F403
from .scatter import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403

install(Tensor)

# The ops themselves, not the family modules (so `from .ops import *` never
# shadows a package such as aiograd.nn with aiograd.ops.nn).
__all__ = sorted({name for mod in _FAMILIES for name in mod.__all__})
