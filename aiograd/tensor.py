"""Tensor: a numpy array plus the autograd metadata that links it into a graph.

Also the creation functions and the dtype rules: Python numbers become the
default dtype (float32, as in torch), numpy arrays keep their dtype, and only
floating tensors may require grad. The random creation functions (rand, randn...)
are in _random.py, above this module and the Generator's (NOTE [Layers] in
autograd/__init__.py).

Operations are not defined here: each family in ``aiograd.ops`` registers its ops
in a table, from which ``aiograd.ops`` binds the Tensor methods and operators
(NOTE [Op tables] in ops/_table.py), so this module stays about the data
structure; type checkers see those methods through ``_tensor_methods.pyi``.
"""

from __future__ import annotations

import numbers
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, Union

import numpy as np

from . import autograd as _autograd  # Tensor.backward: the front end, bound on first use (NOTE [Layers])
from .autograd import grad_mode as _gm
from .autograd.backward_call import BackwardCall
from .autograd.backward_call import check_backward_awaited as _check_backward_awaited
from .autograd.backward_call import pending as _backward_pending
from ._memory_format import (
    channels_last,
    channels_last_3d,
    check_format,
    contiguous_format,
    empty_in_format,
    is_contiguous_in,
    memory_format,
    preserve_format,
)
from .autograd.graph import (AccumulateGrad, Edge, Node, RemovableHandle, VersionCounter, bump_version,
                             new_version_counter, version_value)
from ._sparse import SparseCOO, sparse_coo, strided
from .device import CPU, Device, DeviceLike
from ._size import Size
from ._size import as_size as _as_size

if TYPE_CHECKING:  # the op tables' methods, for type checkers (NOTE [Typed Tensor] in ops/_stubgen.py)
    from ._tensor_methods import TensorMethods as _TensorMethods
else:
    _TensorMethods = object

__all__ = [
    "Tensor",
    "Size",
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
    "set_default_dtype",
    "get_default_dtype",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool_",
    "is_tensor",
]

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")

_default_dtype: np.dtype = float32

DTypeLike = Union[np.dtype, type, str, None]

# torch's words (TensorBody.h), so that what users find about it applies here too
_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information."
)


def set_default_dtype(dtype: DTypeLike) -> None:
    """Set the dtype that Python floats become (float32 or float64)."""
    global _default_dtype
    d = np.dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


def get_default_dtype() -> np.dtype:
    """The dtype that Python floats become."""
    return _default_dtype


