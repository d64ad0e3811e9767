"""Matrix products and their derivative rules: matmul (1-D, 2-D, batched, broadcast batch dims),
mm, bmm, mv, dot, vdot, the fused ``beta * input + alpha * product`` family (addmm, addmv,
baddbmm, addbmm), and ``linalg.vecdot`` and ``linalg.multi_dot`` made of them."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, unpack
from ...tensor import Tensor
from .._common import common_device, graph_mode, is_operand, needs_grad, operand_error, torch_dtype_name, wrap
from ._family import LINALG, records
from ..reduction.reduce import sum as reduce_sum
from ._matrix import mT

__all__ = ["matmul", "mm", "bmm", "dot", "vdot", "mv", "addmm", "addmv", "baddbmm", "addbmm", "linalg_vecdot",
           "linalg_multi_dot"]


class MmBackward0(Node):
    """Backward of matmul; 1-D operands are promoted to 2-D the way numpy/torch do."""

    __slots__ = ("a", "b", "a_shape", "b_shape")
    a: Saved
    b: Saved
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a: Saved, b: Saved, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.a_shape = a_shape
        self.b_shape = b_shape

    def release_variables(self) -> None:
        self.a = None
        self.b = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = g.__class__ is Tensor
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
        if self.should_compute_output(0):
            b = unpack(self, self.b, graph)
            b2 = b.reshape((b_shape[0], 1)) if b1 else b
            ga = np.matmul(g2, mT(b2))
            # a 1-D operand against a batched one: its gradient is summed over the batch dims
            ga = sum_to(ga, (1, a_shape[0])).reshape(a_shape) if a1 else sum_to(ga, a_shape)
        if self.should_compute_output(1):
            a = unpack(self, self.a, graph)
            a2 = a.reshape((1, a_shape[0])) if a1 else a
            gb = np.matmul(mT(a2), g2)
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


class VdotBackward0(MmBackward0):
    """``vdot`` of two real 1-D tensors (the conjugate of a real vector is itself)."""

    __slots__ = ()


class _ViewedMmBackward(MmBackward0):
    """A matmul torch computes through a reshape of a 2-D product (a 1-D first operand) or of a
    batched one (an operand of 3 dims or more): its node is named after that view."""

    __slots__ = ()
    _view: ClassVar[str] = ""

    def name(self) -> str:
        return self._view


class SqueezeMmBackward(_ViewedMmBackward):
    __slots__ = ()
    _view = "SqueezeBackward4"


class UnsafeViewMmBackward(_ViewedMmBackward):
    __slots__ = ()
    _view = "UnsafeViewBackward0"


def _node_for(a_nd: int, b_nd: int) -> type[MmBackward0]:
    """The node class that carries torch's node name for matmul of operands of these dims."""
    if a_nd >= 3 or b_nd >= 3:
        return UnsafeViewMmBackward
    if a_nd == 1:
        return DotBackward0 if b_nd == 1 else SqueezeMmBackward
    return MvBackward0 if b_nd == 1 else MmBackward0


def _array_operand(x: Any, like: Any, name: str, position: int) -> Tensor:
    """A numpy array operand (``np.matmul(array, tensor)``) as a Tensor; anything else is refused."""
    if not isinstance(x, np.ndarray) or not is_operand(x) or not isinstance(like, Tensor):
        raise operand_error("matmul", name, position, x)
    return Tensor._wrap(x, like._device)


def _product(input: Tensor, other: Tensor, node_cls: type[MmBackward0] | None = None) -> Tensor:
    """``input @ other`` (shapes and dtypes already checked), recording ``node_cls`` (by default torch's
    node for the shapes)."""
    device = common_device(input, other)
    ad, bd = input._data, other._data
    out = wrap(np.matmul(ad, bd), device)
    if needs_grad(input, other):
        cls = node_cls or _node_for(ad.ndim, bd.ndim)
        node = cls(save(input) if other._requires_grad else None, save(other) if input._requires_grad else None,
                   ad.shape, bd.shape)
        record(node, (input, other), (out,))
        # Backward does up to two products of the forward's size: work in multiply-adds.
        node.work = 2 * out._data.size * (ad.shape[-1] if ad.ndim else 1)
    return out


