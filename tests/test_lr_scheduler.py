"""aiograd.optim.lr_scheduler against torch 2.13: learning-rate sequences (computed with torch, written
out here), state_dict round trips, Tensor learning rates and torch's warnings."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn, optim
from aiograd.optim import lr_scheduler as sched


def _sgd(lr=0.1, **kw):
    p = nn.Parameter(ag.zeros(1))
    return optim.SGD([p], lr=lr, momentum=0.9, **kw), p


def _run(opt, p, scheduler, steps, metrics=None):
    lrs = [scheduler.get_last_lr()[0]]
    moms = [opt.param_groups[0]["momentum"]]
    for i in range(steps):
        p.grad = ag.ones(1)
        opt.step()
        scheduler.step() if metrics is None else scheduler.step(metrics[i])
        lrs.append(scheduler.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    return lrs, moms


# torch.optim.lr_scheduler.<name>(SGD([p], lr=0.1, momentum=0.9), **kw): get_last_lr() at creation and after
# each of 12 steps (11 for OneCycleLR), and OneCycleLR's momentum.
SCHEDULER_LRS = [
    ('StepLR', {'step_size': 3, 'gamma': 0.5}, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.00625], None),
    ('MultiStepLR', {'milestones': [2, 5, 5, 9], 'gamma': 0.3}, [0.1, 0.1, 0.03, 0.03, 0.03, 0.0026999999999999997, 0.0026999999999999997, 0.0026999999999999997, 0.0026999999999999997, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998], None),
    ('ExponentialLR', {'gamma': 0.9}, [0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002, 0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024, 0.03874204890000002, 0.03486784401000002, 0.03138105960900001, 0.028242953648100012], None),
    ('CosineAnnealingLR', {'T_max': 5, 'eta_min': 0.01}, [0.1, 0.09140576474687263, 0.06890576474687263, 0.04109423525312736, 0.018594235253127367, 0.01, 0.018594235253127367, 0.04109423525312739, 0.06890576474687267, 0.09140576474687269, 0.10000000000000006, 0.09140576474687272, 0.06890576474687268], None),
    ('LinearLR', {'start_factor': 0.2, 'end_factor': 0.9, 'total_iters': 6}, [0.020000000000000004, 0.03166666666666667, 0.04333333333333333, 0.05499999999999999, 0.06666666666666667, 0.07833333333333334, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001], None),
    ('ConstantLR', {'factor': 0.5, 'total_iters': 4}, [0.05, 0.05, 0.05, 0.05, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], None),
    ('PolynomialLR', {'total_iters': 8, 'power': 2.0}, [0.1, 0.0765625, 0.05625, 0.03906250000000001, 0.02500000000000001, 0.014062500000000006, 0.006250000000000002, 0.0015625000000000005, 0.0, 0.0, 0.0, 0.0, 0.0], None),
    ('OneCycleLR', {'max_lr': 1.0, 'total_steps': 12}, [0.040000000000000036, 0.3497896542195831, 0.8792851591221287, 0.9944154354509117, 0.9330129698414117, 0.811745653949763, 0.6473789976951033, 0.46263710266697505, 0.28306099820869923, 0.1334775301888306, 0.03456698742539522, 4e-06], [0.95, 0.9177302443521267, 0.8625744625914449, 0.8505584586887436, 0.856698729810778, 0.8688255099070633, 0.8852622412794547, 0.9037365046793212, 0.9216941869558779, 0.9366525935914912, 0.9465436874322102, 0.95]),
    ('OneCycleLR', {'max_lr': 1.0, 'total_steps': 12, 'anneal_strategy': 'linear', 'three_phase': True, 'pct_start': 0.25}, [0.04, 0.52, 1.0, 0.52, 0.040000000000000036, 0.034286285714285714, 0.02857257142857143, 0.022858857142857143, 0.01714514285714286, 0.011431428571428568, 0.005717714285714284, 3.9999999999970615e-06], [0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]),
]

SEQUENTIAL_LRS = [0.010000000000000002, 0.04, 0.07, 0.1, 0.1, 0.09336825748732973, 0.07525000000000001, 0.0505,
                  0.025750000000000012, 0.007631742512670284, 0.001, 0.007631742512670284, 0.025750000000000002]
METRICS = [1.0, 0.9, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.8, 0.85, 0.85, 0.85, 0.85]
PLATEAU_LRS = [
    ({'patience': 2}, [0.1, 0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                       0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002,
                       0.0010000000000000002, 0.0010000000000000002, 0.00010000000000000003, 0.00010000000000000003]),
    ({'patience': 1, 'cooldown': 2, 'factor': 0.5, 'min_lr': 0.02},
     [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.025, 0.02, 0.02, 0.02]),
    ({'mode': 'max', 'patience': 1, 'threshold_mode': 'abs', 'threshold': 0.05},
     [0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002,
      0.00010000000000000003, 0.00010000000000000003, 1.0000000000000004e-05, 1.0000000000000004e-05,
      1.0000000000000004e-06, 1.0000000000000004e-06, 1.0000000000000005e-07, 1.0000000000000005e-07,
      1.0000000000000005e-08]),
]


@pytest.mark.parametrize("name,kw,lrs,momenta", SCHEDULER_LRS, ids=[f"{n}-{k}" for n, k, _, _ in SCHEDULER_LRS])
def test_learning_rates_match_torch(name, kw, lrs, momenta):
    opt, p = _sgd()
    got, moms = _run(opt, p, getattr(sched, name)(opt, **kw), len(lrs) - 1)
    np.testing.assert_allclose(got, lrs, rtol=1e-14, atol=1e-17)
    if momenta is not None:
        np.testing.assert_allclose(moms, momenta, rtol=1e-14)


def test_lambda_lr_per_group():
    a, b = nn.Parameter(ag.zeros(1)), nn.Parameter(ag.zeros(1))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    s = sched.LambdaLR(opt, [lambda e: 0.95**e, lambda e: 1 / (e + 1)])
    for epoch in range(1, 6):
        opt.step()
        s.step()
        assert s.get_last_lr() == [0.1 * 0.95**epoch, 1.0 / (epoch + 1)]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched.LambdaLR(opt, [lambda e: 1.0])


def test_sequential_lr_matches_torch():
    opt, p = _sgd()
    s = sched.SequentialLR(opt, [sched.LinearLR(opt, start_factor=0.1, total_iters=3),
                                 sched.CosineAnnealingLR(opt, T_max=6, eta_min=0.001)], milestones=[4])
    lrs, _ = _run(opt, p, s, 12)
    np.testing.assert_allclose(lrs, SEQUENTIAL_LRS, rtol=1e-14)


@pytest.mark.parametrize("kw,lrs", PLATEAU_LRS, ids=[str(k) for k, _ in PLATEAU_LRS])
def test_reduce_lr_on_plateau_matches_torch(kw, lrs):
    opt, p = _sgd()
    got, _ = _run(opt, p, sched.ReduceLROnPlateau(opt, **kw), len(METRICS), metrics=[ag.tensor(m) for m in METRICS])
    np.testing.assert_allclose(got[1:], lrs, rtol=1e-6)


def test_one_cycle_cycles_adam_beta1():
    p = nn.Parameter(ag.zeros(1))
    opt = optim.Adam([p], lr=0.1, betas=(0.9, 0.99))
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=10, base_momentum=0.8, max_momentum=0.9)
    assert opt.param_groups[0]["betas"] == (0.9, 0.99)
    for _ in range(2):  # the end of the warm-up phase (pct_start=0.3 of 10 steps)
        opt.step()
        s.step()
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.8) and opt.param_groups[0]["betas"][1] == 0.99
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total steps is 10"):
        for _ in range(9):
            opt.step()
            s.step()


@pytest.mark.parametrize(
    "make",
    [
        lambda o: sched.StepLR(o, 2, 0.5),
        lambda o: sched.MultiStepLR(o, [2, 4]),
        lambda o: sched.ExponentialLR(o, 0.9),
        lambda o: sched.CosineAnnealingLR(o, 5),
        lambda o: sched.LinearLR(o),
        lambda o: sched.OneCycleLR(o, 1.0, total_steps=20),
        lambda o: sched.SequentialLR(o, [sched.ConstantLR(o, 0.5, 2), sched.ExponentialLR(o, 0.9)], [3]),
        lambda o: sched.ReduceLROnPlateau(o, patience=0),
    ],
    ids=["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "SequentialLR",
         "ReduceLROnPlateau"],
)
def test_state_dict_round_trip_continues_identically(make):
    def stepper(s):
        return (lambda: s.step(1.0)) if isinstance(s, sched.ReduceLROnPlateau) else s.step

    opt1, p1 = _sgd()
    s1 = make(opt1)
    for _ in range(4):
        opt1.step()
        stepper(s1)()
    saved_opt = pickle.loads(pickle.dumps(opt1.state_dict()))
    saved_sched = pickle.loads(pickle.dumps(s1.state_dict()))
    assert "optimizer" not in saved_sched
    opt2, p2 = _sgd()
    s2 = make(opt2)
    opt2.load_state_dict(saved_opt)
    s2.load_state_dict(saved_sched)
    for _ in range(5):
        for o, s in ((opt1, s1), (opt2, s2)):
            o.step()
            stepper(s)()
        assert s2.get_last_lr() == s1.get_last_lr()
        assert opt2.param_groups[0]["lr"] == opt1.param_groups[0]["lr"]


def test_state_dict_keys_as_torch():
    opt, _ = _sgd()
    assert set(sched.StepLR(opt, 3).state_dict()) == {
        "step_size", "gamma", "base_lrs", "last_epoch", "_step_count", "_is_initial", "_get_lr_called_within_step",
        "_last_lr"}
    assert sched.LambdaLR(opt, lambda e: 1.0).state_dict()["lr_lambdas"] == [None]


def test_lambda_objects_state_is_saved():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate**epoch

    opt, _ = _sgd()
    f = Decay()
    s = sched.LambdaLR(opt, f)
    f.rate = 0.25
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.25}]
    g = Decay()
    sched.LambdaLR(_sgd()[0], g).load_state_dict(sd)
    assert g.rate == 0.25


def test_tensor_lr_is_filled_in_place():
    lr = ag.tensor(0.1, dtype=ag.float64)
    p = nn.Parameter(ag.zeros(1))
    opt = optim.SGD([p], lr=lr)
    s = sched.ExponentialLR(opt, 0.5)
    for _ in range(3):
        opt.step()
        s.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.0125)
    last = s.get_last_lr()[0]
    assert isinstance(last, ag.Tensor) and last is not lr and last.item() == pytest.approx(0.0125)


def test_warns_when_stepped_before_the_optimizer():
    opt, _ = _sgd()
    s = sched.StepLR(opt, 3)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt2, p2 = _sgd()
    s2 = sched.StepLR(opt2, 3)
    p2.grad = ag.ones(1)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.step()


def test_warns_when_the_optimizer_step_is_replaced_after_the_scheduler():
    opt, _ = _sgd()
    s = sched.StepLR(opt, 3)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` has been overridden"):
        s.step()


def test_warns_on_get_lr_outside_step_and_on_epoch_argument():
    opt, _ = _sgd()
    s = sched.StepLR(opt, 3)
    opt.step()
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        s.get_lr()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        s.step(6)
    assert s.get_last_lr() == [pytest.approx(0.1 * 0.1**2)]  # the closed form at epoch 6


async def test_scheduler_sees_an_awaited_step():
    w = nn.Parameter(ag.tensor([1.0]))
    opt = optim.SGD([w], lr=0.1)
    s = sched.StepLR(opt, 1, 0.5)

    async def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        await loss.backward()
        return loss

    await opt.step(closure)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()
    assert opt.param_groups[0]["lr"] == 0.05


def test_errors():
    opt, _ = _sgd()
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        sched.StepLR(3, 2)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        sched.StepLR(opt, 2, last_epoch=3)
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more than the number of"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2), sched.StepLR(opt, 2)], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        sched.SequentialLR(opt, [sched.ReduceLROnPlateau(opt)], milestones=[])
    with pytest.raises(ValueError, match="You must define either total_steps OR \\(epochs AND steps_per_epoch\\)"):
        sched.OneCycleLR(opt, 1.0)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        sched.LinearLR(opt, start_factor=0)
    adagrad = optim.Adagrad([nn.Parameter(ag.zeros(1))])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum` option"):
        sched.OneCycleLR(adagrad, 1.0, total_steps=10)


def test_resuming_with_last_epoch_uses_the_closed_form():
    opt, p = _sgd()
    s = sched.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        opt.step()
        s.step()
    opt2, _ = _sgd()
    opt2.load_state_dict(opt.state_dict())
    s2 = sched.CosineAnnealingLR(opt2, T_max=10, last_epoch=3)
    assert s2.get_last_lr()[0] == pytest.approx(0.05 * (1 + math.cos(math.pi * 4 / 10)))
