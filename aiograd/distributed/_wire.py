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
import dis
import io
import pickle
import sys
import threading
import types
import weakref
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

    def __init__(self) -> None:
        self.file = io.BytesIO()
        self.buffers: list[pickle.PickleBuffer] = []
        super().__init__(self.file, protocol=5, buffer_callback=self.buffers.append)
        self.busy = False
        self.with_grad = False
        self.crossing: list[Tensor] = []  # tensors that cross with autograd, in the order of the stream
        self.rrefs: list[Any] = []  # RRefs in the value (sent only once their value exists)
        self.by_value: frozenset[str] = frozenset()

    def encode(self, value: Any, with_grad: bool) -> tuple["Payload", list[Tensor]]:
        """One message: ``value``'s pickle and out-of-band buffers, and the tensors that cross.

        NOTE [One pickler per thread]: a pickler is made once per thread and
        kept (``encode``): building one (and its file) was a third of a small
        message's encoding. Everything a message leaves in it (memo, file,
        buffers, the tensors and RRefs it met, cloudpickle's globals) is
        cleared after each; a message encoded while the thread's pickler is
        busy (pickling something that sends a message) gets a pickler of its own.
        """
        self.busy = True
        try:
            self.dispatch_table = _dispatch_table()
            self.by_value = _refresh_by_reference()
            self.with_grad = with_grad
            self.globals_ref: dict[int, Any] = {}  # cloudpickle's: the globals shared by this message's functions
            self.dump(value)
            frames: list[Any] = [self.file.getvalue()]
            frames.extend(b.raw() for b in self.buffers)
            return Payload(frames, self.rrefs), self.crossing
        finally:
            self.clear_memo()
            self.buffers.clear()
            self.file.seek(0)
            self.file.truncate()
            self.crossing, self.rrefs, self.globals_ref = [], [], {}
            self.busy = False

    def reducer_override(self, obj: Any) -> Any:
        if _by_reference.get(id(obj)) is obj:  # most calls: functions met in every message (NOTE [By-reference cache])
            return NotImplemented
        if isinstance(obj, Tensor):
            grad = self.with_grad and obj._requires_grad
            if grad:
                self.crossing.append(obj)
            return (_rebuild, (_TENSOR, obj._data, obj._device._name, grad, isinstance(obj, Parameter),
                               obj._requires_grad))
        if obj.__class__ is np.ndarray and obj.nbytes <= SMALL_ARRAY_BYTES:
            dtype = _dtype_name(obj.dtype)
            if dtype is not None:
                fortran = obj.flags.f_contiguous and not obj.flags.c_contiguous
                return (_rebuild, (_ARRAY, bytearray(obj.tobytes("F" if fortran else "C")), dtype, obj.shape, fortran))
        if isinstance(obj, RRef):
            self.rrefs.append(obj)
        if isinstance(obj, _REF_KINDS):
            return _reduce_by_reference(self, obj)
        return super().reducer_override(obj)


# NOTE [Small arrays]: numpy pickles an array as a call of its reconstruct
# function with its dtype object and a buffer, each a further object for the
# pickler and the unpickler. An array of a few kB goes as its bytes, dtype
# string and shape instead (one frame less, a third of the time of a small
# call's encoding), rebuilt in the same memory order. The bytes travel as a
# ``bytearray``, which the unpickler rebuilds as a ``bytearray``: the array
# is a writable view of it, with no copy on arrival. Arrays are memoized by
# the pickler like any object, so one array in two tensors still arrives as
# one array. A structured dtype (whose string form drops its fields) and
# object arrays go as numpy pickles them.
def _small_array(data: bytearray, dtype: str, shape: tuple[int, ...], fortran: bool) -> np.ndarray:
    dt = _dtypes.get(dtype)
    if dt is None:
        dt = _dtypes[dtype] = np.dtype(dtype)
    return np.frombuffer(data, dtype=dt).reshape(shape, order="F" if fortran else "C")


