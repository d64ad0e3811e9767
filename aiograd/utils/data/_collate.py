"""Turning a list of samples into a batch (``default_collate``) and samples into tensors
(``default_convert``), by torch's rules.

``collate(batch, collate_fn_map=...)`` walks the structure of the first sample:
a type found in ``collate_fn_map`` (by exact type, then by ``isinstance`` in the
map's order) is handed to its function; mappings, namedtuples and sequences
are collated field by field. ``default_collate_fn_map`` holds the leaf rules:
tensors are stacked along a new first dimension, numpy arrays become tensors
and are stacked, numpy scalars become a tensor of their dtype, Python floats
a float64 tensor, Python ints an int64 tensor (bools a bool tensor), strings
and bytes stay a list. A tuple sample gives a list, as in torch.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable, Union

import numpy as np

from ...ops import stack
from ...tensor import Tensor, as_tensor, tensor

__all__ = [
    "collate", "default_collate", "default_convert", "default_collate_fn_map", "default_collate_err_msg_format",
]

# numpy dtypes that hold strings, bytes or objects: not turned into tensors
_NOT_NUMERIC = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

CollateFnMap = dict[Union[type, tuple[type, ...]], Callable[..., Any]]


def collate(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collate ``batch`` (a sequence of samples of one structure) with the leaf rules of
    ``collate_fn_map``; the containers (mappings, namedtuples, sequences) are walked here."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is None:
            fn = next((f for kind, f in collate_fn_map.items() if isinstance(elem, kind)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)

    def sub(samples: Any) -> Any:
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        fields = {key: sub([d[key] for d in batch]) for key in elem}
        return _same_mapping(elem, fields)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
        return elem_type(*(sub(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence) and not isinstance(elem, (str, bytes)):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [sub(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # a plain tuple gives a list, as torch's does
        return _same_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _same_mapping(elem: Any, fields: dict[Any, Any]) -> Any:
    """``fields`` in a mapping of ``elem``'s type where that type can be built, else a dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def _same_sequence(elem: Any, items: list[Any]) -> Any:
    """``items`` in a sequence of ``elem``'s type where that type can be built, else a list."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def _collate_tensors(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    if getattr(batch[0], "is_sparse", False):
        raise RuntimeError(
            "Batches of sparse tensors are not currently supported by the default collate_fn; "
            "please provide a custom collate_fn to handle them appropriately."
        )
    return stack(list(batch), 0)


def _collate_arrays(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    elem = batch[0]
    if _NOT_NUMERIC.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalars(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    return as_tensor(np.array(batch))


def _collate_floats(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    return tensor(batch, dtype=np.float64)


def _collate_ints(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    return tensor(batch)


def _collate_strings(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    return batch


default_collate_fn_map: CollateFnMap = {
    Tensor: _collate_tensors,
    np.ndarray: _collate_arrays,
    (np.bool_, np.number, np.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _collate_strings,
    bytes: _collate_strings,
}


def default_collate(batch: Any) -> Any:
    """The DataLoader's default way to make a batch from a list of samples (torch's rules).

    Tensors are stacked (a new first dimension of size ``len(batch)``), numpy
    arrays and numpy scalars become tensors, Python floats a float64 tensor,
    ints an int64 tensor, strings stay a list; dicts, namedtuples and lists are
    collated field by field, and a tuple sample gives a list:

        default_collate([(ag.zeros(2), 0), (ag.ones(2), 1)])   # [tensor of shape (2, 2), tensor([0, 1])]

    Samples of unequal tensor sizes fail as ``stack`` does; a type it cannot
    batch raises ``TypeError`` naming it. To handle another type, call
    ``collate(batch, collate_fn_map={**default_collate_fn_map, MyType: fn})``.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data: Any) -> Any:
    """Turn numpy arrays and numpy scalars in ``data`` into tensors, keeping the structure (the
    DataLoader's ``collate_fn`` when automatic batching is off, ``batch_size=None``).

    Tensors, numbers and strings pass unchanged; a tuple becomes a list, as in torch.
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, np.ndarray) and _NOT_NUMERIC.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data
