"""Higher-level differential operators: ``vjp``, ``jvp``, ``jacobian``, ``hessian`` (awaitable).

torch.autograd.functional, on aiograd's engine. ``func`` takes Tensors and
returns a Tensor or a tuple of Tensors; it may also be ``async def``.
Return structures follow torch: a tuple where the user gave (or ``func``
returned) a tuple, a single Tensor otherwise.

``jvp`` uses the double-vjp trick (as torch does): with ``u`` a dummy
cotangent that requires grad, ``g(u) = J^T u`` is linear in ``u``, and
the vjp of ``g`` with ``v`` is ``J v``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor, zeros_like
from . import grad_mode as _gm
from . import run_grad as grad
from .. import ops

__all__ = ["vjp", "jvp", "jacobian", "hessian"]


def _as_tuple(x: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                    f" value at index {i} has type {type(el).__name__}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                f" given {arg_name} has type {type(el).__name__}."
            )
    return is_tuple, xs


def _tuple_postprocess(res: Any, to_unpack: Any) -> Any:
    if isinstance(to_unpack, tuple):
        out_tuple, in_tuple = to_unpack
        if not in_tuple:
            res = tuple(r[0] for r in res)
        if not out_tuple:
            res = res[0]
        return res
    return res if to_unpack else res[0]


def _grad_preprocess(inputs: tuple[Tensor, ...], create_graph: bool, need_graph: bool) -> tuple[Tensor, ...]:
    """Fresh inputs to differentiate against: views keeping the graph (create_graph) or detached leaves."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            d = inp.detach()
            if need_graph:
                d.requires_grad_(True)
            res.append(d)
    return tuple(res)


def _grad_postprocess(inputs: Any, create_graph: bool) -> Any:
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(i.detach() for i in inputs)
    return tuple(_grad_postprocess(i, create_graph) for i in inputs)


def _validate_v(v: tuple[Tensor, ...], other: tuple[Tensor, ...], is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {list(el_other.shape)} but got {list(el_v.shape)}."
            )


def _check_requires_grad(inputs: tuple[Any, ...], input_type: str, strict: bool) -> None:
    if not strict:
        return
    if input_type not in ("outputs", "grad_inputs", "jacobian", "hessian"):
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is independent "
                    "of the input. This is not allowed in strict mode. You should ensure that your "
                    "function is thrice differentiable and that the hessian depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided function "
                    f"with respect to input {i} is independent of the input. This is not allowed in "
                    "strict mode. You should ensure that your function is twice differentiable and that "
                    "the jacobian depends on the inputs (this would be violated by a linear function "
                    "for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The outputs must "
                "be computed in a differentiable manner from the input when running in strict mode."
            )


async def _autograd_grad(
    outputs: tuple[Any, ...],
    inputs: tuple[Tensor, ...],
    grad_outputs: tuple[Any, ...] | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple[Tensor | None, ...]:
    """``grad`` over the outputs that require grad; all None when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grads = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grads.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return await grad(
        new_outputs, inputs, new_grads, allow_unused=True, create_graph=create_graph, retain_graph=retain_graph
    )


def _fill_in_zeros(
    grads: tuple[Tensor | None, ...], refs: tuple[Tensor, ...], strict: bool, create_graph: bool, stage: str
) -> tuple[Tensor, ...]:
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        f"The output of the user-provided function is independent of input {i}. "
                        "This is not allowed in strict mode."
                    )
                if stage == "back_trick":
                    raise RuntimeError(
                        f"The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                        "when using the double backward trick to compute forward mode gradients. This is not "
                        "allowed in strict mode."
                    )
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."
                )
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(
                f"The jacobian of the user-provided function is independent of input {i}. This is not "
                "allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


async def _call(func: Callable[..., Any], inputs: tuple[Tensor, ...]) -> Any:
    out = func(*inputs)
    if inspect.isawaitable(out):
        out = await out
    return out


async def vjp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    ``v`` may be None only when ``func`` returns a single one-element Tensor.
    """
    with _gm.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = await _call(func, inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single Tensor "
                "with a single element."
            )
    with _gm.set_grad_enabled(True if create_graph else _gm.is_grad_enabled()):
        grad_res = await _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


async def jvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs`` (double-vjp trick).

    ``v`` may be None only when the input is a single one-element Tensor.
    """
    with _gm.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single "
                "Tensor with a single element."
            )
        outputs = await _call(func, inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # The backward is linear in grad_outputs, so their value never appears in the
        # double-backward graph; zeros are fine (no inf or nan).
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = await _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with _gm.set_grad_enabled(True if create_graph else _gm.is_grad_enabled()):
        grad_res = await _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_outputs_tuple)


def _stack_rows(rows: list[Tensor], shape: tuple[int, ...]) -> Tensor:
    """Stack equally shaped gradients along a new first axis and reshape to ``shape`` (differentiably)."""
    if not any(r.requires_grad for r in rows):
        return Tensor._wrap(np.stack([r._data for r in rows]).reshape(shape), rows[0].device)
    stack = getattr(ops, "stack", None)
    if stack is not None:
        return stack(rows, 0).reshape(shape)
    # Without a stack op: sum of one-hot columns times rows (only mul, add, reshape).
    n = len(rows)
    acc: Any = None
    for j, r in enumerate(rows):
        e = np.zeros((n,) + (1,) * r.ndim, dtype=r.dtype)
        e[j] = 1
        term = Tensor._wrap(e, r.device) * r.reshape((1,) + tuple(r.shape))
        acc = term if acc is None else acc + term
    return acc.reshape(shape)


async def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    Entry ``[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``; the
    tuple levels are dropped where ``func`` returns a single Tensor or
    ``inputs`` is one (as torch). ``vectorize`` is accepted for
    compatibility and computes the same result row by row.
    """
    if strategy != "reverse-mode":
        raise NotImplementedError('only strategy="reverse-mode" is supported')
    with _gm.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = await _call(func, inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)

        result: list[tuple[Tensor, ...]] = []
        for i, out in enumerate(outputs):
            rows: list[list[Tensor]] = [[] for _ in inputs]
            n = out.numel()
            for j in range(n):
                onehot = np.zeros(n, dtype=out.dtype)
                onehot[j] = 1
                seed = Tensor._wrap(onehot.reshape(out.shape), out.device)
                vj = await _autograd_grad((out,), inputs, (seed,), retain_graph=True, create_graph=create_graph)
                for k, (g, inp) in enumerate(zip(vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of input "
                                f"{i}. This is not allowed in strict mode when create_graph=True."
                            )
                        rows[k].append(g)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of input {k}. "
                                "This is not allowed in strict mode."
                            )
                        rows[k].append(Tensor._wrap(np.zeros(inp.shape, inp.dtype), inp.device))
            result.append(tuple(
                _stack_rows(rows[k], tuple(out.shape) + tuple(inputs[k].shape)) if n
                else Tensor._wrap(np.zeros(tuple(out.shape) + tuple(inputs[k].shape), out.dtype), out.device)
                for k in range(len(inputs))
            ))
        res = _grad_postprocess(tuple(result), create_graph)
        return _tuple_postprocess(res, (is_outputs_tuple, is_inputs_tuple))


async def hessian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``.

    Entry ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``; a
    single input gives a single Tensor.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    async def ensure_single_output_function(*inp: Tensor) -> Tensor:
        out = await _call(func, inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.reshape(())

    async def jac_func(*inp: Tensor) -> Any:
        jac = await jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = await jacobian(
        jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
