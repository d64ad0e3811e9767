"""The cross product of 3-vectors and its derivative rule: ``linalg.cross`` (``dim=-1``, keyword) and
``torch.cross`` (``dim`` positional, by default the first dim of size 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, record, sum_to
from ...autograd.saved import Saved, save, unpack
from ...tensor import Tensor
from .._common import broadcast_shapes, common_device, graph_mode, torch_dtype_name, wrap
from ._family import LINALG, records
from ..movement.shape import _wrap_dim

__all__ = ["cross", "linalg_cross"]


def _cross_any(a: Any, b: Any, dim: int) -> Any:
    """``a x b`` along ``dim`` on ndarrays, or differentiably on Tensors."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return linalg_cross(a if isinstance(a, Tensor) else Tensor._wrap(np.asarray(a)),
                            b if isinstance(b, Tensor) else Tensor._wrap(np.asarray(b)), dim=dim)
    return np.cross(a, b, axis=dim)


class LinalgCrossBackward0(Node):
    """``g_a = b x g``, ``g_b = g x a``, each summed to its operand's shape."""

    __slots__ = ("a", "b", "dim", "a_shape", "b_shape")
    a: Saved
    b: Saved
    dim: int
    a_shape: Shape
    b_shape: Shape

    def __init__(self, a: Saved, b: Saved, dim: int, a_shape: Shape, b_shape: Shape) -> None:
        self._init_node()
        self.a = a
        self.b = b
        self.dim = dim
        self.a_shape = a_shape
        self.b_shape = b_shape

    def release_variables(self) -> None:
        self.a = None
        self.b = None

    def apply(self, grads: list[Any]) -> tuple[Any, Any]:
        g = grads[0]
        graph = graph_mode(g)
        ga = gb = None
        if self.should_compute_output(0):
            ga = sum_to(_cross_any(unpack(self, self.b, graph), g, self.dim), self.a_shape)
        if self.should_compute_output(1):
            gb = sum_to(_cross_any(g, unpack(self, self.a, graph), self.dim), self.b_shape)
        return ga, gb


def _cross(input: Tensor, other: Tensor, dim: int) -> Tensor:
    ad, bd = input._data, other._data
    if ad.ndim != bd.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(ad.shape, bd.shape)
    d = _wrap_dim(dim, len(shape))
    if ad.shape[d] != 3 or bd.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {ad.shape[d]} and "
                           f"{bd.shape[d]}")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(ad.dtype)} but found {torch_dtype_name(bd.dtype)}")
    device = common_device(input, other)
    out = wrap(np.cross(ad, bd, axis=d), device)
    if out._data.dtype.kind in "fc" and records("linalg.cross", input, other):
        node = LinalgCrossBackward0(save(input) if other._requires_grad else None,
                                    save(other) if input._requires_grad else None, d, ad.shape, bd.shape)
        record(node, (input, other), (out,))
    return out


def _np_cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> Tensor:
    return linalg_cross(a, b, dim=-1 if axis is None else axis)


@LINALG.op(nodes=(LinalgCrossBackward0,), method=False, export=False, functions=((np.cross, _np_cross),))
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``aiograd.linalg.cross``: the cross product of 3-vectors along ``dim`` (size 3 in both; the inputs
    have one number of dims and broadcast)."""
    return _cross(input, other, dim)


@LINALG.op(nodes=(LinalgCrossBackward0,))
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """``torch.cross``: ``linalg.cross`` along ``dim``, by default the first dim of ``input`` of size 3."""
    if dim is None:
        sizes = input._data.shape
        if 3 not in sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes.index(3)
    return _cross(input, other, dim)
