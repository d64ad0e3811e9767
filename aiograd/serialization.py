"""Checkpoints: ``ag.save`` / ``ag.load`` in torch's file format, and safetensors files.

A checkpoint is the file ``torch.save`` writes: a zip archive whose entries
all live in one folder, holding ``data.pkl`` (the object, pickled with
protocol 2) and one record ``data/<key>`` per storage, the raw bytes of the
memory that tensors view. A tensor is pickled as a call of
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
hooks)`` whose storage is a persistent id ``("storage", torch.FloatStorage,
key, "cpu", numel)``. This module reads and writes that format without torch:
files move both ways between torch and aiograd.

Loading is safe by default (``weights_only=True``): the pickle is run by a
restricted interpreter that knows only the globals a checkpoint of weights
needs (NOTE [Weights-only globals]); a file naming any other global is refused
with an error naming it, before anything it names is imported or called.
``weights_only=False`` uses Python's full unpickler (the file may then run any
code: only for files you trust).

Saving never harms the previous checkpoint (NOTE [Atomic save]).

safetensors files (``save_safetensors`` / ``load_safetensors``) go through the
``safetensors`` package's numpy API, an optional dependency (the
``serialization`` extra).
"""

from __future__ import annotations

import _compat_pickle
import collections
import io
import math
import os
import pickle
import secrets
import stat
import struct
import sys
import zipfile
import zlib
from codecs import encode as _codecs_encode
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator, Union

import numpy as np

from ._optional import require
from .device import CPU, Device
from .nn.parameter import Parameter
from .tensor import Tensor

__all__ = [
    "save",
    "load",
    "add_safe_globals",
    "get_safe_globals",
    "clear_safe_globals",
    "safe_globals",
    "save_safetensors",
    "load_safetensors",
    "WeightsOnlyError",
]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]
MapLocation = Union[None, str, Device, "dict[str, str]", Callable[[Any, str], Any]]


# ----- torch's names ------------------------------------------------------------------------

class _TorchName:
    """A stand-in for one of torch's globals: it pickles as ``GLOBAL module name``.

    Used for what aiograd has no object of its own for: rebuild functions,
    storage classes, torch dtypes numpy lacks (``torch.bfloat16``). Its repr
    is torch's spelling, so an error or a loaded config shows the name.
    """

    __slots__ = ("module", "name", "attr")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        # NOTE [Torch names in the fast pickler]: the C pickler writes a global only if it
        # finds the very object under its name, so each stand-in is also a global of this
        # module, under a name of its own; _pickle then rewrites those GLOBAL instructions
        # to torch's names.
        self.attr = f"_torch_global__{module.replace('.', '_')}__{name}"
        globals().setdefault(self.attr, self)

    @property
    def full_name(self) -> str:
        return f"{self.module}.{self.name}"

    def __repr__(self) -> str:
        return self.full_name

    def __call__(self, *args: Any) -> Any:
        # callable only so that the pickler accepts it as the function of a reduce tuple
        raise TypeError(f"{self.full_name} is torch's; aiograd only writes its name into checkpoints")


class _StorageType(_TorchName):
    """``torch.FloatStorage`` and its kin: the element type of a storage record."""

    __slots__ = ("dtype", "torch_dtype")

    def __init__(self, module: str, name: str, dtype: "np.dtype | None", torch_dtype: str) -> None:
        super().__init__(module, name)
        self.dtype = dtype  # None: torch has it, numpy has not (bfloat16, quantized types)
        self.torch_dtype = torch_dtype


# torch dtype name -> (numpy dtype or None, legacy storage class name or None)
_DTYPES: dict[str, tuple["np.dtype | None", "str | None"]] = {
    "float64": (np.dtype("float64"), "DoubleStorage"),
    "float32": (np.dtype("float32"), "FloatStorage"),
    "float16": (np.dtype("float16"), "HalfStorage"),
    "bfloat16": (None, "BFloat16Storage"),
    "int64": (np.dtype("int64"), "LongStorage"),
    "int32": (np.dtype("int32"), "IntStorage"),
    "int16": (np.dtype("int16"), "ShortStorage"),
    "int8": (np.dtype("int8"), "CharStorage"),
    "uint8": (np.dtype("uint8"), "ByteStorage"),
    "bool": (np.dtype("bool"), "BoolStorage"),
    "complex128": (np.dtype("complex128"), "ComplexDoubleStorage"),
    "complex64": (np.dtype("complex64"), "ComplexFloatStorage"),
    "qint8": (None, "QInt8Storage"),
    "qint32": (None, "QInt32Storage"),
    "quint8": (None, "QUInt8Storage"),
    "quint4x2": (None, "QUInt4x2Storage"),
    "quint2x4": (None, "QUInt2x4Storage"),
    # dtypes without a legacy storage class: written with _rebuild_tensor_v3 and UntypedStorage
    "uint16": (np.dtype("uint16"), None),
    "uint32": (np.dtype("uint32"), None),
    "uint64": (np.dtype("uint64"), None),
    "complex32": (None, None),
    "float8_e5m2": (None, None),
    "float8_e4m3fn": (None, None),
    "float8_e5m2fnuz": (None, None),
    "float8_e4m3fnuz": (None, None),
    "float8_e8m0fnu": (None, None),
    "float4_e2m1fn_x2": (None, None),
    "bits8": (None, None),
    "bits16": (None, None),
    "bits1x8": (None, None),
    "bits2x4": (None, None),
    "bits4x2": (None, None),
    **{f"uint{n}": (None, None) for n in range(1, 8)},
    **{f"int{n}": (None, None) for n in range(1, 8)},
}

_NUMPY_TO_TORCH: dict[np.dtype, str] = {np_dt: name for name, (np_dt, _) in _DTYPES.items() if np_dt is not None}
_TORCH_DTYPE_NAMES: dict[np.dtype, _TorchName] = {dt: _TorchName("torch", name) for dt, name in _NUMPY_TO_TORCH.items()}
_STORAGE_TYPES: dict[np.dtype, _StorageType] = {
    dt: _StorageType("torch", storage, dt, name)
    for dt, name in _NUMPY_TO_TORCH.items()
    if (storage := _DTYPES[name][1]) is not None
}
_UNTYPED_STORAGE = _StorageType("torch.storage", "UntypedStorage", np.dtype("uint8"), "uint8")
_REBUILD_TENSOR_V2 = _TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = _TorchName("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _TorchName("torch._utils", "_rebuild_parameter")
_TORCH_DEVICE = _TorchName("torch", "device")


# ----- loading: what torch's globals become -------------------------------------------------

class _LoadedStorage:
    """The bytes of one storage record, read once and viewed by every tensor that names it.

    A callable ``map_location`` receives it with the record's location tag
    (``map_location(storage, "cpu")``) and returns it (or ``None``) to keep
    torch's calling convention; ``device`` is where its tensors are made.
    """

    __slots__ = ("data", "dtype", "device", "key")

    def __init__(self, data: np.ndarray, dtype: np.dtype, device: Device, key: str) -> None:
        self.data = data  # uint8, one flat buffer
        self.dtype = dtype
        self.device = device
        self.key = key

    def cpu(self) -> "_LoadedStorage":
        return self

    def __repr__(self) -> str:
        return f"<storage {self.key}: {self.data.nbytes} bytes on {self.device}>"


class _LoadError(Exception):
    """A checkpoint that is malformed (raised inside the loader, reported naming the file)."""


def _need_dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, np.dtype):
        return dtype
    raise _LoadError(
        f"the checkpoint holds a tensor of dtype {dtype!r}, which aiograd does not have "
        f"(its dtypes: {', '.join('torch.' + n for n in _NUMPY_TO_TORCH.values())}); "
        "convert it in torch first, e.g. tensor.float()"
    )


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(type(v) is int and v >= 0 for v in value):
        raise _LoadError(f"a tensor's {what} is {value!r}, not a tuple of non-negative ints")
    return value


