"""How values cross between processes: a tensor table on Dask's serialization.

NOTE [Tensors on the wire]: a value sent to another process (a function and
its arguments, a result, gradients) is pickled with every Tensor in it
replaced by a reference into the message's tensor table, as torch's RPC
pickler does. A tensor's entry holds its numpy array, its device, whether it
is a Parameter and whether it crosses *with* autograd (it requires grad and
the send is recorded inside an autograd context); never its ``grad_fn``, so
no graph is ever pickled. Arrays are pickled with protocol 5 out of band, so
each one travels as its own frame of the Dask message (zero copy on both
ends); ``Payload`` is registered with Dask's serialization and carries those
frames. A small value (under ``INLINE_BYTES``) skips that machinery and
travels as a list of bytes inside Dask's msgpack message: the copy is
cheaper than the per-object serialization for a few hundred bytes. A tensor that does not
cross with autograd (outside a context, under ``no_grad``, in gradients)
arrives as a fresh leaf that keeps its ``requires_grad`` flag, as pickling
does (NOTE [Pickled tensors] in tensor.py): the parameters of a module
fetched from a parameter server still require grad. The receiver decodes the value in its own handler
(not in Dask's comm layer), so a failure to unpickle is reported like any
remote error, with the worker's name.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import cloudpickle
from distributed.protocol import dask_deserialize, dask_serialize

from ..nn.parameter import Parameter
from ..tensor import Tensor
from .rpc import RRef

__all__ = ["Payload", "encode", "to_wire", "from_wire", "INLINE_BYTES"]

INLINE_BYTES = 64 * 1024


class _Pickler(cloudpickle.Pickler):
    """cloudpickle with Tensors moved into a table (see NOTE [Tensors on the wire])."""

    def __init__(self, file: io.BytesIO, with_grad: bool, buffers: list[pickle.PickleBuffer]) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffers.append)
        self.with_grad = with_grad
        self.crossing: list[Tensor] = []  # tensors that cross with autograd, in table order
        self.rrefs: list[Any] = []  # RRefs in the value (sent only once their value exists)
        self._index: dict[int, int] = {}

    def persistent_id(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            if isinstance(obj, RRef):
                self.rrefs.append(obj)
            return None
        i = self._index.get(id(obj))
        if i is not None:
            return ("t", i)
        i = self._index[id(obj)] = len(self._index)
        grad = self.with_grad and obj._requires_grad
        if grad:
            self.crossing.append(obj)
        return ("t", i, obj._data, obj._device, grad, isinstance(obj, Parameter), obj._requires_grad)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, buffers: list[Any]) -> None:
        super().__init__(file, buffers=buffers)
        self.table: list[Tensor] = []
        self.crossing: list[Tensor] = []

    def persistent_load(self, pid: Any) -> Any:
        if len(pid) == 2:
            return self.table[pid[1]]
        _, _, arr, device, grad, parameter, requires_grad = pid
        if not arr.flags.writeable:
            arr = arr.copy()
        leaf_requires_grad = bool(requires_grad) and not grad  # a crossing tensor gets its RecvRpcBackward
        if parameter:
            t: Tensor = Parameter(Tensor._wrap(arr, device), requires_grad=leaf_requires_grad)
        else:
            t = Tensor._wrap(arr, device)
            t._requires_grad = leaf_requires_grad
        self.table.append(t)
        if grad:
            self.crossing.append(t)
        return t


class Payload:
    """A value ready to cross (the frames of one pickle) or just received (decoded on demand)."""

    __slots__ = ("frames", "rrefs")

    def __init__(self, frames: list[Any], rrefs: list[Any] | None = None) -> None:
        self.frames = frames
        self.rrefs = rrefs or []  # on the sending side: RRefs the value holds

    def decode(self) -> tuple[Any, list[Tensor]]:
        """The value, and the tensors of it that crossed with autograd (in the sender's order)."""
        up = _Unpickler(io.BytesIO(self.frames[0]), self.frames[1:])
        value = up.load()
        return value, up.crossing

    @property
    def nbytes(self) -> int:
        return sum(memoryview(f).nbytes for f in self.frames)


def encode(value: Any, with_grad: bool) -> tuple[Payload, list[Tensor]]:
    """Pickle ``value`` for another process; also return the tensors that cross with autograd."""
    buffers: list[pickle.PickleBuffer] = []
    f = io.BytesIO()
    p = _Pickler(f, with_grad, buffers)
    p.dump(value)
    frames: list[Any] = [f.getbuffer()]
    frames.extend(b.raw() for b in buffers)
    return Payload(frames, p.rrefs), p.crossing


def to_wire(payload: Payload) -> Any:
    """What a Dask message carries for ``payload``: its bytes inline when small, else its frames."""
    if payload.nbytes <= INLINE_BYTES:
        return [bytes(f) for f in payload.frames]
    from distributed.protocol import to_serialize

    return to_serialize(payload)


def from_wire(obj: Any) -> Payload:
    """The Payload a Dask message carried (see ``to_wire``)."""
    return obj if isinstance(obj, Payload) else Payload(list(obj))


@dask_serialize.register(Payload)
def _serialize_payload(payload: Payload) -> tuple[dict[str, Any], list[Any]]:
    return {}, payload.frames


@dask_deserialize.register(Payload)
def _deserialize_payload(header: dict[str, Any], frames: list[Any]) -> Payload:
    return Payload(list(frames))
