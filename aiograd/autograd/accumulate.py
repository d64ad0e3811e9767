"""Gradient accumulation into ``.grad``: the Tensor-level half of AccumulateGrad, and its locks.

The engine stages a leaf's gradient during a pass and commits it here at the end
(engine.py NOTE [Staged gradients]); ``AccumulateGrad.apply`` called directly, the
optimizers and the distributed context call these functions too.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._sparse import SparseCOO
from ..tensor import Tensor

__all__ = ["accumulate_into_grad", "accumulate_into_retained_grad", "copy_payload", "grad_lock"]


# NOTE [Atomic accumulation]: ``.grad`` is read, added into and written back by
# every pass that reaches a leaf, and passes run at once in several threads
# (``backward_sync`` in threads, one event loop per thread, device threads).
# numpy releases the GIL inside ``np.add``, so an unguarded read-modify-write
# loses updates, and two threads that both see ``.grad is None`` both install
# their own gradient. Every accumulation into a tensor's ``.grad`` (a leaf's, by
# the engine's commit or a direct ``AccumulateGrad`` call, or a retained one)
# therefore runs under ``grad_lock(tensor)``, from the None check to the store.
# (Resetting ``.grad`` in one thread while another accumulates is the caller's
# race, as in torch.) The locks are a fixed set made at import (so creating one can
# never race) and a tensor maps to one of them by identity: no per-tensor state,
# so creating tensors stays as cheap as before and copying or pickling a tensor
# never meets a lock. Two leaves that share a lock only take turns; a lock is
# held around numpy arithmetic alone (never around hooks or user code), and no
# code holds two of them, so nothing can deadlock. Uncontended, one acquire and
# release costs well under a microsecond per leaf and pass.
_GRAD_LOCKS = tuple(threading.Lock() for _ in range(61))


def grad_lock(t: Tensor) -> threading.Lock:
    """The lock guarding the read-modify-write of ``t``'s ``.grad`` (NOTE [Atomic accumulation])."""
    # Objects are 16-byte aligned; a prime modulus spreads neighbours over every lock.
    return _GRAD_LOCKS[(id(t) >> 4) % 61]


def accumulate_into_grad(variable: Tensor, g: Any, owned: bool) -> None:
    """``variable.grad += g`` with torch's rules, atomically (NOTE [Atomic accumulation]).

    ``g`` is an ndarray (which the engine may own: ``owned``) or, in a pass
    with ``create_graph``, a Tensor. An ndarray is added in place into an
    existing ``.grad``; a Tensor is added out of place so that the old
    ``.grad`` stays valid for any graph that uses it, and keeps its graph.
    """
    with _GRAD_LOCKS[(id(variable) >> 4) % 61]:  # grad_lock(variable), inlined: once per leaf and pass
        old = variable._grad
        if isinstance(g, Tensor):
            if old is None:
                variable._grad = g if g.grad_fn is not None else Tensor._wrap(copy_payload(g._data), variable._device)
            else:
                variable._grad = old + g
            return
        if old is None:
            if owned:
                arr = g
            elif g.__class__ is SparseCOO:  # a sparse gradient (NOTE [Sparse payload] in _sparse.py)
                arr = g.astype(variable._data.dtype)
            else:
                arr = np.array(g, dtype=variable._data.dtype, copy=True)
            variable._grad = Tensor._wrap(arr, variable._device)
        elif old.grad_fn is None and old._data.flags.writeable:
            np.add(old._data, g, out=old._data, casting="unsafe")
            old._bump_version()
        else:
            variable._grad = Tensor._wrap(old._data + g, variable._device)


def accumulate_into_retained_grad(t: Tensor, g: Any, owned: bool) -> None:
    """``t.grad += g`` for a non-leaf that retains its grad: always out of place (the
    retained ``.grad`` may be held by the user), atomically (NOTE [Atomic accumulation])."""
    with grad_lock(t):
        old = t._grad
        if isinstance(g, Tensor):
            t._grad = g if old is None else old + g
        elif old is None:
            arr = g if owned and g.__class__ is np.ndarray and g.flags.writeable else copy_payload(g)
            t._grad = Tensor._wrap(arr, t._device)
        else:
            t._grad = Tensor._wrap(old._data + g, t._device)


def copy_payload(a: Any) -> Any:
    """A copy of a gradient payload: an ndarray, or a sparse one (NOTE [Sparse payload] in _sparse.py)."""
    return a.copy() if a.__class__ is SparseCOO else np.array(a, copy=True)