def _is_float_dtype(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.kind == "c"


class Tensor(_TensorMethods):
    """A numpy array with autograd metadata.

    ``grad_fn`` is the node that made it (``None`` for a leaf); ``output_nr``
    says which output of that node it is. A leaf that requires grad sends its
    gradient to an ``AccumulateGrad`` node, created on first use.
    """

    __slots__ = (
        "_data",
        "_requires_grad",
        "grad_fn",
        "_output_nr",
        "_grad",
        "_vc",
        "_device",
        "_grad_accumulator",
        "_hooks",
        "_post_accumulate_hooks",
        "_retains_grad",
        "_base",
        "_name",
        "__weakref__",
    )

    _data: np.ndarray
    _requires_grad: bool
    grad_fn: "Node | None"
    _output_nr: int
    _grad: "Tensor | None"
    _vc: "VersionCounter | None"
    _device: Device
    _grad_accumulator: "weakref.ReferenceType[AccumulateGrad] | None"
    _hooks: "dict[int, Any] | None"
    _post_accumulate_hooks: "dict[int, Any] | None"
    _retains_grad: bool
    _base: "Tensor | None"
    _name: "str | None"

    # Let numpy binary ops on (ndarray, Tensor) defer to the Tensor.
    __array_priority__ = 1000

    def __init__(self, *args: Any, device: DeviceLike | None = None) -> None:
        """torch's legacy constructor: ``Tensor(3, 4)`` (uninitialised, of the default dtype),
        ``Tensor([1, 2])`` (a copy of the data in the default dtype), ``Tensor()`` (empty) or
        ``Tensor(other)`` (sharing ``other``'s storage). ``ag.tensor`` is the constructor to prefer."""
        data = _legacy_data("Tensor", args, None, device)
        dev = Device(device) if device is not None else CPU
        if isinstance(data, Tensor):
            _init_tensor(self, data._data, data._device)
            self._version_counter = data._version_counter
        else:
            _init_tensor(self, data, dev)

    # ----- construction fast path used by ops ---------------------------------
    @classmethod
    def _wrap(cls, data: np.ndarray, device: Device = CPU) -> "Tensor":
        t = _new_object(cls)
        _init_tensor(t, data, device)
        return t

    # ----- basic attributes ---------------------------------------------------
    @property
    def data(self) -> "Tensor":
        """A tensor sharing storage with this one, detached from the graph."""
        return self.detach()

    @data.setter
    def data(self, value: "Tensor | np.ndarray") -> None:
        arr = value._data if isinstance(value, Tensor) else np.asarray(value)
        self._data = arr

    @property
    def shape(self) -> Size:
        """The shape, an ``ag.Size`` (a tuple of ints with ``numel()``), as torch's.

        NOTE [Size at the surface]: making the Size costs about 0.35 us a read, so code on the
        per-op path reads ``_data.shape`` (a plain tuple) and never this property: recording
        ``x * y``, ``x.sin()``, ``x @ y`` or ``linear`` reads it 0 times (counted on issue 18).
        """
        return _as_size(self._data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def layout(self) -> Any:
        """``aiograd.strided`` for a dense tensor, ``aiograd.sparse_coo`` for a sparse one."""
        return sparse_coo if self._data.__class__ is SparseCOO else strided

    @property
    def is_sparse(self) -> bool:
        """Whether this is a sparse COO tensor (NOTE [Sparse payload] in _sparse.py)."""
        return self._data.__class__ is SparseCOO

    @property
    def is_leaf(self) -> bool:
        """True for tensors the user made and for tensors that do not require grad."""
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version_counter(self) -> VersionCounter:
        """The counter of in-place changes this tensor shares with its views.

        NOTE [Lazy version counter]: most results of ops are never saved, viewed or
        changed in place, so the counter is made when first asked for (``_vc`` is None
        until then, which reads as version 0): by a save, a view, or an in-place change.
        Code on the per-op path reads ``_vc``. The counter is a bytearray (NOTE [Version
        counters] in autograd/graph.py).
        """
        vc = self._vc
        if vc is None:
            vc = self._vc = new_version_counter()  # NOTE [Version counters] in autograd/graph.py
        return vc

    @_version_counter.setter
    def _version_counter(self, vc: VersionCounter) -> None:
        self._vc = vc

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor (and the views sharing its counter) has seen."""
        vc = self._vc
        return 0 if vc is None else version_value(vc)

    def _bump_version(self) -> None:
        """Count one in-place change of this tensor's data (torch's ``bump_version``)."""
        bump_version(self._version_counter)

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records operations on this (leaf) tensor."""
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and not _is_float_dtype(self._data.dtype):
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients, got {self._data.dtype}"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self) -> "Tensor | None":
        """The accumulated gradient of a leaf (or of a tensor that called ``retain_grad``).

        Raises if a ``backward()`` of this task was never awaited (NOTE [Forgotten await]);
        warns, as torch does, when read on a non-leaf that does not retain its grad."""
        if _backward_pending() is not None:
            _check_backward_awaited()
        g = self._grad
        if g is None and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"assigned grad has data of a different size: got {list(value.shape)}, "
                    f"expected {list(self.shape)}"
                )
            if value.dtype != self.dtype:
                raise RuntimeError(
                    f"assigned grad has data of a different type: got {value.dtype}, expected {self.dtype}"
                )
            if value._device is not self._device:
                raise RuntimeError(
                    f"assigned grad has data located on a different device: got {value._device}, "
                    f"expected {self._device}"
                )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def T(self) -> "Tensor":
        """Transpose of all dimensions (``permute`` reversed)."""
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> "Tensor":
        """Transpose of the last two dimensions."""
        return self.transpose(-2, -1)

    @property
    def name(self) -> str | None:
        return self._name

    # ----- conversion -----------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The underlying numpy array (shared, not copied), like ``torch.Tensor.numpy``."""
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._data.__class__ is SparseCOO:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self._data
        if arr.__class__ is SparseCOO:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self) -> Any:
        """The single value of a one-element tensor, as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} values is ambiguous"
            )
        return bool(self._data.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of dimension ``dim``."""
        if dim is None:
            return _as_size(self._data.shape)
        return self._data.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def element_size(self) -> int:
        return self._data.itemsize

    def nelement(self) -> int:
        """``numel()``, under torch's other name."""
        return int(self._data.size)

    def ndimension(self) -> int:
        """``dim()``, under torch's other name."""
        return self._data.ndim

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of all the elements."""
        return self._data.nbytes

    @property
    def is_cpu(self) -> bool:
        """True: every device of aiograd is host memory."""
        return True

    def get_device(self) -> int:
        """-1, torch's answer for a tensor in host memory."""
        return -1

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        """False for bool and uint8, True for the other dtypes."""
        return self._data.dtype.kind not in "bu"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_contiguous(self, memory_format: memory_format = contiguous_format) -> bool:
        """Whether the elements lie in memory in ``memory_format``'s order (C order by default)."""
        return is_contiguous_in(self._data, memory_format)

    # ----- new tensors like this one --------------------------------------------------
    def _new(self, arr: np.ndarray, device: DeviceLike | None, requires_grad: bool) -> "Tensor":
        return _make(arr, device if device is not None else self._device, requires_grad)

    def new(self, *args: Any, device: DeviceLike | None = None) -> "Tensor":
        """torch's legacy ``x.new(...)``: as ``ag.Tensor(...)`` (sizes, data, nothing or a tensor),
        with this tensor's dtype and device."""
        data = _legacy_data("new", args, self._data.dtype, device)
        if isinstance(data, Tensor):
            return data
        return Tensor._wrap(data, Device(device) if device is not None else self._device)

    def new_zeros(self, *size: Any, dtype: DTypeLike = None, device: DeviceLike | None = None,
                  requires_grad: bool = False) -> "Tensor":
        """Zeros of ``size``, with this tensor's dtype and device unless given."""
        return self._new(np.zeros(_shape_args(size), _resolve_dtype(dtype) or self.dtype), device, requires_grad)

    def new_ones(self, *size: Any, dtype: DTypeLike = None, device: DeviceLike | None = None,
                 requires_grad: bool = False) -> "Tensor":
        """Ones of ``size``, with this tensor's dtype and device unless given."""
        return self._new(np.ones(_shape_args(size), _resolve_dtype(dtype) or self.dtype), device, requires_grad)

    def new_empty(self, *size: Any, dtype: DTypeLike = None, device: DeviceLike | None = None,
                  requires_grad: bool = False) -> "Tensor":
        """An uninitialised tensor of ``size``, with this tensor's dtype and device unless given."""
        return self._new(np.empty(_shape_args(size), _resolve_dtype(dtype) or self.dtype), device, requires_grad)

    def new_full(self, size: Sequence[int], fill_value: Any, *, dtype: DTypeLike = None,
                 device: DeviceLike | None = None, requires_grad: bool = False) -> "Tensor":
        """``fill_value`` in every element of ``size``, with this tensor's dtype and device unless given."""
        value = _fill_value(fill_value, "new_full")
        return self._new(np.full(_shape_args((size,)), value, _resolve_dtype(dtype) or self.dtype), device,
                         requires_grad)

    def new_tensor(self, data: Any, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
                   requires_grad: bool = False) -> "Tensor":
        """A copy of ``data`` as a tensor with this tensor's dtype and device unless given."""
        return self._new(_to_array(data, dtype or self.dtype, copy=True), device, requires_grad)

    # NOTE [Pickled tensors]: as torch 2.13, a pickled tensor keeps its values, dtype, device and
    # requires_grad, and drops ``.grad`` and the graph: a non-leaf comes back as a leaf that
    # requires grad. ``copy.deepcopy`` copies ``.grad`` too, and refuses a non-leaf (torch's
    # message), since copying the graph behind it is never what a user means.
    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_tensor, (self._data, self._device, self._requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> "Tensor":
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                "at the moment."
            )
        if id(self) in memo:
            return memo[id(self)]
        t = type(self)._wrap(self._data.copy(), self._device)
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def __repr__(self) -> str:
        if self._data.__class__ is SparseCOO:
            return self._sparse_repr()
        body = np.array2string(self._data, separator=", ", prefix="tensor(")
        extras = []
        if self._data.dtype != _default_dtype and not (
            self._data.dtype == int64 or self._data.dtype == bool_
        ):
            extras.append(f"dtype={self._data.dtype}")
        if self._device is not CPU:
            extras.append(f"device='{self._device}'")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    def _sparse_repr(self) -> str:
        """torch's layout of a sparse tensor's repr: its indices and values, then size and nnz."""
        coo: SparseCOO = self._data  # type: ignore[assignment]
        pad = " " * len("tensor(")

        def part(name: str, arr: np.ndarray) -> str:
            prefix = pad + f"{name}=tensor("
            body = np.array2string(arr, separator=", ", prefix=prefix)
            if arr.size == 0:
                body = f"[], size={tuple(arr.shape)}"
            return f"{name}=tensor({body})"

        extras = [f"size={coo.shape}", f"nnz={coo.nnz}"]
        if coo.dtype != _default_dtype and not (coo.dtype == int64 or coo.dtype == bool_):
            extras.append(f"dtype={coo.dtype}")
        extras.append("layout=aiograd.sparse_coo")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return ("tensor(" + part("indices", coo.indices) + ",\n" + pad + part("values", coo.values) + ",\n" + pad
                + ", ".join(extras) + ")")

    # ----- graph ----------------------------------------------------------------
    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's storage and version counter."""
        t = Tensor._wrap(self._data, self._device)
        t._version_counter = self._version_counter
        return t

    def detach_(self) -> "Tensor":
        """Detach this tensor from the graph in place, making it a leaf."""
        self.grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn._add_retains_grad(self)

    def _gradient_edge(self) -> "Edge":
        """The Edge (node, input_nr) that receives this tensor's gradient."""
        fn = self.grad_fn
        if fn is not None:
            return Edge(fn, self._output_nr)
        return Edge(self._get_grad_accumulator(), 0)

    def _get_grad_accumulator(self) -> "AccumulateGrad":
        acc = self._grad_accumulator() if self._grad_accumulator is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._grad_accumulator = weakref.ref(acc)
        return acc

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> "RemovableHandle":
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a replacement."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = {}
        self._get_grad_accumulator()._hook_store()  # the engine then looks at this leaf's hooks
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[["Tensor"], None]) -> "RemovableHandle":
        """Call ``hook(tensor)`` after a gradient has been accumulated into this leaf's ``.grad``."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        return RemovableHandle(self._post_accumulate_hooks, hook)

    def backward(
        self,
        gradient: "Tensor | None" = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: "Tensor | Sequence[Tensor] | None" = None,
        *,
        progress: "bool | Callable[[int, int], Any] | None" = None,
    ) -> BackwardCall:
        """Compute the gradient of this tensor w.r.t. the graph leaves: ``await loss.backward()``.

        Inside a running event loop nothing runs until the result is awaited
        (NOTE [Forgotten await]); where no loop runs in this thread (a plain
        script) the pass completes before this returns, as in torch
        (NOTE [Sync outside a loop]). ``progress=True`` shows a tqdm bar of the
        pass; a callable gets ``(done, total)``.
        """
        gradients = None if gradient is None else (gradient,)  # never iterate a list given as the gradient
        return BackwardCall.start(
            _autograd.run_backward, (self, gradients, retain_graph, create_graph, inputs), {"progress": progress},
            "loss.backward()",
        )

    def backward_sync(
        self,
        gradient: "Tensor | None" = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: "Tensor | Sequence[Tensor] | None" = None,
        *,
        progress: "bool | Callable[[int, int], Any] | None" = None,
    ) -> None:
        """Blocking ``backward`` for code outside an event loop."""
        gradients = None if gradient is None else (gradient,)  # never iterate a list given as the gradient
        _autograd.backward_sync(self, gradients, retain_graph, create_graph, inputs=inputs, progress=progress)

    # ----- torch's CUDA and legacy-type names (a CPU-only build's answers) -------------------
    @property
    def is_cuda(self) -> bool:
        """False: aiograd's tensors live in host memory (``cpu``, ``cpu:1``...)."""
        return False

    def cuda(self, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> "Tensor":
        """Raises, as torch built without CUDA does: device-agnostic code asks
        ``ag.cuda.is_available()`` (False) first and stays on the CPU."""
        raise AssertionError(_NO_CUDA)

    def __format__(self, format_spec: str) -> str:
        """A 0-d tensor formats as its number (``f"{loss:.4f}"``); others only with an empty spec."""
        if self._data.ndim == 0:
            return format(self._data.item(), format_spec)
        return object.__format__(self, format_spec)

    # NOTE [Method named type]: defined last in the class, as it hides the builtin ``type``
    # from the rest of the class body.
    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """Without an argument, torch's name of this tensor's type (``'torch.FloatTensor'``, the
        string torch code compares with); with one (``ag.float64``, ``'torch.DoubleTensor'`` or
        ``ag.DoubleTensor``), this tensor cast to that dtype (itself if it has it already)."""
        if dtype is None:
            name = _TYPE_NAMES.get(self._data.dtype.name)
            if name is None:
                raise TypeError(f"a tensor of dtype {self._data.dtype} has no legacy type name")
            return "torch." + name
        d = _legacy_type_dtype(dtype)
        if d == self._data.dtype:
            return self
        return self.to(d, non_blocking)


_NO_CUDA = (
    "aiograd has no CUDA devices (its tensors are numpy arrays): keep tensors on the CPU, e.g. "
    "device = 'cuda' if ag.cuda.is_available() else 'cpu'"
)

# torch's legacy tensor type of each dtype ('torch.FloatTensor'), by numpy dtype name
_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
    "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}
_TYPE_DTYPES = {name: np.dtype(d) for d, name in _TYPE_NAMES.items()}


def _legacy_type_dtype(dtype: Any) -> np.dtype:
    """The dtype ``Tensor.type(dtype)`` casts to: a dtype, a legacy type name or class."""
    if isinstance(dtype, str):
        module, _, name = dtype.rpartition(".")
        if module in ("torch", "aiograd") and name in _TYPE_DTYPES:
            return _TYPE_DTYPES[name]
        raise ValueError(f"invalid type: {dtype!r}")
    if isinstance(dtype, np.dtype):
        return dtype
    legacy = getattr(dtype, "dtype", None)  # ag.FloatTensor and the other legacy classes
    if isinstance(dtype, type) and isinstance(legacy, np.dtype):
        return legacy
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        return np.dtype(dtype)
    if isinstance(dtype, type):
        raise ValueError(f"invalid type: '{dtype.__module__}.{dtype.__qualname__}'")
    raise ValueError(f"invalid type: {dtype!r}")


def _legacy_data(name: str, args: tuple[Any, ...], dtype: np.dtype | None, device: Any) -> "np.ndarray | Tensor":
    """What torch's legacy constructors (``Tensor(...)``, ``FloatTensor(...)``) make of their
    arguments: nothing (an empty tensor), sizes (an uninitialised tensor of that shape), data
    (a copy in ``dtype``, the default dtype for ``Tensor``) or a tensor (shared as it is)."""
    want = dtype if dtype is not None else _default_dtype
    if not args:
        return np.empty((0,), want)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if dtype is not None and other._data.dtype != dtype:
            raise TypeError(f"{name}(other): expected a tensor of dtype {dtype}, got {other._data.dtype}")
        return other
    if isinstance(args[0], Size) and len(args) == 1:
        return np.empty(_shape_args(args), want)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)) for a in args):
        return np.empty(_shape_args(args), want)
    if len(args) == 1 and not isinstance(args[0], numbers.Number):
        return _to_array(args[0], want, copy=True)
    got = ", ".join(type(a).__name__ for a in args)
    if len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {got})")
    raise TypeError(
        f"{name}() received an invalid combination of arguments - got ({got}), but expected one of: (), "
        "(int ...sizes), (Size size), (sequence data), (Tensor other)"
    )


