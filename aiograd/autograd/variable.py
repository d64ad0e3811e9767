"""``Variable``: torch's legacy wrapper, which is a tensor today.

``Variable(t)`` is a new tensor sharing ``t``'s storage (``requires_grad=True``
to make it a leaf that requires grad), and every tensor is an instance of
``Variable``, as in torch since tensors and variables merged.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..tensor import Tensor, empty

if TYPE_CHECKING:
    # a Tensor to type checkers, which read a call through __init__ (NOTE [Legacy classes for
    # type checkers] in aiograd/_legacy.py)
    from ..tensor import Tensor as _Base
else:
    _Base = object


class _VariableMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:  # noqa: N805
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with ag.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            t = empty(0)
        elif isinstance(data, Tensor):
            t = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return t.requires_grad_(requires_grad)


class Variable(_Base, metaclass=_VariableMeta):
    """A tensor (``Variable(t, requires_grad=False)``): ``t``'s storage in a new leaf, which
    requires grad if asked. ``isinstance(t, Variable)`` holds for every tensor."""

    if TYPE_CHECKING:
        def __init__(self, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> None: ...
