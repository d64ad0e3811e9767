"""Padding, as torch.nn.functional.pad: constant (any number of dims, negative pads crop),
reflect, replicate and circular (the last 1, 2 or 3 dims).

A constant pad's gradient is the gradient cropped back (the same op with the
pads negated, so it serves create_graph passes as is). The other modes gather
each padded dim by an index vector (reflected, clamped or wrapped positions):
a separable map (NOTE [Separable maps] in resample.py) whose gradient adds each
output back to the position it came from.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, link_one
from ...tensor import Tensor
from .._common import grad_enabled, wrap
from .._table import OpTable
from .resample import _NODES as _RESAMPLE_NODES
from .resample import _node_class, one_hot_rows, separable

PAD = OpTable("nn.pad")

for _kind in ("Reflection", "Replication"):
    for _d in (1, 2, 3):
        _RESAMPLE_NODES[f"{_kind}Pad{_d}DBackward0"] = _node_class(f"{_kind}Pad{_d}DBackward0")
_RESAMPLE_NODES["CircularPadBackward0"] = _node_class("CircularPadBackward0")


class ConstantPadNdBackward0(Node):
    """The gradient cropped back to the input (padded with zeros where the pad was negative)."""

    __slots__ = ("pads",)
    pads: tuple[int, ...]

    def __init__(self, pads: tuple[int, ...]) -> None:
        self._init_node()
        self.pads = pads

    def apply(self, grads: list[Any]) -> tuple[Any]:
        g = grads[0]
        neg = tuple(-p for p in self.pads)
        if g.__class__ is Tensor:
            return (_constant(g, neg, 0.0),)
        return (_constant_array(g, neg, 0.0),)


def _constant_array(x: np.ndarray, pads: tuple[int, ...], value: Any) -> np.ndarray:
    """``x`` padded (or cropped, for negative pads) on its last len(pads)/2 dims."""
    k = len(pads) // 2
    crop = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for i in range(k):
        axis = x.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = x.shape[axis]
        start, stop = max(-lo, 0), n - max(-hi, 0)
        if stop < start:
            raise RuntimeError("narrow(): length must be non-negative.")
        crop[axis] = slice(start, stop)
        widths[axis] = (max(lo, 0), max(hi, 0))
    x = x[tuple(crop)]
    if not any(w != (0, 0) for w in widths):
        return np.array(x)
    out = np.full(tuple(n + a + b for n, (a, b) in zip(x.shape, widths)), value, dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, widths))] = x
    return out


def _constant(input: Tensor, pads: tuple[int, ...], value: Any) -> Tensor:
    xd = input._data
    if xd.dtype.kind in "iub":
        value = np.asarray(value).astype(xd.dtype)
    out = wrap(_constant_array(xd, pads, value), input._device)
    if input._requires_grad and grad_enabled():
        link_one(ConstantPadNdBackward0(pads), input, out)
    return out


def _positions(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    j = np.arange(-lo, n + hi)
    if mode == "reflect":
        j = np.abs(j)
        return np.where(j > n - 1, 2 * (n - 1) - j, j)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    # circular: negative pads crop first, then the crop wraps around (as torch)
    start, stop = max(-lo, 0), n - max(-hi, 0)
    return start + np.arange(-max(lo, 0), stop - start + max(hi, 0)) % (stop - start)


_MODE_NODE = {"reflect": "Reflection", "replicate": "Replication"}


@PAD.op(nodes=(ConstantPadNdBackward0, *(
    _RESAMPLE_NODES[f"{k}Pad{d}DBackward0"] for k in ("Reflection", "Replication") for d in (1, 2, 3)),
    _RESAMPLE_NODES["CircularPadBackward0"]), method=False, export=False)
def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_left, last_right, second_last_left, ...)``."""
    pads = tuple(int(p) for p in pad)
    xd = input._data
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > xd.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding length "
            f"{len(pads)} and input of dimension {xd.ndim}"
        )
    if mode == "constant":
        return _constant(input, pads, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pads) // 2
    if k not in (1, 2, 3) or xd.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pads)} is not supported for {xd.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if any(n == 0 for n in xd.shape[xd.ndim - k - 1:]):
        raise RuntimeError(
            f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(xd.shape)}"
        )
    maps = []
    dt = xd.dtype if xd.dtype.kind == "f" else np.dtype(np.float64)
    for i in range(k):
        axis = xd.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = xd.shape[axis]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
                f"({lo}, {hi}) at dimension {axis} of input {list(xd.shape)}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        idx = _positions(n, lo, hi, mode)
        maps.append((axis, one_hot_rows(idx, n, dt), idx))
    name = f"{_MODE_NODE[mode]}Pad{k}DBackward0" if mode in _MODE_NODE else "CircularPadBackward0"
    return separable(input, maps, name)


__all__ = PAD.exports(__name__)
