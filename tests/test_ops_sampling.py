"""Sampling ops (aiograd/ops/sampling.py): multinomial's frequencies with and without replacement,
the moments of normal/bernoulli/poisson, reproducibility through generators, the zero gradient
and node names torch gives samples, and torch's argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag

N = 20000


def test_multinomial_with_replacement_draws_in_proportion_to_the_weights() -> None:
    g = ag.Generator().manual_seed(0)
    w = ag.tensor([[1.0, 2.0, 7.0], [5.0, 0.0, 5.0]])  # need not sum to 1
    s = ag.multinomial(w, N, True, generator=g)
    assert s.dtype == ag.int64 and s.shape == (2, N)
    freq = np.stack([np.bincount(r, minlength=3) for r in s.numpy()]) / N
    np.testing.assert_allclose(freq, [[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]], atol=0.015)
    assert ag.multinomial(ag.tensor([1.0, 0.0]), 5, replacement=True).tolist() == [0] * 5


def test_multinomial_without_replacement_draws_each_category_once_in_sequence() -> None:
    g = ag.Generator().manual_seed(1)
    rows = ag.multinomial(ag.tensor([[0.1, 0.2, 0.7]]).expand(N, 3), 2, generator=g).numpy()
    assert (rows[:, 0] != rows[:, 1]).all()
    first = np.bincount(rows[:, 0], minlength=3) / N
    second = np.bincount(rows[:, 1], minlength=3) / N
    np.testing.assert_allclose(first, [0.1, 0.2, 0.7], atol=0.015)
    # P(second = j) = sum_i p_i p_j / (1 - p_i): torch gives [0.259, 0.488, 0.253] too
    np.testing.assert_allclose(second, [0.2556, 0.4889, 0.2556], atol=0.015)
    full = ag.multinomial(ag.tensor([1.0, 0.0, 0.0]), 3).tolist()
    assert full[0] == 0 and sorted(full) == [0, 1, 2]  # zero-weight categories only when the others run out


@pytest.mark.parametrize(
    "weights, n, replacement, phrase",
    [
        ([1.0, 2.0], 3, False, "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
        ([-1.0, 2.0], 1, False, "probability tensor contains either `inf`, `nan` or element < 0"),
        ([1.0, float("inf")], 1, False, "probability tensor contains either `inf`, `nan` or element < 0"),
        ([0.0, 0.0], 1, False, "invalid multinomial distribution (sum of probabilities <= 0)"),
        ([[1.0, 1.0], [0.0, 0.0]], 1, True, "invalid multinomial distribution (sum of probabilities <= 0)"),
        ([1.0, 2.0], 0, True, "cannot sample n_sample <= 0 samples"),
        ([[[1.0]]], 1, True, "prob_dist must be 1 or 2 dim"),
    ],
)
def test_multinomial_checks_its_arguments_as_torch(weights: list, n: int, replacement: bool, phrase: str) -> None:
    with pytest.raises(RuntimeError) as info:
        ag.multinomial(ag.tensor(weights), n, replacement)
    assert phrase in str(info.value)
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes for input, got: Long"):
        ag.multinomial(ag.tensor([1, 2]), 1)


def test_normal_bernoulli_poisson_moments_shapes_and_dtypes() -> None:
    ag.manual_seed(0)
    x = ag.normal(ag.zeros(N, dtype=ag.float64), 2.0)
    assert x.dtype == ag.float64 and abs(float(x.mean())) < 0.05 and abs(float(x.std()) - 2.0) < 0.05
    y = ag.normal(ag.zeros(2, 1), ag.ones(3))
    assert y.shape == (2, 3) and y.dtype == ag.float32
    assert ag.normal(1.0, ag.ones(4)).shape == (4,)
    z = ag.normal(0.0, 1.0, (2, 3), dtype=ag.float64)
    assert z.shape == (2, 3) and z.dtype == ag.float64
    b = ag.bernoulli(ag.full((N,), 0.3))
    assert set(np.unique(b.numpy())) <= {0.0, 1.0} and abs(float(b.mean()) - 0.3) < 0.015
    assert ag.bernoulli(ag.zeros(3), 1.0).tolist() == [1.0, 1.0, 1.0]
    p = ag.poisson(ag.full((N,), 3.0))
    assert abs(float(p.mean()) - 3.0) < 0.05 and p.dtype == ag.float32


def test_in_place_fills() -> None:
    ag.manual_seed(0)
    x = ag.zeros(N)
    assert x.uniform_(-2.0, 3.0) is x and x.numpy().min() >= -2 and x.numpy().max() < 3
    x.normal_(1.0, 0.5)
    assert abs(float(x.mean()) - 1.0) < 0.02
    x.bernoulli_(0.25)
    assert abs(float(x.mean()) - 0.25) < 0.015
    x.bernoulli_(ag.ones(N))
    assert x.numpy().min() == 1.0 and x._version == 4


def test_seeded_generators_repeat_and_are_independent_of_the_default() -> None:
    def draw(g: ag.Generator) -> list:
        return [ag.multinomial(ag.ones(5), 3, generator=g).tolist(), ag.normal(ag.zeros(3), 1.0, generator=g).tolist(),
                ag.bernoulli(ag.full((4,), 0.5), generator=g).tolist(), ag.poisson(ag.ones(3), g).tolist()]

    a = draw(ag.Generator().manual_seed(7))
    ag.rand(10)  # the default stream moves; the seeded ones do not care
    assert draw(ag.Generator().manual_seed(7)) == a
    ag.manual_seed(3)
    first = ag.multinomial(ag.ones(5), 3).tolist()
    ag.manual_seed(3)
    assert ag.multinomial(ag.ones(5), 3).tolist() == first
    with pytest.raises(TypeError, match="argument 'generator' must be Generator, not int"):
        ag.multinomial(ag.ones(2), 1, generator=1)


def test_samples_give_their_parameters_a_zero_gradient_as_torch() -> None:
    m = ag.tensor([0.5, 1.0], dtype=ag.float64, requires_grad=True)
    s = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    cases = [(ag.normal(m, 2.0), "NormalBackward1", [m]), (ag.normal(1.0, s), "NormalBackward2", [s]),
             (ag.normal(m, s), "NormalBackward3", [m, s]), (ag.bernoulli(m), "BernoulliBackward0", [m]),
             (ag.poisson(s), "PoissonBackward0", [s]), ((m * 1).normal_(), "NormalBackward0", [m]),
             ((m * 1).uniform_(), "UniformBackward0", [m]), ((m * 1).bernoulli_(0.5), "BernoulliBackward2", [m])]
    for y, name, inputs in cases:
        assert y.grad_fn.name() == name
        grads = ag.grad(y.sum(), inputs)
        assert all(g.tolist() == [0.0, 0.0] for g in grads)
    assert ag.bernoulli(m, 0.5).grad_fn.name() == "NotImplemented"  # torch has no derivative for it


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.normal(ag.zeros(3), -1.0), RuntimeError, "normal expects std >= 0.0, but found std -1"),
        (lambda: ag.normal(ag.zeros(3), -ag.ones(3)), RuntimeError, "normal expects all elements of std >= 0.0"),
        (lambda: ag.normal(ag.zeros(3, dtype=ag.int64), 1.0), NotImplementedError,
         "\"normal_kernel_cpu\" not implemented for 'Long'"),
        (lambda: ag.normal(ag.zeros(3), ag.ones(2)), RuntimeError, "The size of tensor a (3) must match"),
        (lambda: ag.bernoulli(ag.tensor([1.5])), RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"),
        (lambda: ag.bernoulli(ag.zeros(2), 1.5), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
        (lambda: ag.bernoulli(ag.tensor([1])), NotImplementedError,
         "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
        (lambda: ag.poisson(ag.tensor([-1.0])), RuntimeError, "invalid Poisson rate, expected rate to be non-negative"),
        (lambda: ag.zeros(2).uniform_(1.0, 0.0), RuntimeError, "uniform_ expects to return a [from, to) range"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)
