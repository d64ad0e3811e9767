"""Separable linear maps of the spatial dims: interpolate (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area) and adaptive average pooling.

NOTE [Separable maps]: each of these ops maps every spatial dim on its own by a
small matrix ``M`` (out, in): a one-hot row per output for nearest, two
weights for linear, four for cubic, a window average for adaptive pooling. The
op is ``M`` applied along each dim (a matmul, or ``np.take`` when ``M`` is
one-hot); its gradient is ``M^T`` applied along each dim, which is the same code
on Tensors in a create_graph pass (``@`` and ``np.moveaxis`` dispatch), so
second derivatives need nothing more. Building the matrices is where torch's
index rules live (``align_corners``, scales, clamping); applying them is one
matmul per dim.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...autograd.graph import Node, link_one
from ...tensor import Tensor
from .._common import grad_enabled, wrap
from ._nn_common import float_data
from .._table import OpTable
from .pool import adaptive_size

RESAMPLE = OpTable("nn.resample")

#: one dim's map: (axis, matrix (out, in), index vector when the matrix is one-hot)
AxisMap = tuple[int, np.ndarray, "np.ndarray | None"]


def along(x: Any, m: np.ndarray, axis: int) -> Any:
    """``m`` (out, in) applied along ``axis`` of ``x`` (an ndarray or a Tensor)."""
    nd = x.ndim
    if axis == nd - 1:
        return x @ m.T
    if axis == nd - 2:
        return m @ x
    return np.moveaxis(np.moveaxis(x, axis, -1) @ m.T, -1, axis)


class _SeparableBackward(Node):
    """The transpose of each dim's matrix applied to the gradient (NOTE [Separable maps])."""

    __slots__ = ("maps",)
    maps: tuple[AxisMap, ...]

    def __init__(self, maps: tuple[AxisMap, ...]) -> None:
        self._init_node()
        self.maps = maps

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        for axis, m, _ in self.maps:
            g = along(g, m.T, axis)
        return (g,)


def _node_class(name: str) -> type[_SeparableBackward]:
    return type(name, (_SeparableBackward,), {"__slots__": (), "__module__": __name__,
                                              "__doc__": f"{name}: NOTE [Separable maps]."})


_NODES = {
    name: _node_class(name)
    for name in (
        [f"Upsample{kind}{d}DBackward0" for kind in ("Nearest", "NearestExact") for d in (1, 2, 3)]
        + ["UpsampleLinear1DBackward0", "UpsampleBilinear2DBackward0", "UpsampleBicubic2DBackward0",
           "UpsampleTrilinear3DBackward0"]
        + [f"AdaptiveAvgPool{d}DBackward0" for d in (2, 3)]
    )
}


def separable(input: Tensor, maps: Sequence[AxisMap], node_name: str) -> Tensor:
    """Apply ``maps`` to ``input``'s dims (NOTE [Separable maps]), recording ``node_name``."""
    x = input._data
    for axis, m, idx in maps:
        x = np.take(x, idx, axis=axis) if idx is not None else along(x, m, axis)
    out = wrap(np.ascontiguousarray(x, dtype=input._data.dtype), input._device)
    if input._requires_grad and grad_enabled():
        link_one(_NODES[node_name](tuple(maps)), input, out)
    return out


def one_hot_rows(idx: np.ndarray, n: int, dtype: np.dtype) -> np.ndarray:
    """The (len(idx), n) matrix with a 1 at each row's index."""
    m = np.zeros((len(idx), n), dtype=dtype)
    m[np.arange(len(idx)), idx] = 1
    return m


# ----- adaptive average pooling --------------------------------------------------------------------


def _average_rows(n: int, o: int, dtype: np.dtype) -> np.ndarray:
    """torch's adaptive windows ``[floor(i*n/o), ceil((i+1)*n/o))``, each row averaging its window."""
    m = np.zeros((o, n), dtype=np.float64)
    for i in range(o):
        s, e = (i * n) // o, -((-(i + 1) * n) // o)
        m[i, s:e] = 1.0 / (e - s)
    return m.astype(dtype)


def _adaptive_avg(input: Tensor, output_size: Any, nd: int, name: str) -> Tensor:
    xd = input._data
    if xd.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(xd.shape)}")
    float_data(input, name)
    spatial = xd.shape[-nd:]
    out = adaptive_size(output_size, spatial, nd)
    if any(o < 0 for o in out):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    if all(o == 1 for o in out) and xd.size:  # torch takes the mean (MeanBackward1)
        return input.mean(tuple(range(-nd, 0)), keepdim=True)
    maps = [(xd.ndim - nd + i, _average_rows(n, o, xd.dtype), None) for i, (n, o) in enumerate(zip(spatial, out))]
    return separable(input, maps, f"AdaptiveAvgPool{nd}DBackward0")


@RESAMPLE.op(nodes=(_NODES["AdaptiveAvgPool2DBackward0"],), method=False, export=False)
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """The average over each of ``output_size`` windows that tile (N, C, H, W) (or (C, H, W)), as torch."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


@RESAMPLE.op(nodes=(_NODES["AdaptiveAvgPool2DBackward0"],), method=False)
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """The average over each of ``output_size`` windows that tile (N, C, L) (or (C, L))."""
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 'self' "
            "(while checking arguments for adaptive_avg_pool1d)"
        )
    size = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


@RESAMPLE.op(nodes=(_NODES["AdaptiveAvgPool3DBackward0"],), method=False, export=False)
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """The average over each of ``output_size`` windows that tile (N, C, D, H, W) (or (C, D, H, W))."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


