"""Constraints: the set a parameter or a sample must lie in, as ``torch.distributions.constraints``.

A constraint's ``check(value)`` returns a bool tensor of the value's shape less the
constraint's ``event_dim`` rightmost dimensions: True where the value is valid. A
distribution's ``arg_constraints`` maps parameter names to constraints and its
``support`` is the constraint its samples satisfy; both are checked when
``validate_args`` is on. Reprs are torch's (``GreaterThan(lower_bound=0.0)``), because
validation errors print them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..device import CPU
from ..tensor import Tensor

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
    "less_than", "lower_cholesky", "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer",
    "one_hot", "positive", "positive_definite", "positive_integer", "positive_semidefinite", "real",
    "real_vector", "simplex", "square", "stack", "unit_interval",
]


def _a(value: Any) -> np.ndarray:
    """A value or bound as a numpy array: checks read values, they record no graph.

    NOTE [Checks in numpy]: validation runs on every construction and log_prob (an agent
    makes a Categorical per step), so checks compute on the arrays, not through ops."""
    return value.detach().numpy() if isinstance(value, Tensor) else np.asarray(value)


def _out(result: Any) -> Tensor:
    return Tensor._wrap(np.asarray(result, dtype=np.bool_), CPU)


def _fmt(bound: Any) -> str:
    """A bound as torch prints it: a number (also a one-element tensor) as a float, else the tensor."""
    if isinstance(bound, Tensor):
        return repr(float(bound.item())) if bound.numel() == 1 and bound.is_floating_point() else str(bound)
    return repr(float(bound)) if isinstance(bound, float) else repr(bound)


class Constraint:
    """The base class: ``check(value)`` says elementwise (over batch positions) whether ``value`` is valid."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Any) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on parameters (e.g. Uniform's): it cannot be checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> "_Dependent":
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Any) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """A property whose value is the support computed from parameters, and which is also a
    dependent constraint when read from the class (``Uniform.support``)."""

    def __init__(self, fget: Any = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fget)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fget: Any) -> "_DependentProperty":  # type: ignore[override]
        return _DependentProperty(fget, is_discrete=self._is_discrete, event_dim=self._event_dim)


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent placeholder (not checkable)."""
    return isinstance(constraint, _Dependent)


class _IndependentConstraint(Constraint):
    """``base`` over ``reinterpreted_batch_ndims`` more rightmost dimensions, all of which must hold."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Any) -> Tensor:
        result: Any = self.base_constraint.check(value).detach().numpy()
        if result.ndim < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {_a(value).ndim}")
        if self.reinterpreted_batch_ndims:
            result = result.all(axis=tuple(range(-self.reinterpreted_batch_ndims, 0)))
        return _out(result)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((v == 0) | (v == 1))


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out(((v == 0) | (v == 1)).all(-1) & (v.sum(-1) == 1))


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((v % 1 == 0) & (_a(self.lower_bound) <= v) & (v <= _a(self.upper_bound)))

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={_fmt(self.lower_bound)}, upper_bound={_fmt(self.upper_bound)})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((v % 1 == 0) & (v >= _a(self.lower_bound)))

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out(v == v)  # False only at NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Tensor:
        return _out(_a(self.lower_bound) < _a(value))

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={_fmt(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Tensor:
        return _out(_a(self.lower_bound) <= _a(value))

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={_fmt(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Tensor:
        return _out(_a(value) < _a(self.upper_bound))

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_fmt(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((_a(self.lower_bound) <= v) & (v <= _a(self.upper_bound)))

    def __repr__(self) -> str:
        return f"Interval(lower_bound={_fmt(self.lower_bound)}, upper_bound={_fmt(self.upper_bound)})"


class _HalfOpenInterval(_Interval):
    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((_a(self.lower_bound) <= v) & (v < _a(self.upper_bound)))

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={_fmt(self.lower_bound)}, upper_bound={_fmt(self.upper_bound)})"


class _Simplex(Constraint):
    """Nonnegative entries along the last dimension that sum to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((v >= 0).all(-1) & (np.abs(v.sum(-1) - 1) < 1e-6))


class _Multinomial(Constraint):
    """Nonnegative integer counts along the last dimension summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((v >= 0).all(-1) & (v.sum(-1) <= self.upper_bound))


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out((np.tril(v) == v).all(axis=(-2, -1)))


class _LowerCholesky(Constraint):
    """Lower triangular with a positive diagonal."""

    event_dim = 2

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        tri = (np.tril(v) == v).all(axis=(-2, -1))
        diag = (np.diagonal(v, axis1=-2, axis2=-1) > 0).all(-1)
        return _out(tri & diag)


class _CorrCholesky(Constraint):
    """Lower Cholesky factor of a correlation matrix: its rows have unit norm."""

    event_dim = 2

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        tol = float(np.finfo(v.dtype).eps) * v.shape[-1] * 10
        unit = (np.abs(np.sqrt((v * v).sum(-1)) - 1.0) <= tol).all(-1)
        return _out(_LowerCholesky().check(value).detach().numpy() & unit)


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        return _out(np.full(v.shape[:-2], v.shape[-2] == v.shape[-1]))


class _Symmetric(_Square):
    def check(self, value: Any) -> Tensor:
        square = super().check(value)
        if not bool(square.detach().numpy().all()):
            return square
        a = _a(value)
        return _out(np.isclose(a, np.swapaxes(a, -1, -2), atol=1e-6).all(axis=(-2, -1)))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Any) -> Tensor:
        sym = super().check(value)
        if not bool(sym.detach().numpy().all()):
            return sym
        return _out((np.linalg.eigvalsh(_a(value)) >= 0).all(-1))


class _PositiveDefinite(_Symmetric):
    def check(self, value: Any) -> Tensor:
        sym = super().check(value)
        if not bool(sym.detach().numpy().all()):
            return sym
        a = _a(value)
        flat = a.reshape((-1,) + a.shape[-2:])
        ok = np.empty(len(flat), dtype=bool)
        for i, m in enumerate(flat):
            try:
                np.linalg.cholesky(m)
                ok[i] = True
            except np.linalg.LinAlgError:
                ok[i] = False
        return _out(ok.reshape(a.shape[:-2]))


class _Cat(Constraint):
    """Each of ``cseq`` on its slice of dimension ``dim`` (lengths ``lengths``)."""

    def __init__(self, cseq: list[Constraint], dim: int = 0, lengths: list[int] | None = None) -> None:
        self.cseq = list(cseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)
        self.dim = dim

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        parts, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            part = np.take(v, np.arange(start, start + length), axis=self.dim)
            parts.append(constr.check(part).detach().numpy())
            start += length
        return _out(np.concatenate(parts, self.dim))


class _Stack(Constraint):
    """Each of ``cseq`` on its index of dimension ``dim``."""

    def __init__(self, cseq: list[Constraint], dim: int = 0) -> None:
        self.cseq = list(cseq)
        self.dim = dim

    def check(self, value: Any) -> Tensor:
        v = _a(value)
        parts = [c.check(np.take(v, i, axis=self.dim)).detach().numpy() for i, c in enumerate(self.cseq)]
        return _out(np.stack(parts, self.dim))


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