@LINALG.op(nodes=(MmBackward0, DotBackward0, MvBackward0, SqueezeMmBackward, UnsafeViewMmBackward),
           operators=("__matmul__",),
           reflected=("__rmatmul__",), ufuncs=(np.matmul,))
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with numpy/torch semantics (batched, broadcast batch dims)."""
    if not isinstance(input, Tensor):
        input = _array_operand(input, other, "input", 1)
    if not isinstance(other, Tensor):
        other = _array_operand(other, input, "other", 2)
    ad, bd = input._data, other._data
    if ad.ndim == 0 or bd.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{ad.ndim}D and {bd.ndim}D")
    if ad.dtype != bd.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {ad.dtype} != {bd.dtype}"
        )
    k_a = ad.shape[-1]
    k_b = bd.shape[0] if bd.ndim == 1 else bd.shape[-2]
    if k_a != k_b:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, ad.shape))} and "
            f"{'x'.join(map(str, bd.shape))})"
        )
    try:
        np.broadcast_shapes(ad.shape[:-2], bd.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, ad.shape))} and "
            f"{'x'.join(map(str, bd.shape))})"
        ) from None
    return _product(input, other)


def _both_tensors(op: str, input: Any, other: Any, name: str) -> None:
    """mm/bmm/dot take Tensors only (their method form too): torch's TypeError otherwise."""
    for x, arg, position in ((input, "input", 1), (other, name, 2)):
        if not isinstance(x, Tensor):
            raise operand_error(op, arg, position, x)


def _cannot_multiply(a: np.ndarray, b: np.ndarray) -> RuntimeError:
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                        f"{b.shape[0]}x{b.shape[1]})")


@LINALG.op(nodes=(MmBackward0,))
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """2-D matrix product."""
    _both_tensors("mm", input, mat2, "mat2")
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


def _check_batches(b1: np.ndarray, b2: np.ndarray) -> None:
    """torch's check of bmm-like operands: 3-D, one batch size, matching inner sizes."""
    for d, name in ((b1, "batch1"), (b2, "batch2")):
        if d.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    want = [b1.shape[0], b1.shape[2]]
    if list(b2.shape[:2]) != want:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {want} but got: "
                           f"{list(b2.shape[:2])}.")
    if b1.dtype != b2.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(b1.dtype)} but found {torch_dtype_name(b2.dtype)}")


@LINALG.op(nodes=(BmmBackward0,))
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched 3-D matrix product: ``input[i] @ mat2[i]`` for each ``i``."""
    _both_tensors("bmm", input, mat2, "mat2")
    _check_batches(input._data, mat2._data)
    return _product(input, mat2, BmmBackward0)


def _check_vectors(a: np.ndarray, b: np.ndarray) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {torch_dtype_name(a.dtype)} and "
                           f"{torch_dtype_name(b.dtype)}")


@LINALG.op(nodes=(DotBackward0,))
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of one size and dtype (no broadcasting, as torch)."""
    _both_tensors("dot", input, tensor, "tensor")
    _check_vectors(input._data, tensor._data)
    return _product(input, tensor, DotBackward0)


@LINALG.op(nodes=(VdotBackward0,), functions=(np.vdot,))
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-D tensors (``dot`` for real tensors)."""
    _both_tensors("vdot", input, other, "other")
    _check_vectors(input._data, other._data)
    if input._data.dtype.kind == "c" and not records("vdot", input, other):  # complex: the forward alone
        return wrap(np.vdot(input._data, other._data), common_device(input, other))
    return _product(input, other, VdotBackward0)


@LINALG.op(nodes=(MvBackward0,))
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product: ``input`` is ``(n, m)``, ``vec`` is ``(m,)``."""
    _both_tensors("mv", input, vec, "vec")
    md, vd = input._data, vec._data
    if md.ndim != 2 or vd.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {md.ndim}, {vd.ndim}")
    if md.shape[1] != vd.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({md.shape[0]}), mat ({md.shape[0]}x{md.shape[1]}), "
                           f"vec ({vd.shape[0]})")
    if md.dtype != vd.dtype:
        names = (torch_dtype_name(vd.dtype), torch_dtype_name(md.dtype))
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, and "
                           f"{names[0]}")
    return _product(input, vec, MvBackward0)


# ----- beta * input + alpha * product ----------------------------------------------------------


