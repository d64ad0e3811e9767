"""aiograd.nn.init: every initializer of torch.nn.init 2.13, its statistics, its errors and
its ``generator=`` argument. Deterministic fills and error messages are torch's
(tests/data/torch_names.json, written by tests/data/make_torch_names.py)."""

from __future__ import annotations

import inspect
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import aiograd as ag
from aiograd.nn import init

TORCH = json.loads((Path(__file__).parent / "data" / "torch_names.json").read_text())
NS = {"T": ag}

TORCH_2_13 = (
    "calculate_gain uniform_ normal_ trunc_normal_ constant_ ones_ zeros_ eye_ dirac_ xavier_uniform_ "
    "xavier_normal_ kaiming_uniform_ kaiming_normal_ orthogonal_ sparse_ uniform normal constant eye dirac "
    "xavier_uniform xavier_normal kaiming_uniform kaiming_normal orthogonal sparse"
).split()
RANDOM = "uniform_ normal_ trunc_normal_ xavier_uniform_ xavier_normal_ kaiming_uniform_ kaiming_normal_ orthogonal_".split()


def test_every_torch_initializer_is_here() -> None:
    assert sorted(init.__all__) == sorted(TORCH_2_13)


@pytest.mark.parametrize("expr", sorted(TORCH["init"]))
def test_deterministic_fills_match_torch(expr: str) -> None:
    want = TORCH["init"][expr]
    t = eval(expr, NS)
    assert list(t.shape) == want["shape"] and t.tolist() == want["values"]


@pytest.mark.parametrize("expr", sorted(TORCH["init_raises"]))
def test_errors_match_torch(expr: str) -> None:
    kind, message = TORCH["init_raises"][expr]
    with pytest.raises(Exception) as info:
        eval(expr, NS)
    assert type(info.value).__name__ == kind and str(info.value) == message


@pytest.mark.parametrize("name", RANDOM + ["sparse_"])
def test_generator_argument_makes_draws_reproducible(name: str) -> None:
    fn = getattr(init, name)
    assert "generator" in inspect.signature(fn).parameters
    args = (0.5,) if name == "sparse_" else ()
    a = fn(ag.empty(6, 5), *args, generator=ag.Generator().manual_seed(1))
    b = fn(ag.empty(6, 5), *args, generator=ag.Generator().manual_seed(1))
    assert a.tolist() == b.tolist()
    ag.manual_seed(1)
    c = fn(ag.empty(6, 5), *args)
    ag.manual_seed(1)
    assert fn(ag.empty(6, 5), *args).tolist() == c.tolist()  # the default generator, seeded by ag.manual_seed


def test_initializers_write_in_place_without_recording() -> None:
    p = ag.nn.Parameter(ag.empty(4, 6))
    v = p._version
    for fn in (init.orthogonal_, init.eye_, init.trunc_normal_):
        assert fn(p) is p
    assert p.grad_fn is None and p._version == v + 3


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (6, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape: tuple[int, ...]) -> None:
    w = init.orthogonal_(ag.empty(*shape, dtype=ag.float64), gain=2.0).numpy()
    m = w.reshape(shape[0], -1)
    small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-12)


def test_sparse_zeros_a_fraction_of_each_column() -> None:
    w = init.sparse_(ag.empty(10, 40, dtype=ag.float64), sparsity=0.25, std=0.5).numpy()
    assert ((w == 0).sum(axis=0) == 3).all()  # ceil(0.25 * 10) zeros per column
    assert 0.35 < w[w != 0].std() < 0.65


def test_dirac_convolution_keeps_its_input() -> None:
    x = ag.randn(2, 3, 5, 5)
    w = init.dirac_(ag.empty(3, 3, 3, 3))
    np.testing.assert_allclose(ag.nn.functional.conv2d(x, w, padding=1).numpy(), x.numpy(), atol=1e-6)


@pytest.mark.parametrize(("mean", "std", "a", "b"), [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                                     (1.0, 2.0, 0.0, 5.0), (0.0, 1.0, 5.0, 6.0)])
def test_trunc_normal_stays_in_its_window(mean: float, std: float, a: float, b: float) -> None:
    ag.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the far-tail window warns, as torch
        w = init.trunc_normal_(ag.empty(20000, dtype=ag.float64), mean, std, a, b).numpy()
    assert w.min() >= a and w.max() <= b and w.std() > 0
    if (a, b) == (-2.0, 2.0):
        assert abs(w.mean()) < 0.03 and 0.86 < w.std() < 0.90  # std of N(0,1) truncated at +-2: 0.880


def test_trunc_normal_warns_for_a_window_far_from_the_mean() -> None:
    with pytest.warns(UserWarning, match=r"mean is more than 2 std from \[a, b\]"):
        init.trunc_normal_(ag.empty(3), a=5.0, b=6.0)


@pytest.mark.parametrize("fn", [init.kaiming_uniform_, init.kaiming_normal_])
def test_kaiming_of_an_empty_tensor_warns_and_does_nothing(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert fn(ag.empty(0, 3)).shape == (0, 3)


def test_distribution_statistics() -> None:
    ag.manual_seed(0)
    w = init.kaiming_normal_(ag.empty(400, 300, dtype=ag.float64), nonlinearity="relu").numpy()
    assert abs(w.std() - math.sqrt(2 / 300)) < 0.002
    w = init.xavier_uniform_(ag.empty(400, 300, dtype=ag.float64)).numpy()
    bound = math.sqrt(6 / 700)
    assert w.max() <= bound and w.min() >= -bound and abs(w.std() - bound / math.sqrt(3)) < 0.001


@pytest.mark.parametrize("name", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                                  "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_aliases_warn_and_initialise(name: str) -> None:
    shape = (3, 3, 3) if name == "dirac" else (4, 3)
    args = (0.5,) if name in ("constant", "sparse") else ()
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        t = getattr(init, name)(ag.zeros(*shape), *args)
    assert t.shape == shape and getattr(init, name).__name__ == name
