"""The linalg family: matrix products, inverses and solves, factorizations, norms and matrix
functions, with their derivative rules (first and second order), all in one op table.

The modules, one job each: ``_products`` (matmul, mm, bmm, mv, dot, vdot, addmm and its
kin), ``_solve`` (inverse, det, slogdet, logdet, solve), ``_decomp`` (svd, qr, cholesky,
eigh), ``_lstsq`` (pinv, lstsq), ``_norms`` (vector and matrix norms), ``_matfun``
(matrix_power, matrix_exp), ``_cross`` (cross), ``_cdist`` (cdist); ``_family`` holds the
table and the operand checks, ``_matrix`` the helpers the rules share.

The top-level names (``aiograd.det``, ``Tensor.det``) are this table's exported rows; the
``torch.linalg`` forms are rows named as torch's own ops (``linalg_inv``, ``linalg_svd``)
that only ``aiograd.linalg`` publishes, under their ``torch.linalg`` names.
"""

from ._family import LINALG
from ._products import *  # noqa: F401,F403
from ._solve import *  # noqa: F401,F403
from ._decomp import *  # noqa: F401,F403
from ._lstsq import *  # noqa: F401,F403
from ._norms import *  # noqa: F401,F403
from ._matfun import *  # noqa: F401,F403
from ._cross import *  # noqa: F401,F403
from ._cdist import *  # noqa: F401,F403
from ._products import BmmBackward0, DotBackward0, MmBackward0, MvBackward0  # noqa: F401  (used by tests)

__all__ = LINALG.exports(__name__)
