"""Differentiable primitives, grouped in families, each module with its op table and derivative rules.

The families follow torch's own categories of ops:

* ``pointwise/``: each element on its own: arithmetic, unary math, comparisons
  (``elementwise``) and the ``torch.special`` functions (``special``);
* ``reduction/``: along a dim: reductions (``reduce``), scans (``scan``), sorting and
  order statistics (``sorting``);
* ``movement/``: elements moved, viewed, joined or repeated, never computed on: views
  (``shape``), moving copies (``rearrange``), cat/stack/split (``join``), diagonals and
  triangles (``diagonal``);
* ``indexing/``: elements chosen by indices: reads (``index``), writes (``scatter``), and
  the ops that find positions (``search``);
* ``linalg/``: matrix products, solves, factorizations, norms (one table for the package);
* ``nn/``: the fused primitives of torch.nn.functional: every activation (``activation``)
  and every loss (``loss``) in one module each, layers (``layers``: linear, embedding,
  dropout), convolution and pooling, resampling and padding, normalization, attention,
  recurrent layers.

Beside them, modules that are no one family: contractions of several tensors
(``contract``: einsum, tensordot, kron), copies and conversions (``convert``), random
sampling (``sampling``), sparse COO tensors (``sparse``), and the in-place forms of ops of
every family (``inplace``: ``add_``, ``index_put_``, ``__setitem__``...). The modules
whose name starts with ``_`` are the machinery every family shares: ``_table`` (the op
tables, NOTE [Op tables]), ``_common`` (operand checks, making results), ``_pointwise``
(ops made from formulas, type promotion), ``_stubgen`` (the typed views of the tables).

Each family module registers its ops in its table, whose ``family`` is the module's path
under ``aiograd.ops`` (``"pointwise.elementwise"``); importing this package binds them all
to ``Tensor`` (methods, operators and numpy's dispatch) in one place, ``install``.
"""

from ..tensor import Tensor
from . import contract, convert, inplace, linalg, sampling, sparse
from .pointwise import elementwise, special
from .reduction import reduce, scan, sorting
from .movement import diagonal, join, rearrange, shape
from .indexing import index, scatter, search
from .nn import activation, attention, conv, layers, loss, normalization, pad, pool, recurrent, resample
from ._table import install

# the modules that define ops, named before the star imports rebind ``diagonal``, ``scatter`` and
# ``pad`` to the ops
_FAMILIES = (activation, attention, contract, conv, convert, diagonal, elementwise, index, inplace, join, layers,
             linalg, loss, normalization, pad, pool, rearrange, recurrent, reduce, resample, sampling, scan,
             scatter, search, shape, sorting, sparse, special)

from .contract import *  # noqa: F401,F403
from .convert import *  # noqa: F401,F403
from .inplace import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .indexing.index import *  # noqa: F401,F403
from .indexing.scatter import *  # noqa: F401,F403
from .indexing.search import *  # noqa: F401,F403
from .movement.diagonal import *  # noqa: F401,F403
from .movement.join import *  # noqa: F401,F403
from .movement.rearrange import *  # noqa: F401,F403
from .movement.shape import *  # noqa: F401,F403
from .nn.activation import *  # noqa: F401,F403
from .nn.attention import *  # noqa: F401,F403
from .nn.conv import *  # noqa: F401,F403
from .nn.layers import *  # noqa: F401,F403
from .nn.loss import *  # noqa: F401,F403
from .nn.normalization import *  # noqa: F401,F403
from .nn.pad import *  # noqa: F401,F403
from .nn.pool import *  # noqa: F401,F403
from .nn.recurrent import *  # noqa: F401,F403
from .nn.resample import *  # noqa: F401,F403
from .pointwise.elementwise import *  # noqa: F401,F403
from .pointwise.special import *  # noqa: F401,F403
from .reduction.reduce import *  # noqa: F401,F403
from .reduction.scan import *  # noqa: F401,F403
from .reduction.sorting import *  # noqa: F401,F403

install(Tensor)

# The ops themselves, not the family modules (so `from .ops import *` never
# shadows a package such as aiograd.nn with aiograd.ops.nn).
__all__ = sorted({name for mod in _FAMILIES for name in mod.__all__})