def _rebuild_tensor(data: np.ndarray, device: Device, requires_grad: bool) -> Tensor:
    """Unpickle a tensor (NOTE [Pickled tensors])."""
    t = Tensor._wrap(data, device)
    t._requires_grad = requires_grad
    return t


def _init_tensor(t: Tensor, data: np.ndarray, device: Device) -> None:
    # new_tensor writes the same stores out (NOTE [One tensor initializer])
    t._data = data
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._device = device
    t._grad_accumulator = None
    t._hooks = None
    t._post_accumulate_hooks = None
    t._retains_grad = False
    t._base = None
    t._name = None


_new_object = object.__new__


def new_tensor(data: np.ndarray, device: Device) -> Tensor:
    """A new leaf holding ``data`` (an ndarray, not copied): the result of an op.

    NOTE [One tensor initializer]: every op's result is made here, so ``_init_tensor``'s
    stores are written out below instead of called (one Python call less per op);
    tests/test_tensor.py checks that both set every slot to the same value. The generated
    pointwise nodes' ``record`` copies these lines (ops/_pointwise.py NOTE [Recorded by the
    node class]); regenerate ops/_pointwise_nodes.py after changing them."""
    t = _new_object(Tensor)
    t._data = data
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._device = device
    t._grad_accumulator = None
    t._hooks = None
    t._post_accumulate_hooks = None
    t._retains_grad = False
    t._base = None
    t._name = None
    return t


