"""aiograd.nn.utils: gradient clipping and parameter/vector conversion, as torch.nn.utils.

``clip_grad_norm_`` and ``clip_grad_value_`` rescale the ``.grad`` of
parameters in place (after backward, before ``optimizer.step()``), outside the
autograd graph, as torch does under no_grad. Norms follow torch's dtypes: a
gradient's norm has its real dtype (float16 accumulated in float32), and the
total norm the dtype the per-gradient norms promote to.
"""

from __future__ import annotations

import types
import warnings
from typing import Any, Iterable

import numpy as np

from ...tensor import Tensor, get_default_dtype
from ...ops.linalg._norms import vector_norm
from ...ops.movement.join import cat

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
    "parameters_to_vector", "vector_to_parameters",
]


def _as_list(tensors: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(a: np.ndarray, p: float) -> np.ndarray:
    """The ``p``-norm of all of ``a``'s elements, a 0-d array of its real dtype: ``linalg.vector_norm``'s
    (NOTE [Norm primitives]), as torch computes these norms."""
    return vector_norm(Tensor._wrap(a), p)._data


def get_total_norm(
    tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (as if concatenated into one vector).

    ``norm_type`` may be ``inf`` (largest magnitude); ``foreach`` is accepted and changes nothing.
    """
    arrays = [t._data for t in _as_list(tensors)]
    p = float(norm_type)
    if not arrays:
        return Tensor._wrap(np.array(0.0, dtype=get_default_dtype()))
    norms = [_vector_norm(a, p) for a in arrays]
    total = _vector_norm(np.stack(norms).astype(np.result_type(*norms)), p)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {p} for gradients from `parameters` is non-finite, so it cannot be clipped. "
            "To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return Tensor._wrap(total)


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale the gradients by ``min(1, max_norm / (total_norm + 1e-6))``, in place."""
    grads = [p._grad for p in _as_list(parameters) if p._grad is not None]
    if not grads:
        return
    norm = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    coef = np.minimum(float(max_norm) / (norm + 1e-6), 1.0)
    for g in grads:
        _scale_grad(g, coef.astype(g._data.real.dtype))


def _scale_grad(g: Tensor, factor: Any) -> None:
    if g._data.flags.writeable:
        np.multiply(g._data, factor, out=g._data)
        g._bump_version()
    else:  # a read-only (e.g. broadcast) gradient is replaced, never written through
        g._data = g._data * factor


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:
    """Rescale the gradients of ``parameters`` in place so their total ``norm_type``-norm is at most
    ``max_norm``; return the total norm before clipping (a 0-d Tensor).

    With ``error_if_nonfinite``, a NaN or infinite total norm raises instead of scaling.
    """
    if isinstance(parameters, Tensor):
        params = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        params = list(parameters)
        if is_generator and not params:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p._grad for p in params if p._grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in place."""
    value = float(clip_value)
    for p in _as_list(parameters):
        g = p._grad
        if g is None:
            continue
        if g._data.dtype.kind == "c":
            raise RuntimeError("clamp is not supported for complex types")
        clipped = np.clip(g._data, -value, value).astype(g._data.dtype, copy=False)
        if g._data.flags.writeable:
            np.copyto(g._data, clipped)
            g._bump_version()
        else:
            g._data = clipped


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable, like torch.cat)."""
    params = list(parameters)
    _check_same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the next slice of ``vec`` (shared with ``vec``, as torch's ``.data =``)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected aiograd.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _check_same_device(params)
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec._data[pointer:pointer + n].reshape(p.shape)
        pointer += n


def _check_same_device(params: list[Tensor]) -> None:
    if len({p.device for p in params}) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")

from . import rnn  # noqa: E402  (torch.nn.utils.rnn's place; it imports the ops, loaded by now)
