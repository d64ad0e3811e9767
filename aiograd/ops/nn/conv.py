"""Convolutions and their transposes (1-D and 2-D), and torch's unfold/fold (im2col/col2im).

Every convolution here is one window geometry (NOTE [Window geometry] in
_window.py) on 2-D arrays: a 1-D op is the 2-D one with H = 1. A convolution
reads the columns of its input (im2col) and multiplies them by the weight; its
transpose multiplies by the weight's transpose and adds the columns back
(col2im). torch's layout keeps the products plain batched matmuls on
contiguous arrays, with no transposing copy of the result:

    conv:       y[n] = W (Cout, Cin*k) @ cols(x)[n] (Cin*k, L)        (per group)
    transposed: y    = col2im(W^T @ x[n])

NOTE [Convolution gradients]: the gradients of either are the other's forward
and a weight product, ``gw = sum_n dy[n] @ cols[n]^T``. ``ConvolutionBackward0``
writes them once with ``@``, ``reshape``, ``np.swapaxes`` and ``np.sum``, and
im2col/col2im picked by the mode: on ndarrays in an ordinary pass, on Tensors in
a create_graph pass, where ``unfold``/``fold`` (each the other's derivative) and
matmul record a graph, so second derivatives come without a second rule
(NOTE [One rule for both modes] in _common.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.graph import Node, Shape, link_one, record
from ...autograd.saved import Saved, SavedArray, save, unpack
from ...tensor import Tensor
from .._common import grad_enabled, needs_grad, wrap
from ._nn_common import ntuple, torch_dtype_name
from .._table import OpTable
from ._window import Window, add_taps, col2im, im2col, out_size, taps_by_position

CONV = OpTable("nn.conv")


# ----- unfold / fold: the differentiable im2col / col2im pair ------------------------------------


class Im2ColBackward0(Node):
    """The adjoint of im2col: col2im of the gradient."""

    __slots__ = ("window", "unbatched")
    window: Window
    unbatched: bool

    def __init__(self, window: Window, unbatched: bool) -> None:
        self._init_node()
        self.window = window
        self.unbatched = unbatched

    def apply(self, grads: list[Any]) -> tuple[Any]:
        return (self.adjoint(grads[0]),)

    def adjoint(self, g: Any) -> Any:
        return cols_to_image(g[None], self.window)[0] if self.unbatched else cols_to_image(g, self.window)


class Col2ImBackward0(Im2ColBackward0):
    """The adjoint of col2im: im2col of the gradient."""

    __slots__ = ()

    def adjoint(self, g: Any) -> Any:
        return image_to_cols(g[None], self.window)[0] if self.unbatched else image_to_cols(g, self.window)


def image_to_cols(x: Any, w: Window, unbatched: bool = False) -> Any:
    """im2col of a 4-D (or, ``unbatched``, 3-D) ndarray or Tensor (a differentiable op on a Tensor)."""
    if x.__class__ is not Tensor:
        return im2col(x, w)
    xd = x._data
    res = im2col(xd[None], w)[0] if unbatched else im2col(xd, w)
    out = wrap(res, x._device)
    if x._requires_grad and grad_enabled():
        link_one(Im2ColBackward0(w, unbatched), x, out)
    return out


def cols_to_image(cols: Any, w: Window, unbatched: bool = False) -> Any:
    """col2im of a 3-D (or, ``unbatched``, 2-D) ndarray or Tensor (a differentiable op on a Tensor)."""
    if cols.__class__ is not Tensor:
        return col2im(cols, w)
    cd = cols._data
    res = col2im(cd[None], w)[0] if unbatched else col2im(cd, w)
    out = wrap(np.ascontiguousarray(res), cols._device)
    if cols._requires_grad and grad_enabled():
        link_one(Col2ImBackward0(w, unbatched), cols, out)
    return out


def _blocks_error(size: tuple[int, int], k: Any, d: Any, p: Any, out: tuple[int, int]) -> RuntimeError:
    return RuntimeError(
        f"Given input with spatial size {size}, kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
        f"the array of sliding blocks as {out}, but its components must be at least one."
    )


@CONV.op(nodes=(Im2ColBackward0,), method=False, export=False)
def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """The sliding blocks of a (N, C, H, W) (or (C, H, W)) input as columns (N, C*kh*kw, L), as torch's F.unfold."""
    xd = input._data
    if xd.ndim not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {xd.ndim}D)"
        )
    k, d, p, s = (ntuple(v, 2, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                (padding, "padding"), (stride, "stride")))
    size = xd.shape[-2:]
    out = (out_size(size[0], k[0], s[0], 2 * p[0], d[0]), out_size(size[1], k[1], s[1], 2 * p[1], d[1]))
    if min(out) < 1:
        raise _blocks_error(size, k, d, p, out)
    w = Window(size, k, s, d, (p[0], p[0], p[1], p[1]), out)  # type: ignore[arg-type]
    return image_to_cols(input, w, xd.ndim == 3)


