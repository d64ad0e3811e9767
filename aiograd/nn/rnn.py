"""Recurrent layers: RNN, LSTM, GRU and their one-step cells, with torch's arguments and parameter names.

Each layer and direction runs as one fused op over the whole sequence (NOTE [Recurrent layer] in
ops/recurrent.py): one graph node per layer and direction, whose backward runs through time in
numpy. Parameters are named and shaped as torch's (``weight_ih_l0``, ``weight_hh_l1_reverse``,
``bias_ih_l0``, ``weight_hr_l0``), so a torch ``state_dict`` loads as is. A cell is the same op
over one step.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from ..ops.indexing.index import index_select
from ..ops.movement.join import cat, stack
from ..ops.nn.layers import dropout as _dropout
from ..ops.nn.recurrent import rnn_layer
from ..tensor import Tensor, zeros
from . import init
from .modules import Module, _param
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters of every layer and direction, argument checks,
    and the run over layers (with dropout between them in training mode)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, _param(*shape, dtype=dtype))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    # ----- torch's flat-weight surface ------------------------------------------------------
    @property
    def _flat_weights(self) -> list[Tensor | None]:
        """The parameters in torch's flat order (every layer and direction: w_ih, w_hh, b_ih, b_hh, w_hr)."""
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters grouped per layer and direction, as torch's ``all_weights``."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Nothing to do: torch packs the weights into one buffer for cuDNN; numpy needs no such buffer."""

    def reset_parameters(self) -> None:
        """Every parameter uniform in +-1/sqrt(hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ----- checks ----------------------------------------------------------------------------
    def _expected_hidden_size(self, input: Tensor, batch_sizes: np.ndarray | None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * directions, batch, size)

    def _check_input(self, input: Tensor, batch_sizes: np.ndarray | None) -> None:
        w0 = self._flat_weights[0]
        if w0 is not None and input.dtype != w0.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w0.dtype}). "
                f"Convert input: input.to({w0.dtype}), or convert model: model.to({input.dtype})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )

    @staticmethod
    def _check_hidden(hx: Tensor, expected: tuple[int, ...], msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    # ----- the run -------------------------------------------------------------------------------
    def _layers(self, input: Tensor, hx: Tensor, cx: Tensor | None, batch_sizes: np.ndarray | None
                ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every layer and direction over a time-major (or packed) input: (output, h_n, c_n)."""
        directions = 2 if self.bidirectional else 1
        weights = self.all_weights
        x = input
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                ws = weights[k]
                w_ih, w_hh = ws[0], ws[1]
                b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
                w_hr = ws[-1] if self.proj_size > 0 else None
                out, h, c = rnn_layer(x, hx[k], cx[k] if cx is not None else None, w_ih, w_hh, b_ih, b_hh, w_hr,
                                      mode=self.mode, reverse=d == 1, batch_sizes=batch_sizes)
                outs.append(out)
                hs.append(h)
                if c is not None:
                    cs.append(c)
            x = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        return x, stack(hs), stack(cs) if cs else None

    def _forward(self, input: Any, hx: Any) -> tuple[Any, Any]:
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        batch_sizes: np.ndarray | None = None
        sorted_indices = unsorted_indices = None
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        if packed:
            x, bs_t, sorted_indices, unsorted_indices = input
            batch_sizes = np.asarray(bs_t._data, dtype=np.int64)
            batch = int(batch_sizes[0])
        else:
            x = input
            if x.ndim not in (2, 3):
                tail = " tensor instead" if name in ("RNN", "GRU") else " instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.ndim}D{tail}")
            is_batched = x.ndim == 3
            if not is_batched:
                x = x.unsqueeze(batch_dim)
            batch = x.shape[0] if self.batch_first else x.shape[1]
        h0: Any
        c0: Any = None
        if hx is None:
            h0 = zeros(self.num_layers * directions, batch, real_hidden, dtype=x.dtype, device=x.device)
            if lstm:
                c0 = zeros(self.num_layers * directions, batch, self.hidden_size, dtype=x.dtype, device=x.device)
        elif lstm:
            h0, c0 = hx
            if not packed:
                if is_batched and (h0.ndim != 3 or c0.ndim != 3):
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                       f"({h0.ndim}-D, {c0.ndim}-D) tensors")
                if not is_batched:
                    if h0.ndim != 2 or c0.ndim != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({h0.ndim}-D, {c0.ndim}-D) tensors")
                    h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        else:
            h0 = hx
            if not packed:
                if not is_batched:
                    if h0.ndim != 2:
                        raise RuntimeError(
                            f"For unbatched 2-D input, hx should also be 2-D but got {h0.ndim}-D tensor")
                    h0 = h0.unsqueeze(1)
                elif h0.ndim != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.ndim}-D tensor")
        self._check_input(x, batch_sizes)
        expected = self._expected_hidden_size(x, batch_sizes)
        if lstm:
            self._check_hidden(h0, expected, "Expected hidden[0] size {}, got {}")
            self._check_hidden(c0, (expected[0], expected[1], self.hidden_size), "Expected hidden[1] size {}, got {}")
        else:
            self._check_hidden(h0, expected)
        if hx is not None and sorted_indices is not None:
            h0 = index_select(h0, 1, sorted_indices)
            if c0 is not None:
                c0 = index_select(c0, 1, sorted_indices)
        seq = x.transpose(0, 1) if (self.batch_first and not packed) else x
        out, h_n, c_n = self._layers(seq, h0, c0, batch_sizes)
        if unsorted_indices is not None:
            h_n = index_select(h_n, 1, unsorted_indices)
            if c_n is not None:
                c_n = index_select(c_n, 1, unsorted_indices)
        hidden: Any = (h_n, c_n) if lstm else h_n
        if packed:
            return PackedSequence(out, input.batch_sizes, sorted_indices, unsorted_indices), hidden
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(batch_dim)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if lstm else h_n.squeeze(1)  # type: ignore[union-attr]
        return out, hidden


