"""Recurrent layers (RNN with tanh or relu, LSTM with optional projection, GRU): one fused node per
layer and direction over the whole sequence.

NOTE [Recurrent layer]: ``rnn_layer`` runs one direction of one layer over a sequence, either
padded (``input`` of shape (T, B, I)) or packed (``input`` the (N, I) data of a PackedSequence and
``batch_sizes`` its per-step batch sizes, non-increasing). Both are one layout: the rows of step
``t`` are ``input[off_t : off_t + bs_t]`` of the 2-D data, and the state of the ``B`` sequences is
an array whose first ``bs_t`` rows step at ``t``; the other rows keep their state (a finished
sequence keeps its last one, and in the reverse direction a sequence not yet started keeps ``h0``).
The forward is numpy: the input's projection ``x W_ih^T + b_ih`` for all steps in one matmul, then
per step the hidden projection and the gates. It records ONE node, whose outputs are the per-step
outputs, the final ``h`` and (LSTM) the final ``c``.

NOTE [Backward through time]: the node's ordinary pass walks the steps backwards in numpy from the
activated gates the forward saved, keeping only the running ``dh`` (and ``dc``): per step one
matmul ``dgates @ W_hh`` carries the gradient to the previous state. The gradients of the gates
for all steps fill one (N, G*H) array, so the weights' gradients are one matmul each at the end
(``dgates^T x``, ``dgates^T h_prev``), as is the input's (``dgates @ W_ih``). A create_graph pass
(gradients are Tensors) instead runs ``_generic``: the same forward and backward written with
operators and numpy functions that dispatch to differentiable aiograd ops (NOTE [One rule for
both modes] in _common.py), from the saved inputs as graph Tensors, so the gradients it returns
carry their own graph and second derivatives come out of it.

Gates, in torch's order and parameter layout: LSTM ``i, f, g, o`` (``c' = f c + i g``,
``h' = o tanh(c')``, then ``h' W_hr^T`` with a projection), GRU ``r, z, n``
(``n = tanh(x_n + r (h W_hn^T + b_hn))``, ``h' = (1 - z) n + z h``), RNN ``h' = act(x W_ih^T + b_ih
+ h W_hh^T + b_hh)``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...autograd.graph import Node, record
from ...autograd.saved import Saved, SavedArray, save, unpack
from ...tensor import Tensor, zeros
from .._common import common_device, needs_grad, wrap
from .._table import OpTable

RECURRENT = OpTable("nn.recurrent")

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

Steps = Sequence[tuple[int, int]]


def _steps(batch_sizes: Sequence[int], reverse: bool) -> list[tuple[int, int]]:
    """(offset, batch size) of each step in the order the direction visits them."""
    out = []
    off = 0
    for bs in batch_sizes:
        out.append((off, int(bs)))
        off += int(bs)
    return out[::-1] if reverse else out


def _sigmoid_(a: np.ndarray) -> np.ndarray:
    """The logistic function in place, as ``1 / (1 + exp(-a))``: numpy's exp is its fastest
    transcendental ufunc (about twice scipy's ``expit``, and ``tanh``'s two-pass form, on float32).
    ``exp`` overflows to inf for very negative ``a``, giving the right 0: the caller silences the
    overflow warning (``np.errstate``)."""
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1.0
    return np.reciprocal(a, out=a)


def _sigmoid(x: Any) -> Any:
    return x.sigmoid() if isinstance(x, Tensor) else 0.5 * np.tanh(0.5 * x) + 0.5


def _cat(xs: list[Any], axis: int = 0) -> Any:
    return xs[0] if len(xs) == 1 else np.concatenate(xs, axis=axis)


# ----- the forward, in numpy (NOTE [Recurrent layer]) ------------------------------------------------


class _Forward:
    """The arrays one forward makes: the outputs and what the ordinary backward reads."""

    __slots__ = ("out", "h", "c", "gates", "hprev", "cprev", "tc", "r", "hn")

    def __init__(self) -> None:
        self.out: Any = None  # the output of every step (N, Hout)
        self.h: Any = None  # the final h (B, Hout)
        self.c: Any = None  # LSTM: the final c (B, H)
        self.gates: Any = None  # activated gates (N, G*H)
        self.hprev: Any = None  # the state each row stepped from (N, Hout)
        self.cprev: Any = None  # LSTM: the cell state each row stepped from (N, H)
        self.tc: Any = None  # LSTM: tanh of the new cell state (N, H)
        self.r: Any = None  # LSTM with projection: o * tanh(c) before the projection (N, H)
        self.hn: Any = None  # GRU: h W_hn^T + b_hn (N, H)


def _forward(mode: str, x: np.ndarray, hx: np.ndarray, cx: np.ndarray | None, w_ih: np.ndarray, w_hh: np.ndarray,
             b_ih: np.ndarray | None, b_hh: np.ndarray | None, w_hr: np.ndarray | None, steps: Steps,
             keep: bool) -> _Forward:
    """Run the layer over ``steps``; ``keep``: save what the backward needs."""
    with np.errstate(over="ignore"):  # exp(-a) of _sigmoid_ may overflow to inf: 1 / inf is the right 0
        return _run(mode, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, steps, keep)


def _run(mode: str, x: np.ndarray, hx: np.ndarray, cx: np.ndarray | None, w_ih: np.ndarray, w_hh: np.ndarray,
         b_ih: np.ndarray | None, b_hh: np.ndarray | None, w_hr: np.ndarray | None, steps: Steps,
         keep: bool) -> _Forward:
    f = _Forward()
    n_rows = x.shape[0]
    hsize = w_hh.shape[0] // GATES[mode]
    hout = hx.shape[1]
    xw = x @ w_ih.T
    if b_ih is not None:
        xw += b_ih
    if b_hh is not None and mode != "GRU":  # outside the recurrence: added to every step's gates at once
        xw += b_hh
        b_hh = None
    w_hhT = w_hh.T
    h = hx.copy()
    out = np.empty((n_rows, hout), x.dtype)
    if keep:
        f.hprev = np.empty((n_rows, hout), x.dtype)
    if mode == "LSTM":
        c = cx.copy()  # type: ignore[union-attr]
        if keep:
            f.cprev = np.empty((n_rows, hsize), x.dtype)
            f.tc = np.empty((n_rows, hsize), x.dtype)
            if w_hr is not None:
                f.r = np.empty((n_rows, hsize), x.dtype)
        h2, h3 = 2 * hsize, 3 * hsize
        for off, bs in steps:
            sl = slice(off, off + bs)
            hp = h[:bs]
            g = xw[sl]
            g += hp @ w_hhT
            if b_hh is not None:
                g += b_hh
            _sigmoid_(g[:, :h2])
            np.tanh(g[:, h2:h3], out=g[:, h2:h3])
            _sigmoid_(g[:, h3:])
            cp = c[:bs]
            if keep:
                f.hprev[sl] = hp
                f.cprev[sl] = cp
            cn = g[:, hsize:h2] * cp
            cn += g[:, :hsize] * g[:, h2:h3]
            c[:bs] = cn
            tc = np.tanh(cn)
            if keep:
                f.tc[sl] = tc
            tc *= g[:, h3:]
            if w_hr is not None:
                if keep:
                    f.r[sl] = tc
                tc = tc @ w_hr.T
            out[sl] = tc
            h[:bs] = tc
        f.c = c
    elif mode == "GRU":
        if keep:
            f.hn = np.empty((n_rows, hsize), x.dtype)
        h2 = 2 * hsize
        for off, bs in steps:
            sl = slice(off, off + bs)
            hp = h[:bs]
            g = xw[sl]
            hw = hp @ w_hhT
            if b_hh is not None:
                hw += b_hh
            g[:, :h2] += hw[:, :h2]
            _sigmoid_(g[:, :h2])
            hn = hw[:, h2:]
            if keep:
                f.hprev[sl] = hp
                f.hn[sl] = hn
            n = g[:, h2:]
            n += g[:, :hsize] * hn
            np.tanh(n, out=n)
            z = g[:, hsize:h2]
            hnew = hp - n
            hnew *= z
            hnew += n
            out[sl] = hnew
            h[:bs] = hnew
    else:
        relu = mode == "RNN_RELU"
        for off, bs in steps:
            sl = slice(off, off + bs)
            hp = h[:bs]
            g = xw[sl]
            if keep:
                f.hprev[sl] = hp
            g += hp @ w_hhT
            if b_hh is not None:
                g += b_hh
            if relu:
                np.maximum(g, 0, out=g)
            else:
                np.tanh(g, out=g)
            out[sl] = g
            h[:bs] = g
    f.out = out
    f.h = h
    if keep:
        f.gates = xw
    return f


# ----- the backward through time (NOTE [Backward through time]) -------------------------------------


def _bptt(mode: str, fw: "RnnBackwardBase", x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
          w_hr: np.ndarray | None, gy: Any, ghn: Any, gcn: Any, hx_shape: tuple[int, ...],
          has_b_hh: bool) -> tuple[Any, ...]:
    """Gradients of (input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr) from the saved gates, in numpy."""
    gates: Any = fw.gates
    hprev: Any = fw.hprev
    n_rows, width = gates.shape
    hsize = w_hh.shape[0] // GATES[mode]
    dtype = gates.dtype
    dh = np.zeros(hx_shape, dtype) if ghn is None else np.array(ghn, dtype=dtype)
    dg = np.empty((n_rows, width), dtype)
    dgh = dg  # the gradient reaching h W_hh^T + b_hh (GRU: differs in the n columns)
    steps = fw.steps[::-1]
    if mode == "LSTM":
        dc = np.zeros((hx_shape[0], hsize), dtype) if gcn is None else np.array(gcn, dtype=dtype)
        cprev: Any = fw.cprev
        tcs: Any = fw.tc
        rs: Any = fw.r
        dr_all = np.empty((n_rows, hx_shape[1]), dtype) if w_hr is not None else None
        h2, h3 = 2 * hsize, 3 * hsize
        for off, bs in steps:
            sl = slice(off, off + bs)
            dht = dh[:bs]
            if gy is not None:
                dht = dht + gy[sl]
            if dr_all is not None:
                dr_all[sl] = dht
                dht = dht @ w_hr
            g = gates[sl]
            i, fg, gg, o = g[:, :hsize], g[:, hsize:h2], g[:, h2:h3], g[:, h3:]
            tc = tcs[sl]
            d = dg[sl]
            do = d[:, h3:]
            np.multiply(dht, tc, out=do)  # dL/do
            dct = dht * o
            dct *= 1.0 - tc * tc
            dct += dc[:bs]
            do *= o * (1.0 - o)
            np.multiply(dct, gg, out=d[:, :hsize])
            d[:, :hsize] *= i * (1.0 - i)
            np.multiply(dct, cprev[sl], out=d[:, hsize:h2])
            d[:, hsize:h2] *= fg * (1.0 - fg)
            np.multiply(dct, i, out=d[:, h2:h3])
            d[:, h2:h3] *= 1.0 - gg * gg
            dct *= fg
            dc[:bs] = dct
            dh[:bs] = d @ w_hh
        dw_hr = dr_all.T @ rs if dr_all is not None else None
        dcx = dc
    elif mode == "GRU":
        dgh = np.empty((n_rows, width), dtype)
        h2 = 2 * hsize
        hns: Any = fw.hn
        for off, bs in steps:
            sl = slice(off, off + bs)
            dht = dh[:bs]
            if gy is not None:
                dht = dht + gy[sl]
            g = gates[sl]
            r, z, n = g[:, :hsize], g[:, hsize:h2], g[:, h2:]
            hp = hprev[sl]
            d = dg[sl]
            dhh = dgh[sl]
            dn = d[:, h2:]
            np.multiply(dht, 1.0 - z, out=dn)
            dn *= 1.0 - n * n  # through tanh: the gradient of x_n + r * hn
            np.multiply(dn, hns[sl], out=d[:, :hsize])
            d[:, :hsize] *= r * (1.0 - r)
            np.multiply(dht, hp - n, out=d[:, hsize:h2])
            d[:, hsize:h2] *= z * (1.0 - z)
            dhh[:, :h2] = d[:, :h2]
            np.multiply(dn, r, out=dhh[:, h2:])
            dhp = dht * z
            dhp += dhh @ w_hh
            dh[:bs] = dhp
        dw_hr = None
        dcx = None
    else:
        relu = mode == "RNN_RELU"
        for off, bs in steps:
            sl = slice(off, off + bs)
            dht = dh[:bs]
            if gy is not None:
                dht = dht + gy[sl]
            g = gates[sl]
            d = dg[sl]
            if relu:
                np.multiply(dht, g > 0, out=d)
            else:
                np.multiply(dht, 1.0 - g * g, out=d)
            dh[:bs] = d @ w_hh
        dw_hr = None
        dcx = None
    dx = dg @ w_ih
    dw_ih = dg.T @ x
    db_ih = dg.sum(axis=0)
    dw_hh = dgh.T @ hprev
    db_hh = dgh.sum(axis=0) if has_b_hh else None
    return dx, dh, dcx, dw_ih, dw_hh, db_ih, db_hh, dw_hr


def _generic(mode: str, x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any,
             steps: Steps, gy: Any, ghn: Any, gcn: Any) -> tuple[Any, ...]:
    """The forward recomputed and the backward through time, both written with operators and numpy
    functions only, so that on graph Tensors they record a differentiable graph (NOTE [Backward
    through time]). Missing gradients are zeros."""
    hsize = w_hh.shape[0] // GATES[mode]
    xw = x @ w_ih.T
    if b_ih is not None:
        xw = xw + b_ih
    h, c = hx, cx
    saved: list[tuple[Any, ...]] = []
    for off, bs in steps:
        hp = h[:bs]
        xg = xw[off:off + bs]
        hw = hp @ w_hh.T
        if b_hh is not None:
            hw = hw + b_hh
        if mode == "LSTM":
            gts = xg + hw
            i = _sigmoid(gts[:, :hsize])
            f = _sigmoid(gts[:, hsize:2 * hsize])
            g = np.tanh(gts[:, 2 * hsize:3 * hsize])
            o = _sigmoid(gts[:, 3 * hsize:])
            cp = c[:bs]
            cn = f * cp + i * g
            tc = np.tanh(cn)
            rr = o * tc
            hnew = rr @ w_hr.T if w_hr is not None else rr
            saved.append((hp, cp, i, f, g, o, tc, rr))
            c = cn if bs == c.shape[0] else _cat([cn, c[bs:]])
        elif mode == "GRU":
            r = _sigmoid(xg[:, :hsize] + hw[:, :hsize])
            z = _sigmoid(xg[:, hsize:2 * hsize] + hw[:, hsize:2 * hsize])
            hn = hw[:, 2 * hsize:]
            n = np.tanh(xg[:, 2 * hsize:] + r * hn)
            hnew = (1.0 - z) * n + z * hp
            saved.append((hp, r, z, n, hn))
        else:
            pre = xg + hw
            hnew = np.maximum(pre, 0.0) if mode == "RNN_RELU" else np.tanh(pre)
            saved.append((hp, hnew))
        h = hnew if bs == h.shape[0] else _cat([hnew, h[bs:]])
    dh = ghn
    dc = gcn
    dgx: dict[int, Any] = {}
    dgh: dict[int, Any] = {}
    dr: dict[int, Any] = {}
    for (off, bs), sv in zip(steps[::-1], saved[::-1]):
        dht = dh[:bs] + gy[off:off + bs]
        if mode == "LSTM":
            hp, cp, i, f, g, o, tc, rr = sv
            if w_hr is not None:
                dr[off] = dht
                dht = dht @ w_hr
            dct = dc[:bs] + dht * o * (1.0 - tc * tc)
            d = _cat([dct * g * i * (1.0 - i), dct * cp * f * (1.0 - f), dct * i * (1.0 - g * g),
                      dht * tc * o * (1.0 - o)], axis=1)
            dgx[off] = dgh[off] = d
            dcn = dct * f
            dc = dcn if bs == dc.shape[0] else _cat([dcn, dc[bs:]])
            dhp = d @ w_hh
        elif mode == "GRU":
            hp, r, z, n, hn = sv
            dn = dht * (1.0 - z) * (1.0 - n * n)
            drr = dn * hn * r * (1.0 - r)
            dz = dht * (hp - n) * z * (1.0 - z)
            dgx[off] = _cat([drr, dz, dn], axis=1)
            dgh[off] = _cat([drr, dz, dn * r], axis=1)
            dhp = dht * z + dgh[off] @ w_hh
        else:
            hp, hnew = sv
            d = dht * (hnew > 0) if mode == "RNN_RELU" else dht * (1.0 - hnew * hnew)
            dgx[off] = dgh[off] = d
            dhp = d @ w_hh
        dh = dhp if bs == dh.shape[0] else _cat([dhp, dh[bs:]])
    order = sorted(dgx)  # the steps' offsets: the rows of the 2-D data, in order
    in_rows = sorted(range(len(steps)), key=lambda k: steps[k][0])  # visited steps, in the same order
    dgx_all = _cat([dgx[k] for k in order])
    dgh_all = _cat([dgh[k] for k in order])
    hprev = _cat([saved[k][0] for k in in_rows])
    dx = dgx_all @ w_ih
    dw_ih = dgx_all.T @ x
    db_ih = dgx_all.sum(0) if b_ih is not None else None
    dw_hh = dgh_all.T @ hprev
    db_hh = dgh_all.sum(0) if b_hh is not None else None
    dw_hr = None
    if w_hr is not None:
        rs = _cat([saved[k][7] for k in in_rows])
        dw_hr = _cat([dr[k] for k in order]).T @ rs
    return dx, dh, (dc if mode == "LSTM" else None), dw_ih, dw_hh, db_ih, db_hh, dw_hr


# ----- the node and the op -------------------------------------------------------------------------


class RnnBackwardBase(Node):
    """NOTE [Backward through time]."""

    __slots__ = ("x", "hx", "cx", "w_ih", "w_hh", "b_ih", "b_hh", "w_hr", "gates", "hprev", "cprev", "tc", "r",
                 "hn", "steps", "mode", "packed")
    x: Saved
    hx: Saved
    cx: Saved
    w_ih: Saved
    w_hh: Saved
    b_ih: Saved
    b_hh: Saved
    w_hr: Saved
    gates: SavedArray
    hprev: SavedArray
    cprev: SavedArray
    tc: SavedArray
    r: SavedArray
    hn: SavedArray
    steps: list[tuple[int, int]]  #: (offset, batch size) per step, in the order the forward visited them
    mode: str
    packed: bool  #: the input was the 2-D data of a packed sequence (else (T, B, I))

    def __init__(
        self,
        x: Saved,
        hx: Saved,
        cx: Saved,
        w_ih: Saved,
        w_hh: Saved,
        b_ih: Saved,
        b_hh: Saved,
        w_hr: Saved,
        gates: SavedArray,
        hprev: SavedArray,
        cprev: SavedArray,
        tc: SavedArray,
        r: SavedArray,
        hn: SavedArray,
        steps: list[tuple[int, int]],
        mode: str,
        packed: bool,
    ) -> None:
        self._init_node()
        self.x = x
        self.hx = hx
        self.cx = cx
        self.w_ih = w_ih
        self.w_hh = w_hh
        self.b_ih = b_ih
        self.b_hh = b_hh
        self.w_hr = w_hr
        self.gates = gates
        self.hprev = hprev
        self.cprev = cprev
        self.tc = tc
        self.r = r
        self.hn = hn
        self.steps = steps
        self.mode = mode
        self.packed = packed

    def release_variables(self) -> None:
        self.x = None
        self.hx = None
        self.cx = None
        self.w_ih = None
        self.w_hh = None
        self.b_ih = None
        self.b_hh = None
        self.w_hr = None
        self.gates = None
        self.hprev = None
        self.cprev = None
        self.tc = None
        self.r = None
        self.hn = None

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        gy, ghn = grads[0], grads[1]
        gcn = grads[2] if len(grads) > 2 else None
        graph = any(isinstance(g, Tensor) for g in (gy, ghn, gcn))
        if not graph and self.gates is None:
            unpack(self, None, False)  # released: the "backward through the graph a second time" error
        vals: list[Any] = [unpack(self, s, graph) if s is not None else None
                           for s in (self.x, self.hx, self.cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr)]
        x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr = vals
        in_shape = x.shape
        x2 = x if self.packed else x.reshape(-1, in_shape[-1])
        if gy is not None and not self.packed:
            gy = gy.reshape(-1, gy.shape[-1])
        if graph:
            def zero(like: Any, shape: tuple[int, ...]) -> Any:
                return zeros(*shape, dtype=like.dtype)

            n_rows = x2.shape[0]
            hout = hx.shape[1]
            gy = _as_tensor(gy) if gy is not None else zero(hx, (n_rows, hout))
            ghn = _as_tensor(ghn) if ghn is not None else zero(hx, tuple(hx.shape))
            if self.mode == "LSTM":
                gcn = _as_tensor(gcn) if gcn is not None else zero(cx, tuple(cx.shape))
            res = _generic(self.mode, x2, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, self.steps, gy, ghn, gcn)
        else:
            res = _bptt(self.mode, self, x2, w_ih, w_hh, w_hr, gy, ghn, gcn, hx.shape, b_hh is not None)
        dx, dhx, dcx, dw_ih, dw_hh, db_ih, db_hh, dw_hr = res
        if not self.packed:
            dx = dx.reshape(in_shape)
        out = [dx, dhx, dcx, dw_ih, dw_hh, db_ih, db_hh, dw_hr]
        return tuple(v if self.should_compute_output(k) else None for k, v in enumerate(out))


def _as_tensor(g: Any) -> Tensor:
    return g if isinstance(g, Tensor) else Tensor._wrap(np.asarray(g))


class RnnTanhBackward0(RnnBackwardBase):
    __slots__ = ()


class RnnReluBackward0(RnnBackwardBase):
    __slots__ = ()


class LstmBackward0(RnnBackwardBase):
    __slots__ = ()


class GruBackward0(RnnBackwardBase):
    __slots__ = ()


_NODES: dict[str, type[RnnBackwardBase]] = {
    "RNN_TANH": RnnTanhBackward0, "RNN_RELU": RnnReluBackward0, "LSTM": LstmBackward0, "GRU": GruBackward0,
}


@RECURRENT.op(nodes=tuple(_NODES.values()), method=False, export=False)
def rnn_layer(
    input: Tensor, hx: Tensor, cx: Tensor | None, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
    b_hh: Tensor | None = None, w_hr: Tensor | None = None, mode: str = "LSTM", reverse: bool = False,
    batch_sizes: Any = None,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One direction of one recurrent layer over a sequence (NOTE [Recurrent layer]): returns the output
    of every step ((T, B, Hout), or packed (N, Hout) with ``batch_sizes``), the final ``h`` (B, Hout)
    and, for ``mode="LSTM"``, the final ``c`` (B, H); else None."""
    if mode not in MODES:
        raise ValueError(f"Unknown recurrent mode {mode!r}: one of {', '.join(MODES)}")
    xd = input._data
    packed = batch_sizes is not None
    if packed:
        steps = _steps(batch_sizes, reverse)
        x2 = xd
    else:
        t_len, batch = xd.shape[0], xd.shape[1]
        steps = _steps([batch] * t_len, reverse)
        x2 = xd.reshape(-1, xd.shape[-1])
    dtype = xd.dtype

    def arr(t: Tensor | None) -> np.ndarray | None:
        return None if t is None else t._data.astype(dtype, copy=False)

    lstm = mode == "LSTM"
    inputs = (input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    common_device(*inputs)  # NOTE [One device per op]: an internal op, without a checked wrapper
    keep = needs_grad(*inputs)
    def req(t: Tensor) -> np.ndarray:
        return t._data.astype(dtype, copy=False)

    fw = _forward(mode, x2, req(hx), arr(cx) if lstm else None, req(w_ih), req(w_hh), arr(b_ih), arr(b_hh),
                  arr(w_hr), steps, keep)
    out_arr = fw.out if packed else fw.out.reshape(xd.shape[0], xd.shape[1], -1)
    device = input._device
    out = wrap(out_arr, device)
    h_n = wrap(fw.h, device)
    c_n = wrap(fw.c, device) if lstm else None
    if keep:
        node = _NODES[mode](
            save(input), save(hx), save(cx) if cx is not None and lstm else None, save(w_ih), save(w_hh),
            save(b_ih) if b_ih is not None else None, save(b_hh) if b_hh is not None else None,
            save(w_hr) if w_hr is not None else None, fw.gates, fw.hprev, fw.cprev, fw.tc, fw.r, fw.hn, steps, mode,
            packed,
        )
        outs = [out, h_n] + ([c_n] if c_n is not None else [])
        record(node, inputs if lstm else inputs[:2] + (None,) + inputs[3:], outs)
    return out, h_n, c_n

__all__ = RECURRENT.exports(__name__)
