"""Containers that register what they hold, as torch.nn: ModuleList, ModuleDict, ParameterList, ParameterDict.

Entries are stored as the module's own attributes (``"0"``, ``"1"``, ... for the
lists, the key for the dicts), so ``parameters()``, ``state_dict()``, ``to()``
and ``zero_grad()`` reach them; Tensors put into a Parameter container become
Parameters (sharing their storage). ``Sequential`` lives in ``modules``.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable as IterableABC
from collections.abc import Mapping
from itertools import chain
from typing import Any, Iterable, Iterator

from ..tensor import Tensor
from .modules import Module, _addindent
from .parameter import Parameter

__all__ = ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx: Any, length: int) -> str:
    """``idx`` (negative allowed) as the attribute name of that entry; IndexError when out of range."""
    i = operator.index(idx)
    if not -length <= i < length:
        raise IndexError(f"index {i} is out of range")
    return str(i % length)


class ModuleList(Module):
    """A list of submodules, registered by position; indexing, slicing, ``append``/``extend``/``insert``/``pop``."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[_abs_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, _abs_index(idx, len(self)), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, _abs_index(idx, len(self)))
        # renumber so positions stay 0..n-1
        object.__setattr__(self, "_modules", OrderedDict((str(i), m) for i, m in enumerate(self._modules.values())))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not isinstance(modules, IterableABC):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def pop(self, key: int | slice) -> Any:
        value = self[key]
        del self[key]
        return value

    def __repr__(self) -> str:
        """Runs of identical entries are shown once, as ``(2-5): 4 x Linear(...)`` (as torch)."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list[Any]] = []  # [first, last, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [
            _addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs
        ]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class ModuleDict(Module):
    """An ordered dict of submodules, registered by key."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Any) -> None:
        """Add the entries of a mapping, a ModuleDict, or an iterable of ``(key, module)`` pairs."""
        for key, module in _key_value_pairs("ModuleDict", modules):
            self[key] = module


def _key_value_pairs(kind: str, entries: Any) -> Iterator[tuple[Any, Any]]:
    """The ``(key, value)`` pairs of a mapping (or a dict container), or of an iterable of pairs, checked as torch."""
    if not isinstance(entries, IterableABC):
        raise TypeError(
            f"{kind}.update should be called with an iterable of key/value pairs, but got {type(entries).__name__}"
        )
    if isinstance(entries, (Mapping, ModuleDict, ParameterDict)):
        yield from entries.items()
        return
    for j, item in enumerate(entries):
        if not isinstance(item, IterableABC):
            raise TypeError(f"{kind} update sequence element #{j} should be Iterable; is {type(item).__name__}")
        pair = tuple(item)
        if len(pair) != 2:
            raise ValueError(f"{kind} update sequence element #{j} has length {len(pair)}; 2 is required")
        yield pair[0], pair[1]


def _as_parameter(value: Any) -> Any:
    """Tensors stored in a Parameter container become Parameters; anything else is kept as is."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _parameter_line(key: Any, value: Any) -> str:
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(s) for s in value.shape)
        return f"  ({key}): {kind} containing: [{value.dtype} of size {size}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters (Tensors become Parameters), registered by position."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, _abs_index(idx, len(self)))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, _abs_index(idx, len(self)), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def append(self, value: Any) -> "ParameterList":
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if not isinstance(values, IterableABC) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(i, v) for i, v in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class ParameterDict(Module):
    """An ordered dict of parameters (Tensors become Parameters), registered by key."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(
                f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                f"'{type(key).__name__}')."
            )
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Any:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Any:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add the entries of a mapping, a ParameterDict, or an iterable of ``(key, value)`` pairs."""
        for key, value in _key_value_pairs("ParameterDict", parameters):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, v) for k, v in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")
