"""The payload of a sparse COO tensor, ``SparseCOO``, and the layouts ``strided`` and ``sparse_coo``.

NOTE [Sparse payload]: a sparse tensor is an ordinary ``Tensor`` whose ``_data`` is a
``SparseCOO`` (indices, values, shape, coalesced flag) instead of an ndarray; the
``Tensor`` class, its slots and the dense ops are unchanged, so the dense path pays
nothing for sparse support (no branch per op). What makes that work:

* the payload answers what the graph asks of any payload: ``shape``, ``dtype``,
  ``ndim`` and ``size`` (the dense element count, as ``numel``), so edges,
  ``InputMetadata``, ``validate_outputs``, saved tensors and version counters take a
  sparse tensor, or a sparse gradient, as they take a dense one;
* numpy's protocols are where a dense op reaches the payload. ``__array_ufunc__``
  and ``__array_function__`` implement the few array operations that have torch's
  sparse meaning: ``matmul`` against a dense operand (so ``S @ D``, ``ag.mm`` and
  ``ag.spmm`` run the dense op and its MmBackward0, with torch's dense gradient for
  the sparse operand), ``transpose``/``swapaxes`` (``S.t()``), ``sum`` (to a dense
  result, as ``Tensor.sum`` of a sparse tensor in torch), ``add``/``subtract``
  (sparse with sparse stays sparse, with dense is dense, also into an ``out=``
  array: how the engine adds gradients) and ``multiply``/``true_divide`` by a
  number and ``negative`` (a sparse result). The pointwise ops keep a sparse result
  as it is (ops/_pointwise.py, on their path for results that are not ndarrays),
  so ``S * 2`` is a sparse MulBackward0 output. Every other ufunc or
  function, ``__array__`` (an implicit dense conversion), indexing and any other
  array attribute raise ``NotImplementedError`` naming the operation (for an
  attribute, the aiograd op that reached for it, read off the stack on that error
  path) and the layout, so an unsupported op on a sparse tensor is one clear line,
  never a numpy traceback;
* ``flags.writeable`` is False and ``base`` is None, so the engine never adds into
  a sparse gradient in place and ``make_view`` keeps a transposed payload as a new
  tensor.

Where the autograd layer turns a gradient into a Tensor or copies it (``.grad``
accumulation, ``ag.grad``'s results, hooks, custom Functions, anomaly mode,
gradcheck), it keeps a sparse payload sparse (``as_payload``, ``copy_payload`` in
autograd/graph.py).

A payload is never changed after it is made (``coalesce`` returns a new one); its
``indices`` are int64 of shape ``(sparse_dim, nnz)``, its ``values`` of shape
``(nnz, *dense_dims)``. Only the graph ops in ops/sparse.py make them.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

__all__ = ["SparseCOO", "layout", "strided", "sparse_coo", "unsupported", "is_sparse_payload", "as_payload"]


class layout:
    """The memory layout of a tensor: ``aiograd.strided`` (dense) or ``aiograd.sparse_coo``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"aiograd.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # the module attribute of that name: pickling keeps the singleton


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _calling_op() -> str | None:
    """The name of the aiograd op that the user called, read off the stack (only on the error path):
    the outermost frame of an ``aiograd.ops`` module whose function has a public name."""
    frame = sys._getframe(2)
    found = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("aiograd."):
            if found is not None:
                break
        elif module.startswith(_OP_MODULES):
            name = frame.f_code.co_name
            if not name.startswith("_") and name not in _INTERNAL_NAMES:
                found = name
        frame = frame.f_back  # type: ignore[assignment]
    return found


_OP_MODULES = ("aiograd.ops", "aiograd.tensor", "aiograd._random", "aiograd.nn", "aiograd.optim")
_INTERNAL_NAMES = frozenset({"forward", "general", "method", "wrapper", "hooked", "apply", "<lambda>", "<genexpr>"})


def unsupported_attribute(name: str) -> NotImplementedError:
    """The error for a dense op that reached for the array attribute ``name`` of a sparse payload."""
    op = _calling_op()
    return unsupported(f"{op}()" if op is not None else f"'{name}'")


