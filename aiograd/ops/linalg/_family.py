"""What the linalg family's modules share: its op table, ``LinAlgError``, and the checks
every matrix op makes on its operands, in torch's words.

NOTE [Linalg errors]: torch checks a matrix operand in a fixed order and names the op
(``linalg.inv``, not the function's Python name): at least 2 dimensions, then a
floating or complex dtype (no float16), then square. A factorization that fails on
the numbers (a singular matrix for ``inv``/``solve``, a matrix that is not positive
definite for ``cholesky``) raises ``LinAlgError`` (a RuntimeError, as
``torch.linalg.LinAlgError``) with LAPACK's own diagnosis: the index of the zero
pivot of the LU factorization, or the order of the leading minor that is not
positive definite, found by running the LAPACK routine on the first failing matrix
of the batch, which the message names as "(Batch element i): " when the input is
batched.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...tensor import Tensor
from .._common import needs_grad, torch_dtype_name
from .._table import OpTable

__all__ = ["LINALG", "LinAlgError", "check_float", "check_matrix", "check_square", "batch_label", "first_failure",
           "lapack_info", "svd_arrays", "float_matrix", "not_implemented",
           "records"]

LINALG = OpTable("linalg")


class LinAlgError(RuntimeError):
    """A linear algebra routine failed on the values of its input (a singular matrix, a matrix that is
    not positive definite); as ``torch.linalg.LinAlgError``, a subclass of RuntimeError."""


def records(op: str, *xs: Any) -> bool:
    """Whether the op must record its node (grad mode is on and an input requires grad). An input of a
    complex dtype that requires grad is refused: the linalg rules here are those of real matrices."""
    if not needs_grad(*xs):
        return False
    for x in xs:
        if isinstance(x, Tensor) and x._requires_grad and x._data.dtype.kind == "c":
            raise NotImplementedError(
                f"{op}: the derivative for complex inputs is not implemented in aiograd (its linalg rules are for "
                "real matrices); use a detached input or no_grad() for the forward alone"
            )
    return True


def not_implemented(kernel: str, dt: Any) -> NotImplementedError:
    """torch's error for a dtype its CPU kernel ``kernel`` lacks."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(dt)}'")


def check_float(op: str, d: np.ndarray) -> None:
    """torch's error for an input that is neither floating point nor complex."""
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{torch_dtype_name(d.dtype)}")


def check_matrix(op: str, x: Tensor, name: str = "A", kernel: str = "") -> np.ndarray:
    """``x``'s array after torch's checks for a (batch of) matrix operand of a float op (NOTE [Linalg errors]).

    float16 is refused with torch's "Low precision" message, or, given the name of torch's ``kernel``,
    as "not implemented" there."""
    d = x._data
    if d.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    check_float(op, d)
    if d.dtype == np.float16:
        if kernel:
            raise not_implemented(kernel, d.dtype)
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got Half")
    return d


def check_square(op: str, x: Tensor, name: str = "A", kernel: str = "") -> np.ndarray:
    """``check_matrix`` and square matrices."""
    d = check_matrix(op, x, name, kernel)
    m, n = d.shape[-2:]
    if m != n:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {m} by {n} matrices")
    return d


def float_matrix(op: str, x: Tensor) -> np.ndarray:
    """A float (or complex) array of at least 2 dims, for the ops that name both conditions at once (pinv)."""
    d = x._data
    if d.ndim < 2 or d.dtype.kind not in "fc" or d.dtype == np.float16:
        shape = ", ".join(map(str, d.shape))
        raise RuntimeError(
            f"{op}({torch_dtype_name(d.dtype)}{{[{shape}]}}): expected a tensor with 2 or more dimensions of float, "
            "double, cfloat or cdouble types"
        )
    return d


def batch_label(batch_shape: tuple[int, ...], index: int) -> str:
    """torch's "(Batch element i): " for the ``index``-th matrix of a batch; "" for a single matrix."""
    return f"(Batch element {index}): " if batch_shape else ""


def first_failure(a: np.ndarray, fails: Callable[[np.ndarray], bool]) -> tuple[int, np.ndarray] | None:
    """The first matrix of the batch ``a`` (``(*, m, n)``) for which ``fails`` holds, with its flat index."""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        if fails(m):
            return i, m
    return None


def svd_arrays(d: np.ndarray, compute_uv: bool = True, full_matrices: bool = False) -> Any:
    """``np.linalg.svd`` of the batch ``d``; where LAPACK fails to converge (a NaN in the matrix), torch's
    LinAlgError naming the first matrix of the batch that fails, in place of numpy's."""
    try:
        return np.linalg.svd(d, full_matrices=full_matrices, compute_uv=compute_uv)  # type: ignore[call-overload]
    except np.linalg.LinAlgError:
        found = first_failure(d, lambda m: not np.isfinite(m).all())
        index = found[0] if found is not None else 0
        raise LinAlgError(f"linalg.svd: {batch_label(d.shape[:-2], index)}The algorithm failed to converge because "
                          "the input matrix contained non-finite values.") from None


def lapack_info(routine: str, m: np.ndarray) -> int:
    """LAPACK's ``info`` of ``routine`` (``getrf``, ``potrf``) on the matrix ``m``: 0 on success, ``k > 0``
    for the (1-based) failing pivot or leading minor."""
    from scipy.linalg import lapack  # on first use, as scipy.special (NOTE [erf])

    fn = lapack.get_lapack_funcs(routine, (m,))
    if routine == "potrf":
        return int(fn(m, lower=1, clean=0)[-1])
    return int(fn(m)[-1])
