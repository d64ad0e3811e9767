"""One test row per differentiable op: how to call it and on what, for tests/test_op_rows.py.

A row names an op of the op tables (aiograd/ops/_table.py; NOTE [Op tables]) and
gives the cases to run it on: the shapes of its float64 tensor inputs (which
require grad) and any other arguments. For every case the driver checks the
forward against ``ref`` (a numpy reference, if given), the output's node name
against ``node``, and runs ``gradcheck`` and (unless ``gradgrad=False``)
``gradgradcheck``. A test fails for a differentiable op of any table without a
row, so adding an op means adding its row here:

    OpRow("atan2", BINARY, ref=np.arctan2, node="Atan2Backward0"),
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

import aiograd as ag
import aiograd.nn.functional as F
from aiograd.ops.nn.recurrent import rnn_layer
from helpers import Sampler, distinct, uniform

Shape = tuple[int, ...]


class Case(NamedTuple):
    """One call of a row's op: the shapes of its tensor inputs, then its other arguments."""

    shapes: tuple[Shape, ...]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}

    def describe(self) -> str:
        parts = ["x".join(map(str, s)) or "0d" for s in self.shapes]
        parts += [_short(a) for a in self.args] + [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
        return ",".join(parts)


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    return repr(v).replace(" ", "")


class OpRow(NamedTuple):
    """The gradient test of one op (see the module docstring)."""

    op: str  #: the op's name in its table (a Tensor method name for a method-only op)
    cases: tuple[Case, ...]
    fn: Callable[..., Any] | None = None  #: how to call it on (tensors..., args..., **kwargs); default: the op
    sample: Sampler = uniform()  #: the values of the tensor inputs
    ref: Callable[..., Any] | None = None  #: numpy reference of the forward, on the inputs' arrays
    node: str | None = None  #: torch's name of the output's grad_fn
    gradgrad: bool = True  #: also check second derivatives
    variant: str = ""  #: tells apart several rows of one op
    tolerance: dict[str, float] = {}  #: gradcheck's eps/atol/rtol where the defaults cannot hold (float32 casts)


def cases(*shapes: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> tuple[Case, ...]:
    """One Case per entry of ``shapes`` (a shape, or a tuple of shapes for several tensor inputs)."""
    out = []
    for s in shapes:
        multi = isinstance(s, tuple) and len(s) > 0 and isinstance(s[0], tuple)
        out.append(Case(s if multi else (s,), args, kwargs or {}))
    return tuple(out)


UNARY = cases((), (3,), (2, 3))
# pairs that broadcast each way, with 0-d operands and size-1 dims
BINARY = cases(((2, 3), (2, 3)), ((2, 3), (3,)), ((3, 1), (1, 2)), ((), (2,)), ((2, 2), ()))
REDUCE = (
    Case(((2, 3),)),
    Case(((2, 3),), kwargs={"dim": 1}),
    Case(((2, 3),), kwargs={"dim": 0, "keepdim": True}),
    Case(((2, 1, 3),), kwargs={"dim": (0, 2)}),
    Case(((),)),
)
POSITIVE = uniform(0.3, 2.0)
_FRAC = [k + 0.5 for k in range(-4, 4)] + list(range(-4, 5))  # kinks of floor/ceil/round/trunc


def _gelu_ref(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    import math

    return 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))


def _softplus_ref(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _sum_ref(a: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
    return np.sum(a, axis=dim, keepdims=keepdim)


def _seeded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with aiograd's generator reseeded before each call (random ops under gradcheck)."""

    def call(*a: Any, **k: Any) -> Any:
        ag.manual_seed(0)
        return fn(*a, **k)

    return call


# a float32 result: finite differences at eps=1e-6 would see its rounding
_FLOAT32 = {"eps": 1e-3, "atol": 1e-4, "rtol": 1e-3}
#: differentiable ops without a row here, and where their gradient is tested instead
EXEMPT = {
    "normal": "a sample's derivative is zero, as torch's (not reparameterized), where finite differences see "
              "mean + std * z: tests/test_ops_sampling.py checks the zero gradient and the node names",
    "half": "float16 rounding defeats finite differences; tests/test_ops_convert.py checks its gradient",
    "floor_divide": "no derivative (as torch): tests/test_ops_elementwise.py checks that backward raises",
    "floor_divide_": "no derivative (as torch): tests/test_ops_elementwise.py checks that backward raises",
    "heaviside": "no derivative (as torch): tests/test_ops_elementwise.py checks that backward raises",
    "heaviside_": "no derivative (as torch): tests/test_ops_elementwise.py checks that backward raises",
}
_SCAN = cases((3,), (2, 3), args=(-1,)) + cases((2, 3), args=(0,)) + cases((), args=(0,))
_ALONG = cases((4,), (2, 4), args=(-1,)) + cases((3, 2), args=(0,))  # ops that select along one dim
_TRIPLES = cases(((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1)), ((), (2,), ()))
_UNIT = uniform(-0.8, 0.8)  # inside the domain of asin, acos, atanh, erfinv
_PROB = uniform(0.1, 0.9)  # inside (0, 1): logit
_ZEROS3 = np.array([1.0, 0.0, 1.0])  # puts a zero into a row of 3 (cumprod's exact gradient)


def _scan_ref(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A numpy scan as ``ref``: ``fn(a, axis=dim)``, and a 0-d input is its own scan."""
    return lambda a, dim: fn(a, axis=dim) if a.ndim else a


def _lcse_ref(a: np.ndarray, dim: int) -> np.ndarray:
    return np.logaddexp.accumulate(a, axis=dim) if a.ndim else a


def _vector_norm_ref(a: np.ndarray, p: float, dim: Any) -> np.ndarray:
    x = np.abs(a)
    if np.isinf(p):
        return x.max(axis=dim) if p > 0 else x.min(axis=dim)  # type: ignore[no-any-return]
    return (x ** p).sum(axis=dim) ** (1 / p)  # type: ignore[no-any-return]


def _clone(x: ag.Tensor) -> ag.Tensor:
    return x.clone()


def _values(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The ``values`` of an op returning ``(values, indices)``."""
    return lambda *a, **k: fn(*a, **k).values


_IDX23 = np.array([[0, 1, 1], [1, 0, 0]])  # an index into dim 0 of a (2, 3) tensor, with repeats
_MASK23 = np.array([[True, False, True], [False, False, True]])


# ----- linalg inputs: each row's matrices made well posed from the sampled ones --------------------------
def _eye(a: Any) -> np.ndarray:
    return np.eye(a.shape[-1])


def _invertible(a: Any) -> Any:
    """``a + 3I``: diagonally dominant for samples in [-2, 2) of up to 3 columns, so far from singular."""
    return a + 3 * _eye(a)


def _spd(a: Any) -> Any:
    """``a a^T + n I``: symmetric positive definite."""
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * _eye(a)


def _sym(a: Any) -> Any:
    return a + np.swapaxes(a, -1, -2)


def _gauge(v: Any, k: int | None = None) -> Any:
    """The first ``k`` columns of ``v`` with signs fixed (the largest entry of each positive): singular and
    eigenvectors are defined up to sign, which finite differences must not see flip."""
    v = v[..., :k] if k is not None else v
    vd = v.detach().numpy()
    return v * np.sign(np.take_along_axis(vd, np.abs(vd).argmax(-2)[..., None, :], -2))


def _svd_parts(u: Any, s: Any, vh: Any) -> tuple[Any, ...]:
    """(S, U, V) of an SVD, the vectors sign-fixed (S first: the row's node check reads it)."""
    k = s.shape[-1]
    return s, _gauge(u, k), _gauge(np.swapaxes(vh, -1, -2), k)


def _expm(a: np.ndarray) -> np.ndarray:
    import scipy.linalg

    return scipy.linalg.expm(a)  # type: ignore[no-any-return]


def _addbmm_ref(i: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 0.5 * i + 2.0 * np.einsum("bij,bjk->ik", a, b)


def _lstsq_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The least-squares solution as ``pinv(a) @ b`` (``b`` of one dim less: vectors)."""
    if b.ndim == a.ndim - 1:
        return (np.linalg.pinv(a) @ b[..., None])[..., 0]
    return np.linalg.pinv(a) @ b


_SQUARE = cases((3, 3), (2, 3, 3), (1, 1))
_MATRICES = cases((3, 3), (4, 3), (3, 4), (2, 4, 3))
_POS = uniform(0.2, 2.0)  # norms with negative or fractional ord: no zero elements

ROWS: list[OpRow] = [
    # ----- elementwise: arithmetic ---------------------------------------------------------------
    OpRow("add", BINARY, ref=np.add, node="AddBackward0"),
    OpRow("add", BINARY[:2], fn=lambda a, b: ag.add(a, b, alpha=2.5), ref=lambda a, b: a + 2.5 * b,
          node="AddBackward0", variant="alpha"),
    OpRow("sub", BINARY, ref=np.subtract, node="SubBackward0"),
    OpRow("sub", UNARY, fn=lambda x: 1.5 - x, ref=lambda x: 1.5 - x, node="SubBackward0", variant="rsub"),
    OpRow("mul", BINARY, ref=np.multiply, node="MulBackward0"),
    OpRow("mul", UNARY, fn=lambda x: 2.0 * x, ref=lambda x: 2.0 * x, node="MulBackward0", variant="number"),
    OpRow("div", BINARY, fn=lambda a, b: a / (b.abs() + 0.5), ref=lambda a, b: a / (np.abs(b) + 0.5),
          node="DivBackward0"),
    OpRow("div", UNARY, fn=lambda x: 3.0 / x, sample=POSITIVE, ref=lambda x: 3.0 / x, node="DivBackward0",
          variant="rdiv"),
    OpRow("pow", BINARY, fn=lambda a, b: (a.abs() + 0.5) ** b, ref=lambda a, b: (np.abs(a) + 0.5) ** b,
          node="PowBackward1"),
    OpRow("pow", UNARY, fn=lambda x: x ** 2.5, sample=POSITIVE, ref=lambda x: x ** 2.5, node="PowBackward0",
          variant="exponent"),
    OpRow("pow", UNARY, fn=lambda x: x ** -2, sample=POSITIVE, ref=lambda x: x ** -2.0, node="PowBackward0",
          variant="negative_int"),
    OpRow("pow", UNARY, fn=lambda x: 2.0 ** x, ref=lambda x: 2.0 ** x, node="PowBackward2", variant="rpow"),
    OpRow("square", UNARY, ref=np.square, node="PowBackward0"),
    OpRow("maximum", BINARY, sample=distinct, ref=np.maximum, node="MaximumBackward0"),
    OpRow("minimum", BINARY, sample=distinct, ref=np.minimum, node="MinimumBackward0"),
    OpRow("where", BINARY, fn=lambda a, b: ag.where(a > 0, a, b), sample=uniform(kinks=(0,)),
          ref=lambda a, b: np.where(a > 0, a, b), node="WhereBackward0"),
    OpRow("clamp", UNARY, fn=lambda x: ag.clamp(x, -0.5, 0.5), sample=uniform(-1, 1, (-0.5, 0.5)),
          ref=lambda x: np.clip(x, -0.5, 0.5), node="ClampBackward1"),
    OpRow("clamp", UNARY, fn=lambda x: x.clamp(min=0.25), sample=uniform(-1, 1, (0.25,)),
          ref=lambda x: np.maximum(x, 0.25), node="ClampBackward1", variant="min"),
    OpRow("clamp", BINARY[:3], fn=lambda x, lo: x.clamp(min=lo), sample=distinct, ref=np.maximum,
          node="ClampBackward0", variant="tensor_min"),
    OpRow("clamp", cases(((2, 3), (3,), (2, 1))), fn=lambda x, lo, hi: ag.clamp(x, lo, hi + 1.5), sample=distinct,
          node="ClampBackward0", variant="tensor_bounds"),
    OpRow("clamp_min", UNARY, fn=lambda x: ag.clamp_min(x, 0.25), sample=uniform(-1, 1, (0.25,)),
          ref=lambda x: np.maximum(x, 0.25), node="ClampMinBackward0"),
    OpRow("clamp_min", BINARY[:2], sample=distinct, ref=np.maximum, node="ClampMinBackward1", variant="tensor"),
    OpRow("clamp_max", UNARY, fn=lambda x: ag.clamp_max(x, 0.25), sample=uniform(-1, 1, (0.25,)),
          ref=lambda x: np.minimum(x, 0.25), node="ClampMaxBackward0"),
    OpRow("clamp_max", BINARY[:2], sample=distinct, ref=np.minimum, node="ClampMaxBackward1", variant="tensor"),
    OpRow("remainder", BINARY[:3], fn=lambda a, b: ag.remainder(a, b.abs() + 0.5), sample=uniform(kinks=(0,)),
          node="RemainderBackward1"),
    OpRow("remainder", UNARY, fn=lambda x: x % 0.7, sample=uniform(-2, 2, [k * 0.7 for k in range(-3, 4)]),
          node="RemainderBackward0", variant="number"),
    OpRow("div", BINARY[:2], fn=lambda a, b: ag.div(a, b.abs() + 0.5, rounding_mode="floor"),
          sample=uniform(-2, 2, (0,)), node="DivBackward2", variant="floor"),
    OpRow("sign", UNARY, sample=uniform(kinks=(0,)), ref=np.sign, node="SignBackward0"),
    # ----- elementwise: unary math --------------------------------------------------------------
    OpRow("exp", UNARY, ref=np.exp, node="ExpBackward0"),
    OpRow("log", UNARY, sample=POSITIVE, ref=np.log, node="LogBackward0"),
    OpRow("log1p", UNARY, sample=uniform(-0.5, 3), ref=np.log1p, node="Log1PBackward0"),
    OpRow("log2", UNARY, sample=POSITIVE, ref=np.log2, node="Log2Backward0"),
    OpRow("log10", UNARY, sample=POSITIVE, ref=np.log10, node="Log10Backward0"),
    OpRow("sqrt", UNARY, sample=POSITIVE, ref=np.sqrt, node="SqrtBackward0"),
    OpRow("rsqrt", UNARY, sample=POSITIVE, ref=lambda x: 1 / np.sqrt(x), node="RsqrtBackward0"),
    OpRow("abs", UNARY, sample=uniform(kinks=(0,)), ref=np.abs, node="AbsBackward0"),
    OpRow("neg", UNARY, ref=np.negative, node="NegBackward0"),
    OpRow("sin", UNARY, ref=np.sin, node="SinBackward0"),
    OpRow("cos", UNARY, ref=np.cos, node="CosBackward0"),
    OpRow("tan", UNARY, sample=uniform(-1.2, 1.2), ref=np.tan, node="TanBackward0"),
    OpRow("tanh", UNARY, ref=np.tanh, node="TanhBackward0"),
    OpRow("sigmoid", UNARY, sample=uniform(-4, 4), ref=lambda x: 1 / (1 + np.exp(-x)), node="SigmoidBackward0"),
    OpRow("relu", UNARY, sample=uniform(kinks=(0,)), ref=lambda x: np.maximum(x, 0), node="ReluBackward0"),
    OpRow("reciprocal", UNARY, sample=uniform(kinks=(0,)), ref=np.reciprocal, node="ReciprocalBackward0"),
    OpRow("erf", UNARY, sample=uniform(-3, 3), node="ErfBackward0"),
    OpRow("gelu", UNARY, sample=uniform(-4, 4), ref=_gelu_ref, node="GeluBackward0"),
    OpRow("gelu", UNARY, fn=lambda x: ag.gelu(x, approximate="tanh"), sample=uniform(-4, 4),
          ref=lambda x: _gelu_ref(x, "tanh"), node="GeluBackward0", variant="tanh"),
    OpRow("softplus", UNARY, sample=uniform(-5, 5), ref=_softplus_ref, node="SoftplusBackward0"),
    OpRow("softplus", UNARY, fn=lambda x: ag.softplus(x, beta=2.0, threshold=3.0), sample=uniform(-3, 3, (1.5,)),
          ref=lambda x: _softplus_ref(x, 2.0, 3.0), node="SoftplusBackward0", variant="beta_threshold"),
    OpRow("floor", UNARY, sample=uniform(-4, 4, _FRAC), ref=np.floor, node="FloorBackward0"),
    OpRow("ceil", UNARY, sample=uniform(-4, 4, _FRAC), ref=np.ceil, node="CeilBackward0"),
    OpRow("trunc", UNARY, sample=uniform(-4, 4, _FRAC), ref=np.trunc, node="TruncBackward0"),
    OpRow("round", UNARY, sample=uniform(-4, 4, _FRAC), ref=np.round, node="RoundBackward0"),
    OpRow("expm1", UNARY, ref=np.expm1, node="Expm1Backward0"),
    OpRow("exp2", UNARY, ref=np.exp2, node="Exp2Backward0"),
    OpRow("sinh", UNARY, ref=np.sinh, node="SinhBackward0"),
    OpRow("cosh", UNARY, ref=np.cosh, node="CoshBackward0"),
    OpRow("asinh", UNARY, ref=np.arcsinh, node="AsinhBackward0"),
    OpRow("acosh", UNARY, sample=uniform(1.2, 3), ref=np.arccosh, node="AcoshBackward0"),
    OpRow("atanh", UNARY, sample=_UNIT, ref=np.arctanh, node="AtanhBackward0"),
    OpRow("asin", UNARY, sample=_UNIT, ref=np.arcsin, node="AsinBackward0"),
    OpRow("acos", UNARY, sample=_UNIT, ref=np.arccos, node="AcosBackward0"),
    OpRow("atan", UNARY, ref=np.arctan, node="AtanBackward0"),
    OpRow("deg2rad", UNARY, ref=np.deg2rad, node="Deg2RadBackward0"),
    OpRow("rad2deg", UNARY, ref=np.rad2deg, node="Rad2DegBackward0"),
    OpRow("erfc", UNARY, ref=lambda x: 1 - np.vectorize(math.erf)(x), node="ErfcBackward0"),
    OpRow("erfinv", UNARY, sample=_UNIT, node="ErfinvBackward0"),
    OpRow("lgamma", UNARY, sample=uniform(0.3, 3), ref=np.vectorize(math.lgamma), node="LgammaBackward0"),
    OpRow("lgamma", UNARY, fn=lambda x: ag.lgamma(x - 3), sample=uniform(0.2, 0.8), node="LgammaBackward0",
          variant="negative"),
    OpRow("digamma", UNARY, sample=uniform(0.3, 3), node="DigammaBackward0"),
    OpRow("polygamma", UNARY, fn=lambda x: ag.polygamma(2, x), sample=uniform(0.3, 3), node="PolygammaBackward0"),
    OpRow("polygamma", UNARY, fn=lambda x: x.polygamma(0), sample=uniform(0.3, 3), node="PolygammaBackward0",
          variant="method_n0"),
    OpRow("sinc", UNARY, ref=np.sinc, node="SincBackward0"),
    OpRow("logit", UNARY, sample=_PROB, ref=lambda x: np.log(x / (1 - x)), node="LogitBackward0"),
    OpRow("logit", UNARY, fn=lambda x: ag.logit(x, 0.2), sample=uniform(0.02, 0.98, (0.2, 0.8)),
          ref=lambda x: np.log(np.clip(x, 0.2, 0.8) / (1 - np.clip(x, 0.2, 0.8))), node="LogitBackward0",
          variant="eps"),
    OpRow("nan_to_num", UNARY, ref=np.nan_to_num, node="NanToNumBackward0"),
    # ----- elementwise: two and three operands ------------------------------------------------------
    OpRow("atan2", BINARY, ref=np.arctan2, node="Atan2Backward0"),
    OpRow("hypot", BINARY, sample=uniform(kinks=(0,)), ref=np.hypot, node="HypotBackward0"),
    OpRow("logaddexp", BINARY, ref=np.logaddexp, node="LogaddexpBackward0"),
    OpRow("logaddexp2", BINARY, ref=np.logaddexp2, node="Logaddexp2Backward0"),
    OpRow("copysign", BINARY, sample=uniform(kinks=(0,)), ref=np.copysign, node="CopysignBackward0"),
    OpRow("copysign", UNARY, fn=lambda x: ag.copysign(x, -1.0), sample=uniform(kinks=(0,)),
          ref=lambda x: np.copysign(x, -1.0), node="CopysignBackward1", variant="number"),
    OpRow("fmod", BINARY[:3], fn=lambda a, b: ag.fmod(a, b.abs() + 0.5), ref=lambda a, b: np.fmod(a, np.abs(b) + 0.5),
          node="FmodBackward1"),
    OpRow("fmod", UNARY, fn=lambda x: ag.fmod(x, 0.7), sample=uniform(-2, 2, [k * 0.7 for k in range(-3, 4)]),
          ref=lambda x: np.fmod(x, 0.7), node="FmodBackward0", variant="number"),
    OpRow("xlogy", BINARY, fn=lambda a, b: ag.xlogy(a, b.abs() + 0.5), ref=lambda a, b: a * np.log(np.abs(b) + 0.5),
          node="XlogyBackward0"),
    OpRow("xlogy", UNARY, fn=lambda b: ag.xlogy(2.5, b), sample=POSITIVE, ref=lambda b: 2.5 * np.log(b),
          node="XlogyBackward1", variant="number_input"),
    OpRow("xlogy", UNARY, fn=lambda a: ag.xlogy(a, 1.5), ref=lambda a: a * np.log(1.5), node="XlogyBackward2",
          variant="number_other"),
    OpRow("lerp", _TRIPLES, ref=lambda a, b, w: a + w * (b - a), node="LerpBackward1"),
    OpRow("lerp", BINARY, fn=lambda a, b: ag.lerp(a, b, 0.7), ref=lambda a, b: a + 0.7 * (b - a),
          node="LerpBackward0", variant="number_weight"),
    OpRow("addcmul", _TRIPLES, fn=lambda a, b, c: ag.addcmul(a, b, c, value=-0.5), ref=lambda a, b, c: a - 0.5 * b * c,
          node="AddcmulBackward0"),
    OpRow("addcdiv", _TRIPLES, fn=lambda a, b, c: ag.addcdiv(a, b, c.abs() + 0.5, value=2),
          ref=lambda a, b, c: a + 2 * b / (np.abs(c) + 0.5), node="AddcdivBackward0"),
    # ----- reductions ------------------------------------------------------------------------------
    OpRow("sum", REDUCE, ref=_sum_ref, node="SumBackward0"),
    OpRow("mean", REDUCE, ref=lambda a, dim=None, keepdim=False: np.mean(a, axis=dim, keepdims=keepdim),
          node="MeanBackward0"),
    OpRow("prod", REDUCE, sample=POSITIVE, ref=lambda a, dim=None, keepdim=False: np.prod(a, axis=dim, keepdims=keepdim),
          node="ProdBackward0"),
    OpRow("prod", cases((3,), (2, 3), kwargs={"dim": -1}), fn=lambda x, **k: ag.prod(x * ag.tensor([1.0, 0.0, 1.0], dtype=ag.float64), **k),
          node="ProdBackward0", variant="with_zeros"),
    OpRow("amax", REDUCE, sample=distinct, ref=lambda a, dim=None, keepdim=False: np.max(a, axis=dim, keepdims=keepdim),
          node="AmaxBackward0"),
    OpRow("amin", REDUCE, sample=distinct, ref=lambda a, dim=None, keepdim=False: np.min(a, axis=dim, keepdims=keepdim),
          node="AminBackward0"),
    OpRow("max", UNARY[1:], sample=distinct, ref=np.max, node="MaxBackward1"),
    OpRow("max", cases((3,), (2, 3), args=(-1,)), fn=lambda x, d: ag.max(x, d).values, sample=distinct,
          node="MaxBackward0", variant="dim"),
    OpRow("min", UNARY[1:], sample=distinct, ref=np.min, node="MinBackward1"),
    OpRow("min", cases((2, 3), args=(0,)), fn=lambda x, d: ag.min(x, d, keepdim=True).values, sample=distinct,
          node="MinBackward0", variant="dim"),
    OpRow("var", REDUCE[:4], ref=lambda a, dim=None, keepdim=False: np.var(a, axis=dim, keepdims=keepdim, ddof=1),
          node="VarBackward0"),
    OpRow("std", REDUCE[:4], sample=distinct,
          ref=lambda a, dim=None, keepdim=False: np.std(a, axis=dim, keepdims=keepdim, ddof=1), node="StdBackward0"),
    OpRow("var", REDUCE[1:3], fn=lambda x, **k: ag.var(x, correction=0, **k),
          ref=lambda a, dim=None, keepdim=False: np.var(a, axis=dim, keepdims=keepdim), node="VarBackward0",
          variant="correction0"),
    OpRow("std", REDUCE[:2], fn=lambda x, **k: ag.std(x, unbiased=False, **k), sample=distinct,
          ref=lambda a, dim=None, keepdim=False: np.std(a, axis=dim, keepdims=keepdim), node="StdBackward0",
          variant="unbiased_false"),
    OpRow("logsumexp", cases((3,), (2, 3), args=(-1,)) + cases((2, 1, 3), args=((0, 2), True)),
          node="LogsumexpBackward0"),
    OpRow("norm", REDUCE[:4], sample=distinct,
          ref=lambda a, dim=None, keepdim=False: np.sqrt(np.sum(a * a, axis=dim, keepdims=keepdim)),
          node="LinalgVectorNormBackward0"),
    *[
        OpRow("norm", cases((2, 3), kwargs={"p": p, "dim": 1}) + cases((2, 1, 3), kwargs={"p": p, "dim": (0, 2)}),
              sample=distinct if p in (np.inf, -np.inf) else uniform(kinks=(0,)),
              ref=_vector_norm_ref,
              node="LinalgVectorNormBackward0", variant=f"p{p}")
        for p in (1, 3, 0.5, -1, np.inf, -np.inf)
    ],
    OpRow("norm", cases((2, 3), kwargs={"p": 0, "dim": 1}), node="LinalgVectorNormBackward0", variant="p0"),
    # torch names this node SumBackward1 (its sum over dims); aiograd's sum is SumBackward0 for every dim
    OpRow("norm", cases((3, 2), (2, 2, 3), kwargs={"p": "nuc", "dim": (0, 1)}) + cases((2, 3), kwargs={"p": "nuc"}),
          node="SumBackward0", variant="nuclear"),
    OpRow("nansum", REDUCE, ref=lambda a, dim=None, keepdim=False: np.nansum(a, axis=dim, keepdims=keepdim),
          node="NansumBackward0"),
    OpRow("nanmean", REDUCE, ref=lambda a, dim=None, keepdim=False: np.nanmean(a, axis=dim, keepdims=keepdim),
          node="DivBackward0"),
    OpRow("var_mean", REDUCE[:4], node="VarMeanBackward0"),
    OpRow("var_mean", REDUCE[1:3], fn=lambda x, **k: ag.var_mean(x, correction=0, **k)[1], node="VarMeanBackward0",
          variant="mean_only"),
    OpRow("std_mean", REDUCE[:4], sample=distinct, node="StdMeanBackward0"),
    OpRow("aminmax", cases((2, 3), (4,)), sample=distinct, node="AminmaxBackward0"),
    OpRow("aminmax", cases((2, 3), kwargs={"dim": 1}) + cases((3, 2), kwargs={"dim": 0, "keepdim": True}),
          sample=distinct, node="AminmaxBackward0", variant="dim"),
    # ----- scans -------------------------------------------------------------------------------------
    OpRow("cumsum", _SCAN, ref=_scan_ref(np.cumsum), node="CumsumBackward0"),
    OpRow("cumprod", _SCAN, ref=_scan_ref(np.cumprod), node="CumprodBackward0"),
    OpRow("cumprod", cases((3,), (2, 3), args=(-1,)), fn=lambda x, d: ag.cumprod(x * ag.tensor(_ZEROS3), d),
          node="CumprodBackward0", variant="with_zeros"),
    OpRow("cumprod", cases((3, 2), args=(0,)), fn=lambda x, d: ag.cumprod(x * ag.tensor([[0.0], [1.0], [0.0]]), d),
          node="CumprodBackward0", variant="two_zeros"),
    OpRow("logcumsumexp", _SCAN, ref=_lcse_ref, node="LogcumsumexpBackward0"),
    OpRow("cummax", _SCAN, fn=_values(ag.cummax), sample=distinct, ref=_scan_ref(np.maximum.accumulate),
          node="CummaxBackward0"),
    OpRow("cummin", _SCAN, fn=_values(ag.cummin), sample=distinct, ref=_scan_ref(np.minimum.accumulate),
          node="CumminBackward0"),
    # ----- sorting and order statistics --------------------------------------------------------------
    OpRow("sort", _ALONG + cases((), args=(0,)), fn=_values(ag.sort), sample=distinct,
          ref=lambda a, dim: np.sort(a, axis=dim) if a.ndim else a, node="SortBackward0"),
    OpRow("sort", _ALONG, fn=lambda x, d: ag.sort(x, dim=d, descending=True, stable=True).values, sample=distinct,
          ref=lambda a, dim: -np.sort(-a, axis=dim), node="SortBackward1", variant="descending_stable"),
    OpRow("topk", _ALONG, fn=lambda x, d: ag.topk(x, 2, d).values, sample=distinct, node="TopkBackward0"),
    OpRow("topk", _ALONG, fn=lambda x, d: ag.topk(x, 2, d, largest=False, sorted=False).values, sample=distinct,
          node="TopkBackward0", variant="smallest_unsorted"),
    OpRow("kthvalue", _ALONG, fn=lambda x, d: ag.kthvalue(x, 2, d).values, sample=distinct,
          ref=lambda a, d: np.sort(a, axis=d).take(1, axis=d), node="KthvalueBackward0"),
    OpRow("kthvalue", cases((3, 2), args=(0,)), fn=lambda x, d: ag.kthvalue(x, 3, d, keepdim=True).values,
          sample=distinct, node="KthvalueBackward0", variant="keepdim"),
    OpRow("median", UNARY + cases((4,)), sample=distinct, node="MedianBackward0"),
    OpRow("median", _ALONG, fn=lambda x, d: ag.median(x, d).values, sample=distinct, node="MedianBackward1",
          variant="dim"),
    OpRow("nanmedian", UNARY + cases((4,)), sample=distinct, node="NanmedianBackward0"),
    OpRow("nanmedian", _ALONG, fn=lambda x, d: ag.nanmedian(x, d, keepdim=True).values, sample=distinct,
          node="NanmedianBackward1", variant="dim"),
    OpRow("mode", _ALONG, fn=lambda x, d: ag.mode(x, d).values, sample=distinct, node="ModeBackward0"),
    OpRow("quantile", cases((5,), (2, 3)), fn=lambda x: ag.quantile(x, 0.3), sample=distinct,
          ref=lambda a: np.quantile(a, 0.3)),
    OpRow("quantile", cases(((2, 5), (3,))), fn=lambda x, q: ag.quantile(x, q.sigmoid(), dim=1, keepdim=True),
          sample=distinct, variant="tensor_q"),
    OpRow("quantile", cases((3, 4)), fn=lambda x: ag.quantile(x, 0.5, dim=0, interpolation="midpoint"),
          sample=distinct, ref=lambda a: np.quantile(a, 0.5, axis=0, method="midpoint"), variant="midpoint"),
    OpRow("nanquantile", cases((5,), (2, 3)), fn=lambda x: ag.nanquantile(x, 0.7), sample=distinct,
          ref=lambda a: np.nanquantile(a, 0.7)),
    # ----- shape -------------------------------------------------------------------------------------
    OpRow("reshape", cases((2, 3), args=(3, 2)), node="ViewBackward0"),
    OpRow("view", cases((2, 3), args=(-1,)), node="ViewBackward0"),
    OpRow("flatten", cases((2, 1, 3)), node="ViewBackward0"),
    OpRow("squeeze", cases((2, 1, 3)), node="SqueezeBackward0"),
    OpRow("squeeze", cases((2, 1, 3), args=(1,)), node="SqueezeBackward1", variant="dim"),
    OpRow("squeeze", cases((2, 1, 1), args=((1, -1),)), node="SqueezeBackward2", variant="dims"),
    OpRow("unsqueeze", cases((2, 3), args=(1,)) + cases((), args=(-1,)), node="UnsqueezeBackward0"),
    OpRow("permute", cases((2, 3, 4), args=(2, 0, 1)), node="PermuteBackward0"),
    OpRow("transpose", cases((2, 3), args=(0, 1)), node="TransposeBackward0"),
    OpRow("swapaxes", cases((2, 3, 1), args=(0, 2)), node="TransposeBackward0"),
    OpRow("swapdims", cases((2, 3, 1), args=(-1, 0)), node="TransposeBackward0"),
    OpRow("t", cases((2, 3), (3,), ()), fn=lambda x: x.t(), node="TBackward0"),
    OpRow("movedim", cases((2, 3, 4), args=(0, 2)) + cases((2, 3, 4), args=((0, 1), (2, 0))), node="PermuteBackward0"),
    OpRow("ravel", cases((2, 3), ()), node="ViewBackward0", ref=np.ravel),
    OpRow("ravel", cases((2, 3)), fn=lambda x: x.T.ravel(), ref=lambda a: a.T.ravel(), node="ViewBackward0",
          variant="copy"),
    OpRow("unflatten", cases((2, 6), args=(1, (3, -1))) + cases((4,), args=(0, (2, 2))), node="ViewBackward0"),
    OpRow("broadcast_to", cases((3,), (2, 1), args=((2, 3),)), node="ExpandBackward0"),
    OpRow("expand", cases((3, 1), args=(-1, 4)), node="ExpandBackward0"),
    OpRow("reshape_as", cases(((2, 3), (3, 2))), node="ViewBackward0"),
    OpRow("expand_as", cases(((3,), (2, 3))), node="ExpandBackward0"),
    OpRow("view_as", cases(((6,), (2, 3))), node="ViewBackward0"),
    OpRow("cat", cases(((2, 3), (1, 3)), ((2, 1), (2, 2))), fn=lambda a, b: ag.cat([a, b], 0 if a.shape[1] == b.shape[1] else 1),
          node="CatBackward0"),
    OpRow("hstack", cases(((3,), (2,)), ((2, 1), (2, 2)), ((), ())), fn=lambda a, b: ag.hstack([a, b]),
          ref=lambda a, b: np.hstack([a, b]), node="CatBackward0"),
    OpRow("vstack", cases(((3,), (2, 3)), ((), ())), fn=lambda a, b: ag.vstack([a, b]), ref=lambda a, b: np.vstack([a, b]),
          node="CatBackward0"),
    OpRow("dstack", cases(((3,), (3,)), ((2, 3), (2, 3, 2))), fn=lambda a, b: ag.dstack([a, b]),
          ref=lambda a, b: np.dstack([a, b]), node="CatBackward0"),
    OpRow("column_stack", cases(((3,), (3, 2)), ((), ())), fn=lambda a, b: ag.column_stack([a, b]),
          ref=lambda a, b: np.column_stack([a, b]), node="CatBackward0"),
    OpRow("tensor_split", cases((5, 2), args=(3,)) + cases((2, 5), args=([1, -1], 1)), fn=lambda x, *a: x.tensor_split(*a),
          node="SliceBackward0"),
    OpRow("hsplit", cases((2, 4), args=(2,)), fn=lambda x, s: ag.hsplit(x, s), node="SliceBackward0"),
    OpRow("vsplit", cases((4, 2), args=([1],)), fn=lambda x, s: ag.vsplit(x, s), node="SliceBackward0"),
    OpRow("dsplit", cases((1, 2, 4), args=(2,)), fn=lambda x, s: ag.dsplit(x, s), node="SliceBackward0"),
    OpRow("broadcast_tensors", cases(((3,), (2, 1)), ((), (2, 3))), fn=lambda a, b: ag.broadcast_tensors(a, b),
          node="ExpandBackward0"),
    OpRow("meshgrid", cases(((3,), (2,))), fn=lambda a, b: ag.meshgrid(a, b, indexing="xy"), node="ExpandBackward0"),
    OpRow("meshgrid", cases(((3,), (2,), ())), fn=lambda a, b, c: ag.meshgrid([a, b, c], indexing="ij"),
          node="ExpandBackward0", variant="ij"),
    OpRow("stack", cases(((2, 3), (2, 3))), fn=lambda a, b: ag.stack([a, b], 1), node="StackBackward0"),
    OpRow("split", cases((5, 2), args=(2,)), fn=lambda x, s: ag.split(x, s), node="SplitBackward0"),
    OpRow("split", cases((5, 2), args=([1, 4],)), fn=lambda x, s: ag.split(x, s)[1], node="SplitWithSizesBackward0",
          variant="sizes_one_piece_used"),
    OpRow("chunk", cases((2, 5), args=(2, 1)), fn=lambda x, n, d: x.chunk(n, d), node="SplitBackward0"),
    OpRow("unbind", cases((3, 2), args=(1,)), fn=lambda x, d: x.unbind(d), node="UnbindBackward0"),
    OpRow("flip", cases((2, 3), args=((0, 1),)) + cases((), args=((),)), node="FlipBackward0"),
    OpRow("fliplr", cases((2, 3)), ref=np.fliplr, node="FlipBackward0"),
    OpRow("flipud", cases((3,), (2, 3)), ref=np.flipud, node="FlipBackward0"),
    OpRow("roll", cases((2, 3), args=(1, -1)) + cases((2, 3), args=((1, -4), (0, 1))) + cases((2, 3), args=(2,)),
          ref=lambda a, s, d=None: np.roll(a, s, d), node="RollBackward0"),
    OpRow("rot90", cases((2, 3), args=(1,)) + cases((2, 3, 2), args=(3, (2, 0))) + cases((2, 3), args=(-2, (1, 0))),
          ref=lambda a, k, d=(0, 1): np.rot90(a, k, d), node="Rot90Backward0"),
    OpRow("repeat", cases((2, 3), args=(2, 1, 2)) + cases((), args=(3,)), node="RepeatBackward0"),
    OpRow("tile", cases((2, 3), args=((2,),)), node="RepeatBackward0"),
    OpRow("repeat_interleave", cases((2, 3), args=(2,)) + cases((2, 3), args=(2, -1)), ref=lambda a, r, d=None: np.repeat(a, r, d),
          node="ViewBackward0"),
    OpRow("repeat_interleave", cases((3, 2)), fn=lambda x: x.repeat_interleave(ag.tensor([1, 0, 3]), dim=0),
          ref=lambda a: np.repeat(a, [1, 0, 3], 0), node="IndexSelectBackward0", variant="tensor"),
    OpRow("diff", cases((4,), (2, 4)) + cases((3, 4), args=(2, 0)), ref=lambda a, n=1, d=-1: np.diff(a, n, d),
          node="SubBackward0"),
    OpRow("diff", cases(((2, 3), (2, 1), (2, 2))), fn=lambda x, p, q: ag.diff(x, 2, -1, p, q),
          ref=lambda a, p, q: np.diff(a, 2, -1, prepend=p, append=q), node="SubBackward0", variant="prepend_append"),
    # ----- diagonals and triangles ---------------------------------------------------------------------
    OpRow("diagonal", cases((3, 4)) + cases((3, 4), args=(1,)) + cases((2, 3, 4), args=(-1, 2, 0)),
          ref=lambda a, o=0, d1=0, d2=1: np.diagonal(a, o, d1, d2), node="DiagonalBackward0"),
    OpRow("diagonal_scatter", cases(((3, 4), (3,)), ((3, 4), (2,))),
          fn=lambda x, s: ag.diagonal_scatter(x, s, 0 if s.shape[0] == 3 else -1), node="DiagonalScatterBackward0"),
    OpRow("diag_embed", cases((3,), (2, 3)) + cases((2, 3), args=(1, 0, 2)), node="DiagEmbedBackward0"),
    OpRow("diag", cases((3,)) + cases((3,), args=(-1,)), ref=np.diag, node="DiagEmbedBackward0"),
    OpRow("diag", cases((3, 4)) + cases((3, 4), args=(2,)), ref=np.diag, node="DiagonalBackward0_copy", variant="matrix"),
    OpRow("diagflat", cases((2, 2)) + cases((3,), args=(1,)), ref=np.diagflat, node="DiagEmbedBackward0"),
    OpRow("tril", cases((3, 4), (2, 3, 3)) + cases((3, 4), args=(-1,)), ref=np.tril, node="TrilBackward0"),
    OpRow("triu", cases((3, 4), (2, 3, 3)) + cases((3, 4), args=(1,)), ref=np.triu, node="TriuBackward0"),
    OpRow("trace", cases((3, 4), (2, 2)), ref=np.trace, node="TraceBackward0"),
    # ----- contractions --------------------------------------------------------------------------------
    OpRow("einsum", cases(((2, 3), (3, 4))), fn=lambda a, b: ag.einsum("ij,jk->ik", a, b), ref=lambda a, b: a @ b,
          node="EinsumBackward0"),
    OpRow("einsum", cases((3, 3), (2, 3, 3)), fn=lambda x: ag.einsum("...ii->...i", x),
          ref=lambda a: np.einsum("...ii->...i", a), node="EinsumBackward0", variant="diagonal"),
    OpRow("einsum", cases((2, 3)), fn=lambda x: ag.einsum("ij->", x), ref=np.sum, node="EinsumBackward0", variant="sum"),
    OpRow("einsum", cases(((2, 3, 2), (2, 2, 4), (4, 3))), fn=lambda a, b, c: ag.einsum("ijk,ikl,lj->i", a, b, c),
          ref=lambda a, b, c: np.einsum("ijk,ikl,lj->i", a, b, c), node="EinsumBackward0", variant="three"),
    OpRow("einsum", cases(((2, 1, 3), (4, 3)), ((3,), (1,))), fn=lambda a, b: ag.einsum("...j,...j", [a, b]),
          ref=lambda a, b: np.einsum("...j,...j", a, b), node="EinsumBackward0", variant="broadcast"),
    OpRow("einsum", cases(((2, 2, 3), (3,))), fn=lambda a, b: ag.einsum(a, [0, 0, 1], b, [1], [1, 0]),
          ref=lambda a, b: np.einsum("iij,j->ji", a, b), node="EinsumBackward0", variant="sublist_repeat"),
    OpRow("tensordot", cases(((2, 3), (3, 4))) + cases(((2, 3, 4), (4, 3)), args=(([1, 2], [1, 0]),)) +
          cases(((2,), (3,)), args=(0,)), fn=lambda a, b, d=1: ag.tensordot(a, b, d),
          ref=lambda a, b, d=1: np.tensordot(a, b, d), node="ViewBackward0"),
    OpRow("outer", cases(((3,), (2,))), ref=np.outer, node="MulBackward0"),
    OpRow("inner", cases(((3,), (3,)), ((2, 3), (4, 3))), ref=np.inner, node="ViewBackward0"),
    OpRow("inner", cases(((), (2, 3))), ref=np.inner, node="MulBackward0", variant="scalar"),
    OpRow("kron", cases(((2, 2), (3, 2)), ((2,), (2, 3)), ((), (2,))), ref=np.kron, node="UnsafeViewBackward0"),
    # ----- indexing ----------------------------------------------------------------------------------
    OpRow("__getitem__", cases((3, 4), args=((slice(None), slice(1, None, 2)),)), fn=lambda x, i: x[i],
          node="SliceBackward0"),
    OpRow("__getitem__", cases((3, 4), args=(1,)), fn=lambda x, i: x[i], node="SelectBackward0", variant="select"),
    OpRow("__getitem__", cases((3, 4), args=(np.array([0, 2, 0]),)), fn=lambda x, i: x[i], node="IndexBackward0",
          variant="advanced_repeats"),
    OpRow("__getitem__", cases((2, 3), args=(_MASK23,)), fn=lambda x, i: x[i], node="IndexBackward0", variant="mask"),
    OpRow("gather", cases((2, 3), args=(0, _IDX23)), node="GatherBackward0"),
    OpRow("take_along_dim", cases((2, 3), args=(_IDX23, 0)) + cases((2, 3), args=(np.array([5, -1, 0]),)) +
          cases((1, 3), args=(np.array([[0], [-1]]), 1)), node="GatherBackward0"),
    OpRow("take", cases((2, 3), ()), fn=lambda x: x.take(ag.tensor([0, -1, 0])) if x.ndim else x.take(ag.tensor([0, -1])),
          node="TakeBackward0"),
    OpRow("narrow", cases((3, 4), args=(1, -3, 2)) + cases((3,), args=(0, 1, 0)), node="SliceBackward0"),
    OpRow("narrow_copy", cases((3, 4), args=(0, 1, 2)), node="NarrowCopyBackward0"),
    OpRow("select", cases((3, 4), args=(1, -1)) + cases((2, 3, 4), args=(0, 1)), node="SelectBackward0"),
    OpRow("index_select", cases((3, 2), args=(0, np.array([2, 0, 2]))), node="IndexSelectBackward0"),
    OpRow("masked_select", cases((2, 3), args=(_MASK23,)), node="MaskedSelectBackward0"),
    OpRow("index_put", cases(((3, 2), (2, 2))), fn=lambda x, v: x.index_put((np.array([0, 2]),), v),
          node="IndexPutBackward0"),
    OpRow("index_put", cases(((3, 2), (3, 2))), fn=lambda x, v: x.index_put((np.array([0, 2, 0]),), v, accumulate=True),
          node="IndexPutBackward0", variant="accumulate"),
    OpRow("scatter", cases(((2, 3), (2, 3))), fn=lambda x, s: x.scatter(1, np.array([[0, 1, 2], [2, 0, 1]]), s),
          node="ScatterBackward0"),
    OpRow("scatter", cases((2, 3)), fn=lambda x: x.scatter(0, _IDX23, 1.5), node="ScatterBackward1", variant="value"),
    *[
        OpRow("scatter_reduce", cases(((2, 3), (2, 3))),
              fn=(lambda r, i: lambda x, s: x.scatter_reduce(0, _IDX23, s, r, include_self=i))(reduce, include),
              sample=distinct, node="ScatterReduceBackward0", variant=f"{reduce}_{include}")
        for reduce in ("sum", "prod", "mean", "amax", "amin") for include in (True, False)
    ],
    OpRow("index_copy", cases(((3, 2), (2, 2))), fn=lambda x, s: x.index_copy(0, ag.tensor([2, 0]), s),
          node="IndexCopyBackward0"),
    OpRow("index_fill", cases((3, 2)), fn=lambda x: x.index_fill(1, ag.tensor([1, 1]), -1.0), node="IndexFillBackward0"),
    OpRow("index_fill", cases(((3, 2), ())), fn=lambda x, v: x.index_fill(0, ag.tensor([0, 2]), v),
          node="IndexFillBackward1", variant="tensor_value"),
    OpRow("masked_scatter", cases(((2, 3), (5,)), ((3,), (2, 2))), fn=lambda x, s: x.masked_scatter(_MASK23, s),
          node="MaskedScatterBackward0"),
    OpRow("scatter_add", cases(((2, 3), (2, 3))), fn=lambda x, s: x.scatter_add(0, _IDX23, s),
          node="ScatterAddBackward0"),
    OpRow("index_add", cases(((3, 2), (4, 2))), fn=lambda x, s: x.index_add(0, np.array([0, 2, 0, 1]), s),
          node="IndexAddBackward0"),
    OpRow("masked_fill", cases((2, 3)), fn=lambda x: x.masked_fill(_MASK23, 1.5), node="MaskedFillBackward0"),
    OpRow("masked_fill", cases(((2, 3), ())), fn=lambda x, v: x.masked_fill(_MASK23[0], v),
          node="MaskedFillBackward1", variant="tensor_value"),
    # ----- linalg ------------------------------------------------------------------------------------
    OpRow("matmul", cases(((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 2, 3), (3, 2)),
                          ((2, 1, 2, 3), (3, 3, 2))), ref=np.matmul),
    OpRow("mm", cases(((2, 3), (3, 2))), ref=np.matmul, node="MmBackward0"),
    OpRow("bmm", cases(((2, 2, 3), (2, 3, 2))), ref=np.matmul, node="BmmBackward0"),
    OpRow("dot", cases(((3,), (3,))), ref=np.dot, node="DotBackward0"),
    OpRow("vdot", cases(((3,), (3,))), ref=np.vdot, node="VdotBackward0"),
    OpRow("mv", cases(((2, 3), (3,))), ref=np.matmul, node="MvBackward0"),
    OpRow("addmm", cases(((2, 4), (2, 3), (3, 4)), ((4,), (2, 3), (3, 4)), ((), (2, 3), (3, 4))),
          fn=lambda i, a, b: ag.addmm(i, a, b, beta=0.5, alpha=2.0), ref=lambda i, a, b: 0.5 * i + 2.0 * a @ b,
          node="AddmmBackward0"),
    OpRow("addmm", cases(((2, 4), (2, 3), (3, 4))), fn=lambda i, a, b: ag.addmm(i, a, b, beta=0), ref=lambda i, a, b: a @ b,
          node="AddmmBackward0", variant="beta0"),
    OpRow("addmv", cases(((2,), (2, 3), (3,)), ((), (2, 3), (3,))),
          fn=lambda i, a, b: ag.addmv(i, a, b, beta=0.5, alpha=2.0), ref=lambda i, a, b: 0.5 * i + 2.0 * a @ b,
          node="AddmvBackward0"),
    OpRow("baddbmm", cases(((2, 2, 4), (2, 2, 3), (2, 3, 4)), ((4,), (2, 2, 3), (2, 3, 4))),
          fn=lambda i, a, b: ag.baddbmm(i, a, b, beta=0.5, alpha=2.0), ref=lambda i, a, b: 0.5 * i + 2.0 * a @ b,
          node="BaddbmmBackward0"),
    OpRow("addbmm", cases(((2, 4), (3, 2, 3), (3, 3, 4)), ((1, 4), (3, 2, 3), (3, 3, 4))),
          fn=lambda i, a, b: ag.addbmm(i, a, b, beta=0.5, alpha=2.0), ref=_addbmm_ref, node="AddbmmBackward0"),
    OpRow("addmm_", cases(((2, 4), (2, 3), (3, 4))), fn=lambda i, a, b: (i * 1).addmm_(a, b, beta=0.5, alpha=2.0),
          ref=lambda i, a, b: 0.5 * i + 2.0 * a @ b, node="AddmmBackward0"),
    OpRow("addmv_", cases(((2,), (2, 3), (3,))), fn=lambda i, a, b: (i * 1).addmv_(a, b, alpha=2.0),
          ref=lambda i, a, b: i + 2.0 * a @ b, node="AddmvBackward0"),
    OpRow("baddbmm_", cases(((2, 2, 4), (2, 2, 3), (2, 3, 4))), fn=lambda i, a, b: (i * 1).baddbmm_(a, b, beta=2.0),
          ref=lambda i, a, b: 2.0 * i + a @ b, node="BaddbmmBackward0"),
    OpRow("linalg_vecdot", cases(((3,), (3,)), ((2, 3), (3,)), ((1, 3), (4, 3))), fn=ag.linalg.vecdot,
          ref=lambda x, y: np.sum(x * y, -1)),
    OpRow("linalg_vecdot", cases(((3, 2), (3, 1))), fn=lambda x, y: ag.linalg.vecdot(x, y, dim=0),
          ref=lambda x, y: np.sum(x * y, 0), variant="dim"),
    OpRow("linalg_multi_dot", cases(((3, 4), (4, 2), (2, 5)), ((3,), (3, 4), (4, 2), (2,)), ((3,), (3,))),
          fn=lambda *ts: ag.linalg.multi_dot(ts), ref=lambda *arrays: np.linalg.multi_dot(arrays)),
    OpRow("addbmm_", cases(((2, 4), (3, 2, 3), (3, 3, 4))),
          fn=lambda i, a, b: (i * 1).addbmm_(a, b, beta=0.5, alpha=2.0), ref=_addbmm_ref, node="AddbmmBackward0"),
    OpRow("cross", cases(((2, 3), (2, 3)), ((3, 2), (3, 2))), ref=lambda a, b: np.cross(a, b, axis=a.shape.index(3)),
          node="LinalgCrossBackward0"),
    OpRow("linalg_cross", cases(((2, 3), (2, 3)), ((1, 3), (4, 3))), fn=ag.linalg.cross, ref=np.cross,
          node="LinalgCrossBackward0"),
    OpRow("linalg_cross", cases(((3, 2), (3, 1))), fn=lambda a, b: ag.linalg.cross(a, b, dim=0),
          ref=lambda a, b: np.cross(a, b, axis=0), node="LinalgCrossBackward0", variant="dim"),
    OpRow("inverse", _SQUARE, fn=lambda a: ag.inverse(_invertible(a)), ref=lambda a: np.linalg.inv(_invertible(a)),
          node="LinalgInvExBackward0"),
    OpRow("linalg_inv", _SQUARE[:2], fn=lambda a: ag.linalg.inv(_invertible(a)),
          ref=lambda a: np.linalg.inv(_invertible(a)), node="LinalgInvExBackward0"),
    OpRow("det", _SQUARE + cases((0, 0)), ref=np.linalg.det, node="LinalgDetBackward0"),
    OpRow("det", cases(((3, 1), (1, 3)), ((2, 2, 1), (2, 1, 2))), fn=lambda u, v: ag.det(u @ v),
          node="LinalgDetBackward0", variant="singular"),
    OpRow("linalg_det", _SQUARE[:2], fn=ag.linalg.det, ref=np.linalg.det, node="LinalgDetBackward0"),
    OpRow("slogdet", _SQUARE, ref=lambda a: np.linalg.slogdet(a)[0], node="LinalgSlogdetBackward0"),
    OpRow("linalg_slogdet", _SQUARE[:2], fn=lambda a: ag.linalg.slogdet(a)[1], ref=lambda a: np.linalg.slogdet(a)[1],
          node="LinalgSlogdetBackward0"),
    OpRow("logdet", _SQUARE[:2], fn=lambda a: ag.logdet(_spd(a)), ref=lambda a: np.linalg.slogdet(_spd(a))[1],
          node="WhereBackward0"),
    OpRow("linalg_solve", cases(((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3)),
                                ((2, 3, 3), (2, 1, 3, 2))),
          fn=lambda a, b: ag.linalg.solve(_invertible(a), b), node="LinalgSolveExBackward0"),
    OpRow("linalg_solve", cases(((3, 3), (2, 3)), ((2, 3, 3), (1, 4, 3))),
          fn=lambda a, b: ag.linalg.solve(_invertible(a), b, left=False),
          ref=lambda a, b: b @ np.linalg.inv(_invertible(a)), node="LinalgSolveExBackward0", variant="right"),
    OpRow("linalg_lstsq", cases(((4, 3), (4, 2)), ((2, 4, 3), (2, 4)), ((1, 4, 3), (2, 4, 2)), ((3, 4), (3, 2))),
          fn=lambda a, b: tuple(ag.linalg.lstsq(a, b, driver="gelsd")[:2]),
          ref=_lstsq_ref,
          node="LinalgLstsqBackward0"),
    OpRow("svd", _MATRICES, fn=lambda a: _svd_parts(*(lambda u, s, v: (u, s, v.mT))(*ag.svd(a))),
          ref=lambda a: np.linalg.svd(a, compute_uv=False), node="LinalgSvdBackward0"),
    OpRow("linalg_svd", _MATRICES, fn=lambda a: _svd_parts(*ag.linalg.svd(a, full_matrices=False)),
          ref=lambda a: np.linalg.svd(a, compute_uv=False), node="LinalgSvdBackward0"),
    OpRow("linalg_svd", cases((4, 3), (3, 4)), fn=lambda a: _svd_parts(*ag.linalg.svd(a)), node="LinalgSvdBackward0",
          variant="full_matrices"),
    OpRow("linalg_svdvals", _MATRICES, fn=ag.linalg.svdvals, ref=lambda a: np.linalg.svd(a, compute_uv=False),
          node="LinalgSvdBackward0"),
    OpRow("qr", cases((3, 3), (4, 3)), ref=lambda a: np.linalg.qr(a)[0], node="LinalgQrBackward0"),
    OpRow("linalg_qr", _MATRICES + cases((2, 3, 5)), fn=ag.linalg.qr, ref=lambda a: np.linalg.qr(a)[0],
          node="LinalgQrBackward0"),
    OpRow("linalg_qr", cases((3, 4), (3, 3)), fn=lambda a: ag.linalg.qr(a, mode="complete"),
          ref=lambda a: np.linalg.qr(a, mode="complete")[0], node="LinalgQrBackward0", variant="complete"),
    OpRow("cholesky", _SQUARE[:2], fn=lambda a: ag.cholesky(_spd(a)), ref=lambda a: np.linalg.cholesky(_spd(a)),
          node="CholeskyBackward0"),
    OpRow("cholesky", _SQUARE[:1], fn=lambda a: ag.cholesky(_spd(a), True),
          ref=lambda a: np.linalg.cholesky(_spd(a)).T, node="CholeskyBackward0", variant="upper"),
    OpRow("linalg_cholesky", _SQUARE, fn=lambda a: ag.linalg.cholesky(_spd(a)),
          ref=lambda a: np.linalg.cholesky(_spd(a)), node="LinalgCholeskyExBackward0"),
    OpRow("linalg_cholesky", _SQUARE[:2], fn=lambda a: ag.linalg.cholesky(_spd(a), upper=True),
          ref=lambda a: np.swapaxes(np.linalg.cholesky(_spd(a)), -1, -2), node="LinalgCholeskyExBackward0",
          variant="upper"),
    OpRow("linalg_eigh", _SQUARE, fn=lambda a: (lambda w, v: (w, _gauge(v)))(*ag.linalg.eigh(_sym(a))),
          ref=lambda a: np.linalg.eigvalsh(_sym(a)), node="LinalgEighBackward0"),
    OpRow("linalg_eigh", _SQUARE[:1], fn=lambda a: (lambda w, v: (w, _gauge(v)))(*ag.linalg.eigh(_sym(a), "U")),
          ref=lambda a: np.linalg.eigvalsh(_sym(a)), node="LinalgEighBackward0", variant="upper"),
    OpRow("linalg_eigvalsh", _SQUARE[:2], fn=lambda a: ag.linalg.eigvalsh(_sym(a)),
          ref=lambda a: np.linalg.eigvalsh(_sym(a)), node="LinalgEighBackward0"),
    OpRow("linalg_pinv", _MATRICES, fn=ag.linalg.pinv, ref=np.linalg.pinv, node="LinalgPinvBackward0"),
    OpRow("linalg_pinv", _SQUARE[:1], fn=lambda a: ag.linalg.pinv(_sym(a), hermitian=True),
          ref=lambda a: np.linalg.pinv(_sym(a), hermitian=True), node="LinalgPinvBackward0", variant="hermitian"),
    OpRow("pinverse", cases((4, 3)), ref=np.linalg.pinv, node="LinalgPinvBackward0"),
    OpRow("matrix_power", cases((3, 3), (2, 3, 3), args=(3,)), ref=np.linalg.matrix_power),
    OpRow("matrix_power", _SQUARE[:2], fn=lambda a: ag.matrix_power(_invertible(a), -2),
          ref=lambda a: np.linalg.matrix_power(_invertible(a), -2), variant="negative"),
    OpRow("matrix_power", cases((3, 3), args=(0,)), ref=lambda a, n: np.eye(3), variant="zero"),
    OpRow("linalg_matrix_power", cases((2, 3, 3), args=(2,)), fn=ag.linalg.matrix_power, ref=np.linalg.matrix_power,
          node="UnsafeViewBackward0"),
    OpRow("matrix_exp", _SQUARE + cases((0, 0)), ref=_expm, node="LinalgMatrixExpBackward0"),
    OpRow("linalg_matrix_exp", _SQUARE[:1], fn=ag.linalg.matrix_exp, ref=_expm, node="LinalgMatrixExpBackward0"),
    OpRow("linalg_vector_norm", cases((), (3,), (2, 3)), fn=ag.linalg.vector_norm, sample=uniform(kinks=(0,)),
          ref=lambda a: np.linalg.norm(a.ravel()), node="LinalgVectorNormBackward0"),
    OpRow("linalg_vector_norm", cases((2, 3), kwargs={"dim": 1, "keepdim": True}) + cases((2, 1, 3), kwargs={"dim": (0, 2)}),
          fn=lambda a, **k: ag.linalg.vector_norm(a, 3, **k), sample=uniform(kinks=(0,)),
          ref=lambda a, dim, keepdim=False: np.sum(np.abs(a) ** 3, axis=dim, keepdims=keepdim) ** (1 / 3),
          node="LinalgVectorNormBackward0", variant="ord3"),
    OpRow("linalg_vector_norm", cases((2, 3), kwargs={"ord": 1, "dim": 0}) + cases((2, 3), kwargs={"ord": math.inf})
          + cases((2, 3), kwargs={"ord": -math.inf, "dim": -1}) + cases((2, 3), kwargs={"ord": 0}),
          fn=ag.linalg.vector_norm, sample=distinct, node="LinalgVectorNormBackward0", variant="ord1_inf_0"),
    OpRow("linalg_vector_norm", cases((2, 3), kwargs={"ord": 0.5}) + cases((2, 3), kwargs={"ord": -1.5, "dim": 1}),
          fn=ag.linalg.vector_norm, sample=_POS, node="LinalgVectorNormBackward0", variant="fractional_negative"),
    OpRow("linalg_matrix_norm", cases((3, 4), (2, 3, 4)), fn=ag.linalg.matrix_norm, ref=lambda a: np.linalg.norm(a, axis=(-2, -1)),
          node="LinalgVectorNormBackward0"),
    OpRow("linalg_matrix_norm", cases((3, 4), kwargs={"ord": "nuc"}) + cases((2, 3, 4), kwargs={"ord": 2})
          + cases((3, 4), kwargs={"ord": -2}) + cases((2, 3, 4), kwargs={"ord": 2, "dim": (0, 2), "keepdim": True}),
          fn=ag.linalg.matrix_norm, ref=lambda a, ord, dim=(-2, -1), keepdim=False: np.linalg.norm(a, ord, dim, keepdim),
          variant="singular_values"),
    OpRow("linalg_matrix_norm", cases((3, 4), kwargs={"ord": 1}) + cases((2, 3, 4), kwargs={"ord": -math.inf})
          + cases((3, 4), kwargs={"ord": math.inf, "keepdim": True}) + cases((2, 3, 4), kwargs={"ord": -1, "dim": (2, 0)}),
          fn=ag.linalg.matrix_norm, sample=distinct,
          ref=lambda a, ord, dim=(-2, -1), keepdim=False: np.linalg.norm(a, ord, dim, keepdim), variant="sums"),
    OpRow("linalg_norm", cases((3,), (2, 3), (2, 1, 3)), fn=ag.linalg.norm, ref=lambda a: np.linalg.norm(a.ravel()),
          node="LinalgVectorNormBackward0"),
    OpRow("linalg_norm", cases((3, 4), kwargs={"ord": "nuc"}) + cases((2, 3), kwargs={"ord": 3, "dim": 1})
          + cases((4,), kwargs={"ord": 1}) + cases((2, 3, 4), kwargs={"dim": (0, 2), "keepdim": True}),
          fn=ag.linalg.norm, sample=distinct, ref=lambda a, ord=None, dim=None, keepdim=False: np.linalg.norm(a, ord, dim, keepdim),
          variant="ord_dim"),
    OpRow("cdist", cases(((4, 3), (5, 3)), ((2, 1, 4, 3), (3, 5, 3))), node="CdistBackward0"),
    OpRow("cdist", cases(((4, 3), (5, 3)), args=(1.0,)) + cases(((4, 3), (5, 3)), args=(3.0,))
          + cases(((2, 4, 3), (5, 3)), args=(math.inf,)) + cases(((4, 3), (2, 5, 3)), args=(0.5,))
          + cases(((4, 3), (5, 3)), args=(0.0,)), sample=distinct, node="CdistBackward0", variant="p"),
    # ----- nn ----------------------------------------------------------------------------------------
    OpRow("softmax", cases((3,), (2, 3), args=(-1,)) + cases((2, 3), args=(0,)), node="SoftmaxBackward0"),
    OpRow("log_softmax", cases((3,), (2, 3), args=(-1,)) + cases((2, 3), args=(0,)), node="LogSoftmaxBackward0"),
    OpRow("nll_loss", cases((3, 4)), fn=lambda x: ag.nll_loss(x, ag.tensor([0, 3, 3])), node="NllLossBackward0"),
    OpRow("nll_loss", cases((3, 4)), fn=lambda x: ag.nll_loss(x, ag.tensor([0, 3, 1]), reduction="none",
                                                               weight=ag.tensor([1.0, 2.0, 0.5, 1.0], dtype=ag.float64)),
          node="NllLossBackward0", variant="weight_none"),
    OpRow("conv2d", cases(((1, 2, 4, 4), (3, 2, 2, 2), (3,))), fn=lambda x, w, b: ag.conv2d(x, w, b, padding=1),
          node="ConvolutionBackward0"),
    OpRow("conv2d", cases(((1, 4, 5, 5), (2, 2, 3, 3))),
          fn=lambda x, w: ag.conv2d(x, w, stride=2, dilation=1, groups=2),
          node="ConvolutionBackward0", variant="stride_groups"),
    OpRow("conv2d", cases(((2, 4, 5, 4), (4, 2, 3, 2), (4,))),
          fn=lambda x, w, b: ag.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2), gradgrad=False,
          node="ConvolutionBackward0", variant="dilation"),
    OpRow("conv2d", cases(((2, 3, 3), (2, 2, 2, 2))), fn=lambda x, w: ag.conv2d(x, w, padding="same"),
          variant="unbatched_same"),
    OpRow("conv2d", cases(((3, 2, 6, 5), (4, 2, 3, 2), (4,))),  # NOTE [Taps by position]: one group, batch > 1
          fn=lambda x, w, b: ag.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
          node="ConvolutionBackward0", variant="taps_by_position"),
    OpRow("conv1d", cases(((2, 2, 5), (3, 2, 2), (3,))), fn=lambda x, w, b: ag.conv1d(x, w, b, stride=2, padding=1),
          node="ConvolutionBackward0"),
    OpRow("conv1d", cases(((1, 4, 6), (4, 2, 2))), fn=lambda x, w: ag.conv1d(x, w, dilation=2, groups=2),
          node="ConvolutionBackward0", variant="dilation_groups"),
    OpRow("conv_transpose1d", cases(((1, 2, 4), (2, 3, 3), (3,))),
          fn=lambda x, w, b: ag.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
          node="ConvolutionBackward0"),
    OpRow("conv_transpose2d", cases(((1, 2, 3, 3), (2, 2, 2, 2), (2,))),
          fn=lambda x, w, b: ag.conv_transpose2d(x, w, b, stride=2, output_padding=1), node="ConvolutionBackward0"),
    OpRow("conv_transpose2d", cases(((1, 4, 3, 2), (4, 1, 2, 2))),
          fn=lambda x, w: ag.conv_transpose2d(x, w, stride=(1, 2), padding=1, groups=2, dilation=2),
          node="ConvolutionBackward0", variant="groups_dilation"),
    OpRow("unfold", cases((1, 2, 4, 3), (2, 3, 3)), fn=lambda x: F.unfold(x, 2, padding=1, stride=(2, 1)),
          node="Im2ColBackward0"),
    OpRow("fold", cases((1, 8, 6), (8, 6)), fn=lambda x: F.fold(x, (3, 4), 2), node="Col2ImBackward0"),
    OpRow("embedding", cases((4, 2)), fn=lambda w: ag.embedding(np.array([[0, 3], [3, 1]]), w),
          node="EmbeddingBackward0"),
    OpRow("max_pool2d", cases((1, 1, 4, 4), (2, 3, 3)), fn=lambda x: ag.max_pool2d(x, 2, stride=1),
          sample=distinct, node="MaxPool2DWithIndicesBackward0"),
    OpRow("max_pool2d", cases((2, 3, 4, 6), (3, 5, 4)), fn=lambda x: ag.max_pool2d(x, 2), sample=distinct,
          node="MaxPool2DWithIndicesBackward0", variant="tiling"),
    OpRow("max_pool2d", cases((1, 2, 5, 5)), fn=lambda x: ag.max_pool2d(x, 3, 2, 1), sample=distinct,
          node="MaxPool2DWithIndicesBackward0", variant="overlapping_padded"),
    OpRow("max_pool2d", cases((1, 1, 5, 5)), fn=lambda x: ag.max_pool2d(x, 2, ceil_mode=True, dilation=(1, 2)),
          sample=distinct, node="MaxPool2DWithIndicesBackward0", variant="ceil_dilation"),
    OpRow("max_pool1d", cases((2, 2, 5), (3, 6)), fn=lambda x: ag.max_pool1d(x, 2, 1, ceil_mode=True),
          sample=distinct),
    OpRow("avg_pool2d", cases((1, 2, 4, 5), (2, 3, 3)), fn=lambda x: F.avg_pool2d(x, 2), node="AvgPool2DBackward0"),
    OpRow("avg_pool2d", cases((1, 1, 5, 5)),
          fn=lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), node="AvgPool2DBackward0",
          variant="padded_ceil"),
    OpRow("avg_pool1d", cases((2, 2, 5), (2, 6)), fn=lambda x: ag.avg_pool1d(x, 3, 2, padding=1)),
    OpRow("adaptive_avg_pool2d", cases((1, 2, 5, 4), (2, 3, 3)), fn=lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
          node="AdaptiveAvgPool2DBackward0"),
    OpRow("adaptive_avg_pool1d", cases((2, 2, 5)), fn=lambda x: ag.adaptive_avg_pool1d(x, 3)),
    OpRow("adaptive_avg_pool3d", cases((1, 1, 3, 4, 2)), fn=lambda x: F.interpolate(x, size=(2, 3, 2), mode="area"),
          node="AdaptiveAvgPool3DBackward0"),
    OpRow("adaptive_max_pool2d", cases((1, 2, 5, 4), (2, 3, 3)), fn=lambda x: F.adaptive_max_pool2d(x, (3, 2)),
          sample=distinct, node="AdaptiveMaxPool2DBackward0"),
    OpRow("adaptive_max_pool1d", cases((2, 2, 5)), fn=lambda x: ag.adaptive_max_pool1d(x, 3), sample=distinct),
    OpRow("interpolate", cases((1, 2, 3, 4)), fn=lambda x: F.interpolate(x, scale_factor=2),
          node="UpsampleNearest2DBackward0"),
    OpRow("interpolate", cases((1, 2, 3, 4)), fn=lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"),
          node="UpsampleBilinear2DBackward0", variant="bilinear"),
    OpRow("interpolate", cases((1, 1, 3, 3)),
          fn=lambda x: F.interpolate(x, size=(4, 5), mode="bicubic", align_corners=True),
          node="UpsampleBicubic2DBackward0", variant="bicubic_align_corners"),
    OpRow("interpolate", cases((2, 2, 4)), fn=lambda x: F.interpolate(x, size=7, mode="linear"),
          node="UpsampleLinear1DBackward0", variant="linear"),
    OpRow("pad", cases((2, 3), (1, 2, 3)), fn=lambda x: F.pad(x, (1, 2)), node="ConstantPadNdBackward0"),
    OpRow("pad", cases((1, 2, 3, 4)), fn=lambda x: F.pad(x, (-1, 2, 1, 0), value=1.5), node="ConstantPadNdBackward0",
          variant="negative"),
    OpRow("pad", cases((1, 2, 4)), fn=lambda x: F.pad(x, (2, 3), mode="reflect"), node="ReflectionPad1DBackward0",
          variant="reflect"),
    OpRow("pad", cases((1, 3, 4), (1, 1, 2, 3)), fn=lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
          node="ReplicationPad2DBackward0", variant="replicate"),
    OpRow("pad", cases((1, 2, 4)), fn=lambda x: F.pad(x, (3, -1), mode="circular"), variant="circular"),
    OpRow("layer_norm", cases(((2, 3), (3,), (3,))), fn=lambda x, w, b: ag.layer_norm(x, (3,), w, b),
          node="NativeLayerNormBackward0"),
    OpRow("layer_norm", cases((2, 2, 3)), fn=lambda x: ag.layer_norm(x, (2, 3)), node="NativeLayerNormBackward0",
          variant="no_affine"),
    OpRow("batch_norm", cases(((3, 2, 2), (2,), (2,))),
          fn=lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), node="NativeBatchNormBackward0"),
    OpRow("batch_norm", cases(((3, 2), (2,), (2,))),
          fn=lambda x, w, b: F.batch_norm(x, ag.tensor([0.5, -1.0], dtype=ag.float64),
                                          ag.tensor([2.0, 0.5], dtype=ag.float64), w, b),
          node="NativeBatchNormBackward0", variant="eval"),
    OpRow("group_norm", cases(((2, 4, 3), (4,), (4,))), fn=lambda x, w, b: ag.group_norm(x, 2, w, b),
          node="NativeGroupNormBackward0"),
    OpRow("rnn_layer", cases(((3, 2, 2), (2, 1), (2, 2), (8, 2), (8, 1), (8,), (8,), (1, 2))),
          fn=lambda *ts: rnn_layer(*ts, mode="LSTM"), node="LstmBackward0", variant="lstm_proj"),
    OpRow("rnn_layer", cases(((4, 2), (2, 2), (6, 2), (6, 2), (6,), (6,))),
          fn=lambda x, h, wi, wh, bi, bh: rnn_layer(x, h, None, wi, wh, bi, bh, mode="GRU", reverse=True,
                                                    batch_sizes=np.array([2, 1, 1]))[:2],
          node="GruBackward0", variant="gru_packed_reverse"),
    OpRow("rnn_layer", cases(((3, 1, 2), (1, 2), (2, 2), (2, 2))),
          fn=lambda x, h, wi, wh: rnn_layer(x, h, None, wi, wh, mode="RNN_TANH")[:2],
          node="RnnTanhBackward0", variant="rnn_no_bias"),
    OpRow("scaled_dot_product_attention", cases(((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3))),
          fn=F.scaled_dot_product_attention, node="ScaledDotProductFlashAttentionForCpuBackward0"),
    OpRow("scaled_dot_product_attention", cases(((2, 3, 2), (2, 3, 2), (2, 3, 2), (3, 3))),
          fn=lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, scale=0.7),
          node="ScaledDotProductFlashAttentionForCpuBackward0", variant="float_mask"),
    OpRow("scaled_dot_product_attention", cases(((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2))),
          fn=lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
          node="ScaledDotProductFlashAttentionForCpuBackward0", variant="causal_gqa"),
    # ----- activations and losses (aiograd.ops.nn.activation, aiograd.ops.nn.loss) ---------------------------
    OpRow("linear", cases(((3, 4), (2, 4), (2,))), fn=F.linear, ref=lambda x, w, b: x @ w.T + b,
          node="AddmmBackward0"),
    OpRow("linear", cases(((2, 3, 4), (2, 4)), ((4,), (2, 4))), fn=F.linear, ref=lambda x, w: x @ w.T,
          node="ViewBackward0", variant="nd_no_bias"),
    OpRow("silu", UNARY, fn=F.silu, ref=lambda x: x / (1 + np.exp(-x)), node="SiluBackward0"),
    OpRow("mish", UNARY, fn=F.mish, ref=lambda x: x * np.tanh(np.log1p(np.exp(x))), node="MishBackward0"),
    OpRow("logsigmoid", UNARY, fn=F.logsigmoid, ref=lambda x: -np.log1p(np.exp(-x)), node="LogSigmoidBackward0"),
    OpRow("elu", UNARY, fn=lambda x: F.elu(x, 0.7), sample=uniform(kinks=(0,)),
          ref=lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), node="EluBackward0"),
    OpRow("selu", UNARY, sample=uniform(kinks=(0,)), node="EluBackward0"),
    OpRow("celu", UNARY, fn=lambda x: ag.celu(x, 2.0), sample=uniform(kinks=(0,)),
          ref=lambda x: np.maximum(x, 0) + np.minimum(0, 2.0 * np.expm1(x / 2.0)), node="CeluBackward0"),
    OpRow("leaky_relu", UNARY, fn=lambda x: F.leaky_relu(x, 0.2), sample=uniform(kinks=(0,)),
          ref=lambda x: np.where(x > 0, x, 0.2 * x), node="LeakyReluBackward0"),
    OpRow("hardtanh", UNARY, fn=lambda x: F.hardtanh(x, -0.5, 1.0), sample=uniform(kinks=(-0.5, 1.0)),
          ref=lambda x: np.clip(x, -0.5, 1.0), node="HardtanhBackward0"),
    OpRow("hardsigmoid", UNARY, fn=lambda x: F.hardsigmoid(3 * x), sample=uniform(kinks=(-1, 1)),
          ref=lambda x: np.clip(x / 2 + 0.5, 0, 1), node="HardsigmoidBackward0"),
    OpRow("hardswish", UNARY, fn=lambda x: F.hardswish(3 * x), sample=uniform(kinks=(-1, 1)),
          ref=lambda x: 3 * x * np.clip(3 * x + 3, 0, 6) / 6, node="HardswishBackward0"),
    OpRow("threshold", UNARY, fn=lambda x: ag.threshold(x, 0.5, -2.0), sample=uniform(kinks=(0.5,)),
          ref=lambda x: np.where(x > 0.5, x, -2.0), node="ThresholdBackward0"),
    OpRow("hardshrink", UNARY, sample=uniform(kinks=(-0.5, 0.5)), ref=lambda x: np.where(np.abs(x) > 0.5, x, 0),
          node="HardshrinkBackward0"),
    OpRow("softshrink", UNARY, fn=lambda x: F.softshrink(x, 0.3), sample=uniform(kinks=(-0.3, 0.3)),
          ref=lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.3, 0), node="SoftshrinkBackward0"),
    OpRow("glu", cases((2, 4), (4,)), fn=F.glu, node="GluBackward0"),
    OpRow("prelu", cases(((2, 3, 2), (3,)), ((4,), (1,)), ((), ())), fn=ag.prelu, sample=uniform(kinks=(0,)),
          node="PreluKernelBackward0"),
    OpRow("mse_loss", BINARY[:2], fn=lambda a, b: F.mse_loss(a, b.expand_as(a)), ref=lambda a, b: np.mean((a - b) ** 2),
          node="MseLossBackward0"),
    OpRow("mse_loss", cases(((2, 3), (2, 3))), fn=lambda a, b: F.mse_loss(a, b, reduction="none"),
          node="MseLossBackward0", variant="none"),
    OpRow("smooth_l1_loss", cases(((2, 3), (2, 3))), fn=lambda a, b: F.smooth_l1_loss(a, b, beta=0.5),
          node="SmoothL1LossBackward0"),
    OpRow("huber_loss", cases(((2, 3), (2, 3))), fn=lambda a, b: F.huber_loss(a, b, reduction="sum", delta=0.5),
          node="HuberLossBackward0"),
    OpRow("binary_cross_entropy", cases(((2, 3), (2, 3))), fn=F.binary_cross_entropy, sample=uniform(0.1, 0.9),
          node="BinaryCrossEntropyBackward0"),
    OpRow("binary_cross_entropy_with_logits", cases(((2, 3), (2, 3))),
          fn=lambda x, t: F.binary_cross_entropy_with_logits(
              x, t.sigmoid(), pos_weight=ag.tensor([1.0, 2.0, 0.5], dtype=ag.float64), reduction="none"),
          node="BinaryCrossEntropyWithLogitsBackward0"),
    OpRow("dropout", cases((3, 4)), fn=_seeded(lambda x: ag.dropout(x, 0.5)), node="NativeDropoutBackward0"),
    # ----- copies and casts --------------------------------------------------------------------------
    OpRow("clone", UNARY, node="CloneBackward0"),
    OpRow("contiguous", cases((2, 3)), fn=lambda x: x.T.contiguous(), node="CloneBackward0"),
    OpRow("to", UNARY, fn=lambda x: x.to(ag.float64, copy=True), node="ToCopyBackward0"),
    OpRow("float", UNARY, fn=lambda x: x.float(), node="ToCopyBackward0", tolerance=_FLOAT32),
    OpRow("double", UNARY, fn=lambda x: x.float().double(), node="ToCopyBackward0", tolerance=_FLOAT32),
    OpRow("type_as", UNARY, fn=lambda x: x.type_as(ag.zeros(1)), node="ToCopyBackward0", tolerance=_FLOAT32),
    OpRow("cpu", UNARY, fn=lambda x: x.to("cpu:1").cpu(), node="ToCopyBackward0"),
    # ----- in place (on a copy, so the input stays a leaf) -------------------------------------------
    OpRow("add_", BINARY[:2], fn=lambda a, b: a.clone().add_(b, alpha=2.0), node="AddBackward0"),
    OpRow("sub_", BINARY[:2], fn=lambda a, b: a.clone().sub_(b), node="SubBackward0"),
    OpRow("mul_", BINARY[:2], fn=lambda a, b: a.clone().mul_(b), node="MulBackward0"),
    OpRow("div_", BINARY[:2], fn=lambda a, b: a.clone().div_(b.abs() + 0.5), node="DivBackward0"),
    OpRow("pow_", UNARY, fn=lambda x: x.clone().pow_(3), node="PowBackward0"),
    OpRow("clamp_", UNARY, fn=lambda x: x.clone().clamp_(-0.5, 0.5), sample=uniform(-1, 1, (-0.5, 0.5)),
          node="ClampBackward1"),
    OpRow("clamp_min_", UNARY, fn=lambda x: x.clone().clamp_min_(0.25), sample=uniform(-1, 1, (0.25,)),
          node="ClampBackward1"),
    OpRow("clamp_max_", UNARY, fn=lambda x: x.clone().clamp_max_(0.25), sample=uniform(-1, 1, (0.25,)),
          node="ClampBackward1"),
    OpRow("remainder_", UNARY, fn=lambda x: x.clone().remainder_(0.7),
          sample=uniform(-2, 2, [k * 0.7 for k in range(-3, 4)]), node="RemainderBackward0"),
    *[
        OpRow(name + "_", UNARY, fn=(lambda n: lambda x: getattr((x.abs() + 0.3) if n in ("log", "log1p", "sqrt")
                                                                  else x.clone(), n + "_")())(name),
              sample=uniform(kinks=(0,)))
        for name in ("exp", "log", "log1p", "sqrt", "abs", "neg", "sin", "cos", "tanh", "sigmoid", "relu",
                     "reciprocal", "square")
    ],
    *[
        OpRow(name + "_", UNARY, fn=(lambda n, pre: lambda x: getattr(pre(x), n + "_")())(name, pre), sample=_UNIT)
        for name, pre in (
            ("expm1", _clone), ("exp2", _clone), ("sinh", _clone), ("cosh", _clone), ("asinh", _clone),
            ("acosh", lambda x: x.abs() + 1.2), ("atanh", _clone), ("asin", _clone), ("acos", _clone),
            ("atan", _clone), ("deg2rad", _clone), ("rad2deg", _clone), ("erfc", _clone), ("erfinv", _clone),
            ("lgamma", lambda x: x.abs() + 0.3), ("digamma", lambda x: x.abs() + 0.3), ("sinc", _clone),
            ("logit", lambda x: x.abs() + 0.1), ("nan_to_num", _clone),
        )
    ],
    OpRow("polygamma_", UNARY, fn=lambda x: (x.abs() + 0.3).polygamma_(1), sample=_UNIT, node="PolygammaBackward1"),
    OpRow("atan2_", BINARY[:2], fn=lambda a, b: a.clone().atan2_(b), node="Atan2Backward0"),
    OpRow("hypot_", BINARY[:2], fn=lambda a, b: a.clone().hypot_(b), sample=uniform(kinks=(0,)),
          node="HypotBackward0"),
    OpRow("copysign_", BINARY[:2], fn=lambda a, b: a.clone().copysign_(b), sample=uniform(kinks=(0,)),
          node="CopysignBackward0"),
    OpRow("fmod_", BINARY[:2], fn=lambda a, b: a.clone().fmod_(b.abs() + 0.5), node="FmodBackward1"),
    OpRow("xlogy_", BINARY[:2], fn=lambda a, b: a.clone().xlogy_(b.abs() + 0.5), node="XlogyBackward0"),
    OpRow("lerp_", _TRIPLES[:2], fn=lambda a, b, w: a.clone().lerp_(b, w), node="LerpBackward1"),
    OpRow("addcmul_", _TRIPLES[:2], fn=lambda a, b, c: a.clone().addcmul_(b, c, value=2), node="AddcmulBackward0"),
    OpRow("addcdiv_", _TRIPLES[:2], fn=lambda a, b, c: a.clone().addcdiv_(b, c.abs() + 0.5), node="AddcdivBackward0"),
    OpRow("cumsum_", cases((2, 3)), fn=lambda x: x.clone().cumsum_(1), node="CumsumBackward0"),
    OpRow("cumprod_", cases((2, 3)), fn=lambda x: x.clone().cumprod_(0), node="CumprodBackward0"),
    OpRow("zero_", UNARY, fn=lambda x: (x * 2).zero_() + x, node="AddBackward0"),
    OpRow("fill_", cases(((2, 3), ())), fn=lambda x, v: (x * 2).fill_(v) + x, node="AddBackward0"),
    OpRow("copy_", cases(((2, 3), (3,))), fn=lambda x, s: (x * 2).copy_(s) * x, node="MulBackward0"),
    OpRow("masked_fill_", cases((2, 3)), fn=lambda x: x.clone().masked_fill_(_MASK23, 0.5),
          node="MaskedFillBackward0"),
    OpRow("index_put_", cases(((3, 2), (2,))), fn=lambda x, v: x.clone().index_put_((np.array([0, 2]), np.array([1, 0])), v),
          node="IndexPutBackward0"),
    OpRow("scatter_", cases(((2, 3), (2, 3))), fn=lambda x, s: x.clone().scatter_(1, np.array([[0, 1, 2], [2, 0, 1]]), s),
          node="ScatterBackward0"),
    OpRow("scatter_add_", cases(((2, 3), (2, 3))), fn=lambda x, s: x.clone().scatter_add_(0, _IDX23, s),
          node="ScatterAddBackward0"),
    OpRow("scatter_reduce_", cases(((2, 3), (2, 3))), fn=lambda x, s: x.clone().scatter_reduce_(0, _IDX23, s, "amax"),
          sample=distinct, node="ScatterReduceBackward0"),
    OpRow("index_add_", cases(((3, 2), (2, 2))), fn=lambda x, s: x.clone().index_add_(0, np.array([2, 2]), s),
          node="IndexAddBackward0"),
    OpRow("index_copy_", cases(((3, 2), (2, 2))), fn=lambda x, s: x.clone().index_copy_(0, ag.tensor([2, 0]), s),
          node="IndexCopyBackward0"),
    OpRow("index_fill_", cases((3, 2)), fn=lambda x: x.clone().index_fill_(0, ag.tensor([1]), 2.0),
          node="IndexFillBackward0"),
    OpRow("masked_scatter_", cases(((2, 3), (4,))), fn=lambda x, s: x.clone().masked_scatter_(_MASK23, s),
          node="MaskedScatterBackward0"),
    OpRow("tril_", cases((3, 3)), fn=lambda x: x.clone().tril_(), node="TrilBackward0"),
    OpRow("triu_", cases((3, 3)), fn=lambda x: x.clone().triu_(-1), node="TriuBackward0"),
    OpRow("diagonal", cases((3, 3)), fn=lambda x: _diagonal_mul_(x.clone()), node="MulBackward0",
          variant="view_written_in_place"),
    # ----- samples: zero gradients (as torch) --------------------------------------------------------
    OpRow("bernoulli", cases((2, 3)), fn=_seeded(lambda p: ag.bernoulli(p)), sample=uniform(0.1, 0.9),
          node="BernoulliBackward0"),
    OpRow("poisson", cases((2, 3)), fn=_seeded(lambda r: ag.poisson(r)), sample=POSITIVE, node="PoissonBackward0"),
    OpRow("bernoulli_", cases((2, 3)), fn=_seeded(lambda x: (x * 1).bernoulli_(0.5)), node="BernoulliBackward2"),
    OpRow("normal_", cases((2, 3)), fn=_seeded(lambda x: (x * 1).normal_()), node="NormalBackward0"),
    OpRow("uniform_", cases((2, 3)), fn=_seeded(lambda x: (x * 1).uniform_(-1, 1)), node="UniformBackward0"),
    OpRow("__setitem__", cases(((3, 2), (2,))), fn=lambda x, v: _setitem(x.clone(), 1, v), node="CopySlices"),
    OpRow("__setitem__", cases(((3, 2), (2, 2))), fn=lambda x, v: _setitem(x.clone(), np.array([0, 2]), v),
          node="IndexPutBackward0", variant="advanced"),
    # ----- sparse COO tensors: the values (and dense operands) are the inputs ---------------------------
    OpRow("sparse_coo_tensor", cases((5,)), fn=lambda v: _sp(v).to_dense(), node="ToDenseBackward0"),
    OpRow("sparse_coo_tensor", cases((5, 2)), fn=lambda v: ag.sparse_coo_tensor(_SP_IDX, v, (3, 3, 2)).to_dense(),
          node="ToDenseBackward0", variant="hybrid"),
    OpRow("to_dense", cases((5,)), fn=lambda v: _sp(v).t().to_dense() * 1.0, node="MulBackward0"),
    OpRow("coalesce", cases((5,)), fn=lambda v: _sp(v).coalesce().values(), node="ValuesBackward0"),
    OpRow("values", cases((5, 2)), fn=lambda v: ag.sparse_coo_tensor(_SP_IDX, v, (3, 3, 2)).coalesce().values(),
          node="ValuesBackward0"),
    OpRow("to_sparse", cases((3, 3)), fn=lambda x: x.to_sparse().to_dense(), node="ToDenseBackward0"),
    OpRow("to_sparse", cases((3, 2)), fn=lambda x: ag.sparse.sum(x.to_sparse(1), 0), node="SparseSumBackward0",
          variant="sparse_dim"),
    OpRow("spmm", cases(((5,), (3, 2)), ((5,), (3,))),
          fn=lambda v, d: ag.spmm(_sp(v), d) if d.ndim == 2 else _sp(v) @ d, node=None),
    OpRow("sparse_mm", cases(((5,), (3, 2))), fn=lambda v, d: ag.sparse.mm(_sp(v), d), node="SparseAddmmBackward0"),
    OpRow("sparse_mm", cases(((5,), (3, 2))), fn=lambda v, d: ag.sparse.mm(_sp(v).t(), d), node="SparseAddmmBackward0",
          variant="transposed"),
    OpRow("sparse_mm", cases(((5,), (3,))),
          fn=lambda v, w: ag.sparse.mm(_sp(v), ag.sparse_coo_tensor([[0, 2, 1], [0, 1, 1]], w, (3, 2))).to_dense(),
          node="ToDenseBackward0", variant="sparse_sparse", gradgrad=False),
    OpRow("sparse_sum", cases((5,)), fn=lambda v: ag.sparse.sum(_sp(v)), node="SumBackward0"),
    OpRow("sparse_sum", cases((5,)), fn=lambda v: ag.sparse.sum(_sp(v), 1).to_dense(), node="ToDenseBackward0",
          variant="dim"),
    OpRow("sparse_sum", cases((5, 2)), fn=lambda v: ag.sparse.sum(ag.sparse_coo_tensor(_SP_IDX, v, (3, 3, 2)), (0, 1)),
          node="SparseSumBackward0", variant="hybrid"),
    OpRow("sparse_softmax", cases((5,)), fn=lambda v: ag.sparse.softmax(_sp(v), 1).to_dense(), node="ToDenseBackward0",
          gradgrad=False),
    OpRow("sparse_log_softmax", cases((5,)), fn=lambda v: ag.sparse.log_softmax(_sp(v), 0).to_dense(),
          node="ToDenseBackward0", gradgrad=False),
]

# a sparse pattern with a repeated index ((0, 2) twice), so rules meet uncoalesced input
_SP_IDX = np.array([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]])


def _sp(v: ag.Tensor) -> ag.Tensor:
    return ag.sparse_coo_tensor(_SP_IDX, v, (3, 3))


def _diagonal_mul_(x: ag.Tensor) -> ag.Tensor:
    """An in-place change through a diagonal view reaches its base (torch's writable diagonal)."""
    x.diagonal().mul_(3.0)
    return x * 1


def _setitem(x: ag.Tensor, index: Any, value: Any) -> ag.Tensor:
    x[index] = value
    return x
