"""aiograd.amp: GradScaler against torch's trajectory, autocast's no-op paths, torch's messages."""

from __future__ import annotations

import math

import pytest

import aiograd as ag

# torch 2.13 (float64 default): Linear(2, 1) with weight [[0.5, -1]], bias 0.25, SGD lr 0.1,
# GradScaler('cpu', init_scale=4, growth_interval=2), loss = (m(x) ** 2).sum(); at iteration 2 a
# NaN is planted in weight.grad before unscale_. Rows: scaled loss, unscaled grads, params and
# state_dict after step + update.
TORCH_STEPS = [
    (36.5, [[14.0, -10.5]], [3.0], [[-0.9, 0.05]], [-0.05], 4.0, 1),
    (34.25, [[-18.5, 2.2]], [-7.3], [[0.95, -0.17]], [0.68], 8.0, 0),
    (122.8328, [[math.nan, -2.24]], [9.98], [[0.95, -0.17]], [0.68], 4.0, 0),
    (61.4164, [[24.78, -2.24]], [9.98], [[-1.528, 0.054]], [-0.318], 4.0, 1),
]


def _setup() -> tuple[ag.nn.Linear, ag.optim.SGD, ag.Tensor]:
    m = ag.nn.Linear(2, 1, dtype=ag.float64)
    with ag.no_grad():
        m.weight.copy_(ag.tensor([[0.5, -1.0]], dtype=ag.float64))
        m.bias.fill_(0.25)
    return m, ag.optim.SGD(m.parameters(), lr=0.1), ag.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=ag.float64)


def test_grad_scaler_matches_torch_trajectory() -> None:
    m, opt, x = _setup()
    s = ag.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    for it, (scaled, gw, gb, w, b, scale, tracker) in enumerate(TORCH_STEPS):
        opt.zero_grad()
        sl = s.scale((m(x) ** 2).sum())
        assert sl.item() == pytest.approx(scaled, rel=1e-12)
        sl.backward()
        if it == 2:
            with ag.no_grad():
                m.weight.grad[0, 0] = math.nan
        s.unscale_(opt)
        assert m.weight.grad.tolist()[0] == pytest.approx(gw[0], rel=1e-12, nan_ok=True)
        assert m.bias.grad.tolist() == pytest.approx(gb, rel=1e-12)
        s.step(opt)
        s.update()
        assert m.weight.tolist()[0] == pytest.approx(w[0], rel=1e-12)
        assert m.bias.tolist() == pytest.approx(b, rel=1e-12)
        assert s.get_scale() == scale
        assert s.state_dict() == {"scale": scale, "growth_factor": 2.0, "backoff_factor": 0.5,
                                  "growth_interval": 2, "_growth_tracker": tracker}


def test_grad_scaler_disabled_and_cuda_pass_through() -> None:
    m, opt, x = _setup()
    off = ag.amp.GradScaler("cuda", enabled=False)
    loss = (m(x) ** 2).sum()
    assert off.scale(loss) is loss and not off.is_enabled() and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.warns(UserWarning, match=r"GradScaler is enabled, but CUDA is not available.  Disabling."):
        cuda = ag.amp.GradScaler("cuda")
    assert not cuda.is_enabled()
    loss.backward()
    cuda.unscale_(opt)
    cuda.step(opt)   # a plain optimizer step
    cuda.update()
    assert m.bias.tolist() == pytest.approx([-0.05])


def test_grad_scaler_errors_follow_torch() -> None:
    m, opt, x = _setup()
    s = ag.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        s.update()
    s.scale((m(x) ** 2).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last update"):
        s.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled"):
        s.step(opt, closure=lambda: 0.0)
    s.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update"):
        s.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step"):
        s.unscale_(opt)
    s.update(ag.tensor(8.0))
    assert s.get_scale() == 8.0
    assert isinstance(s.scale([ag.ones(1), ag.ones(1)]), list)
    with pytest.raises(RuntimeError, match="saved from a disabled instance"):
        ag.amp.GradScaler("cpu").load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0"):
        ag.amp.GradScaler("cpu", growth_factor=0.5)
    t = ag.amp.GradScaler("cpu")
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict()


def test_autocast_no_op_paths_and_refusal() -> None:
    assert ag.autocast is ag.amp.autocast
    with ag.autocast(device_type="cpu", enabled=False):
        y = ag.ones(2) * 2
    assert y.dtype == ag.float32
    with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
        ctx = ag.amp.autocast(device_type="cuda", dtype=ag.float16)
    with ctx:
        pass

    @ag.autocast("cpu", enabled=False)
    def f(a: ag.Tensor) -> ag.Tensor:
        return a + 1
    assert f(ag.ones(1)).item() == 2.0
    with pytest.raises(NotImplementedError, match="does not implement autocast for device_type 'cpu'"):
        ag.autocast("cpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ag.autocast(0)  # type: ignore[arg-type]
    assert not ag.amp.is_autocast_available("cpu")


def test_cuda_amp_spellings_warn_as_torch_and_disable() -> None:
    # nanoGPT train.py: scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
        s = ag.cuda.amp.GradScaler(enabled=False)
    assert isinstance(s, ag.amp.GradScaler) and not s.is_enabled()
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.autocast\(args...\)` is deprecated"):
        with ag.cuda.amp.autocast(enabled=False):
            pass