class RNN(RNNBase):
    """An Elman RNN, ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu with
    ``nonlinearity="relu"``), over every step of the input: ``RNN(input_size, hidden_size,
    num_layers=1, nonlinearity="tanh", bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; ``forward(input, hx=None) -> (output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward(input, hx)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + (f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """A long short-term memory layer stack (gates ``i, f, g, o`` as torch), optionally projecting
    ``h`` to ``proj_size``: ``forward(input, (h0, c0)=None) -> (output, (h_n, c_n))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Any, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        return self._forward(input, hx)


class GRU(RNNBase):
    """A gated recurrent unit layer stack (gates ``r, z, n`` as torch):
    ``forward(input, hx=None) -> (output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward(input, hx)


# ----- cells ---------------------------------------------------------------------------------------


class RNNCellBase(Module):
    """One step of a recurrent layer: ``weight_ih``, ``weight_hh`` (and ``bias_ih``, ``bias_hh``)."""

    _cell_name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = _param(num_chunks * hidden_size, input_size, dtype=dtype)
        self.weight_hh = _param(num_chunks * hidden_size, hidden_size, dtype=dtype)
        if bias:
            self.bias_ih = _param(num_chunks * hidden_size, dtype=dtype)
            self.bias_hh = _param(num_chunks * hidden_size, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _prepare(self, input: Tensor, hx: Any, what: str = "hidden") -> tuple[Tensor, bool]:
        if input.ndim not in (1, 2):
            raise ValueError(f"{self._cell_name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if hx is not None and not isinstance(hx, tuple) and hx.ndim not in (1, 2):
            raise ValueError(f"{self._cell_name}: Expected hidden to be 1D or 2D, got {hx.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")
        batched = input.ndim == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _check_hidden(self, x: Tensor, h: Tensor, k: int) -> None:
        """torch's checks of a cell's ``hidden{k}`` against the (batched) input."""
        if x.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{k} batch size {h.shape[0]}")
        if h.shape[-1] != self.hidden_size:
            raise RuntimeError(
                f"hidden{k} has inconsistent hidden_size: got {h.shape[-1]}, expected {self.hidden_size}")

    def _step(self, mode: str, x: Tensor, h: Tensor, c: Tensor | None) -> tuple[Tensor, Tensor | None]:
        self._check_hidden(x, h, 0)
        if c is not None:
            self._check_hidden(x, c, 1)
        _, h1, c1 = rnn_layer(x.unsqueeze(0), h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                              None, mode=mode)
        return h1, c1

    def _zeros(self, x: Tensor) -> Tensor:
        return zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._prepare(input, hx)
        h = self._zeros(x) if hx is None else (hx if batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h1, _ = self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", x, h, None)
        return h1 if batched else h1.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None) -> (h', c')``."""

    _cell_name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if input.ndim not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.ndim not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.ndim}D instead")
        x, batched = self._prepare(input, None)
        if hx is None:
            h, c = self._zeros(x), self._zeros(x)
        else:
            h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h1, c1 = self._step("LSTM", x, h, c)
        assert c1 is not None
        return (h1, c1) if batched else (h1.squeeze(0), c1.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h=None) -> h'``."""

    _cell_name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._prepare(input, hx)
        h = self._zeros(x) if hx is None else (hx if batched else hx.unsqueeze(0))
        h1, _ = self._step("GRU", x, h, None)
        return h1 if batched else h1.squeeze(0)
