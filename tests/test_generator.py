"""Random number generators (aiograd/_generator.py): torch.Generator's methods, the default
generator behind every random function, and the module-level seeding functions."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag


def test_manual_seed_returns_the_generator_and_restarts_its_stream() -> None:
    g = ag.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5 and str(g.device) == "cpu"
    a = ag.rand(4, generator=g).tolist()
    g.manual_seed(5)
    assert ag.rand(4, generator=g).tolist() == a
    assert ag.Generator().manual_seed(-1).initial_seed() == 2**64 - 1  # negative seeds wrap, as torch


def test_state_round_trips_and_seed_draws_a_fresh_one() -> None:
    g = ag.Generator().manual_seed(0)
    state = g.get_state()
    assert state.dtype == ag.uint8
    a = ag.randn(3, generator=g).tolist()
    g.set_state(state)
    assert ag.randn(3, generator=g).tolist() == a
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2**64


def test_the_default_generator_serves_every_random_function() -> None:
    assert ag.manual_seed(11) is ag.default_generator and ag.initial_seed() == 11
    draws = [ag.rand(2).tolist(), ag.randn(2).tolist(), ag.randint(0, 9, (2,)).tolist(), ag.randperm(4).tolist(),
             ag.rand_like(ag.zeros(2)).tolist(), ag.randint_like(ag.zeros(2), 9).tolist()]
    state = ag.get_rng_state()
    after = ag.rand(3).tolist()
    ag.manual_seed(11)
    again = [ag.rand(2).tolist(), ag.randn(2).tolist(), ag.randint(0, 9, (2,)).tolist(), ag.randperm(4).tolist(),
             ag.rand_like(ag.zeros(2)).tolist(), ag.randint_like(ag.zeros(2), 9).tolist()]
    assert again == draws
    ag.set_rng_state(state)
    assert ag.rand(3).tolist() == after
    assert isinstance(ag.seed(), int)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.Generator().manual_seed(1.5), RuntimeError, "manual_seed expected a long, but got float"),
        (lambda: ag.Generator().manual_seed(2**64), ValueError, "Overflow when unpacking long long"),
        (lambda: ag.Generator().set_state(ag.zeros(3)), TypeError, "RNG state must be a torch.ByteTensor"),
        (lambda: ag.rand(2, generator=np.random.default_rng()), TypeError, "argument 'generator' must be Generator"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)
