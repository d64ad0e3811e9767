"""Linear algebra ops and their derivative rules: matmul (1-D, 2-D, batched, broadcast batch dims)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.graph import Node, Saved, Shape, record, save, sum_to, unpack
from ..tensor import Tensor
from ._common import common_device, is_operand, needs_grad, operand_error, wrap
from ._table import OpTable

LINALG = OpTable("linalg")


class MmBackward0(Node):
    """Backward of matmul; 1-D operands are promoted to 2-D the way numpy/torch do."""

    __slots__ = ("a", "b", "a_shape", "b_shape")
    a: Saved
    b: Saved
    a_shape: Shape
    b_shape: Shape

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
        e = self.next_edges
        a_shape, b_shape = self.a_shape, self.b_shape
        a1 = len(a_shape) == 1
        b1 = len(b_shape) == 1
        # Re-insert the dims that 1-D operands lost in the product.
        if a1 and b1:
            g2 = g.reshape((1, 1))
        elif a1:
            g2 = np.expand_dims(g, -2)
        elif b1:
            g2 = np.expand_dims(g, -1)
        else:
            g2 = g
        ga = gb = None
        if e[0] is not None:
            b = unpack(self, self.b, graph)
            b2 = b.reshape((b_shape[0], 1)) if b1 else b
            ga = np.matmul(g2, np.swapaxes(b2, -1, -2))
            # a 1-D operand against a batched one: its gradient is summed over the batch dims
            ga = sum_to(ga, (1, a_shape[0])).reshape(a_shape) if a1 else sum_to(ga, a_shape)
        if e[1] is not None:
            a = unpack(self, self.a, graph)
            a2 = a.reshape((1, a_shape[0])) if a1 else a
            gb = np.matmul(np.swapaxes(a2, -1, -2), g2)
            gb = sum_to(gb, (b_shape[0], 1)).reshape(b_shape) if b1 else sum_to(gb, b_shape)
        return ga, gb


class DotBackward0(MmBackward0):
    """matmul of two 1-D tensors."""

    __slots__ = ()


class MvBackward0(MmBackward0):
    """matmul of a matrix and a vector."""

    __slots__ = ()


class BmmBackward0(MmBackward0):
    """matmul of two 3-D tensors with the same batch size."""

    __slots__ = ()


def _node_for(a_nd: int, b_nd: int, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> type[MmBackward0]:
    """torch's node name for the case (other batched/broadcast cases keep MmBackward0)."""
    if a_nd == 1 and b_nd == 1:
        return DotBackward0
    if a_nd == 2 and b_nd == 1:
        return MvBackward0
    if a_nd == 3 and b_nd == 3 and a_shape[0] == b_shape[0]:
        return BmmBackward0
    return MmBackward0


def _array_operand(x: Any, like: Any, name: str, position: int) -> Tensor:
    """A numpy array operand (``np.matmul(array, tensor)``) as a Tensor; anything else is refused."""
    if not isinstance(x, np.ndarray) or not is_operand(x) or not isinstance(like, Tensor):
        raise operand_error("matmul", name, position, x)
    return Tensor._wrap(x, like._device)


@LINALG.op(nodes=(MmBackward0, DotBackward0, MvBackward0, BmmBackward0), operators=("__matmul__",),
           reflected=("__rmatmul__",), ufuncs=(np.matmul,))
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with numpy/torch semantics (batched, broadcast batch dims)."""
    if not isinstance(input, Tensor):
        input = _array_operand(input, other, "input", 1)
    if not isinstance(other, Tensor):
        other = _array_operand(other, input, "other", 2)
    device = common_device(input, other)
    ad, bd = input._data, other._data
    if ad.ndim == 0 or bd.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{ad.ndim}D and {bd.ndim}D")
    if ad.dtype != bd.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {ad.dtype} != {bd.dtype}"
        )
    try:
        res = np.matmul(ad, bd)
    except ValueError:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, ad.shape))} and "
            f"{'x'.join(map(str, bd.shape))})"
        ) from None
    out = wrap(res, device)
    if needs_grad(input, other):
        node = _node_for(ad.ndim, bd.ndim, ad.shape, bd.shape)(
            save(input) if other._requires_grad else None, save(other) if input._requires_grad else None,
            ad.shape, bd.shape,
        )
        record(node, (input, other), (out,))
        # Backward does up to two products of the forward's size: work in multiply-adds.
        k = ad.shape[-1]
        node.work = 2 * out._data.size * k
    return out


def _both_tensors(op: str, input: Any, other: Any, name: str) -> None:
    """mm/bmm/dot take Tensors only (their method form too): torch's TypeError otherwise."""
    for x, arg, position in ((input, "input", 1), (other, name, 2)):
        if not isinstance(x, Tensor):
            raise operand_error(op, arg, position, x)


@LINALG.op(nodes=(MmBackward0,))
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """2-D matrix product."""
    _both_tensors("mm", input, mat2, "mat2")
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


@LINALG.op(nodes=(BmmBackward0,))
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched 3-D matrix product."""
    _both_tensors("bmm", input, mat2, "mat2")
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


@LINALG.op(nodes=(DotBackward0,))
def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors."""
    _both_tensors("dot", input, other, "other")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


__all__ = LINALG.exports(__name__)
