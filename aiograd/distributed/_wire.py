"""How values cross between processes: a tensor table on Dask's serialization.

NOTE [Tensors on the wire]: a value sent to another process (a function and
its arguments, a result, gradients) is pickled with every Tensor in it
reduced to what rebuilds it (``_wire_tensor``), as torch's RPC pickler
moves tensors into a table: its numpy array, its device, whether it
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

import copyreg
import io
import pickle
import threading
import types
from collections import ChainMap
from typing import Any

import cloudpickle
import numpy as np
from distributed.protocol import dask_deserialize, dask_serialize, to_serialize

from ..device import Device
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .rpc import RRef

__all__ = ["Payload", "encode", "to_wire", "from_wire", "INLINE_BYTES"]

INLINE_BYTES = 64 * 1024
SMALL_ARRAY_BYTES = 4096  # arrays up to this size travel as bytes inside the pickle (NOTE [Small arrays])


class _Pickler(cloudpickle.Pickler):
    """cloudpickle with Tensors rebuilt from their arrays (see NOTE [Tensors on the wire]).

    Tensors are caught in ``reducer_override``, which the pickler calls only
    for objects that are neither atomic (ints, strings...) nor already in its
    memo: a tensor met twice is sent once and arrives as one object, and
    nothing is added per atomic object (a ``persistent_id`` hook would be a
    Python call for every object of the message, a cost that dominated small
    calls sending functions by value).
    """

    def __init__(self, file: io.BytesIO, with_grad: bool, buffers: list[pickle.PickleBuffer]) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffers.append)
        self.dispatch_table = _dispatch_table()
        self.with_grad = with_grad
        self.crossing: list[Tensor] = []  # tensors that cross with autograd, in the order of the stream
        self.rrefs: list[Any] = []  # RRefs in the value (sent only once their value exists)
        self.by_value = _refresh_by_reference()

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            grad = self.with_grad and obj._requires_grad
            if grad:
                self.crossing.append(obj)
            return (_wire_tensor, (obj._data, obj._device._name, grad, isinstance(obj, Parameter), obj._requires_grad))
        if obj.__class__ is np.ndarray and obj.nbytes <= SMALL_ARRAY_BYTES and not obj.dtype.hasobject:
            fortran = obj.flags.f_contiguous and not obj.flags.c_contiguous
            return (_small_array, (obj.tobytes("F" if fortran else "C"), obj.dtype.str, obj.shape, fortran))
        if isinstance(obj, RRef):
            self.rrefs.append(obj)
        if isinstance(obj, _REF_KINDS):
            return _reduce_by_reference(self, obj)
        return super().reducer_override(obj)


# NOTE [Small arrays]: numpy pickles an array as a call of its reconstruct
# function with its dtype object and a buffer, each a further object for the
# pickler and the unpickler. An array of a few kB goes as its bytes, dtype
# string and shape instead (one frame less, a third of the time of a small
# call's encoding), rebuilt writable in the same memory order. Arrays are
# memoized by the pickler like any object, so one array in two tensors still
# arrives as one array.
def _small_array(data: bytes, dtype: str, shape: tuple[int, ...], fortran: bool) -> np.ndarray:
    order: Any = "F" if fortran else "C"
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=order).copy(order=order)


# cloudpickle's dispatch table is a ChainMap, which the C pickler queries (in
# Python) for every object it reduces; a dict copy answers the same, faster,
# and is made again when copyreg gains or loses an entry.
_dispatch: tuple[int, dict[Any, Any]] = (-1, {})


def _dispatch_table() -> dict[Any, Any]:
    global _dispatch
    size, table = _dispatch
    if size != len(copyreg.dispatch_table):
        base = cloudpickle.Pickler.dispatch_table
        table = dict(base) if isinstance(base, ChainMap) else dict(base)
        _dispatch = (len(copyreg.dispatch_table), table)
    return table


# NOTE [By-reference cache]: cloudpickle asks, for every function and class it
# meets, whether its module is importable and not registered to travel by
# value, a lookup that cost most of a small message (numpy's rebuild
# functions, dtype, Device and ``_wire_tensor`` are met in every message with
# a tensor). The answer "by reference" is cached per object while the set of
# by-value modules is unchanged; objects of ``__main__`` or of a by-value
# module are never cached, so what travels by value still does, every time.
_REF_KINDS = (types.FunctionType, types.BuiltinFunctionType, type)
_by_reference: dict[int, Any] = {}  # id -> the object (kept alive, so its id is not reused)
_by_reference_for: frozenset[str] = frozenset()
_by_reference_lock = threading.Lock()


def _refresh_by_reference() -> frozenset[str]:
    """The modules that travel by value now; the cache is emptied when they changed (once per message)."""
    global _by_reference, _by_reference_for
    by_value = frozenset(getattr(cloudpickle.cloudpickle, "_PICKLE_BY_VALUE_MODULES", ()))
    if by_value != _by_reference_for:
        with _by_reference_lock:
            _by_reference, _by_reference_for = {}, by_value
    return by_value


def _reduce_by_reference(pickler: "_Pickler", obj: Any) -> Any:
    if _by_reference.get(id(obj)) is obj:
        return NotImplemented  # the pickler's own by-reference save
    result = cloudpickle.Pickler.reducer_override(pickler, obj)
    module = getattr(obj, "__module__", None)
    if (result is NotImplemented and isinstance(module, str) and module != "__main__"
            and not any(module == m or module.startswith(m + ".") for m in pickler.by_value)):
        _by_reference[id(obj)] = obj
    return result


_decoding = threading.local()  # .crossing: the list the message being decoded on this thread fills


def _wire_tensor(arr: Any, device: Any, grad: bool, parameter: bool, requires_grad: bool) -> Tensor:
    """A tensor of a message, rebuilt by the receiver's unpickler (NOTE [Tensors on the wire])."""
    if not arr.flags.writeable:
        arr = arr.copy()
    device = Device(device)
    leaf_requires_grad = bool(requires_grad) and not grad  # a crossing tensor gets its RecvRpcBackward
    if parameter:
        t: Tensor = Parameter(Tensor._wrap(arr, device), requires_grad=leaf_requires_grad)
    else:
        t = Tensor._wrap(arr, device)
        t._requires_grad = leaf_requires_grad
    if grad:
        crossing = getattr(_decoding, "crossing", None)
        if crossing is not None:
            crossing.append(t)
    return t


