"""Module and the layers built on it, as torch.nn.

A Module registers what is assigned to it: a ``Parameter`` becomes a
parameter, a ``Module`` a submodule, a tensor named by ``register_buffer`` a
buffer. ``parameters()``, ``state_dict()``, ``train()``/``eval()`` and
``zero_grad()`` walk that tree.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from ...autograd.grad_mode import no_grad
from ...device import Device
from ...tensor import _NO_CUDA, Tensor, _legacy_type_dtype, empty, get_default_dtype
from .. import functional as F
from .. import init
from ..parameter import Parameter

__all__ = ["Module", "Sequential", "Identity", "Linear", "Dropout", "Flatten", "Unflatten", "Embedding"]


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class of every layer: holds parameters, buffers and submodules."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ----- registration -----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, keep=params)
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(aiograd.nn.Parameter or None expected)"
                )
            params[name] = None
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, keep=modules)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(aiograd.nn.Module or None expected)"
                )
            modules[name] = None
            return
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' (aiograd.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_from(self, name: str, keep: Any = None) -> None:
        """Forget ``name`` everywhere but in ``keep``, the store about to get it (its place there is kept, as torch)."""
        for d in (self.__dict__, self._parameters, self._buffers, self._modules):
            if d is not keep and name in d:
                del d[name]
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(aiograd.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (saved in state_dict when ``persistent``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (aiograd.Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(self, name, "module", allow_existing=name in self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        mod: Module = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    # ----- traversal ----------------------------------------------------------------
    def named_modules(self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, v in getattr(mod, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)  # type: ignore[misc]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ----- modes, grads, functions ----------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, as torch)."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        """Call ``fn`` on every submodule (children first), then on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """Move (``to("cpu:1")``) and/or cast (``to(ag.float64)``) parameters and buffers in place."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        for a in args:
            if isinstance(a, (str, Device)):
                device = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            else:
                dtype = a
        dev = Device(device) if device is not None else None
        dt = np.dtype(dtype) if dtype is not None else None
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if dt is not None and t._data.dtype.kind == "f" and t._data.dtype != dt:
                    t._data = t._data.astype(dt)
                    t._bump_version()
                    if t._grad is not None:
                        t._grad = Tensor._wrap(t._grad._data.astype(dt), t._grad._device)
                    t._grad_accumulator = None
                if dev is not None and t._device is not dev:
                    t._device = dev
                    if t._grad is not None:
                        t._grad._device = dev
                    t._grad_accumulator = None
        return self

    def float(self) -> "Module":
        return self.to(np.float32)

    def double(self) -> "Module":
        return self.to(np.float64)

    def half(self) -> "Module":
        """Cast floating parameters and buffers to float16."""
        return self.to(np.float16)

    def cpu(self) -> "Module":
        """The module itself: its tensors are already in host memory (``to("cpu")`` moves
        them from ``cpu:1``... to ``cpu``)."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> "Module":
        """Raises, as torch built without CUDA does (``ag.cuda.is_available()`` is False)."""
        raise AssertionError(_NO_CUDA)

    def type(self, dst_type: Any) -> "Module":
        """Cast every parameter and buffer, integer ones too (as torch), to ``dst_type``: a dtype,
        a legacy type name (``'torch.DoubleTensor'``) or class (``ag.DoubleTensor``)."""
        dt = _legacy_type_dtype(dst_type)
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if t._data.dtype != dt:
                    t._data = t._data.astype(dt)
                    t._bump_version()
                    if t._grad is not None:
                        t._grad = Tensor._wrap(t._grad._data.astype(dt), t._grad._device)
                    t._grad_accumulator = None
        return self

    # ----- state_dict ---------------------------------------------------------------------
    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict``; with ``strict``, keys must match exactly."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        expected: set[str] = set()
        for mod_prefix, mod in self.named_modules():
            pre = mod_prefix + "." if mod_prefix else ""
            local = [(n, v, True) for n, v in mod._parameters.items()] + [
                (n, v, False) for n, v in mod._buffers.items() if n not in mod._non_persistent_buffers
            ]
            for name, cur, _is_param in local:
                if cur is None:
                    continue
                key = pre + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                val = state_dict[key]
                arr = val._data if isinstance(val, Tensor) else np.asarray(val)
                if arr.shape != cur._data.shape:
                    errors.append(
                        f"size mismatch for {key}: copying a param with shape {_size(arr.shape)} from checkpoint, "
                        f"the shape in current model is {_size(cur._data.shape)}."
                    )
                    continue
                with no_grad():
                    if assign:
                        cur._data = np.array(arr, dtype=cur._data.dtype)
                    else:
                        np.copyto(cur._data, arr, casting="unsafe")
                    cur._bump_version()
        for key in state_dict.keys():
            if key not in expected:
                unexpected.append(key)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__, "\n\t".join(errors))
            )
        return _IncompatibleKeys(missing, unexpected)

    # ----- repr --------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = [f"({name}): " + _addindent(repr(m), 2) for name, m in self._modules.items()]
        lines = lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra.split("\n")) == 1 and not child_lines:
                main += extra
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))