_dtypes: dict[str, np.dtype[Any]] = {}  # on the receiver: a dtype's string -> the dtype
_dtype_names: dict[int, tuple[np.dtype[Any], str | None]] = {}  # id -> (dtype, its string or None: not small-able)


def _dtype_name(dtype: np.dtype[Any]) -> str | None:
    """``dtype.str`` (a new string at each ask, cached here), or None for a dtype it cannot rebuild."""
    entry = _dtype_names.get(id(dtype))
    if entry is not None and entry[0] is dtype:
        return entry[1]
    name = None if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None else dtype.str
    if len(_dtype_names) >= 256:
        _dtype_names.clear()
    _dtype_names[id(dtype)] = (dtype, name)  # (the entry keeps the dtype, so its id is not reused)
    return name


# NOTE [One global per message]: a tensor, a small array and a function pickled
# once are each rebuilt by a call that the pickle names as a global (module and
# name), and each global a message names costs its pickler an import and an
# attribute lookup, its unpickler the same: about 1.3 µs on each side for each
# distinct global. They all go through ``_rebuild`` instead, which the pickle
# names once (later mentions are memo lookups): a small call and its reply named
# five globals, now two.
_TENSOR, _ARRAY, _FUNCTION = 0, 1, 2


def _rebuild(kind: int, *args: Any) -> Any:
    """A tensor, a small array or a function pickled once, rebuilt by the receiver's unpickler."""
    if kind == _TENSOR:
        return _wire_tensor(*args)
    if kind == _ARRAY:
        return _small_array(*args)
    return _function_from_bytes(*args)


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
# functions, dtype, Device and ``_rebuild`` are met in every message with
# a tensor). The answer "by reference" is cached per object while the set of
# by-value modules is unchanged; objects of ``__main__`` or of a by-value
# module are never cached, so what travels by value still does, every time.
_REF_KINDS = (types.FunctionType, types.BuiltinFunctionType, type)
_by_reference: dict[int, Any] = {}  # id -> the object (kept alive, so its id is not reused)
_by_reference_for: frozenset[str] = frozenset()
_NO_MODULES: frozenset[str] = frozenset()
_by_reference_lock = threading.Lock()


def _refresh_by_reference() -> frozenset[str]:
    """The modules that travel by value now; the cache is emptied when they changed (once per message)."""
    global _by_reference, _by_reference_for
    now = getattr(cloudpickle.cloudpickle, "_PICKLE_BY_VALUE_MODULES", _NO_MODULES)
    if now != _by_reference_for:  # (a set compares equal to a frozenset of the same names: no copy per message)
        with _by_reference_lock:
            _by_reference, _by_reference_for = {}, frozenset(now)
            _pickled_functions.clear()  # NOTE [Functions pickled once]: what travels by value changed
    return _by_reference_for


def _reduce_by_reference(pickler: "_Pickler", obj: Any) -> Any:
    if _by_reference.get(id(obj)) is obj:
        return NotImplemented  # the pickler's own by-reference save
    if obj.__class__ is types.FunctionType:
        entry = _pickled_functions.get(id(obj))
        if entry is not None and entry.fn is obj and entry.current():
            return (_rebuild, (_FUNCTION, entry.blob))
    result = cloudpickle.Pickler.reducer_override(pickler, obj)
    module = getattr(obj, "__module__", None)
    if result is NotImplemented:
        if (isinstance(module, str) and module != "__main__"
                and not any(module == m or module.startswith(m + ".") for m in pickler.by_value)):
            _by_reference[id(obj)] = obj
    elif obj.__class__ is types.FunctionType:
        entry = _PickledFunction.of(obj)
        if entry is not None:
            return (_rebuild, (_FUNCTION, entry.blob))
    return result