class AddmmBackward0(Node):
    """``beta * input + alpha * (left @ right)``: ``input`` broadcast to the product's shape.

    The subclasses differ only in how the product is formed: ``vector`` (addmv) treats
    ``right`` as a column, and the gradient of a batch summed into one matrix (addbmm)
    comes out of matmul's broadcasting of ``g`` against each batch member."""

    __slots__ = ("left", "right", "input_shape", "beta", "alpha", "vector")
    left: Saved
    right: Saved
    input_shape: Shape
    beta: Any
    alpha: Any
    vector: bool

    def __init__(self, left: Saved, right: Saved, input_shape: Shape, beta: Any, alpha: Any, vector: bool) -> None:
        self._init_node()
        self.left = left
        self.right = right
        self.input_shape = input_shape
        self.beta = beta
        self.alpha = alpha
        self.vector = vector

    def release_variables(self) -> None:
        self.left = None
        self.right = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any, Any]:
        g = grads[0]
        graph = graph_mode(g)
        gi = gl = gr = None
        if self.should_compute_output(0):
            gi = sum_to(g if self.beta == 1 else g * self.beta, self.input_shape)
        ga = g if self.alpha == 1 else g * self.alpha
        col = np.expand_dims(ga, -1) if self.vector else ga
        if self.should_compute_output(1):
            right = unpack(self, self.right, graph)
            gl = np.matmul(col, mT(np.expand_dims(right, -1) if self.vector else right))
        if self.should_compute_output(2):
            left = unpack(self, self.left, graph)
            gr = np.matmul(mT(left), col)
            if self.vector:
                gr = gr.reshape(gr.shape[:-1])
        return gi, gl, gr


class AddmvBackward0(AddmmBackward0):
    __slots__ = ()


class BaddbmmBackward0(AddmmBackward0):
    __slots__ = ()


class AddbmmBackward0(AddmmBackward0):
    __slots__ = ()


def _expand_error(src: tuple[int, ...], dtype: np.dtype, target: tuple[int, ...]) -> RuntimeError:
    """torch's message for an ``input`` that does not broadcast to the product's shape."""
    if len(src) > len(target):
        return RuntimeError(
            f"expand(torch.{torch_dtype_name(dtype)}Tensor{{{list(src)}}}, size={list(target)}): the number of sizes "
            f"provided ({len(target)}) must be greater or equal to the number of dimensions in the tensor ({len(src)})"
        )
    lead = len(target) - len(src)
    for i, s in reversed(list(enumerate(src))):
        if s != 1 and s != target[lead + i]:
            return RuntimeError(
                f"The expanded size of the tensor ({target[lead + i]}) must match the existing size ({s}) at "
                f"non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  Tensor sizes: {list(src)}"
            )
    return RuntimeError(f"cannot broadcast {list(src)} to {list(target)}")  # pragma: no cover


def _add_product(node_cls: type[AddmmBackward0], input: Tensor, left: Tensor, right: Tensor, product: np.ndarray,
                 beta: Any, alpha: Any, vector: bool) -> Tensor:
    """``beta * input + alpha * product``, recording ``node_cls``; ``input`` must broadcast to the product
    (it is ignored when ``beta`` is 0, NaN and all, as torch)."""
    device = common_device(input, left, right)
    xd = input._data
    shape = product.shape
    if xd.shape != shape:
        try:
            if np.broadcast_shapes(xd.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise _expand_error(xd.shape, xd.dtype, shape) from None
    res = product if alpha == 1 else product * alpha
    if beta != 0:
        res = res + (xd if beta == 1 else xd * beta)
    elif res.shape != shape:  # pragma: no cover - the product has the result's shape
        res = np.broadcast_to(res, shape)
    out = wrap(np.asarray(res).astype(xd.dtype, copy=False), device)
    if needs_grad(input, left, right) and out._data.dtype.kind in "fc":
        node = node_cls(save(left) if right._requires_grad else None, save(right) if left._requires_grad else None,
                        xd.shape, beta, alpha, vector)
        record(node, (input, left, right), (out,))
        node.work = 2 * out._data.size * (left._data.shape[-1] if left._data.ndim else 1)
    return out


def _same_dtype(message: str, *arrays: np.ndarray) -> None:
    if len({a.dtype for a in arrays}) > 1:
        raise RuntimeError(message.format(*(torch_dtype_name(a.dtype) for a in arrays)))


@LINALG.op(nodes=(AddmmBackward0,))
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's ``(n, p)``."""
    a, b = mat1._data, mat2._data
    for d, name in ((a, "mat1"), (b, "mat2")):
        if d.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {d.ndim}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise _cannot_multiply(a, b)
    _same_dtype("self and mat2 must have the same dtype, but got {} and {}", input._data, b)
    _same_dtype("mat1 and mat2 must have the same dtype, but got {} and {}", a, b)
    return _add_product(AddmmBackward0, input, mat1, mat2, np.matmul(a, b), beta, alpha, False)


@LINALG.op(nodes=(AddmvBackward0,))
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``; ``input`` broadcasts to the product's ``(n,)``."""
    xd, md, vd = input._data, mat._data, vec._data
    if md.ndim != 2 or vd.ndim != 1 or xd.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {xd.ndim}, {md.ndim}, {vd.ndim}")
    if md.shape[1] != vd.shape[0] or (xd.ndim == 1 and xd.shape[0] not in (1, md.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({xd.shape[0] if xd.ndim else 1}), mat "
                           f"({md.shape[0]}x{md.shape[1]}), vec ({vd.shape[0]})")
    _same_dtype("addmv input tensors must have the same dtype, but got {}, {}, and {}", xd, md, vd)
    return _add_product(AddmvBackward0, input, mat, vec, np.matmul(md, vd), beta, alpha, True)


def _bmm_operands(op: str, b1: np.ndarray, b2: np.ndarray) -> None:
    for d in (b1, b2):
        if d.ndim != 3:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(d.ndim, 1)}, "
                             f"{max(d.ndim, 1) - 1}], but got 2)")
    if op == "addbmm":
        if b1.shape[0] != b2.shape[0]:
            raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b1.shape[0]} and "
                               f"{b2.shape[0]}")
        if b1.shape[2] != b2.shape[1]:
            raise RuntimeError(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
                               f"{b2.shape[1]}x{b2.shape[2]})")
    else:
        _check_batches(b1, b2)


