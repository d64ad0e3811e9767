"""aiograd.nn.utils.rnn: sequences of different lengths for the recurrent layers, as torch.nn.utils.rnn.

A ``PackedSequence`` holds the steps of a batch of sequences sorted by length, longest first,
one time step after another: ``data`` (N, *) is step 0 of every sequence, then step 1 of every
sequence that has one, and so on; ``batch_sizes`` (an int64 Tensor) is how many sequences each
step has. ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` accept one and run each step only for the
sequences it has (NOTE [Recurrent layer] in ops/nn/recurrent.py). Packing and padding are index
ops on the data, so gradients flow through them.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

import numpy as np

from ...ops.indexing.index import index_select
from ...ops.movement.join import cat
from ...tensor import Tensor, full

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
    "unpad_sequence", "pack_sequence", "unpack_sequence",
]


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """The data and batch sizes of a packed batch of sequences (see the module docstring).

    ``sorted_indices`` maps the packed order to the caller's batch (None when the batch was
    already sorted), ``unsorted_indices`` is its inverse (computed when not given); build one with
    ``pack_padded_sequence`` or ``pack_sequence``. ``PackedSequence((data, batch_sizes))`` is
    accepted too, as torch's."""

    __slots__ = ()

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """The same sequence with ``data`` moved or cast (``batch_sizes`` stays an int64 CPU tensor)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return PackedSequence(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        return self.to(np.float64)

    def float(self) -> "PackedSequence":
        return self.to(np.float32)

    def half(self) -> "PackedSequence":
        return self.to(np.float16)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def _packed(data: Tensor, batch_sizes: Tensor, sorted_indices: Tensor | None) -> PackedSequence:
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation given as an index tensor (None for None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation._data, dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=np.int64)
    return Tensor._wrap(inv, permutation._device)


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return np.asarray(lengths._data).astype(np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """Per step, how many of the (sorted, decreasing) ``lengths`` are longer than the step."""
    steps = int(lengths[0]) if lengths.size else 0
    return np.array([int((lengths > t).sum()) for t in range(steps)], dtype=np.int64)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ((T, B, *), or (B, T, *) with ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` steps. With ``enforce_sorted`` the lengths must be decreasing; otherwise the
    batch is sorted here and the permutation kept in the result."""
    lens = _lengths_array(lengths)
    sorted_indices = None
    batch_dim = 0 if batch_first else 1
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = Tensor._wrap(order.astype(np.int64), input._device)
        input = index_select(input, batch_dim, sorted_indices)
    if lens.size and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if batch_first:
        input = input.transpose(0, 1)
    t_len, batch = input.shape[0], input.shape[1]
    if lens.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} (batch_size={batch})")
    bs = _batch_sizes(lens)
    if bs.size > t_len:
        raise RuntimeError(f"Expected the longest length ({bs.size}) to be at most the sequence length ({t_len})")
    rows = np.concatenate([t * batch + np.arange(b) for t, b in enumerate(bs)]) if bs.size else np.zeros(0, np.int64)
    flat = input.reshape(t_len * batch, *input.shape[2:])
    data = flat[Tensor._wrap(rows.astype(np.int64))]
    return _packed(data, Tensor._wrap(bs), sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: the padded batch ((T, B, *), or (B, T, *) with
    ``batch_first``; T is ``total_length`` if given) filled with ``padding_value``, and the int64
    lengths of the sequences, both in the caller's original batch order."""
    data = sequence.data
    bs = np.asarray(sequence.batch_sizes._data, dtype=np.int64)
    max_len = int(bs.size)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {max_len}"
            )
        max_len = total_length
    batch = int(bs[0]) if bs.size else 0
    n = data.shape[0]
    # every (t, b) slot reads a row of the data, or the padding row appended after it
    index = np.full((max_len, batch), n, dtype=np.int64)
    off = 0
    for t, b in enumerate(bs):
        index[t, :b] = np.arange(off, off + b)
        off += int(b)
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    source = cat([data, pad]) if padding_value is not None else data
    if batch_first:
        index = index.T
    padded = source[Tensor._wrap(np.ascontiguousarray(index).reshape(-1))].reshape(*index.shape, *data.shape[1:])
    lengths = (bs[None, :] > np.arange(batch)[:, None]).sum(axis=1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        u = sequence.unsorted_indices
        padded = index_select(padded, 0 if batch_first else 1, u)
        lengths = lengths[np.asarray(u._data, dtype=np.int64)]
    return padded, Tensor._wrap(lengths)


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into one (L, B, *) (or (B, L, *)) with L the longest,
    the rest filled with ``padding_value`` on ``padding_side`` ("right" or "left")."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    seqs = list(sequences)
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                f"The size of tensor a ({trailing[0] if trailing else 0}) must match the size of tensor b "
                f"({s.shape[1] if s.ndim > 1 else 0}) at non-singleton dimension 1"
            )
    lens = [int(s.shape[0]) for s in seqs]
    max_len = max(lens)
    total = sum(lens)
    index = np.full((max_len, len(seqs)), total, dtype=np.int64)
    off = 0
    for b, n in enumerate(lens):
        start = 0 if padding_side == "right" else max_len - n
        index[start:start + n, b] = np.arange(off, off + n)
        off += n
    data = cat(seqs)
    source = cat([data, full((1, *trailing), padding_value, dtype=data.dtype)])
    if batch_first:
        index = index.T
    return source[Tensor._wrap(np.ascontiguousarray(index).reshape(-1))].reshape(*index.shape, *trailing)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The inverse of ``pad_sequence``: the list of ``lengths[b]``-step sequences."""
    lens = _lengths_array(lengths)
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lens)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shapes (L_i, *): ``pad_sequence`` then ``pack_padded_sequence``."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of ``pack_sequence``: the list of sequences, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