# NOTE [Functions pickled once]: a function that travels by value (NOTE [Functions sent
# by value] in rpc.py) is pickled with the globals it reads, which cost most of a small
# call's encoding on the caller and of its decoding on the callee. A function whose
# pickle cannot change while it stays the same object is pickled once instead: every
# global it reads, its defaults, its closure's cells and its annotations hold constants
# (None, numbers, strings, bytes, tuples of them), modules or functions and classes that
# travel by reference; it assigns no global and has no attributes of its own. Each call
# checks that it still reads the very same objects (a global rebound, a module imported
# since, a default replaced: pickled afresh). The callee keeps what it unpickled, keyed
# by those bytes: the same bytes always rebuild an equal function, and one whose globals
# are all constants and that assigns none runs the same whether it was unpickled now or
# before. Any other function is pickled and unpickled at every call, with a fresh copy
# of its globals on the callee.
_STABLE_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis)})
_ABSENT = object()
_CACHE_SIZE = 256


def _stable(value: Any, depth: int = 0) -> bool:
    """Whether pickling ``value`` gives the same bytes for as long as it is the same object."""
    t = value.__class__
    if t in _STABLE_TYPES:
        return True
    if t is tuple or t is frozenset:
        return depth < 4 and all(_stable(v, depth + 1) for v in value)
    if t is types.ModuleType or t is types.FunctionType or t is types.BuiltinFunctionType or isinstance(value, type):
        try:
            return bool(cloudpickle.cloudpickle._should_pickle_by_reference(value))
        except Exception:
            return False
    return False


_assigning: "weakref.WeakKeyDictionary[types.CodeType, bool]" = weakref.WeakKeyDictionary()


def _assigns_globals(code: types.CodeType) -> bool:
    """Whether ``code`` (or a function defined in it) assigns or deletes a global (once per code object)."""
    known = _assigning.get(code)
    if known is None:
        known = any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code)) or any(
            isinstance(c, types.CodeType) and _assigns_globals(c) for c in code.co_consts)
        _assigning[code] = known
    return known


class _PickledFunction:
    """A by-value function's pickle and what it was made from (NOTE [Functions pickled once])."""

    __slots__ = ("fn", "blob", "code", "defaults", "kwdefaults", "cells", "names", "values", "attrs", "modules")

    def __init__(self, fn: types.FunctionType, names: tuple[str, ...], values: tuple[Any, ...],
                 cells: tuple[Any, ...]) -> None:
        """``values``: the globals ``names`` as ``fn`` reads them now (``_ABSENT`` for one not yet set)."""
        self.fn = fn
        self.code = fn.__code__
        self.defaults = fn.__defaults__
        self.kwdefaults = fn.__kwdefaults__
        self.cells = cells
        self.names = names
        self.values = values
        self.attrs = (fn.__name__, fn.__qualname__, fn.__module__, fn.__doc__, fn.__annotations__)
        self.modules = len(sys.modules)  # a submodule imported since is pickled with the function
        self.blob = cloudpickle.dumps(fn, protocol=5)

    @classmethod
    def of(cls, fn: types.FunctionType) -> "_PickledFunction | None":
        """The function's pickle, made and kept now if it can be kept; else None."""
        try:
            if fn.__dict__ or _assigns_globals(fn.__code__):
                return None
            cells = tuple(c.cell_contents for c in fn.__closure__ or ())
        except ValueError:  # an empty cell
            return None
        names = tuple(cloudpickle.cloudpickle._extract_code_globals(fn.__code__))
        g = fn.__globals__
        values = tuple(g.get(n, _ABSENT) for n in names)
        kwdefaults = tuple((fn.__kwdefaults__ or {}).items())
        annotations = tuple(fn.__annotations__.items())
        if not all(_stable(v) for v in (*(v for v in values if v is not _ABSENT), *cells, fn.__defaults__,
                                        kwdefaults, annotations)):
            return None
        entry = cls(fn, names, values, cells)
        if len(_pickled_functions) >= _CACHE_SIZE:
            _pickled_functions.clear()
        _pickled_functions[id(fn)] = entry
        return entry

    def current(self) -> bool:
        """Whether the function still has the state its pickle was made from."""
        fn = self.fn
        if (fn.__code__ is not self.code or fn.__defaults__ is not self.defaults
                or fn.__kwdefaults__ is not self.kwdefaults or fn.__dict__ or len(sys.modules) != self.modules):
            return False
        g = fn.__globals__
        for name, value in zip(self.names, self.values):
            if g.get(name, _ABSENT) is not value:
                return False
        closure = fn.__closure__ or ()
        try:
            if len(closure) != len(self.cells) or any(c.cell_contents is not v for c, v in zip(closure, self.cells)):
                return False
        except ValueError:  # a cell emptied since
            return False
        name, qualname, module, doc, annotations = self.attrs
        return (fn.__name__ is name and fn.__qualname__ is qualname and fn.__module__ is module
                and fn.__doc__ is doc and fn.__annotations__ is annotations)