def _resolve_dtype(dtype: DTypeLike) -> np.dtype | None:
    if dtype is None:
        return None
    if dtype is float:
        return _default_dtype
    return np.dtype(dtype)


def _contains_tensor(data: Any) -> bool:
    if isinstance(data, (list, tuple)):
        return any(isinstance(x, Tensor) or _contains_tensor(x) for x in data)
    return False


def _unwrap_nested(data: Any) -> Any:
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(x) for x in data]
    return data


def _to_array(data: Any, dtype: DTypeLike, copy: bool) -> np.ndarray:
    """Convert user data to an ndarray following torch's dtype inference."""
    want = _resolve_dtype(dtype)
    if isinstance(data, Tensor):
        arr = data._data
        return arr.astype(want) if want is not None and want != arr.dtype else (arr.copy() if copy else arr)
    if isinstance(data, np.ndarray):
        _check_numeric_array(data)
        if want is not None and want != data.dtype:
            return data.astype(want)
        return data.copy() if copy else data
    if isinstance(data, np.generic):
        return np.array(data, dtype=want)
    if _contains_tensor(data):
        data = _unwrap_nested(data)
    try:
        arr = np.array(data, dtype=want)
    except (ValueError, TypeError, OverflowError):
        raise _bad_data_error(data) from None
    if arr.dtype.kind not in "biufc":
        raise _bad_data_error(data)
    if want is None:
        if arr.dtype.kind == "f":
            arr = arr.astype(_default_dtype, copy=False)
        elif arr.dtype.kind == "c":
            arr = arr.astype(np.complex64 if _default_dtype == float32 else np.complex128, copy=False)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(int64, copy=False)
    return arr


