"""Fused layers and their derivative rules: linear, embedding, one_hot, dropout.

Each is one node with a fused rule (the places where composing from other
primitives would be slower or lose precision). The other families of
torch.nn.functional's primitives have their own modules beside this one:
activation (softmax and log_softmax too), loss (nll_loss too), conv (and
unfold/fold), pool, resample (interpolate, adaptive average pooling), pad,
normalization, attention and recurrent.

Rules that are plain numpy expressions of the saved values also serve
create_graph passes (NOTE [One rule for both modes] in ops/_common.py). Where a
rule is a scatter (embedding, max pooling) the graph-mode path calls the
differentiable row gather/scatter pair defined here, each the other's
derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, link_one, record
from ...autograd.saved import Saved, save, unpack
from ..._generator import default_stream
from ...tensor import Tensor
from .._common import grad_enabled, needs_grad, wrap
from .._common import torch_dtype_name as _torch_dtype_name
from .._table import OpTable

NN = OpTable("nn.layers")


# ----- linear -------------------------------------------------------------------------------------


class AddmmBackward0(Node):
    """Backward of ``x @ w.T + b`` on a 2-D ``x``: ``gx = g @ w``, ``gw = g.T @ x``, ``gb = sum(g, 0)``,
    each one BLAS product on 2-D operands."""

    __slots__ = ("x", "w")
    x: Saved  #: saved when the weight needs a gradient
    w: Saved  #: saved when the input needs a gradient

    def __init__(self, x: Saved, w: Saved) -> None:
        self._init_node()
        self.x = x
        self.w = w

    def release_variables(self) -> None:
        self.x = None
        self.w = None

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        graph = g.__class__ is Tensor
        gx = gw = gb = None
        if self.should_compute_output(0):
            gx = g @ unpack(self, self.w, graph)
        if self.should_compute_output(1):
            gw = np.swapaxes(g, 0, 1) @ unpack(self, self.x, graph)
        if self.should_compute_output(2):
            gb = np.sum(g, axis=0)
        return (gx, gw, gb) if self.n_edges > 2 else (gx, gw)


class MmBackward0(AddmmBackward0):
    """``linear`` without a bias (torch's node: MmBackward0)."""

    __slots__ = ()


@NN.op(nodes=(AddmmBackward0, MmBackward0), method=False, export=False)
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` for a 2-D ``x`` (N, in) and ``weight`` (out, in): one node (torch's addmm).

    NOTE [Linear layout]: the product runs on 2-D operands only (aiograd.nn.functional.linear views an
    N-d input as 2-D first), so numpy makes one BLAS call with the weight transposed in place, instead of
    a batched matmul that loops over the leading dims (and, in backward, a batched weight gradient summed
    over them afterwards)."""
    xd, wd = input._data, weight._data
    if xd.ndim != 2 or wd.ndim != 2:
        raise RuntimeError(f"linear: expected a 2-D input and weight, got {list(xd.shape)} and {list(wd.shape)}")
    if xd.shape[1] != wd.shape[1]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({xd.shape[0]}x{xd.shape[1]} and {wd.shape[1]}x{wd.shape[0]})"
        )
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_torch_dtype_name(xd.dtype)} and "
                           f"{_torch_dtype_name(wd.dtype)}")
    res = np.matmul(xd, wd.T)
    if bias is not None:
        bd = bias._data
        if bd.dtype != xd.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_torch_dtype_name(bd.dtype)} and "
                               f"{_torch_dtype_name(xd.dtype)}")
        res += bd
    out = wrap(res, input._device)
    if needs_grad(input, weight, bias):
        node_cls = AddmmBackward0 if bias is not None else MmBackward0
        node = node_cls(save(input) if weight._requires_grad else None,
                        save(weight) if input._requires_grad else None)
        record(node, (input, weight) if bias is None else (input, weight, bias), (out,))
        node.work = 2 * res.size * xd.shape[1]
    return out


def linear_nd(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``linear`` on an input of any number of dims: viewed as 2-D around one fused product, as torch
    composes it (its nodes: ViewBackward0 over AddmmBackward0; NOTE [Linear layout])."""
    if input.ndim == 2:
        return linear(input, weight, bias)
    lead = input.shape[:-1]
    flat = linear(input.reshape(-1, input.shape[-1]), weight, bias)
    return flat.reshape(*lead, weight.shape[0])


# ----- row gather / scatter (differentiable pair) -----------------------------------------


# NOTE [Row scatter]: adding rows of ``g`` into a (rows, D) table at repeated indices
# (embedding's backward) is a sparse matrix product: table = S @ g with S[r, k] = 1
# where idx[k] == r. np.add.at does it one row at a time (about 0.8 ms for 1024 rows
# of 64 floats here); built as a CSR matrix from a stable argsort it is one pass in
# scipy's C loop (about 50 us), and for a small table a dense one-hot matmul is
# quicker still. Unique indices (a position embedding) are a plain assignment.
_ONE_HOT_MAX = 1 << 16  # rows * len(idx): the one-hot matrix this small is cheaper than building a CSR one


def _index_add_rows(g: np.ndarray, idx: np.ndarray, rows: int) -> np.ndarray:
    """out[rows, D] with out[idx[k]] += g[k] (repeated indices add up; NOTE [Row scatter])."""
    D = g.shape[-1]
    g2 = g.reshape(-1, D)
    flat = idx.reshape(-1)
    M = flat.shape[0]
    if D == 1:
        return np.bincount(flat, weights=g2[:, 0], minlength=rows).astype(g.dtype, copy=False).reshape(rows, 1)
    if rows * M <= _ONE_HOT_MAX:
        onehot = np.zeros((rows, M), dtype=g.dtype)
        onehot[flat, np.arange(M)] = 1
        return onehot @ g2
    counts = np.bincount(flat, minlength=rows)
    if M and counts.max() <= 1:
        out = np.zeros((rows, D), dtype=g.dtype)
        out[flat] = g2
        return out
    from scipy import sparse  # on first use, as scipy.special (NOTE [erf])

    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    order = np.argsort(flat, kind="stable")
    scatter = sparse.csr_matrix((np.ones(M, dtype=g.dtype), order, indptr), shape=(rows, M))
    return np.asarray(scatter @ g2, dtype=g.dtype)


class _GatherRowsBackward(Node):
    __slots__ = ("idx", "rows", "mask")
    idx: np.ndarray
    rows: int
    mask: np.ndarray | None

    def __init__(self, idx: np.ndarray, rows: int, mask: np.ndarray | None) -> None:
        self._init_node()
        self.idx = idx
        self.rows = rows
        self.mask = mask

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if self.mask is not None:
            g = g * self.mask
        if g.__class__ is Tensor:
            return (_scatter_rows(g, self.idx, self.rows),)
        return (_index_add_rows(g, self.idx, self.rows),)


class EmbeddingBackward0(_GatherRowsBackward):
    __slots__ = ()


class _ScatterRowsBackward(Node):
    __slots__ = ("idx",)
    idx: np.ndarray

    def __init__(self, idx: np.ndarray) -> None:
        self._init_node()
        self.idx = idx

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        if g.__class__ is Tensor:
            return (_gather_rows(g, self.idx),)
        return (g[self.idx],)


def _gather_rows(
    src: Tensor, idx: np.ndarray, node_cls: type[_GatherRowsBackward] = _GatherRowsBackward, mask: Any = None
) -> Tensor:
    """``src[idx]`` for a 2-D ``src`` (rows, D): the result has shape idx.shape + (D,)."""
    out = wrap(src._data[idx], src._device)
    if src._requires_grad and grad_enabled():
        link_one(node_cls(idx, src._data.shape[0], mask), src, out)
    return out


def _scatter_rows(src: Tensor, idx: np.ndarray, rows: int) -> Tensor:
    """The adjoint of ``_gather_rows``: rows of ``src`` added into a (rows, D) zero tensor at ``idx``."""
    out = wrap(_index_add_rows(src._data, idx, rows), src._device)
    if src._requires_grad and grad_enabled():
        link_one(_ScatterRowsBackward(idx), src, out)
    return out


# ----- embedding ------------------------------------------------------------------------------


@NN.op(nodes=(EmbeddingBackward0,), method=False)
def embedding(input: Any, weight: Tensor, padding_idx: int | None = None, scale_grad_by_freq: bool = False) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer ``input``; the gradient adds
    up over repeated indices (divided by their count with ``scale_grad_by_freq``) and is zero at
    ``padding_idx``."""
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {_torch_dtype_name(idx.dtype)} instead (while checking arguments for embedding)"
        )
    wd = weight._data
    if wd.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = wd.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    mask = None
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += n
        if not 0 <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if (idx == padding_idx).any():
            mask = (idx != padding_idx)[..., None].astype(wd.dtype)
    if scale_grad_by_freq and idx.size:
        freq = (1.0 / np.bincount(idx.reshape(-1), minlength=n)[idx])[..., None].astype(wd.dtype)
        mask = freq if mask is None else mask * freq
    return _gather_rows(weight, idx, EmbeddingBackward0, mask)


@NN.op(method=False, export=False)
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of ``tensor.shape + (num_classes,)`` with a 1 at each value's class
    (``num_classes=-1``: one more than the largest value)."""
    xd = tensor._data
    if xd.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if xd.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(xd.max()) + 1
    if xd.size:
        if xd.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if xd.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(xd.shape + (num_classes,), dtype=np.int64)
    np.put_along_axis(out, xd[..., None], 1, axis=-1)
    return Tensor._wrap(out, tensor._device)


# ----- dropout -------------------------------------------------------------------------------


class NativeDropoutBackward0(Node):
    """grad_input = g * mask / (1 - p)."""

    __slots__ = ("mask",)
    mask: np.ndarray

    def __init__(self, mask: np.ndarray) -> None:
        self._init_node()
        self.mask = mask

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (grads[0] * self.mask,)


@NN.op(nodes=(NativeDropoutBackward0,), method=False)
def dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (identity when not training).

    The mask comes from aiograd's generator, so ``ag.manual_seed`` makes it reproducible.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0.0:
        return input
    xd = input._data
    if p == 1.0:
        mask = np.zeros(xd.shape, dtype=xd.dtype)
    else:
        mask = (default_stream().random(xd.shape, dtype=np.float64) >= p).astype(xd.dtype)
        mask *= xd.dtype.type(1.0 / (1.0 - p))
    out = wrap(xd * mask, input._device)
    if input._requires_grad and grad_enabled():
        link_one(NativeDropoutBackward0(mask), input, out)
    return out


__all__ = NN.exports(__name__)