def _size(shape: tuple[int, ...]) -> str:
    return f"Size({list(shape)})"


def _check_name(mod: Module, name: str, kind: str, allow_existing: bool = False) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(mod, name) and not allow_existing and name not in getattr(mod, f"_{kind}s" if kind != "module" else "_modules", {}):
        raise KeyError(f"attribute '{name}' already exists")


def _zero_grad(p: Tensor, set_to_none: bool) -> None:
    g = p._grad
    if g is None:
        return
    if set_to_none:
        p._grad = None
        return
    if g.grad_fn is not None:
        g = g.detach()
        p._grad = g
    if g._data.flags.writeable:
        g._data[...] = 0
        g._bump_version()
    else:
        p._grad = Tensor._wrap(np.zeros_like(g._data), g._device)


# ----- containers ---------------------------------------------------------------------------


class Sequential(Module):
    """Modules applied in order; indexable, iterable, sliceable."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:
        for m in self._modules.values():
            input = m(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx: Any) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        n = len(items)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return items[idx % n][1]

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self


# ----- layers ------------------------------------------------------------------------------


def _param(*shape: int, dtype: Any = None) -> Parameter:
    return Parameter(empty(*shape, dtype=dtype))


def weight_and_bias(module: "Module", weight_shape: tuple[int, ...], bias_size: int | None, dtype: Any,
                    device: Any) -> None:
    """A layer's ``weight`` and ``bias`` (None when ``bias_size`` is, as torch registers it), initialised by the
    module's ``reset_parameters`` and then moved to ``device``."""
    module.weight = _param(*weight_shape, dtype=dtype)
    if bias_size is not None:
        module.bias = _param(bias_size, dtype=dtype)
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()
    if device is not None:
        module.to(device)


def kaiming_reset(weight: Tensor, bias: Tensor | None) -> None:
    """torch's default init of Linear and convolution layers: kaiming-uniform weight (a = sqrt(5)),
    bias uniform in +-1/sqrt(fan_in)."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def affine_parameters(module: "Module", shape: tuple[int, ...], affine: bool, bias: bool, dtype: Any) -> None:
    """A normalization layer's ``weight`` and ``bias`` of ``shape`` (registered as None when absent, as torch)."""
    if affine:
        module.weight = _param(*shape, dtype=dtype)
        if bias:
            module.bias = _param(*shape, dtype=dtype)
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x @ W.T + b`` with W (out_features, in_features), initialised as torch."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in_features), out_features if bias else None, dtype, device)

    def reset_parameters(self) -> None:
        kaiming_reset(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Dropout(Module):
    """Zero elements with probability ``p`` while training (scaling the rest by 1/(1-p))."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _DropoutNd(Dropout):
    """Channel dropout: whole channels zeroed with probability ``p`` while training."""

    _fn: Callable[..., Tensor]

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input while training."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input while training."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input while training."""

    _fn = staticmethod(F.dropout3d)


class CosineSimilarity(Module):
    """``F.cosine_similarity`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``F.pairwise_distance``: the p-norm of ``x1 - x2 + eps`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Bilinear(Module):
    """``y = x1 @ W[o] @ x2 + b[o]`` with W (out_features, in1_features, in2_features), initialised as torch
    (uniform in +-1/sqrt(in1_features))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        weight_and_bias(self, (out_features, in1_features, in2_features), out_features if bias else None, dtype,
                        device)

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size`` (the inverse of Flatten; one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}"
            )
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type {type(size).__name__} at pos {i}"
                )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        shape = input.shape
        dim = self.dim + len(shape) if self.dim < 0 else self.dim
        if not 0 <= dim < len(shape):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-len(shape)}, {len(shape) - 1}], but got {self.dim})"
            )
        sizes = tuple(self.unflattened_size)
        if sizes.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        if (known != shape[dim]) if -1 not in sizes else (known == 0 or shape[dim] % known):
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {self.dim} "
                f"({shape[dim]}) in the input tensor"
            )
        return input.reshape(*shape[:dim], *sizes, *shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim`` (N(0, 1) init)."""

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, max_norm: Any = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight: Any = None,
        _freeze: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight._data[self.padding_idx] = 0
                self.weight._bump_version()

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None, max_norm: Any = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
    ) -> "Embedding":
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx, max_norm=max_norm,
                   norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)

    def forward(self, input: Any) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse:
            s += ", sparse=True"
        return s
