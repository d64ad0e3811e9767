"""``torch.nn.modules.rnn``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