def _check_numeric_array(arr: np.ndarray) -> None:
    if arr.dtype.kind not in "biufc":
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
            "uint16, uint8, and bool."
        )


def _is_nest(x: Any) -> bool:
    return isinstance(x, (list, tuple, range)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _bad_data_error(data: Any) -> Exception:
    """torch's error for data that is not a rectangular nest of numbers.

    As torch, the expected shape is read along the first elements, then every
    element is checked against it: a wrong length, a number where a sequence
    belongs (or the reverse), or a leaf that is not a number.
    """
    shape = []
    x = data
    while _is_nest(x):
        shape.append(len(x))
        if not len(x):
            break
        x = x[0]

    def check(x: Any, dim: int) -> Exception | None:
        if dim < len(shape):
            if not _is_nest(x):
                return TypeError(
                    f"not a sequence: expected a sequence of length {shape[dim]} at dim {dim}, got {type(x).__name__}"
                )
            if len(x) != shape[dim]:
                return ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(x)})")
            for item in x:
                err = check(item, dim + 1)
                if err is not None:
                    return err
            return None
        if isinstance(x, (str, bytes)):
            return TypeError(f"invalid data type '{type(x).__name__}'")
        if _is_nest(x):
            return TypeError(f"must be real number, not {type(x).__name__}")
        if isinstance(x, int) and not -(2**63) <= x < 2**63:
            return ValueError(f"Overflow when unpacking long long: {x} does not fit in int64")
        if isinstance(x, numbers.Number) or (isinstance(x, (np.generic, np.ndarray)) and x.dtype.kind in "biufc"):
            return None
        return RuntimeError(f"Could not infer dtype of {type(x).__name__}")

    return check(data, 0) or TypeError(f"can't convert {type(data).__name__} to a tensor")