# ----- interpolate ---------------------------------------------------------------------------------

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _source_scale(n: int, o: int, align_corners: bool, scale: float | None) -> float:
    """torch's area_pixel_compute_scale."""
    if align_corners:
        return (n - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n / o


def _nearest_rows(n: int, o: int, scale: float | None, exact: bool) -> np.ndarray:
    if o == n:
        return np.arange(o)
    if not exact and o == 2 * n:
        return np.arange(o) >> 1
    sc = np.float32(1.0 / scale if scale is not None and scale > 0 else n / o)  # torch computes in float
    dst = np.arange(o, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0.0))
    return np.minimum(np.floor(dst * sc).astype(np.int64), n - 1)


def _linear_rows(n: int, o: int, align_corners: bool, scale: float | None) -> np.ndarray:
    sc = _source_scale(n, o, align_corners, scale)
    dst = np.arange(o, dtype=np.float64)
    src = sc * dst if align_corners else np.maximum(sc * (dst + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    l1 = src - i0
    m = np.zeros((o, n))
    rows = np.arange(o)
    np.add.at(m, (rows, i0), 1.0 - l1)
    np.add.at(m, (rows, i1), l1)
    return m


def _cubic_rows(n: int, o: int, align_corners: bool, scale: float | None) -> np.ndarray:
    A = -0.75
    sc = _source_scale(n, o, align_corners, scale)
    dst = np.arange(o, dtype=np.float64)
    src = sc * dst if align_corners else sc * (dst + 0.5) - 0.5
    i = np.floor(src).astype(np.int64)
    t = src - i

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    m = np.zeros((o, n))
    rows = np.arange(o)
    for off, wt in zip((-1, 0, 1, 2), weights):
        np.add.at(m, (rows, np.clip(i + off, 0, n - 1)), wt)
    return m


def _output_size(shape: tuple[int, ...], nd: int, size: Any, scale_factor: Any) -> tuple[tuple[int, ...], list[Any]]:
    """The output's spatial size and the scale each dim's kernel uses (None: from the sizes)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got input with spatial "
                f"dimensions of {list(shape[-nd:])} and output size of {sizes}. Please provide input tensor in "
                "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
            )
        return tuple(int(s) for s in sizes), [None] * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
    if len(scales) != nd:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
            f"dimensions of {list(shape[-nd:])} and scale_factor of shape {scales}. Please provide input tensor in "
            "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
        )
    out = tuple(int(math.floor(float(n) * float(s))) for n, s in zip(shape[-nd:], scales))
    return out, [float(s) for s in scales]


@RESAMPLE.op(nodes=tuple(_NODES[n] for n in _NODES if n.startswith("Upsample")), method=False, export=False)
def interpolate(
    input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
    align_corners: bool | None = None, recompute_scale_factor: bool | None = None, antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` or by ``scale_factor``, as torch's
    F.interpolate: nearest and nearest-exact (1-3 spatial dims), linear (1), bilinear and bicubic (2),
    trilinear (3), area (adaptive average pooling)."""
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: nearest | "
            f"linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})"
        )
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
                "trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported")
    nd = input.ndim - 2
    if nd < 1 or nd > 3:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: nearest | "
            f"linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})"
        )
    need = _LINEAR_DIMS.get(mode)
    if need is not None and need != nd:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need + 2}D input")
    out, scales = _output_size(input.shape, nd, size, scale_factor)
    if recompute_scale_factor:
        if size is not None:
            raise ValueError(
                "recompute_scale_factor is not meaningful with an explicit size."
            )
        scales = [None] * nd
    if mode == "area":
        fn = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return fn(input, out)
    xd = input._data
    if mode not in ("nearest", "nearest-exact"):
        float_data(input, f"upsample_{mode}{nd}d_out_frame")
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({', '.join(map(str, xd.shape[2:]))}) "
            f"and output ({', '.join(map(str, out))})"
        )
    maps: list[AxisMap] = []
    dt = xd.dtype if xd.dtype.kind == "f" else np.dtype(np.float64)
    for i, (n, o, s) in enumerate(zip(xd.shape[2:], out, scales)):
        axis = 2 + i
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_rows(n, o, s, mode == "nearest-exact")
            maps.append((axis, one_hot_rows(idx, n, dt), idx))
        elif mode == "bicubic":
            maps.append((axis, _cubic_rows(n, o, bool(align_corners), s).astype(dt), None))
        else:
            maps.append((axis, _linear_rows(n, o, bool(align_corners), s).astype(dt), None))
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact"}.get(mode)
    name = f"Upsample{kind}{nd}DBackward0" if kind else {
        "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
        "bicubic": "UpsampleBicubic2DBackward0", "trilinear": "UpsampleTrilinear3DBackward0"}[mode]
    return separable(input, maps, name)


__all__ = RESAMPLE.exports(__name__)
