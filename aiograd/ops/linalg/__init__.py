"""The linalg family: matrix products, with their derivative rules (first and second order), in
one op table.

The modules, one job each: ``_products`` (matmul, mm, bmm, mv, dot, vdot, addmm and its
kin); ``_family`` holds the table and the operand checks, ``_matrix`` the helpers the rules
share.
"""

from ._family import LINALG
from ._products import *  # noqa: F401,F403
from ._products import BmmBackward0, DotBackward0, MmBackward0, MvBackward0  # noqa: F401  (used by tests)

__all__ = LINALG.exports(__name__)