def _rebuild(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
             dtype: "np.dtype | None" = None, metadata: Any = None) -> Tensor:
    """A Tensor viewing ``storage`` (NOTE [Loaded storages are shared])."""
    if not isinstance(storage, _LoadedStorage):
        raise _LoadError(f"a tensor's storage is {type(storage).__name__}, not a storage record")
    dt = _need_dtype(dtype if dtype is not None else storage.dtype)
    size = _int_tuple(tuple(size) if isinstance(size, list) else size, "size")
    stride = _int_tuple(tuple(stride) if isinstance(stride, list) else stride, "stride")
    if type(storage_offset) is not int or storage_offset < 0 or len(size) != len(stride):
        raise _LoadError(f"a tensor's offset {storage_offset!r}, size {size} and stride {stride} do not fit together")
    buf = storage.data
    if buf.nbytes % dt.itemsize:
        raise _LoadError(f"storage {storage.key} holds {buf.nbytes} bytes, not a whole number of {dt} elements")
    n_elements = buf.nbytes // dt.itemsize
    numel = math.prod(size)
    end = storage_offset + (sum((n - 1) * s for n, s in zip(size, stride)) + 1 if numel else 0)
    if end > n_elements:
        raise _LoadError(
            f"a tensor of size {list(size)}, stride {list(stride)} at offset {storage_offset} reaches past "
            f"the end of storage {storage.key} ({n_elements} elements): the file is corrupt"
        )
    # NOTE [Loaded storages are shared]: every tensor of one storage record is a view
    # of the one buffer read for it, as torch's are views of one storage: a loaded
    # slice and the tensor it was sliced from still share their memory (writes to one
    # show in the other). Like torch.load, they are separate leaves (no _base, own
    # version counters): only the memory is shared. Each view's base is the record's
    # buffer itself, so saving them again writes that one record again.
    if numel:
        arr = np.ndarray(size, dt, buffer=buf, offset=storage_offset * dt.itemsize,
                         strides=tuple(s * dt.itemsize for s in stride))
    else:
        arr = np.empty(size, dt)
    if metadata:
        # conj/neg bits: torch stored the underlying values; the tensor means their conjugate/negation
        if metadata.get("conj"):
            arr = np.conj(arr)
        if metadata.get("neg"):
            arr = np.negative(arr)
    t = Tensor._wrap(arr, storage.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, metadata: Any = None) -> Tensor:
    return _rebuild(storage, storage_offset, size, stride, requires_grad, None, metadata)


def _rebuild_tensor_v3(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, dtype: Any, metadata: Any = None) -> Tensor:
    return _rebuild(storage, storage_offset, size, stride, requires_grad, _need_dtype(dtype), metadata)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any) -> Tensor:
    return _rebuild(storage, storage_offset, size, stride, False)


def _set_state(obj: Any, state: Any) -> Any:
    """Python attributes a torch tensor carried: aiograd's tensors hold none, so only empty state loads."""
    if isinstance(state, tuple):  # (dict state, slots state)
        for part in state:
            _set_state(obj, part)
    elif state:
        names = list(state) if isinstance(state, dict) else [repr(state)]
        raise _LoadError(f"the checkpoint gives a {type(obj).__name__} extra attributes {names}, "
                         "which aiograd's tensors cannot hold")
    return obj


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any) -> Parameter:
    if not isinstance(data, Tensor):
        raise _LoadError(f"a Parameter's data is {type(data).__name__}, not a tensor")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Parameter:
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if func not in _REBUILDERS:
        raise _LoadError(f"_rebuild_from_type_v2 names {func!r}, not a tensor rebuild function")
    t = func(*args)
    if new_type is Parameter and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    elif new_type is not Tensor and new_type is not Parameter:
        raise _LoadError(f"the checkpoint holds a tensor subclass {new_type!r}, which aiograd does not have")
    return _set_state(t, state)


def _unsupported(what: str) -> Callable[..., Any]:
    def rebuild(*args: Any, **kwargs: Any) -> Any:
        raise _LoadError(f"the checkpoint holds {what}, which aiograd cannot load")
    return rebuild


def _size(dims: Any = ()) -> tuple[int, ...]:
    return tuple(dims)


def _device(spec: Any, index: Any = None) -> "Device | str":
    """torch.device(...) as a value: aiograd's Device where aiograd has it, else torch's string."""
    name = f"{spec}:{index}" if index is not None else str(spec)
    try:
        return Device(name)
    except (RuntimeError, TypeError):
        return name


def _get_layout(name: str) -> str:
    return name


_REBUILDERS: set[Callable[..., Any]] = {_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_tensor}

# NOTE [Weights-only globals]: the globals a weights-only load may name, and what each
# becomes in aiograd. This is torch's default allowlist (torch/_weights_only_unpickler.py
# _get_allowed_globals, torch 2.13) restricted to what can be given a meaning here:
# the tensor rebuild functions, storage classes, dtypes, Size, device, Parameter,
# OrderedDict/Counter and the builtins protocol 2 uses for bytes, sets and complex
# numbers. ag.save writes only names from this table, so what it writes is accepted by
# torch.load(weights_only=True) too; tests pin that every name written is in it.
_SAFE_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set,
    "builtins.bytearray": bytearray,
    "builtins.complex": complex,
    "_codecs.encode": _codecs_encode,
    "torch.nn.parameter.Parameter": Parameter,
    "torch.Tensor": Tensor,
    "torch.Size": _size,
    "torch.device": _device,
    "torch.serialization._get_layout": _get_layout,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch._utils._rebuild_qtensor": _unsupported("a quantized tensor"),
    "torch._utils._rebuild_sparse_tensor": _unsupported("a sparse tensor"),
    "torch._utils._rebuild_meta_tensor_no_storage": _unsupported("a meta tensor (no data)"),
    "torch._utils._rebuild_nested_tensor": _unsupported("a nested tensor"),
    "torch._utils._rebuild_wrapper_subclass": _unsupported("a tensor subclass"),
    "torch._utils._rebuild_device_tensor_from_numpy": _unsupported("a device tensor saved through numpy"),
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": _unsupported("a device tensor"),
    "torch.storage.UntypedStorage": _UNTYPED_STORAGE,
    **{f"torch.{name}": (np_dt if np_dt is not None else _TorchName("torch", name))
       for name, (np_dt, _) in _DTYPES.items()},
    **{f"torch.{storage}": _StorageType("torch", storage, np_dt, name)
       for name, (np_dt, storage) in _DTYPES.items() if storage is not None},
}