@CONV.op(nodes=(Col2ImBackward0,), method=False, export=False)
def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1,
) -> Tensor:
    """Sum sliding blocks (N, C*kh*kw, L) (or unbatched) back into (N, C, H, W), as torch's F.fold."""
    xd = input._data
    if xd.ndim not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
            f"for input, but got: {list(xd.shape)}"
        )
    size, k, d, p, s = (ntuple(v, 2, n) for v, n in ((output_size, "output_size"), (kernel_size, "kernel_size"),
                                                      (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    ck, L = xd.shape[-2:]
    if ck % (k[0] * k[1]):
        raise RuntimeError(
            f"Expected size of input's dimension {xd.ndim - 2} to be divisible by the product of kernel_size, but "
            f"got input.size({xd.ndim - 2})={ck} and kernel_size={k}."
        )
    out = (out_size(size[0], k[0], s[0], 2 * p[0], d[0]), out_size(size[1], k[1], s[1], 2 * p[1], d[1]))
    if min(out) < 1:
        raise _blocks_error(size, k, d, p, out)  # type: ignore[arg-type]
    if out[0] * out[1] != L:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, expected size of "
            f"input's dimension {xd.ndim - 1} to match the calculated number of sliding blocks {out[0]} * {out[1]} "
            f"= {out[0] * out[1]}, but got input.size({xd.ndim - 1})={L}."
        )
    w = Window(size, k, s, d, (p[0], p[0], p[1], p[1]), out)  # type: ignore[arg-type]
    return cols_to_image(input, w, xd.ndim == 2)


# ----- the weight products (ndarrays or Tensors; NOTE [Convolution gradients]) --------------------


def _apply_w(w2: Any, cols: Any, G: int) -> Any:
    """(Cb, Ca*k/G) weight times columns (N, Ca*k, L), per group: (N, Cb, L)."""
    if G == 1:
        return w2 @ cols
    N, ck, L = cols.shape
    cb = w2.shape[0]
    return (w2.reshape(G, cb // G, ck // G) @ cols.reshape(N, G, ck // G, L)).reshape(N, cb, L)


def _apply_wt(w2: Any, y: Any, G: int) -> Any:
    """The transpose of ``_apply_w``: (N, Cb, L) -> (N, Ca*k, L)."""
    if G == 1:
        return np.swapaxes(w2, 0, 1) @ y
    N, cb, L = y.shape
    wt = np.swapaxes(w2.reshape(G, cb // G, -1), 1, 2)
    return (wt @ y.reshape(N, G, cb // G, L)).reshape(N, -1, L)


def _weight_grad(y: Any, cols: Any, G: int) -> Any:
    """``sum_n y[n] @ cols[n]^T`` per group: (N, Cb, L), (N, Ca*k, L) -> (Cb, Ca*k/G)."""
    if G == 1:
        return np.sum(y @ np.swapaxes(cols, 1, 2), axis=0)
    N, cb, L = y.shape
    ck = cols.shape[1]
    prod = y.reshape(N, G, cb // G, L) @ np.swapaxes(cols.reshape(N, G, ck // G, L), 2, 3)
    return np.sum(prod, axis=0).reshape(cb, ck // G)


# ----- convolution ---------------------------------------------------------------------------------


class ConvolutionBackward0(Node):
    """Backward of a convolution or its transpose (NOTE [Convolution gradients]).

    ``window`` is the geometry on the large side: the input of a convolution, the
    output of a transposed one. ``cols`` are the input's columns saved by a
    convolution whose weight needs a gradient (ordinary passes reuse them)."""

    __slots__ = ("x", "w", "cols", "window", "groups", "transposed", "x_shape", "x4", "y3", "by_position")
    x: Saved
    w: Saved
    cols: SavedArray
    window: Window
    groups: int
    transposed: bool
    x_shape: Shape  #: the input as the user gave it
    x4: Shape  #: the input as (N, C, H, W) (conv) or (N, C, L) (transposed)
    y3: Shape  #: the output gradient as (N, Cb, L) (conv) or (N, C, H, W) (transposed)
    by_position: bool  #: ``cols`` laid out by ``taps_by_position`` (NOTE [Taps by position]), not ``im2col``

    def __init__(
        self,
        x: Saved,
        w: Saved,
        cols: SavedArray,
        window: Window,
        groups: int,
        transposed: bool,
        x_shape: Shape,
        x4: Shape,
        y3: Shape,
        by_position: bool,
    ) -> None:
        self._init_node()
        self.x = x
        self.w = w
        self.cols = cols
        self.window = window
        self.groups = groups
        self.transposed = transposed
        self.x_shape = x_shape
        self.x4 = x4
        self.y3 = y3
        self.by_position = by_position

    def release_variables(self) -> None:
        self.x = None
        self.w = None
        self.cols = None

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        g = grads[0]
        graph = g.__class__ is Tensor
        G = self.groups
        w = unpack(self, self.w, graph)
        w2 = w.reshape(w.shape[0], -1)
        gy = g.reshape(self.y3)
        gx = gw = gb = None
        if self.by_position and not graph:
            return self._by_position(gy, w)
        if not self.transposed:
            if self.should_compute_output(0):
                gx = cols_to_image(_apply_wt(w2, gy, G), self.window).reshape(self.x_shape)
            if self.should_compute_output(1):
                cols = self.cols
                if graph or cols is None:
                    cols = image_to_cols(unpack(self, self.x, graph).reshape(self.x4), self.window)
                else:
                    unpack(self, self.x, False)  # the in-place check
                gw = _weight_grad(gy, cols, G).reshape(w.shape)
            if self.should_compute_output(2):
                gb = np.sum(gy, axis=(0, 2))
        else:
            gcols = image_to_cols(gy, self.window) if (self.should_compute_output(0) or self.should_compute_output(1)) else None
            if self.should_compute_output(0):
                gx = _apply_w(w2, gcols, G).reshape(self.x_shape)
            if self.should_compute_output(1):
                x3 = unpack(self, self.x, graph).reshape(self.x4)
                gw = _weight_grad(x3, gcols, G).reshape(w.shape)
            if self.should_compute_output(2):
                gb = np.sum(gy, axis=(0, 2, 3))
        return (gx, gw, gb) if self.n_edges > 2 else (gx, gw)

    def _by_position(self, gy: np.ndarray, w: np.ndarray) -> tuple[Any, ...]:
        """The three products as one BLAS call each (NOTE [Taps by position])."""
        N, cout, L = gy.shape
        wk = _weight_by_tap(w.reshape(w.shape[:2] + self.window.k))
        gt = np.ascontiguousarray(gy.transpose(1, 2, 0)).reshape(cout, L * N)
        gx = gw = gb = None
        if self.should_compute_output(0):
            gx = add_taps(wk.T @ gt, self.window, N).reshape(self.x_shape)
        if self.should_compute_output(1):
            x = unpack(self, self.x, False)  # the in-place check
            cols = self.cols if self.cols is not None else taps_by_position(x.reshape(self.x4), self.window)
            kh, kw = self.window.k
            gw = (gt @ cols.T).reshape(cout, kh, kw, -1).transpose(0, 3, 1, 2).reshape(w.shape)
        if self.should_compute_output(2):
            gb = gt.sum(axis=1)
        return (gx, gw, gb) if self.n_edges > 2 else (gx, gw)


def _weight_by_tap(w4: np.ndarray) -> np.ndarray:
    """A (Cout, Cin, kh, kw) weight as the (Cout, kh*kw*Cin) matrix of NOTE [Taps by position]."""
    return w4.transpose(0, 2, 3, 1).reshape(w4.shape[0], -1)


def _same_padding(k: tuple[int, ...], d: tuple[int, ...], s: tuple[int, ...]) -> tuple[int, ...]:
    if any(v != 1 for v in s):
        raise ValueError("padding='same' is not supported for strided convolutions")
    pads: list[int] = []
    for kk, dd in zip(k, d):
        total = dd * (kk - 1)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def _check_dims(name: str, nd: int, xd: np.ndarray, wd: np.ndarray) -> None:
    if xd.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of size: "
            f"{list(xd.shape)}"
        )
    if wd.ndim != nd + 2:
        raise RuntimeError(
            f"Expected {wd.ndim}-dimensional input for {wd.ndim}-dimensional weight {list(wd.shape)}, but got "
            f"{xd.ndim}-dimensional input of size {list(xd.shape)} instead"
        )


def _check_dtypes(xd: np.ndarray, wd: np.ndarray, bias: Tensor | None) -> None:
    if xd.dtype != wd.dtype:
        raise RuntimeError(
            f"expected scalar type {torch_dtype_name(xd.dtype)} but found {torch_dtype_name(wd.dtype)}"
        )
    if bias is not None and bias._data.dtype != xd.dtype:
        raise RuntimeError(
            f"Input type ({torch_dtype_name(xd.dtype).lower()}) and bias type "
            f"({torch_dtype_name(bias._data.dtype).lower()}) should be the same"
        )


def _as_2d(v: tuple[int, ...], one: int) -> tuple[int, int]:
    return (one, v[0]) if len(v) == 1 else (v[0], v[1])


def _convolution(
    name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
    dilation: Any, groups: int, transposed: bool, output_padding: Any = 0,
) -> Tensor:
    """conv{nd}d or conv_transpose{nd}d on (N, C, *spatial) or unbatched input (see the module docstring)."""
    xd, wd = input._data, weight._data
    _check_dims(name, nd, xd, wd)
    _check_dtypes(xd, wd, bias)
    groups = int(groups)
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if xd.ndim == nd + 1:  # unbatched: as torch, the batched op on an unsqueezed input
        batched = _convolution(name, nd, input.unsqueeze(0), weight, bias, stride, padding,
                               dilation, groups, transposed, output_padding)
        return batched.squeeze(0)
    x_shape = xd.shape
    xb = xd
    s = ntuple(stride, nd, "stride")
    d = ntuple(dilation, nd, "dilation")
    if min(s) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(d) < 1:
        raise RuntimeError("dilation should be greater than zero")
    k = tuple(wd.shape[2:])
    N, C = xb.shape[:2]
    cb, cg = wd.shape[:2]  # conv: (Cout, Cin/G); transposed: (Cin, Cout/G)
    if not transposed:
        if C != cg * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(wd.shape)}, expected input{list(xd.shape)} to have "
                f"{cg * groups} channels, but got {C} channels instead"
            )
    elif C != cb:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(wd.shape)}, expected input{list(xd.shape)} to have {cb} "
            f"channels, but got {C} channels instead"
        )
    if cb % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size {list(wd.shape)} instead"
        )
    if isinstance(padding, str):
        if transposed:
            raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
        if padding == "valid":
            pads = (0,) * (2 * nd)
        elif padding == "same":
            pads = _same_padding(k, d, s)
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    else:
        p = ntuple(padding, nd, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pads = tuple(v for pp in p for v in (pp, pp))
    if bias is not None:
        cout = cb if not transposed else cg * groups
        if bias._data.shape != (cout,):
            raise RuntimeError(
                f"Given weight of size {list(wd.shape)}, expected bias to be 1-dimensional with {cout} elements, "
                f"but got bias of size {list(bias._data.shape)} instead"
            )
    # everything as 2-D from here (a 1-D op has H = 1)
    x4 = xb if nd == 2 else xb[:, :, None, :]
    kk = _as_2d(k, 1)
    ss, dd = _as_2d(s, 1), _as_2d(d, 1)
    pads4 = pads if nd == 2 else (0, 0) + pads
    w2 = wd.reshape(cb, -1)
    if not transposed:
        H, W = x4.shape[2:]
        Hp, Wp = H + pads4[0] + pads4[1], W + pads4[2] + pads4[3]
        ek = (dd[0] * (kk[0] - 1) + 1, dd[1] * (kk[1] - 1) + 1)
        if Hp < ek[0] or Wp < ek[1]:
            shown = f"({Hp} x {Wp}). Kernel size: ({ek[0]} x {ek[1]})" if nd == 2 else f"({Wp}). Kernel size: ({ek[1]})"
            raise RuntimeError(
                f"Calculated padded input size per channel: {shown}. Kernel size can't be greater than actual input "
                "size"
            )
        win = Window((H, W), kk, ss, dd, pads4, (out_size(H, kk[0], ss[0], pads4[0] + pads4[1], dd[0]),  # type: ignore[arg-type]
                                                 out_size(W, kk[1], ss[1], pads4[2] + pads4[3], dd[1])))
        by_position = groups == 1
        if by_position:  # NOTE [Taps by position]
            cols = taps_by_position(x4, win)
            y_tap = (_weight_by_tap(wd.reshape((cb, cg) + kk)) @ cols).reshape(cb, -1, N)  # (Cout, L, N)
            y = np.empty((N, cb, y_tap.shape[1]), dtype=y_tap.dtype)
            if bias is not None:
                np.add(y_tap.transpose(2, 0, 1), bias._data[:, None], out=y)
            else:
                y[...] = y_tap.transpose(2, 0, 1)
        else:
            cols = im2col(x4, win)
            y = _apply_w(w2, cols, groups)  # (N, Cout, L)
            if bias is not None:
                y += bias._data[:, None]
        y_shape = (N, cb) + (win.out if nd == 2 else win.out[1:])
        y3: Shape = y.shape
        xin: Shape = x4.shape
        work = 2 * y.size * w2.shape[1]
    else:
        op = ntuple(output_padding, nd, "output_padding")
        if any(o >= ss_ and o >= dd_ for o, ss_, dd_ in zip(op, s, d)):
            dims = ("height", "width") if nd == 2 else ("width",)
            parts = [f"output_padding_{n}: {o}" for n, o in zip(dims, op)]
            parts += [f"stride_{n}: {v}" for n, v in zip(dims, s)] + [f"dilation_{n}: {v}" for n, v in zip(dims, d)]
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
        op2 = _as_2d(op, 0)
        Hs, Ws = x4.shape[2:]
        size = tuple((n - 1) * st - pa - pb + dl * (kn - 1) + o + 1 for n, st, pa, pb, dl, kn, o in
                     zip((Hs, Ws), ss, pads4[0::2], pads4[1::2], dd, kk, op2))
        if min(size) < 1:
            raise RuntimeError(
                f"Given input size per channel: {list(xb.shape[2:])}. Calculated output size per channel: "
                f"{list(size[2 - nd:])}. Output size is too small"
            )
        win = Window(size, kk, ss, dd, pads4, (Hs, Ws))  # type: ignore[arg-type]
        x3 = x4.reshape(N, C, Hs * Ws)
        y = np.ascontiguousarray(col2im(_apply_wt(w2, x3, groups), win))
        if bias is not None:
            y += bias._data[:, None, None]
        cols = None
        by_position = False
        y_shape = y.shape[:2] + (size if nd == 2 else size[1:])
        y3 = y.shape
        xin = x3.shape
        work = 2 * x3.size * w2.shape[1]
    out = wrap(y.reshape(y_shape), input._device)
    inputs = (input, weight) if bias is None else (input, weight, bias)
    if needs_grad(*inputs):
        node = ConvolutionBackward0(
            save(input), save(weight), cols if (weight._requires_grad and not transposed) else None, win, groups,
            transposed, x_shape, xin, y3, by_position,
        )
        record(node, inputs, (out,))
        node.work = work  # flops of one product (read by the offload policy)
    return out


@CONV.op(nodes=(ConvolutionBackward0,), method=False)
def conv1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """1-D cross-correlation over (N, C, L) (or unbatched (C, L)) input, as torch.nn.functional.conv1d."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups, False)


@CONV.op(nodes=(ConvolutionBackward0,), method=False)
def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """2-D cross-correlation over (N, C, H, W) (or unbatched (C, H, W)) input, as torch.nn.functional.conv2d."""
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups, False)


@CONV.op(nodes=(ConvolutionBackward0,), method=False)
def conv_transpose1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:
    """The transpose (adjoint) of conv1d: weight (Cin, Cout/groups, k); as torch.nn.functional.conv_transpose1d."""
    return _convolution("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, groups, True,
                        output_padding)


@CONV.op(nodes=(ConvolutionBackward0,), method=False)
def conv_transpose2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:
    """The transpose (adjoint) of conv2d: weight (Cin, Cout/groups, kh, kw); as torch.nn.functional.conv_transpose2d."""
    return _convolution("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, groups, True,
                        output_padding)


__all__ = CONV.exports(__name__)
