"""aiograd.optim: SGD, Adam, AdamW against torch's documented update formulas, written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn, optim

GRADS = [np.array([0.5, -1.0, 2.0]), np.array([-0.25, 0.75, 1.0]), np.array([1.5, 0.1, -0.3])]
P0 = np.array([1.0, -2.0, 0.5])


def run(opt_cls, grads=GRADS, **kw):
    p = nn.Parameter(ag.tensor(P0.copy(), dtype=ag.float64))
    opt = opt_cls([p], **kw)
    out = []
    for g in grads:
        p.grad = ag.tensor(g, dtype=ag.float64)
        opt.step()
        out.append(p.detach().numpy().copy())
    return out, p, opt


def ref_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p = P0.copy()
    buf = None
    out = []
    for g in GRADS:
        g = -g if maximize else g.copy()
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p.copy())
    return out


def ref_adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    p = P0.copy()
    m = np.zeros(3)
    v = np.zeros(3)
    vmax = np.zeros(3)
    out = []
    for t, g in enumerate(GRADS, 1):
        g = -g if maximize else g.copy()
        if weight_decay:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        mhat = m / (1 - betas[0] ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vhat = vmax / (1 - betas[1] ** t)
        else:
            vhat = v / (1 - betas[1] ** t)
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
        out.append(p.copy())
    return out


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.3),
        dict(lr=0.1, momentum=0.8, nesterov=True),
        dict(lr=0.1, weight_decay=0.01, momentum=0.5),
        dict(lr=0.1, maximize=True, momentum=0.9),
    ],
)
def test_sgd_matches_torch_formula(kw):
    got, _, _ = run(optim.SGD, **kw)
    for a, b in zip(got, ref_sgd(**kw)):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_sgd_first_step_by_hand():
    got, _, _ = run(optim.SGD, grads=GRADS[:1], lr=0.1)
    np.testing.assert_allclose(got[0], [0.95, -1.9, 0.3])


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(lr=0.01, betas=(0.8, 0.99)),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, amsgrad=True),
        dict(lr=0.01, maximize=True, eps=1e-6),
    ],
)
def test_adam_matches_torch_formula(kw):
    got, _, _ = run(optim.Adam, **kw)
    for a, b in zip(got, ref_adam(**kw)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.01, weight_decay=0.1, amsgrad=True)])
def test_adamw_matches_torch_formula(kw):
    got, _, _ = run(optim.AdamW, **kw)
    ref = ref_adam(decoupled=True, **{"weight_decay": 1e-2, **kw})
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_adam_first_step_moves_by_lr_times_sign():
    got, _, opt = run(optim.Adam, grads=GRADS[:1], lr=0.1)
    g = GRADS[0]
    np.testing.assert_allclose(got[0], P0 - 0.1 * g / (np.abs(g) + 1e-8))
    assert opt.state[opt.param_groups[0]["params"][0]]["step"] == 1


def test_step_skips_params_without_grad_and_bumps_version():
    a = nn.Parameter(ag.ones(2))
    b = nn.Parameter(ag.ones(2))
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = ag.ones(2)
    va, vb = a._version, b._version
    opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), [0, 0])
    np.testing.assert_array_equal(b.detach().numpy(), [1, 1])
    assert a._version == va + 1 and b._version == vb
    assert a.dtype == ag.float32


def test_zero_grad():
    p = nn.Parameter(ag.ones(2))
    opt = optim.Adam([p])
    p.grad = ag.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0, 0])
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_and_add_param_group():
    a, b, c = (nn.Parameter(ag.ones(1)) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": c, "lr": 1.0})
    for p in (a, b, c):
        p.grad = ag.ones(1)
    opt.step()
    np.testing.assert_allclose([a.item(), b.item(), c.item()], [0.9, 0.5, 0.0], rtol=1e-6)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    for g in opt.param_groups:
        g["lr"] = 0.0  # a scheduler's way of changing the learning rate
    before = a.item()
    opt.step()
    assert a.item() == before


def test_constructor_errors():
    p = nn.Parameter(ag.ones(1))
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        optim.SGD([p])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)), (optim.Adam, dict(lr=0.05, amsgrad=True))])
def test_state_dict_round_trip_continues_identically(cls, kw):
    _, p1, opt1 = run(cls, grads=GRADS[:2], **kw)
    p2 = nn.Parameter(ag.tensor(p1.detach().numpy().copy(), dtype=ag.float64))
    opt2 = cls([p2], **{k: (0.0 if k == "lr" else v) for k, v in kw.items()})
    sd = opt1.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw["lr"]
    for p, o in ((p1, opt1), (p2, opt2)):
        p.grad = ag.tensor(GRADS[2], dtype=ag.float64)
        o.step()
    np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=1e-14)


def test_repr():
    assert "lr: 0.1" in repr(optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1))


async def test_adam_minimises_a_quadratic_with_await_backward():
    ag.manual_seed(0)
    target = ag.tensor([1.0, -2.0, 3.0])
    w = nn.Parameter(ag.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    for _ in range(300):
        loss = ((w - target) ** 2).sum()
        opt.zero_grad()
        await loss.backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), target.numpy(), atol=1e-2)
    assert math.isfinite(loss.item())