_SAFE_IDS = frozenset(id(v) for v in _SAFE_GLOBALS.values())

# torch refuses these modules even when a user allowlists one of their globals
_BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

_user_safe_globals: dict[str, Any] = {}


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow these globals in ``weights_only`` loads (torch's ``add_safe_globals``).

    Each item is a class or function (allowed under its ``module.qualname``) or
    a pair ``(obj, "module.name")`` for an object pickled under another name.
    Only allow what you know to be harmless to call with any arguments.
    """
    for item in safe_globals:
        if isinstance(item, tuple):
            if len(item) != 2 or not isinstance(item[1], str):
                raise TypeError(f"expected a class, a function or a (global, 'module.name') pair, got {item!r}")
            obj, name = item
        else:
            obj, name = item, f"{item.__module__}.{item.__qualname__}"
        _user_safe_globals[name] = obj


def get_safe_globals() -> list[Any]:
    """The globals added by ``add_safe_globals``."""
    return list(_user_safe_globals.values())


def clear_safe_globals() -> None:
    """Forget every global added by ``add_safe_globals``."""
    _user_safe_globals.clear()


@contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``with safe_globals([...]):`` allows these globals inside the block only."""
    before = dict(_user_safe_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_safe_globals.clear()
        _user_safe_globals.update(before)


class WeightsOnlyError(pickle.UnpicklingError):
    """A weights-only load refused the file (it names a global outside the allowlist)."""


_UNSAFE_HINT = (
    "Re-running ag.load with weights_only=False will likely succeed, but it can result in arbitrary "
    "code execution: do it only if you got the file from a trusted source. Or allow the global with "
    "aiograd.serialization.add_safe_globals([...]) if you trust it."
)


def _refuse(file: str, message: str) -> WeightsOnlyError:
    return WeightsOnlyError(f"Weights only load failed for {file}. {message} {_UNSAFE_HINT}")


# ----- the restricted unpickler -------------------------------------------------------------

# pickle's opcodes, as module constants (read once per instruction by the restricted unpickler)
_OP_APPEND = pickle.APPEND
_OP_APPENDS = pickle.APPENDS
_OP_BINFLOAT = pickle.BINFLOAT
_OP_BINGET = pickle.BINGET
_OP_BININT = pickle.BININT
_OP_BININT1 = pickle.BININT1
_OP_BININT2 = pickle.BININT2
_OP_BINPERSID = pickle.BINPERSID
_OP_BINPUT = pickle.BINPUT
_OP_BINUNICODE = pickle.BINUNICODE
_OP_BUILD = pickle.BUILD
_OP_EMPTY_DICT = pickle.EMPTY_DICT
_OP_EMPTY_LIST = pickle.EMPTY_LIST
_OP_EMPTY_SET = pickle.EMPTY_SET
_OP_EMPTY_TUPLE = pickle.EMPTY_TUPLE
_OP_GLOBAL = pickle.GLOBAL
_OP_LONG1 = pickle.LONG1
_OP_LONG_BINGET = pickle.LONG_BINGET
_OP_LONG_BINPUT = pickle.LONG_BINPUT
_OP_MARK = pickle.MARK
_OP_NEWFALSE = pickle.NEWFALSE
_OP_NEWOBJ = pickle.NEWOBJ
_OP_NEWTRUE = pickle.NEWTRUE
_OP_NONE = pickle.NONE
_OP_PROTO = pickle.PROTO
_OP_REDUCE = pickle.REDUCE
_OP_SETITEM = pickle.SETITEM
_OP_SETITEMS = pickle.SETITEMS
_OP_SHORT_BINSTRING = pickle.SHORT_BINSTRING
_OP_STOP = pickle.STOP
_OP_TUPLE = pickle.TUPLE
_OP_TUPLE1 = pickle.TUPLE1
_OP_TUPLE2 = pickle.TUPLE2
_OP_TUPLE3 = pickle.TUPLE3


class _WeightsOnlyUnpickler:
    """Runs a protocol-2 pickle with only the allowed globals (NOTE [Weights-only globals]).

    It reads the same opcodes as torch's weights-only unpickler and nothing else
    (no INST/OBJ, no STACK_GLOBAL, no extension codes, no frames), so a pickle it
    accepts is one torch accepts too. A global is looked up in the allowlist,
    never imported; calls (REDUCE, NEWOBJ) and BUILD apply only to allowed
    objects, appends only to lists, item sets only to dicts.
    """

    def __init__(self, data: bytes, file: str, persistent_load: Callable[[Any], Any], pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.file = file
        self.persistent_load = persistent_load
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.allowed_ids = _SAFE_IDS | {id(v) for v in _user_safe_globals.values()}

    def read(self, n: int) -> bytes:
        pos = self.pos
        end = pos + n
        if end > len(self.data):
            raise _LoadError("the pickle ends in the middle of an instruction (truncated)")
        self.pos = end
        return self.data[pos:end]

    def readline(self) -> str:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise _LoadError("the pickle ends in the middle of an instruction (truncated)")
        line = self.data[self.pos:end]
        self.pos = end + 1
        return line.decode("utf-8")

    def pop_mark(self) -> list[Any]:
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def find_global(self, module: str, name: str) -> Any:
        # protocol 2 spells some Python 3 names the Python 2 way (__builtin__.set): undo it as pickle does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise _refuse(self.file, f"Unsupported global: GLOBAL {full} whose module {module} is blocked.")
        if full in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[full]
        if full in _user_safe_globals:
            return _user_safe_globals[full]
        raise _refuse(self.file, f"Unsupported global: GLOBAL {full} was not an allowed global by default.")

    def is_allowed(self, obj: Any) -> bool:
        return id(obj) in self.allowed_ids  # the allowed objects live as long as the module (or the load)

    def load(self) -> Any:  # noqa: C901 - one branch per opcode, read top to bottom
        read = self.read
        while True:
            op = read(1)
            # the most frequent instructions of a state_dict's pickle first
            if op == _OP_BINPUT:
                self.memo[read(1)[0]] = self.stack[-1]
            elif op == _OP_BINGET:
                self.stack.append(self.memo[read(1)[0]])
            elif op == _OP_MARK:
                self.metastack.append(self.stack)
                self.stack = []
            elif op == _OP_BINUNICODE:
                n = struct.unpack("<I", read(4))[0]
                self.stack.append(str(read(n), "utf-8", "surrogatepass"))
            elif op == _OP_BININT1:
                self.stack.append(read(1)[0])
            elif op == _OP_TUPLE:
                items = self.pop_mark()
                self.stack.append(tuple(items))
            elif op == _OP_TUPLE2:
                self.stack[-2:] = [(self.stack[-2], self.stack[-1])]
            elif op == _OP_TUPLE1:
                self.stack[-1] = (self.stack[-1],)
            elif op == _OP_TUPLE3:
                self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]
            elif op == _OP_REDUCE:
                args = self.stack.pop()
                func = self.stack[-1]
                if not self.is_allowed(func) or isinstance(func, (_TorchName, np.dtype)) or not callable(func):
                    raise _refuse(self.file, f"Trying to call reduce for unrecognized function {func!r}.")
                if not isinstance(args, tuple):
                    raise _LoadError("data.pkl is malformed (REDUCE without an argument tuple)")
                self.stack[-1] = func(*args)
            elif op == _OP_BINPERSID:
                pid = self.stack.pop()
                if type(pid) is not tuple or not pid or _ascii(pid[0]) != "storage":
                    raise _refuse(self.file, f"Only persistent_load of storage is allowed, but got {pid!r}.")
                self.stack.append(self.persistent_load(pid))
            elif op == _OP_EMPTY_TUPLE:
                self.stack.append(())
            elif op == _OP_NEWFALSE:
                self.stack.append(False)
            elif op == _OP_NEWTRUE:
                self.stack.append(True)
            elif op == _OP_SETITEMS:
                items = self.pop_mark()
                self.check_dict()
                target = self.stack[-1]
                for i in range(0, len(items) - 1, 2):
                    target[items[i]] = items[i + 1]
            elif op == _OP_SETITEM:
                value = self.stack.pop()
                key = self.stack.pop()
                self.check_dict()
                self.stack[-1][key] = value
            elif op == _OP_APPENDS:
                items = self.pop_mark()
                if type(self.stack[-1]) is not list:
                    raise _refuse(self.file, f"Can only extend lists, but got {type(self.stack[-1])!r}.")
                self.stack[-1].extend(items)
            elif op == _OP_APPEND:
                item = self.stack.pop()
                if type(self.stack[-1]) is not list:
                    raise _refuse(self.file, f"Can only append to lists, but got {type(self.stack[-1])!r}.")
                self.stack[-1].append(item)
            elif op == _OP_BINFLOAT:
                self.stack.append(struct.unpack(">d", read(8))[0])
            elif op == _OP_LONG_BINPUT:
                self.memo[struct.unpack("<I", read(4))[0]] = self.stack[-1]
            elif op == _OP_LONG_BINGET:
                self.stack.append(self.memo[struct.unpack("<I", read(4))[0]])
            elif op == _OP_BININT:
                self.stack.append(struct.unpack("<i", read(4))[0])
            elif op == _OP_BININT2:
                self.stack.append(struct.unpack("<H", read(2))[0])
            elif op == _OP_LONG1:
                n = read(1)[0]
                self.stack.append(pickle.decode_long(read(n)))
            elif op == _OP_NONE:
                self.stack.append(None)
            elif op == _OP_EMPTY_DICT:
                self.stack.append({})
            elif op == _OP_EMPTY_LIST:
                self.stack.append([])
            elif op == _OP_EMPTY_SET:
                self.stack.append(set())
            elif op == _OP_SHORT_BINSTRING:
                n = read(1)[0]
                self.stack.append(read(n).decode("utf-8"))
            elif op == _OP_GLOBAL:
                module = self.readline()
                name = self.readline()
                self.stack.append(self.find_global(module, name))
            elif op == _OP_NEWOBJ:
                args = self.stack.pop()
                cls = self.stack.pop()
                if cls is Parameter or cls is Tensor:
                    self.stack.append(cls(*args))
                elif isinstance(cls, type) and self.is_allowed(cls):
                    self.stack.append(cls.__new__(cls, *args))
                else:
                    raise _refuse(self.file, f"Can only create new object for nn.Parameter or allowed classes, got {cls!r}.")
            elif op == _OP_BUILD:
                state = self.stack.pop()
                inst = self.stack[-1]
                if type(inst) is collections.OrderedDict:
                    inst.__dict__.update(state)  # a torch state_dict's _metadata
                elif isinstance(inst, Tensor):
                    _set_state(inst, state)
                elif self.is_allowed(type(inst)):
                    if hasattr(inst, "__setstate__"):
                        inst.__setstate__(state)
                    else:
                        inst.__dict__.update(state)
                else:
                    raise _refuse(self.file, f"Can only build Tensor, Parameter, OrderedDict or allowed types, got {type(inst)!r}.")
            elif op == _OP_PROTO:
                read(1)
            elif op == _OP_STOP:
                if len(self.stack) != 1 or self.metastack:
                    raise _LoadError("data.pkl is malformed (stack not balanced at its end)")
                return self.stack.pop()
            else:
                raise _refuse(self.file, f"Unsupported operand {op[0]} (pickle opcode {op!r}).")

    def check_dict(self) -> None:
        if type(self.stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
            raise _refuse(self.file, f"Can only set items of dict, collections.OrderedDict, collections.Counter, "
                                     f"but got {type(self.stack[-1])!r}.")


def _ascii(value: Any) -> Any:
    return value.decode("ascii") if isinstance(value, bytes) else value


class _FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: Python's unpickler, torch's globals mapped to aiograd's."""

    def __init__(self, file: IO[bytes], persistent: Callable[[Any], Any]) -> None:
        super().__init__(file, encoding="utf-8")
        self._persistent = persistent

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if full in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[full]
        if module == "torch.tensor":  # an old spelling of torch._tensor
            return self.find_class("torch._tensor", name)
        if module.split(".", 1)[0] == "torch":
            raise _LoadError(f"the checkpoint names {full}, which aiograd has no counterpart for")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent(pid)


# ----- load -----------------------------------------------------------------------------------

def _file_name(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"


def _restore_device(map_location: MapLocation, location: str) -> Device:
    if isinstance(map_location, dict):
        location = map_location.get(location, location)
        map_location = None
    if map_location is not None:
        location = str(map_location)
    try:
        return Device(location)
    except (RuntimeError, TypeError):
        raise RuntimeError(
            f"Attempting to deserialize object on device {location!r}, which aiograd does not have "
            "(its tensors live in host memory): use ag.load with map_location='cpu'"
        ) from None


def load(f: FileLike, map_location: MapLocation = None, *, weights_only: "bool | None" = True,
         mmap: "bool | None" = None) -> Any:
    """Load an object saved by ``ag.save`` or ``torch.save`` (torch's zip format), as torch.load does.

    ``weights_only=True`` (the default, as in torch >= 2.6) runs the pickle with
    a restricted interpreter that allows only tensors, parameters, dtypes,
    ``Size``, ``device`` and plain containers (plus what ``add_safe_globals``
    allowed): a file naming any other global is refused with an error naming
    it, and nothing it names runs. ``weights_only=False`` unpickles anything;
    only for files you trust.

    Tensors that shared a storage when saved share memory when loaded
    (a slice and its base, a transpose), with their offsets and strides.
    ``map_location`` is a device (``"cpu"``, ``"cpu:1"``), a dict mapping the
    saved location tags (``{"cuda:0": "cpu"}``) or a callable
    ``fn(storage, location)`` returning a storage or ``None``; a file saved
    from a GPU needs ``map_location="cpu"``, as in torch. A path ending in
    ``.safetensors`` is read with ``load_safetensors``, as torch.load does;
    files in torch's format before 1.6 (no zip archive) load too.

    ``mmap=True`` maps each storage record of the file instead of reading it
    (the file must be a path or a file on disk): tensors are read lazily, page
    by page, when used, and are copy-on-write (changing one never changes the
    file). Large checkpoints then load in no time and take memory only for
    what is used.

    A truncated or corrupt file raises a RuntimeError naming the file and
    what is wrong.
    """
    if weights_only is None:
        weights_only = True
    name = _file_name(f)
    if mmap and not (isinstance(f, (str, os.PathLike)) or _has_fileno(f)):
        raise ValueError("f must be a file path or a file on disk in order to use the mmap argument")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if path.endswith(".safetensors"):
            if map_location is not None and not isinstance(map_location, (str, Device)):
                raise RuntimeError("Loading a safetensors file takes map_location as a device string or device only")
            return load_safetensors(path, device=str(map_location) if map_location is not None else "cpu")
        with open(path, "rb") as fh:
            return _load(fh, name, map_location, weights_only, bool(mmap))
    if not hasattr(f, "read"):
        raise TypeError(f"ag.load expects a path or a binary file object, got {type(f).__name__}")
    if not (hasattr(f, "seek") and f.seekable()):
        f = io.BytesIO(f.read())
    return _load(f, name, map_location, weights_only, bool(mmap))


def _has_fileno(f: Any) -> bool:
    try:
        f.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return False
    return True


def _corrupt(name: str, problem: str) -> RuntimeError:
    return RuntimeError(f"cannot load {name}: {problem}")


def _load(fh: IO[bytes], name: str, map_location: MapLocation, weights_only: bool, mmap: bool = False) -> Any:
    start = fh.tell()
    head = fh.read(4)
    fh.seek(start)
    if not head:
        raise _corrupt(name, "the file is empty")
    if head[:2] != b"PK" and head[:1] != b"\x80":
        raise _corrupt(name, "it is not a torch checkpoint (not a zip archive)")
    try:
        if head[:1] == b"\x80":
            if mmap:
                raise _LoadError("mmap can only be used with files saved by ag.save or by torch.save "
                                 "(_use_new_zipfile_serialization=True), not torch's legacy format")
            return _load_legacy(fh.read(), name, map_location, weights_only)
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
            raise _LoadError(f"the zip archive is truncated or corrupt ({err}); "
                             "PytorchStreamReader failed reading zip archive") from None
        with zf:
            return _load_archive(zf, fh, name, map_location, weights_only, fh.seek(0, os.SEEK_END), mmap)
    except _LoadError as err:
        raise _corrupt(name, str(err)) from None
    except (zipfile.BadZipFile, EOFError, struct.error, UnicodeDecodeError) as err:
        raise _corrupt(name, f"the file is corrupt ({type(err).__name__}: {err})") from None
    except pickle.UnpicklingError as err:
        if isinstance(err, WeightsOnlyError):
            raise
        raise _corrupt(name, f"its pickle is corrupt ({err})") from None
    except (IndexError, KeyError, TypeError, ValueError, AttributeError) as err:
        if not weights_only:  # raised by the file's own classes, under weights_only=False: theirs to report
            raise
        # the restricted unpickler's stack and memo operations on a malformed pickle
        raise _corrupt(name, f"its pickle is corrupt ({type(err).__name__}: {err})") from None


def _storage_dtype(storage_type: Any) -> np.dtype:
    if not isinstance(storage_type, _StorageType):
        raise _LoadError(f"storage type {storage_type!r} is not one of torch's storage classes")
    if storage_type.dtype is None:
        return _need_dtype(_TorchName("torch", storage_type.torch_dtype))
    return storage_type.dtype


def _place(storage: _LoadedStorage, location: Any, map_location: MapLocation) -> _LoadedStorage:
    """Put a storage where ``map_location`` says, given the location tag it was saved with.

    As torch: a callable gets ``(storage, location)`` and returns a storage or
    None (the default placement); a dict renames tags; a device or a string is
    where every storage goes; None keeps the saved tag, which must name a
    device aiograd has.
    """
    location = str(_ascii(location))
    if callable(map_location) and not isinstance(map_location, (str, Device, dict)):
        mapped = map_location(storage, location)
        if mapped is None:
            storage.device = _restore_device(None, location)
            return storage
        if not isinstance(mapped, _LoadedStorage):
            raise _LoadError(f"map_location returned {type(mapped).__name__}, expected the storage it was given or None")
        return mapped
    storage.device = _restore_device(map_location, location)
    return storage


def _load_archive(zf: zipfile.ZipFile, fh: IO[bytes], name: str, map_location: MapLocation, weights_only: bool,
                  archive_size: int, mmap: bool) -> Any:
    names = zf.namelist()
    if not names or "/" not in names[0]:
        raise _LoadError("the archive has no top-level folder (file in archive is not in a subdirectory)")
    prefix = names[0].split("/", 1)[0] + "/"
    if f"{prefix}data.pkl" not in names:
        if f"{prefix}constants.pkl" in names:
            raise _LoadError("it is a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
        raise _LoadError(f"the archive has no {prefix}data.pkl record (truncated, or not written by torch.save)")
    byteorder = "little"
    if f"{prefix}byteorder" in names:
        byteorder = zf.read(f"{prefix}byteorder").decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise _LoadError(f"Unknown endianness type: {byteorder}")

    storages: dict[str, _LoadedStorage] = {}

    def persistent_load(pid: Any) -> _LoadedStorage:
        if type(pid) is not tuple or len(pid) != 5 or _ascii(pid[0]) != "storage":
            raise _LoadError(f"persistent id {pid!r} is not a storage")
        _, storage_type, key, location, numel = pid
        key = str(_ascii(key))
        if key in storages:
            return storages[key]
        dtype = _storage_dtype(storage_type)
        if type(numel) is not int or numel < 0:
            raise _LoadError(f"storage {key} has {numel!r} elements")
        data = _read_record(zf, fh, f"{prefix}data/{key}", numel * dtype.itemsize, archive_size, mmap)
        if byteorder != sys.byteorder and dtype.itemsize > 1:
            data.view(dtype).byteswap(inplace=True)
        storages[key] = storage = _place(_LoadedStorage(data, dtype, CPU, key), location, map_location)
        return storage

    pkl = zf.read(f"{prefix}data.pkl")
    return _unpickle(pkl, 0, name, persistent_load, weights_only)[0]


def _unpickle(data: bytes, pos: int, name: str, persistent_load: Callable[[Any], Any],
              weights_only: bool) -> tuple[Any, int]:
    """The object pickled at ``data[pos:]``, and where its pickle ends."""
    if weights_only:
        unpickler = _WeightsOnlyUnpickler(data, name, persistent_load, pos)
        return unpickler.load(), unpickler.pos
    stream = io.BytesIO(data)
    stream.seek(pos)
    return _FullUnpickler(stream, persistent_load).load(), stream.tell()


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # the first pickle of torch's format before 1.6
_LEGACY_PROTOCOL = 1001


def _load_legacy(data: bytes, name: str, map_location: MapLocation, weights_only: bool) -> Any:
    """Read torch's format before 1.6 (``_use_new_zipfile_serialization=False``): pickles back to back.

    Five pickles (magic number, protocol version, system info, the object,
    the list of storage keys) then each storage's raw data, in that key
    order: its element count as a little-endian int64, then its bytes
    (little-endian). The object's tensors name storages that are filled only
    after it is unpickled; views of one storage are slices of one buffer.
    """
    def no_storage(pid: Any) -> Any:
        raise _LoadError("a persistent id outside the object's pickle")

    magic, pos = _unpickle(data, 0, name, no_storage, weights_only)
    if magic != _LEGACY_MAGIC:
        raise _LoadError("it is not a torch checkpoint (a pickle without torch's magic number)")
    version, pos = _unpickle(data, pos, name, no_storage, weights_only)
    if version != _LEGACY_PROTOCOL:
        raise _LoadError(f"its legacy protocol version is {version!r}, not {_LEGACY_PROTOCOL}")
    _, pos = _unpickle(data, pos, name, no_storage, weights_only)  # system info; the data is little-endian anyway

    roots: dict[str, _LoadedStorage] = {}
    views: dict[str, _LoadedStorage] = {}

    def persistent_load(pid: Any) -> _LoadedStorage:
        if type(pid) is not tuple or len(pid) != 6 or _ascii(pid[0]) != "storage":
            raise _LoadError(f"persistent id {pid!r} is not a storage")
        _, storage_type, key, location, numel, view = pid
        dtype = _storage_dtype(storage_type)
        key = str(_ascii(key))
        root = roots.get(key)
        if root is None:
            if type(numel) is not int or not 0 <= numel * dtype.itemsize <= len(data):
                raise _LoadError(f"storage {key} claims {numel!r} elements, more than the file holds")
            roots[key] = root = _place(_LoadedStorage(np.zeros(numel * dtype.itemsize, np.uint8), dtype, CPU, key),
                                       location, map_location)
        if view is None:
            return root
        view_key, offset, size = view
        view_key = str(_ascii(view_key))
        if view_key not in views:
            item = dtype.itemsize
            if not (type(offset) is int and type(size) is int and 0 <= offset and 0 <= size
                    and (offset + size) * item <= root.data.nbytes):
                raise _LoadError(f"storage view {view_key} lies outside storage {key}")
            views[view_key] = _LoadedStorage(root.data[offset * item:(offset + size) * item], dtype, root.device,
                                             view_key)
        return views[view_key]

    obj, pos = _unpickle(data, pos, name, persistent_load, weights_only)
    keys, pos = _unpickle(data, pos, name, no_storage, weights_only)
    if not isinstance(keys, list):
        raise _LoadError("its list of storage keys is missing")
    for key in keys:
        storage = roots.get(str(_ascii(key)))
        if storage is None or pos + 8 > len(data):
            raise _LoadError(f"the data of storage {key} is missing (the file is truncated or corrupt)")
        numel = int.from_bytes(data[pos:pos + 8], "little")
        nbytes = numel * storage.dtype.itemsize
        if nbytes != storage.data.nbytes or pos + 8 + nbytes > len(data):
            raise _LoadError(f"the data of storage {key} is truncated or does not match its tensors")
        storage.data[:] = np.frombuffer(data, np.uint8, nbytes, pos + 8)
        if sys.byteorder != "little" and storage.dtype.itemsize > 1:
            storage.data.view(storage.dtype).byteswap(inplace=True)
        pos += 8 + nbytes
    return obj


def _read_record(zf: zipfile.ZipFile, fh: IO[bytes], record: str, nbytes: int, archive_size: int,
                 mmap: bool = False) -> np.ndarray:
    """The bytes of one storage record, checked against what the tensors and the file say.

    A stored (uncompressed) record, which is what torch.save and ag.save write,
    is read straight into its buffer from its offset in the file and its CRC
    checked; or mapped copy-on-write with ``mmap`` (its own map per record, so
    that tensors of one record, and only those, share a buffer). Anything else
    goes through zipfile.
    """
    try:
        info = zf.getinfo(record)
    except KeyError:
        raise _LoadError(f"the record {record} is missing (the file is truncated or corrupt)") from None
    if info.file_size != nbytes:
        raise _LoadError(f"the record {record} holds {info.file_size} bytes, expected {nbytes}")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.header_offset + info.compress_size > archive_size:
            raise _LoadError(f"the record {record} claims {info.file_size} bytes, more than the file holds")
        # the data follows the record's local header, whose name and extra field lengths are its own
        fh.seek(info.header_offset)
        header = fh.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise _LoadError(f"the local header of record {record} is corrupt")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        offset = info.header_offset + 30 + name_len + extra_len
        if offset + nbytes > archive_size:
            raise _LoadError(f"the record {record} ends past the end of the file (truncated)")
        if mmap and nbytes:
            return np.memmap(fh, dtype=np.uint8, mode="c", offset=offset, shape=(nbytes,))
        out = np.empty(nbytes, np.uint8)
        fh.seek(offset)
        view = out.data  # a writable memoryview of the buffer
        pos = 0
        while pos < nbytes:
            n = fh.readinto(view[pos:])  # type: ignore[attr-defined]
            if not n:
                raise _LoadError(f"the record {record} ends after {pos} of {nbytes} bytes (truncated)")
            pos += n
        if zlib.crc32(view) != info.CRC:
            raise _LoadError(f"the record {record} is corrupt (its CRC does not match)")
        return out
    out = np.empty(nbytes, np.uint8)
    view = out.data
    pos = 0
    with zf.open(info) as src:
        while pos < nbytes:
            chunk = src.read(min(1 << 24, nbytes - pos))
            if not chunk:
                raise _LoadError(f"the record {record} ends after {pos} of {nbytes} bytes (truncated)")
            view[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
    return out


# ----- save -----------------------------------------------------------------------------------

class _StorageRecord:
    """One storage to write: a flat buffer, its torch element type and its key."""

    __slots__ = ("key", "buffer", "dtype", "pid")

    def __init__(self, key: str, buffer: np.ndarray, dtype: np.dtype) -> None:
        self.key = key
        self.buffer = buffer  # 1-D uint8, the storage's bytes
        self.dtype = dtype
        storage_type = _STORAGE_TYPES.get(dtype)
        numel = buffer.size // dtype.itemsize if storage_type is not None else buffer.size
        self.pid = ("storage", storage_type if storage_type is not None else _UNTYPED_STORAGE, key, "cpu", numel)


def _raw_memory(root: np.ndarray) -> "np.ndarray | None":
    """The bytes of ``root``'s memory block in address order, or None if it is not one block."""
    if root.flags.c_contiguous:
        return root.reshape(-1).view(np.uint8)
    if root.flags.f_contiguous:
        return root.T.reshape(-1).view(np.uint8)
    return None


class _UsePurePickler(Exception):
    """The C pickler met something only the pure-Python one can write (a dtype as a value)."""


class _TensorReducer:
    """How both picklers write tensors: as torch.save does, rebuild calls on storage records.

    NOTE [Shared storages on save]: arrays that view one numpy memory block
    (a tensor, its slices, its transpose) are written as one storage record and
    rebuilt as views of it, as torch writes tensors of one storage. A view
    torch cannot express (negative or unaligned strides, a dtype other than the
    storage's first one, memory numpy does not own in one block) is written as
    its own contiguous copy. As in torch, a view saves its whole storage:
    ``clone()`` a small slice of a large tensor before saving it alone.
    """

    def _init_storages(self) -> None:
        self.records: list[_StorageRecord] = []
        self._by_block: dict[int, tuple[_StorageRecord, np.ndarray, int]] = {}
        self._keep: list[Any] = []  # roots and copies kept alive, so their id() stays unique while pickling

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _StorageRecord:
            return obj.pid
        return None

    def reduce_value(self, obj: Any) -> Any:
        """The reduce tuple of a tensor or a device, else NotImplemented."""
        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                return (_REBUILD_PARAMETER, (_PlainTensor(obj), obj.requires_grad, collections.OrderedDict()))
            return self.tensor_reduce(obj, obj.requires_grad)
        if type(obj) is _PlainTensor:
            return self.tensor_reduce(obj.tensor, False)
        if isinstance(obj, Device):
            return (_TORCH_DEVICE, ("cpu" if obj.type == "cpu" else str(obj),))
        return NotImplemented

    def tensor_reduce(self, t: Tensor, requires_grad: bool) -> tuple[Any, tuple[Any, ...]]:
        arr = np.asarray(t._data)
        dt = arr.dtype
        if not dt.isnative:
            arr = arr.astype(dt.newbyteorder("="))
            dt = arr.dtype
        if dt not in _TORCH_DTYPE_NAMES:
            raise TypeError(f"ag.save cannot write a tensor of dtype {dt}: torch has no such dtype")
        record, offset, strides = self.storage_of(arr)
        args: tuple[Any, ...] = (record, offset, tuple(arr.shape), strides, bool(requires_grad), collections.OrderedDict())
        if dt in _STORAGE_TYPES:
            return (_REBUILD_TENSOR_V2, args)
        return (_REBUILD_TENSOR_V3, args + (_TORCH_DTYPE_NAMES[dt],))

    def storage_of(self, arr: np.ndarray) -> tuple[_StorageRecord, int, tuple[int, ...]]:
        """The record ``arr`` views, its offset and strides in elements (NOTE [Shared storages on save])."""
        item = arr.dtype.itemsize
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        block = self._by_block.get(id(root)) if arr.size else None
        if block is None and arr.size:
            raw = _raw_memory(root)
            if raw is not None and raw.size % item == 0:
                record = _StorageRecord(str(len(self.records)), raw, arr.dtype)
                block = (record, root, root.__array_interface__["data"][0])
                self.records.append(record)
                self._by_block[id(root)] = block
                self._keep.append(root)
        if block is not None:
            record, root, base_ptr = block
            start = arr.__array_interface__["data"][0] - base_ptr
            span = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + item
            if (record.dtype == arr.dtype and start % item == 0 and all(s >= 0 and s % item == 0 for s in arr.strides)
                    and 0 <= start and start + span <= record.buffer.size):
                return record, start // item, tuple(s // item for s in arr.strides)
        # a view torch cannot express, or an empty tensor: its own contiguous copy
        copy = np.ascontiguousarray(arr)
        record = _StorageRecord(str(len(self.records)), copy.reshape(-1).view(np.uint8), arr.dtype)
        self.records.append(record)
        self._keep.append(copy)
        return record, 0, _contiguous_strides(arr.shape)


class _FastPickler(_TensorReducer, pickle.Pickler):
    """The C pickler, writing aiograd-module stand-ins for torch's globals (NOTE [Torch names in the fast pickler])."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file, protocol=2)
        self._init_storages()
        self.used: set[_TorchName] = set()

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _TorchName):
            name: _TorchName = obj
            if globals().get(name.attr) is not name:
                raise _UsePurePickler  # a duplicate of a registered stand-in
            self.used.add(name)
            return name.attr
        if isinstance(obj, np.dtype) and obj in _TORCH_DTYPE_NAMES:
            raise _UsePurePickler  # a dtype as a value must be a bare torch global: only the pure pickler writes those
        return self.reduce_value(obj)

    def torch_pickle(self, data: bytes) -> "bytes | None":
        """``data`` with each stand-in's GLOBAL instruction renamed to torch's name, or None if ambiguous.

        Each stand-in is written once (later uses are memo lookups), so its
        instruction's bytes occur exactly once, unless a string in the data
        happens to contain them too: then the caller falls back to the pure pickler.
        """
        for name in self.used:
            stand_in = b"c" + f"{__name__}\n{name.attr}\n".encode()
            if data.count(stand_in) != 1:
                return None
            data = data.replace(stand_in, b"c" + f"{name.module}\n{name.name}\n".encode())
        return data


# the pure-Python pickler: typeshed does not describe its save/save_global/write/memoize
_PyPickler: Any = pickle._Pickler


class _PurePickler(_TensorReducer, _PyPickler):
    """The pure-Python pickler, whose ``save_global`` writes torch's names directly.

    Slower (about 3x on a state_dict of small tensors), so used only where the
    C pickler cannot be: for dtypes pickled as values, and for data that contains
    a stand-in's name.
    """

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file, protocol=2)
        self._init_storages()

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if isinstance(obj, np.dtype) and obj in _TORCH_DTYPE_NAMES:
            obj = _TORCH_DTYPE_NAMES[obj]  # a dtype as a value: torch's dtype global
        super().save(obj, save_persistent_id)

    def save_global(self, obj: Any, name: Any = None) -> None:
        if isinstance(obj, _TorchName):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
            self.memoize(obj)
            return
        super().save_global(obj, name)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _TorchName):
            return obj.name  # written by save_global above
        return self.reduce_value(obj)


def _pickle(obj: Any) -> tuple[bytes, list[_StorageRecord]]:
    """``obj`` pickled as torch.save pickles (protocol 2), and the storage records its tensors name."""
    buf = io.BytesIO()
    fast = _FastPickler(buf)
    try:
        fast.dump(obj)
    except _UsePurePickler:
        pass
    else:
        data = fast.torch_pickle(buf.getvalue())
        if data is not None:
            return data, fast.records
    buf = io.BytesIO()
    pure = _PurePickler(buf)
    pure.dump(obj)
    return buf.getvalue(), pure.records


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class _PlainTensor:
    """A Parameter's data pickled as a plain tensor inside ``_rebuild_parameter``."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


_ALIGNMENT = 64  # torch aligns each storage record's data to 64 bytes (its .storage_alignment record)


def _write_archive(obj: Any, fh: IO[bytes], archive: str) -> None:
    """Write ``obj`` to ``fh`` as torch.save's zip archive."""
    pkl, records = _pickle(obj)
    start = fh.tell() if fh.seekable() else 0
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        def record(name: str, data: "bytes | np.ndarray") -> None:
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = data.nbytes if isinstance(data, np.ndarray) else len(data)
            # pad the local header with an extra field so that the data starts on a 64-byte boundary
            zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
            info.extra = b""
            info.CRC = info.compress_size = 0  # as ZipFile.open(..., "w") sets them before writing the header
            here = (fh.tell() - start) if fh.seekable() else 0
            header = len(info.FileHeader(zip64))
            pad = (-(here + header + 4)) % _ALIGNMENT
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            with zf.open(info, "w", force_zip64=zip64) as dst:
                if isinstance(data, np.ndarray):
                    for i in range(0, data.size, 1 << 24):
                        dst.write(data[i:i + (1 << 24)].data)
                else:
                    dst.write(data)

        record("data.pkl", pkl)
        record(".format_version", b"1")
        record(".storage_alignment", str(_ALIGNMENT).encode())
        record("byteorder", sys.byteorder.encode())
        for rec in records:
            record(f"data/{rec.key}", rec.buffer)
        record("version", b"3\n")
        record(".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())


def _archive_name(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem and "/" not in stem else "archive"


def save(obj: Any, f: FileLike) -> None:
    """Save ``obj`` (a state_dict, an optimizer state, nested containers of tensors) as torch.save does.

    The file is torch's zip format: ``torch.load(f, weights_only=True)`` reads
    it without aiograd, and ``ag.load`` reads it back. Tensors that share
    memory are written once and share it again when loaded; Parameters load
    as Parameters. Objects other than tensors, dtypes, devices and plain
    containers are pickled as Python pickles them (loading those then needs
    ``weights_only=False``, in torch too).

    To a path, the file is written whole or not at all (NOTE [Atomic save]):
    a crash or an exception mid-save leaves the previous file intact and no
    temporary file behind. A binary file object is written in place.
    """
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), lambda fh, name: _write_archive(obj, fh, name))
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ag.save expects a path or a binary file object, got {type(f).__name__}")
    _write_archive(obj, f, "archive")  # torch's folder name when it writes to a file object
    if hasattr(f, "flush"):
        f.flush()


def _atomic_write(path: str, write: Callable[[IO[bytes], str], None]) -> None:
    """Write a file through ``write(fh, archive_name)``, replacing ``path`` only once it is complete.

    NOTE [Atomic save]: the data goes to a temporary file in the target's own
    folder (so the final rename never crosses file systems), which is flushed
    and fsynced, then renamed over the target with ``os.replace`` (atomic on
    POSIX and Windows); the folder is fsynced so the rename itself survives a
    crash. Until that rename the previous file is untouched; on any exception,
    KeyboardInterrupt included, the temporary file is removed and the
    exception re-raised. The temporary file is created with the mode a plain
    ``open(path, "wb")`` would give (the umask applies), or the previous
    file's mode when there is one; a symlink is followed, so the file it
    points at is replaced and the link kept.
    """
    archive = _archive_name(path)  # the name the caller gave, as torch names the folder inside
    if os.path.islink(path):
        path = os.path.realpath(path)
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh, archive)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----- safetensors ----------------------------------------------------------------------------

def save_safetensors(tensors: "dict[str, Tensor]", filename: "str | os.PathLike[str]",
                     metadata: "dict[str, str] | None" = None) -> None:
    """Write a dict of tensors as a ``.safetensors`` file (like ``safetensors.torch.save_file``).

    Written atomically like ``save``. Needs the ``safetensors`` package
    (``pip install 'aiograd[serialization]'``).
    """
    st = require("safetensors.numpy", "save_safetensors", "serialization")
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors expects a dict of name -> Tensor, got {type(tensors).__name__}")
    arrays = {}
    for key, value in tensors.items():
        if not isinstance(key, str) or not isinstance(value, Tensor):
            raise TypeError(f"save_safetensors expects str keys and Tensor values, got {key!r}: {type(value).__name__}")
        arrays[key] = np.ascontiguousarray(value._data)
    blob = st.save(arrays, metadata=metadata)

    def write(fh: IO[bytes], _: str) -> None:
        fh.write(blob)

    _atomic_write(os.fspath(filename), write)


def load_safetensors(filename: "str | os.PathLike[str]", device: str = "cpu") -> "dict[str, Tensor]":
    """Read a ``.safetensors`` file into a dict of tensors (like ``safetensors.torch.load_file``).

    Needs the ``safetensors`` package (``pip install 'aiograd[serialization]'``).
    """
    st = require("safetensors.numpy", "load_safetensors", "serialization")
    dev = Device(device)
    name = repr(os.fspath(filename))
    try:
        arrays = st.load_file(os.fspath(filename))
    except FileNotFoundError:
        raise
    except Exception as err:  # safetensors raises its own SafetensorError, and TypeError for dtypes numpy lacks
        raise _corrupt(name, f"{type(err).__name__}: {err}") from None
    out = {}
    for key, arr in arrays.items():
        if not arr.flags.writeable:
            arr = arr.copy()
        out[key] = Tensor._wrap(arr, dev)
    return out
