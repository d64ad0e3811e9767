"""``aiograd.sparse``: the ``torch.sparse`` functions on sparse COO tensors.

    import aiograd as ag
    adj = ag.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 1.0, 1.0], (3, 3))
    x = ag.randn(3, 4, requires_grad=True)
    h = ag.sparse.mm(adj, x)            # dense (3, 4): adj @ x
    total = ag.sparse.sum(adj)          # dense scalar

Sparse tensors are made by ``aiograd.sparse_coo_tensor`` or ``Tensor.to_sparse()``;
their payload is a small COO structure and the products run on scipy.sparse. As in
torch, the gradient of a sparse input of these functions is sparse, at the input's
entries, while ``mm``/``matmul``/``@``/``spmm`` give it a dense gradient.
"""

from __future__ import annotations

from typing import Any

from .ops._common import checked, operand_error
from .ops import sparse as _sparse
from .tensor import Tensor

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "FloatTensor", "DoubleTensor"]

mm = checked(_sparse.sparse_mm)
sum = checked(_sparse.sparse_sum)
softmax = checked(_sparse.sparse_softmax)
log_softmax = checked(_sparse.sparse_log_softmax)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sparse.mm(mat1, mat2)``: ``mat1`` sparse, ``input`` and ``mat2`` dense."""
    for x, name, position in ((input, "input", 1), (mat1, "mat1", 2), (mat2, "mat2", 3)):
        if not isinstance(x, Tensor):
            raise operand_error("addmm", name, position, x)
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (input * beta if beta != 1 else input) + product


def FloatTensor(indices: Any, values: Any, size: Any = None) -> Tensor:
    """The legacy constructor ``torch.sparse.FloatTensor(indices, values, size)``: a float32
    ``sparse_coo_tensor``."""
    return _sparse.sparse_coo_tensor(indices, values, size, dtype="float32")


def DoubleTensor(indices: Any, values: Any, size: Any = None) -> Tensor:
    """The legacy constructor ``torch.sparse.DoubleTensor(indices, values, size)``: a float64
    ``sparse_coo_tensor``."""
    return _sparse.sparse_coo_tensor(indices, values, size, dtype="float64")
