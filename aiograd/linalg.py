"""``aiograd.linalg``: the ``torch.linalg`` functions, differentiable (first and second order).

    import aiograd as ag
    A = ag.randn(3, 3, dtype=ag.float64, requires_grad=True)
    L = ag.linalg.cholesky(A @ A.mT + 3 * ag.eye(3, dtype=ag.float64))
    x = ag.linalg.solve(A, ag.ones(3, dtype=ag.float64))

Inputs may carry leading batch dims, which broadcast where torch's do (``solve``,
``lstsq``, ``cross``). A singular matrix (``inv``, ``solve``) or one that is not
positive definite (``cholesky``) raises ``LinAlgError`` in torch's words. The ops
live in the linalg op table (aiograd/ops/linalg); this module names them as
``torch.linalg`` does. The top-level forms (``aiograd.det``, ``aiograd.svd``,
``Tensor.inverse``, ...) follow the ``torch.*`` ones.
"""

from __future__ import annotations

from .ops._common import checked
from .ops.linalg import _cross, _decomp, _lstsq, _matfun, _norms, _products, _solve
from .ops.linalg import matmul
from .ops.linalg._family import LinAlgError

__all__ = [
    "LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matmul", "matrix_exp",
    "matrix_norm", "matrix_power", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vecdot",
    "vector_norm",
]

cholesky = checked(_decomp.linalg_cholesky)
cross = checked(_cross.linalg_cross)
det = checked(_solve.linalg_det)
eigh = checked(_decomp.linalg_eigh)
eigvalsh = checked(_decomp.linalg_eigvalsh)
inv = checked(_solve.linalg_inv)
lstsq = checked(_lstsq.linalg_lstsq)
matrix_exp = checked(_matfun.linalg_matrix_exp)
matrix_norm = checked(_norms.linalg_matrix_norm)
matrix_power = checked(_matfun.linalg_matrix_power)
multi_dot = _products.linalg_multi_dot
norm = checked(_norms.linalg_norm)
pinv = checked(_lstsq.linalg_pinv)
qr = checked(_decomp.linalg_qr)
slogdet = checked(_solve.linalg_slogdet)
solve = checked(_solve.linalg_solve)
svd = checked(_decomp.linalg_svd)
svdvals = checked(_decomp.linalg_svdvals)
vecdot = checked(_products.linalg_vecdot)
vector_norm = checked(_norms.linalg_vector_norm)
