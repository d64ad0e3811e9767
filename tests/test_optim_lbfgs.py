"""aiograd.optim.LBFGS against torch 2.13 (values computed with torch, written out here), with plain and
``async def`` closures, and its state_dict."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn, optim

A = [[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]]
B = [1.0, -2.0, 0.5]

# torch.optim.LBFGS([x (2,), z (0-d)], **config), two step(closure) calls on
# loss(v) = v A v / 2 - b.v + 0.1 sum(v^4), v = cat(x, z), float64:
# (config, final [x..., z], the two returned losses, state["func_evals"], state["n_iter"]).
LBFGS_VALUES = [
    ({}, [0.48704326111520724, -1.014686903658197, 0.6791198177557294], [-0.11602999999999997, -1.5608920423427697], 9, 9),
    ({'lr': 0.1}, [0.48328235498990707, -1.0082050047463993, 0.7011436446358548], [-0.11602999999999997, -1.530107407036376], 40, 40),
    ({'lr': 'T0.5'}, [0.4870413383698994, -1.0146863987398733, 0.6791409333602026], [-0.11602999999999997, -1.560892042011665], 19, 18),
    ({'tolerance_grad': 1e-06}, [0.48704326111520724, -1.014686903658197, 0.6791198177557294], [-0.11602999999999997, -1.5608920423427697], 9, 9),
    ({'line_search_fn': 'strong_wolfe'}, [0.48704326111520724, -1.014686903658197, 0.6791198177557294], [-0.11602999999999997, -1.5608920423427697], 9, 9),
    ({'max_iter': 3, 'history_size': 2}, [0.4759581551408031, -1.0180146092543965, 0.6765521436102111], [-0.11602999999999997, -1.5507486893155398], 6, 4),
    ({'max_iter': 4, 'line_search_fn': 'strong_wolfe', 'history_size': 1}, [0.48720499414804247, -1.0144147993266555, 0.679286742002501], [-0.11602999999999997, -1.5606923444068312], 10, 8),
    ({'lr': 0.5, 'max_iter': 5, 'max_eval': 4}, [0.4841368867216015, -1.011704609279046, 0.7275469120557286], [-0.11602999999999997, -1.4965681778774842], 8, 6),
]


def _problem(config):
    x = nn.Parameter(ag.tensor([0.2, -0.4], dtype=ag.float64))
    z = nn.Parameter(ag.tensor(1.5, dtype=ag.float64))
    kw = {k: (ag.tensor(float(v[1:]), dtype=ag.float64) if isinstance(v, str) and v.startswith("T") else v)
          for k, v in config.items()}
    opt = optim.LBFGS([x, z], **kw)
    a, b = ag.tensor(A, dtype=ag.float64), ag.tensor(B, dtype=ag.float64)

    def loss_fn():
        v = ag.cat([x, z.reshape(1)])
        return 0.5 * (v @ a @ v) - (b * v).sum() + 0.1 * (v**4).sum()

    return x, z, opt, loss_fn


def _check(x, z, opt, losses, expected):
    _, params, torch_losses, func_evals, n_iter = expected
    np.testing.assert_allclose(list(x.detach().numpy()) + [z.item()], params, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-9)
    assert opt.state[x]["func_evals"] == func_evals and opt.state[x]["n_iter"] == n_iter


@pytest.mark.parametrize("expected", LBFGS_VALUES, ids=[str(c[0]) for c in LBFGS_VALUES])
def test_matches_torch_with_a_plain_closure(expected):
    x, z, opt, loss_fn = _problem(expected[0])

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward_sync()
        return loss

    losses = [opt.step(closure).item() for _ in range(2)]
    _check(x, z, opt, losses, expected)


@pytest.mark.parametrize("expected", LBFGS_VALUES[::3], ids=[str(c[0]) for c in LBFGS_VALUES[::3]])
async def test_matches_torch_with_an_async_closure(expected):
    x, z, opt, loss_fn = _problem(expected[0])
    calls = []

    async def closure():
        calls.append(ag.is_grad_enabled())
        opt.zero_grad()
        loss = loss_fn()
        await loss.backward()
        return loss

    losses = []
    for _ in range(2):
        before = len(calls)
        pending = opt.step(closure)
        assert len(calls) == before  # the closure runs when the step is awaited
        losses.append((await pending).item())
    _check(x, z, opt, losses, expected)
    assert len(calls) == expected[3] and all(calls)


def test_state_after_step_has_torchs_keys_and_round_trips():
    x, z, opt, loss_fn = _problem({"max_iter": 3, "history_size": 2})

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward_sync()
        return loss

    opt.step(closure)
    state = opt.state_dict()["state"][0]
    assert set(state) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                          "prev_loss", "al"}
    assert isinstance(state["d"], ag.Tensor) and state["d"].shape == (3,)
    assert all(isinstance(t, ag.Tensor) for t in state["old_dirs"] + state["ro"])
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    x2, z2, opt2, loss_fn2 = _problem({"max_iter": 3, "history_size": 2})
    x2.data = x.detach().numpy().copy()
    z2.data = z.detach().numpy().copy()
    opt2.load_state_dict(saved)

    def closure2():
        opt2.zero_grad()
        loss = loss_fn2()
        loss.backward_sync()
        return loss

    opt.step(closure)
    opt2.step(closure2)
    np.testing.assert_array_equal(x2.detach().numpy(), x.detach().numpy())
    np.testing.assert_array_equal(z2.detach().numpy(), z.detach().numpy())


def test_float32_parameters_stay_float32():
    w = nn.Parameter(ag.tensor([2.0, -1.0]))
    opt = optim.LBFGS([w], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((w - ag.tensor([1.0, 3.0])) ** 2).sum()
        loss.backward_sync()
        return loss

    opt.step(closure)
    assert w.dtype == ag.float32 and opt.state[w]["d"].dtype == ag.float32
    np.testing.assert_allclose(w.detach().numpy(), [1.0, 3.0], atol=1e-5)


def test_errors():
    w = nn.Parameter(ag.ones(2))
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options \\(parameter groups\\)"):
        optim.LBFGS([{"params": [w]}, {"params": [nn.Parameter(ag.ones(1))]}])
    opt = optim.LBFGS([w])
    with pytest.raises(TypeError, match="LBFGS.step\\(\\) needs a closure"):
        opt.step()
    w.grad = ag.ones(2)
    bad = optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(lambda: (w * w).sum())


def test_converged_start_returns_at_once():
    w = nn.Parameter(ag.tensor([1.0, 3.0]))
    opt = optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = ((w - ag.tensor([1.0, 3.0])) ** 2).sum()
        loss.backward_sync()
        return loss

    assert opt.step(closure).item() == 0.0
    assert calls == [1] and opt.state[w]["func_evals"] == 1 and "d" not in opt.state[w]