def _make(arr: np.ndarray, device: DeviceLike | None, requires_grad: bool) -> Tensor:
    t = Tensor._wrap(arr, Device(device) if device is not None else CPU)
    if requires_grad:
        t.requires_grad_(True)
    return t


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def tensor(
    data: Any, *, dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False
) -> Tensor:
    """A new leaf tensor holding a copy of ``data``."""
    return _make(_to_array(data, dtype, copy=True), device, requires_grad)


def as_tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike | None = None) -> Tensor:
    """A tensor sharing ``data``'s memory when possible (no copy for matching ndarrays/tensors)."""
    if isinstance(data, Tensor) and (dtype is None or np.dtype(dtype) == data.dtype):
        if device is None or Device(device) is data._device:
            return data
        return data.to(device)
    return _make(_to_array(data, dtype, copy=False), device, False)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory; its dtype is kept."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _check_numeric_array(array)
    return Tensor._wrap(array)


def _shape_args(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if len(size) == 1 and isinstance(size[0], Tensor):
        size = tuple(size[0].tolist())
    out = []
    for s in size:
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"size must be a sequence of integers, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _size_arg(op: str, sizes: tuple[Any, ...], size: Any) -> tuple[int, ...]:
    """The shape of a creation function: its positional sizes, or its ``size=`` keyword."""
    if size is None:
        return _shape_args(sizes)
    if sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    return _shape_args((size,))


def _float_or(dtype: DTypeLike) -> np.dtype:
    d = _resolve_dtype(dtype)
    return d if d is not None else _default_dtype


def zeros(*sizes: Any, size: Any = None, dtype: DTypeLike = None, device: DeviceLike | None = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros, its shape given as sizes (``zeros(2, 3)``), one sequence or ``size=``."""
    return _make(np.zeros(_size_arg("zeros", sizes, size), _float_or(dtype)), device, requires_grad)


def ones(*sizes: Any, size: Any = None, dtype: DTypeLike = None, device: DeviceLike | None = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones, its shape given as sizes (``ones(2, 3)``), one sequence or ``size=``."""
    return _make(np.ones(_size_arg("ones", sizes, size), _float_or(dtype)), device, requires_grad)


def empty(*sizes: Any, size: Any = None, dtype: DTypeLike = None, device: DeviceLike | None = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of uninitialised values, its shape given as sizes (``empty(2, 3)``), one sequence or ``size=``."""
    return _make(np.empty(_size_arg("empty", sizes, size), _float_or(dtype)), device, requires_grad)


def _fill_value(fill_value: Any, op: str) -> Any:
    """A fill value: a number, or a one-element tensor read as its number."""
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (numbers.Number, np.number, np.bool_)):
        raise TypeError(f"{op}(): argument 'fill_value' must be a number, not {type(fill_value).__name__}")
    return fill_value


def full(
    size: Sequence[int], fill_value: Any, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``fill_value`` in every element; the dtype follows it (bool, int64 or the default float) unless given."""
    fill_value = _fill_value(fill_value, "full")
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = bool_
        elif isinstance(fill_value, numbers.Integral):
            dtype = int64
        elif isinstance(fill_value, numbers.Complex) and not isinstance(fill_value, numbers.Real):
            dtype = np.complex64 if _default_dtype == float32 else np.complex128
        else:
            dtype = _default_dtype
    return _make(np.full(_shape_args((size,)), fill_value, _resolve_dtype(dtype)), device, requires_grad)


def arange(
    start: Any, end: Any = None, step: Any = 1, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False,
) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = int64 if ints else _default_dtype
    return _make(np.arange(start, end, step, dtype=_resolve_dtype(dtype)), device, requires_grad)


def linspace(
    start: float, end: float, steps: int, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False,
) -> Tensor:
    return _make(np.linspace(start, end, steps, dtype=_float_or(dtype)), device, requires_grad)


def eye(
    n: int, m: int | None = None, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False,
) -> Tensor:
    return _make(np.eye(n, m, dtype=_float_or(dtype)), device, requires_grad)


def _like(t: Tensor, dtype: DTypeLike, op: str, fmt: Any) -> tuple[tuple[int, ...], np.dtype]:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    check_format(fmt, t.ndim)
    return t.shape, (_resolve_dtype(dtype) or t.dtype)


def _like_result(
    t: Tensor, values: Any, d: np.dtype, fmt: Any, device: DeviceLike | None, requires_grad: bool
) -> Tensor:
    """``values`` (a number or an array of ``t``'s shape) in a new tensor laid out as ``fmt``
    (``preserve_format``: as ``t``)."""
    arr = empty_in_format(t.shape, d, fmt, t._data)
    arr[...] = values
    return _make(arr, device if device is not None else t.device, requires_grad)


def zeros_like(t: Tensor, *, dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False,
               memory_format: memory_format = preserve_format) -> Tensor:
    """Zeros of ``t``'s shape (and dtype, device, layout unless given)."""
    shape, d = _like(t, dtype, "zeros_like", memory_format)
    return _like_result(t, 0, d, memory_format, device, requires_grad)


def ones_like(t: Tensor, *, dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False,
              memory_format: memory_format = preserve_format) -> Tensor:
    """Ones of ``t``'s shape (and dtype, device, layout unless given)."""
    shape, d = _like(t, dtype, "ones_like", memory_format)
    return _like_result(t, 1, d, memory_format, device, requires_grad)


def empty_like(t: Tensor, *, dtype: DTypeLike = None, device: DeviceLike | None = None, requires_grad: bool = False,
               memory_format: memory_format = preserve_format) -> Tensor:
    """An uninitialised tensor of ``t``'s shape (and dtype, device, layout unless given)."""
    shape, d = _like(t, dtype, "empty_like", memory_format)
    return _make(empty_in_format(shape, d, memory_format, t._data), device if device is not None else t.device,
                 requires_grad)


def full_like(
    t: Tensor, fill_value: Any, *, dtype: DTypeLike = None, device: DeviceLike | None = None,
    requires_grad: bool = False, memory_format: memory_format = preserve_format,
) -> Tensor:
    """``fill_value`` in every element of a tensor of ``t``'s shape (and dtype, device, layout unless given)."""
    shape, d = _like(t, dtype, "full_like", memory_format)
    return _like_result(t, _fill_value(fill_value, "full_like"), d, memory_format, device, requires_grad)


def _iter_tensors(xs: Iterable[Any]) -> Iterable[Tensor]:
    return (x for x in xs if isinstance(x, Tensor))