@LINALG.op(nodes=(BaddbmmBackward0,))
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``; ``input`` broadcasts to ``(b, n, p)``."""
    b1, b2 = batch1._data, batch2._data
    _bmm_operands("baddbmm", b1, b2)
    xd = input._data
    if xd.dtype != b1.dtype or b1.dtype != b2.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {torch_dtype_name(xd.dtype).lower()}, batch1: "
                           f"{torch_dtype_name(b1.dtype).lower()}, batch2: {torch_dtype_name(b2.dtype).lower()}")
    return _add_product(BaddbmmBackward0, input, batch1, batch2, np.matmul(b1, b2), beta, alpha, False)


@LINALG.op(nodes=(AddbmmBackward0,))
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``; ``input`` broadcasts to ``(n, p)``."""
    b1, b2 = batch1._data, batch2._data
    _bmm_operands("addbmm", b1, b2)
    _same_dtype("self and mat2 must have the same dtype, but got {} and {}", input._data, b2)
    _same_dtype("expected scalar type {} but found {}", b1, b2)
    product = np.einsum("bij,bjk->ik", b1, b2) if b1.shape[0] else np.zeros((b1.shape[1], b2.shape[2]), b1.dtype)
    return _add_product(AddbmmBackward0, input, batch1, batch2, product, beta, alpha, False)


# ----- linalg.vecdot, linalg.multi_dot: made of the products above ------------------------------


@LINALG.op(nodes=(VdotBackward0,), method=False, export=False)
def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``aiograd.linalg.vecdot``: ``sum(conj(x) * y, dim)``, batch dims broadcast (``vdot`` for two vectors)."""
    xd, yd = x._data, y._data
    if xd.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{torch_dtype_name(xd.dtype)}")
    if xd.dtype != yd.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{torch_dtype_name(xd.dtype)} and y of type {torch_dtype_name(yd.dtype)} instead")
    if xd.ndim == 1 and yd.ndim == 1 and dim in (0, -1):
        return vdot(x, y)
    if xd.dtype.kind == "c":
        records("linalg.vecdot", x, y)  # refuses complex operands that require grad
        x = Tensor._wrap(np.conj(xd), x._device)
    return reduce_sum(x * y, dim)


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The split points of the cheapest parenthesization of a chain of matrices of shapes
    ``(dims[i], dims[i + 1])`` (the classic dynamic programme, as numpy's ``multi_dot``)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@LINALG.op(nodes=(MmBackward0,), method=False, export=False)
def linalg_multi_dot(tensors: Any) -> Tensor:
    """``aiograd.linalg.multi_dot``: the product of a chain of matrices, in the cheapest order; the first
    may be a row vector and the last a column vector (1-D), as ``matmul`` treats them."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise operand_error("linalg_multi_dot", "tensors", 1, t)
        nd = t._data.ndim
        where = "first" if i == 0 else "last" if i == len(ts) - 1 else None
        if where is not None and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got {nd}D")
        if where is None and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
        if t._data.dtype != ts[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{torch_dtype_name(ts[0]._data.dtype).lower()} and tensor {i} "
                               f"{torch_dtype_name(t._data.dtype).lower()}")
    row, col = ts[0]._data.ndim == 1, ts[-1]._data.ndim == 1
    mats = [ts[0].unsqueeze(0) if row else ts[0], *ts[1:-1], ts[-1].unsqueeze(-1) if col else ts[-1]]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

    def chain(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(chain(i, k), chain(k + 1, j))

    out = chain(0, len(mats) - 1)
    if row and col:
        return out.reshape(())
    return out.squeeze(0) if row else (out.squeeze(-1) if col else out)