class Payload:
    """A value ready to cross (the frames of one pickle) or just received (decoded on demand)."""

    __slots__ = ("frames", "rrefs")

    def __init__(self, frames: list[Any], rrefs: list[Any] | None = None) -> None:
        self.frames = frames
        self.rrefs = rrefs or []  # on the sending side: RRefs the value holds

    def decode(self) -> tuple[Any, list[Tensor]]:
        """The value, and the tensors of it that crossed with autograd (in the sender's order)."""
        crossing: list[Tensor] = []
        outer = getattr(_decoding, "crossing", None)
        _decoding.crossing = crossing
        try:
            value = pickle.loads(self.frames[0], buffers=self.frames[1:])
        finally:
            _decoding.crossing = outer
        return value, crossing

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
        if len(payload.frames) == 1:
            return bytes(payload.frames[0])  # the common case: one bytes object, the cheapest to write
        return [bytes(f) for f in payload.frames]
    return to_serialize(payload)


def from_wire(obj: Any) -> Payload:
    """The Payload a Dask message carried (see ``to_wire``)."""
    if isinstance(obj, Payload):
        return obj
    return Payload([obj] if isinstance(obj, (bytes, bytearray, memoryview)) else list(obj))


@dask_serialize.register(Payload)
def _serialize_payload(payload: Payload) -> tuple[dict[str, Any], list[Any]]:
    return {}, payload.frames


@dask_deserialize.register(Payload)
def _deserialize_payload(header: dict[str, Any], frames: list[Any]) -> Payload:
    return Payload(list(frames))
