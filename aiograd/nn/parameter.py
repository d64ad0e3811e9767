"""Parameter: a Tensor that a Module registers as one of its parameters."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, get_default_dtype


class Parameter(Tensor):
    """A leaf Tensor that ``Module.__setattr__`` registers as a parameter.

    ``Parameter(t)`` shares ``t``'s storage (and version counter) and requires
    grad unless ``requires_grad=False``, like ``torch.nn.Parameter``.
    """

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            arr = np.empty((0,), dtype=get_default_dtype())
            t = cls._wrap(arr)
        elif isinstance(data, Tensor):
            t = cls._wrap(data._data, data._device)
            t._version_counter = data._version_counter
        else:
            arr = np.asarray(data)
            if arr.dtype.kind == "f" and not isinstance(data, np.ndarray):
                arr = arr.astype(get_default_dtype())
            t = cls._wrap(arr)
        t.requires_grad_(requires_grad)
        return t  # type: ignore[return-value]

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__ (Tensor.__init__ would copy the data)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: Any) -> Any:
        return (Parameter, (Tensor._wrap(self._data.copy(), self._device), self._requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._wrap(self._data.copy(), self._device), self._requires_grad)
        if self._grad is not None:
            p._grad = Tensor._wrap(self._grad._data.copy(), self._device)
        memo[id(self)] = p
        return p