def unsupported(what: str) -> NotImplementedError:
    """The error for an operation that sparse COO tensors do not support (NOTE [Sparse payload])."""
    return NotImplementedError(
        f"{what} is not supported for sparse COO tensors (layout=aiograd.sparse_coo); "
        "convert with .to_dense() first"
    )


class _Flags:
    """The ``flags`` the engine reads: never written in place (NOTE [Sparse payload])."""

    __slots__ = ()
    writeable = False
    c_contiguous = False
    f_contiguous = False


_FLAGS = _Flags()


class SparseCOO:
    """A sparse COO array: ``values[k]`` sits at ``indices[:, k]``; repeated indices add up
    unless ``coalesced`` says they are sorted and unique (NOTE [Sparse payload])."""

    __slots__ = ("indices", "values", "shape", "coalesced")
    # numpy's binary operators defer to __array_ufunc__ of the operand with the highest priority
    __array_priority__ = 2000
    flags = _FLAGS
    base = None

    indices: np.ndarray
    values: np.ndarray
    shape: tuple[int, ...]
    coalesced: bool

    def __init__(self, indices: np.ndarray, values: np.ndarray, shape: tuple[int, ...], coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = coalesced

    # ----- what the graph reads ---------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[1])

    @property
    def sparse_dim(self) -> int:
        return int(self.indices.shape[0])

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - 1

    @property
    def itemsize(self) -> int:
        return int(self.values.itemsize)

    def __repr__(self) -> str:
        return f"SparseCOO(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}, coalesced={self.coalesced})"

    # ----- conversions ------------------------------------------------------------------
    def copy(self) -> "SparseCOO":
        return SparseCOO(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def astype(self, dtype: Any, order: Any = "K", casting: Any = "unsafe", copy: bool = True) -> "SparseCOO":
        """The same entries with values cast to ``dtype`` (indices shared; ``order`` applies to the values)."""
        return SparseCOO(self.indices, self.values.astype(dtype, order=order, casting=casting, copy=copy), self.shape,
                         self.coalesced)

    def linear_indices(self) -> np.ndarray:
        """Each entry's position in the row-major order of the sparse dims (int64)."""
        sd = self.sparse_dim
        if sd == 0:
            return np.zeros(self.nnz, np.int64)
        return np.ravel_multi_index(tuple(self.indices), self.shape[:sd])

    def coalesce(self) -> "SparseCOO":
        """Sorted, unique indices with the values of repeated ones summed (itself if already so)."""
        if self.coalesced:
            return self
        nnz = self.nnz
        if nnz == 0:
            return SparseCOO(self.indices, self.values, self.shape, True)
        lin = self.linear_indices()
        order = np.argsort(lin, kind="stable")
        lin = lin[order]
        starts = np.flatnonzero(np.concatenate(([True], lin[1:] != lin[:-1])))
        values = np.add.reduceat(self.values[order], starts, axis=0)
        sd = self.sparse_dim
        if sd:
            indices = np.stack(np.unravel_index(lin[starts], self.shape[:sd])).astype(np.int64, copy=False)
        else:
            indices = np.zeros((0, len(starts)), np.int64)
        return SparseCOO(indices.reshape(sd, len(starts)), values, self.shape, True)

    def to_dense(self) -> np.ndarray:
        out = np.zeros(self.shape, self.dtype)
        where = tuple(self.indices)
        if self.coalesced:
            out[where] = self.values
        else:
            np.add.at(out, where, self.values)
        return out

    def gather(self, g: Any) -> np.ndarray:
        """The entries of ``g`` (dense, or another SparseCOO of this shape) at this payload's
        indices: the values of ``g.sparse_mask(self)``, one per entry, repeated ones included."""
        if g.__class__ is not SparseCOO:
            return np.asarray(g)[tuple(self.indices)]
        gc = g.coalesce()
        out = np.zeros((self.nnz, *self.shape[self.sparse_dim:]), g.dtype)
        if gc.nnz == 0 or self.nnz == 0:
            return out
        glin = gc.linear_indices()
        mine = self.linear_indices()
        pos = np.searchsorted(glin, mine)
        pos[pos == len(glin)] = 0
        hit = glin[pos] == mine
        out[hit] = gc.values[pos[hit]]
        return out

    def tocsr(self) -> Any:
        """This 2-D payload as a ``scipy.sparse.csr_array`` (repeated indices summed)."""
        import scipy.sparse  # on first use: a sparse product is the first to need it

        if self.ndim != 2 or self.dense_dim:
            raise unsupported(f"a product of a sparse tensor of {self.sparse_dim} sparse and {self.dense_dim} "
                              "dense dims (only 2-D sparse matrices)")
        return scipy.sparse.csr_array((self.values, (self.indices[0], self.indices[1])), shape=self.shape)

    def transpose(self, axes: tuple[int, ...]) -> "SparseCOO":
        """The dims permuted as ``np.transpose``; the dense dims of a hybrid tensor stay last."""
        sd = self.sparse_dim
        if tuple(axes[sd:]) != tuple(range(sd, self.ndim)):
            raise unsupported("permuting the dense dims of a hybrid tensor")
        ax = list(axes[:sd])
        return SparseCOO(self.indices[ax], self.values, tuple(self.shape[a] for a in axes),
                         self.coalesced and ax == sorted(ax))

    @property
    def T(self) -> "SparseCOO":
        return self.transpose(tuple(reversed(range(self.ndim))))

    def sum_dense(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> np.ndarray:
        """``np.sum`` of the dense tensor this payload stands for, without making it."""
        nd = self.ndim
        if axis is None:
            axes = tuple(range(nd))
        else:
            given: tuple[int, ...] = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(axis)
            axes = tuple(sorted(a % nd if nd else a for a in given))
        sd = self.sparse_dim
        vals = self.values
        dense_axes = tuple(1 + a - sd for a in axes if a >= sd)
        if dense_axes:
            vals = vals.sum(axis=dense_axes)
        keep = [d for d in range(sd) if d not in axes]
        out_shape = tuple(self.shape[d] for d in keep) + tuple(
            self.shape[d] for d in range(sd, nd) if d not in axes)
        out = np.zeros(out_shape, dtype if dtype is not None else self.dtype)
        if keep:
            np.add.at(out, tuple(self.indices[keep]), vals)
        else:
            out += vals.sum(axis=0, dtype=out.dtype) if self.nnz else 0
        if keepdims:
            out = out.reshape(tuple(1 if d in axes else self.shape[d] for d in range(nd)))
        return out

    # ----- adding gradients (the engine's InputBuffer and .grad accumulation) -----------
    def _add(self, other: Any) -> Any:
        if other.__class__ is SparseCOO:
            if other.shape != self.shape:
                raise RuntimeError(f"sparse add: shapes {list(self.shape)} and {list(other.shape)} differ")
            if other.sparse_dim != self.sparse_dim:
                raise unsupported("adding sparse tensors of different sparse dims")
            dtype = np.result_type(self.dtype, other.dtype)
            return SparseCOO(np.concatenate((self.indices, other.indices), axis=1),
                             np.concatenate((self.values.astype(dtype, copy=False),
                                             other.values.astype(dtype, copy=False))), self.shape, False)
        if isinstance(other, np.ndarray) and other.shape == self.shape:
            out = np.array(other, dtype=np.result_type(self.dtype, other.dtype), copy=True)
            np.add.at(out, tuple(self.indices), self.values)
            return out
        raise unsupported("add with this operand")

    def __add__(self, other: Any) -> Any:
        return self._add(other)

    __radd__ = __add__

    # ----- numpy's protocols: the supported operations, a clear error for the rest ------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = getattr(ufunc, "__name__", str(ufunc))
        if method != "__call__":
            raise unsupported(f"{name}.{method}")
        if ufunc is np.matmul and len(inputs) == 2 and not kwargs:
            return _matmul(inputs[0], inputs[1])
        if ufunc is np.add and len(inputs) == 2:
            out = kwargs.pop("out", None)
            kwargs.pop("casting", None)
            if kwargs:
                raise unsupported(f"add with {sorted(kwargs)}")
            a, b = inputs
            if out is None:
                return a._add(b) if a.__class__ is SparseCOO else b._add(a)
            target = out[0] if isinstance(out, tuple) else out
            if isinstance(target, np.ndarray) and target is a and b.__class__ is SparseCOO:
                np.add.at(target, tuple(b.indices), b.values.astype(target.dtype, copy=False))
                return target
            raise unsupported("add into this output")
        if ufunc is np.subtract and len(inputs) == 2 and not kwargs:
            a, b = inputs
            return a._add(-b) if a.__class__ is SparseCOO else (-b)._add(a)
        if ufunc is np.negative and len(inputs) == 1 and not kwargs:
            return self._scaled(-1)
        if (ufunc is np.multiply or ufunc is np.true_divide) and len(inputs) == 2 and not kwargs:
            a, b = inputs
            if a.__class__ is SparseCOO and _is_number(b):
                return a._scaled(b, ufunc is np.true_divide)
            if b.__class__ is SparseCOO and _is_number(a) and ufunc is np.multiply:
                return b._scaled(a)
            raise unsupported(f"{name} with an operand that is not a number")
        raise unsupported(name)

    def _scaled(self, k: Any, divide: bool = False) -> "SparseCOO":
        """The values times (divided by) the number ``k``; the aiograd op casts the result's dtype."""
        return SparseCOO(self.indices, self.values / k if divide else self.values * k, self.shape, self.coalesced)

    def __mul__(self, other: Any) -> "SparseCOO":
        if not _is_number(other):
            raise unsupported("multiply with an operand that is not a number")
        return self._scaled(other)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> "SparseCOO":
        if not _is_number(other):
            raise unsupported("true_divide with an operand that is not a number")
        return self._scaled(other, True)

    def __neg__(self) -> "SparseCOO":
        return self._scaled(-1)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.transpose:
            axes = args[1] if len(args) > 1 else kwargs.get("axes")
            return self.transpose(tuple(axes) if axes is not None else tuple(reversed(range(self.ndim))))
        if func is np.swapaxes:
            a, b = (args[1], args[2]) if len(args) == 3 else (kwargs["axis1"], kwargs["axis2"])
            perm = list(range(self.ndim))
            perm[a], perm[b] = perm[b], perm[a]
            return self.transpose(tuple(perm))
        if func is np.sum and args[0] is self:
            axis = args[1] if len(args) > 1 else kwargs.get("axis")
            return self.sum_dense(axis, bool(kwargs.get("keepdims", False)), kwargs.get("dtype"))
        raise unsupported(getattr(func, "__name__", str(func)))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        op = _calling_op()
        raise unsupported(f"{op}()" if op is not None else "an implicit conversion to a dense array")

    def __getattr__(self, name: str) -> Any:
        # only for names the class lacks: an array attribute a dense op reached for
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported_attribute(name)

    def __getitem__(self, key: Any) -> Any:
        raise unsupported("indexing")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise unsupported("indexing")

    def __iter__(self) -> Any:
        raise unsupported("iteration")

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        raise unsupported("bool()")


def as_payload(g: Any) -> Any:
    """``np.asarray(g)``, but a sparse payload is kept (where a gradient becomes a Tensor's ``_data``)."""
    return g if g.__class__ is SparseCOO else np.asarray(g)


def _is_number(x: Any) -> bool:
    """A Python number, numpy scalar or 0-d array: what a sparse tensor may be scaled by."""
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return True
    return isinstance(x, np.ndarray) and x.ndim == 0


def is_sparse_payload(x: Any) -> bool:
    return x.__class__ is SparseCOO


def _matmul(a: Any, b: Any) -> np.ndarray:
    """``a @ b`` where one operand is a 2-D SparseCOO and the other a dense 1-D or 2-D array
    (scipy.sparse's CSR product); the result is dense, as torch's."""
    if a.__class__ is SparseCOO and b.__class__ is SparseCOO:
        raise unsupported("matmul of two sparse tensors")
    if a.__class__ is SparseCOO:
        if not isinstance(b, np.ndarray) or b.ndim not in (1, 2):
            raise unsupported("matmul of a sparse matrix with an operand that is not a dense 1-D or 2-D tensor")
        out = a.tocsr() @ b
    else:
        if not isinstance(a, np.ndarray) or a.ndim != 2:
            raise unsupported("matmul of a sparse matrix with an operand that is not a dense 2-D tensor")
        out = (b.T.tocsr() @ a.T).T
    return np.ascontiguousarray(out, dtype=np.result_type(a.dtype, b.dtype))