_pickled_functions: dict[int, _PickledFunction] = {}  # id -> entry (which keeps the function alive)
_unpickled_functions: dict[bytes, Any] = {}  # on the callee: a function's pickle -> the function


def _function_from_bytes(blob: bytes) -> Any:
    """A function pickled once, rebuilt by the callee's unpickler (NOTE [Functions pickled once])."""
    fn = _unpickled_functions.get(blob)
    if fn is None:
        fn = pickle.loads(blob)
        if len(_unpickled_functions) >= _CACHE_SIZE:
            _unpickled_functions.clear()
        _unpickled_functions[blob] = fn
    return fn


_decoding = threading.local()  # .crossing: the list the message being decoded on this thread fills
_devices: dict[str, Device] = {}  # a device's name -> the Device (no parsing per tensor received)


def _device(name: str) -> Device:
    d = _devices[name] = Device(name)
    return d


def _wire_tensor(arr: Any, device: Any, grad: bool, parameter: bool, requires_grad: bool) -> Tensor:
    """A tensor of a message, rebuilt by the receiver's unpickler (NOTE [Tensors on the wire])."""
    if not arr.flags.writeable:
        arr = arr.copy()
    device = _devices.get(device) or _device(device)
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

    __slots__ = ("frames", "rrefs", "_nbytes")

    def __init__(self, frames: list[Any], rrefs: list[Any] | None = None) -> None:
        self.frames = frames
        self.rrefs = rrefs or []  # on the sending side: RRefs the value holds
        self._nbytes = -1

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
        n = self._nbytes
        if n < 0:
            frames = self.frames
            if len(frames) == 1 and frames[0].__class__ is bytes:  # a small message: one bytes object
                n = len(frames[0])
            else:
                n = sum(memoryview(f).nbytes for f in frames)
            self._nbytes = n
        return n


_picklers = threading.local()  # .pickler: this thread's (NOTE [One pickler per thread])


def encode(value: Any, with_grad: bool) -> tuple[Payload, list[Tensor]]:
    """Pickle ``value`` for another process; also return the tensors that cross with autograd."""
    p = getattr(_picklers, "pickler", None)
    if p is None:
        p = _picklers.pickler = _Pickler()
    elif p.busy:
        p = _Pickler()
    return p.encode(value, with_grad)


def to_wire(payload: Payload) -> Any:
    """What a Dask message carries for ``payload``: its bytes inline when small, else its frames."""
    if payload.nbytes <= INLINE_BYTES:
        if len(payload.frames) == 1:  # the common case: one bytes object, the cheapest to write
            frame = payload.frames[0]
            return frame if frame.__class__ is bytes else bytes(frame)
        return [bytes(f) for f in payload.frames]
    return to_serialize(payload)


def from_wire(obj: Any) -> Payload:
    """The Payload a Dask message carried (see ``to_wire``)."""
    if obj.__class__ is bytes:  # most messages
        return Payload([obj])
    if isinstance(obj, Payload):
        return obj
    return Payload([obj] if isinstance(obj, (bytes, bytearray, memoryview)) else list(obj))


@dask_serialize.register(Payload)
def _serialize_payload(payload: Payload) -> tuple[dict[str, Any], list[Any]]:
    return {}, payload.frames


@dask_deserialize.register(Payload)
def _deserialize_payload(header: dict[str, Any], frames: list[Any]) -> Payload:
    return Payload(list(frames))
