"""aiograd.nn: Parameter, Module registration and traversal, state_dict, layers, init."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn
from aiograd.nn import functional as F
from aiograd.nn import init


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("steps", ag.zeros(1))
        self.register_buffer("scratch", ag.zeros(2), persistent=False)
        self.scale = 2.0

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# ----- Parameter ---------------------------------------------------------------------------


def test_parameter_shares_data_and_requires_grad():
    t = ag.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, ag.Tensor) and p.requires_grad and p.is_leaf
    p._data[0] = 5
    assert t.detach().numpy()[0] == 5
    assert not nn.Parameter(ag.zeros(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert (p * 2).__class__ is ag.Tensor


# ----- registration and traversal ----------------------------------------------------------


def test_module_registers_parameters_buffers_and_children():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert len(list(net.parameters())) == 3
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert list(net.children())[0] is net.fc1
    assert [type(m).__name__ for m in net.modules()] == ["Net", "Linear", "ReLU", "Linear"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert net.fc2.bias is None and net.scale == 2.0
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope


def test_shared_parameters_are_listed_once_and_assignment_rules():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        lin.weight = ag.zeros(2, 2)
    lin.weight = nn.Parameter(ag.ones(2, 2))
    assert lin.weight.detach().numpy().sum() == 4
    del lin.bias
    assert [n for n, _ in lin.named_parameters()] == ["weight"]


def test_train_eval_propagate():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert net.training and net[1].training
    assert net.eval() is net
    assert not net.training and not net[1].training
    net.train()
    assert net[1].training


def test_apply_and_zero_grad():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Net"]
    net.apply(lambda m: init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert not net.fc1.weight.detach().numpy().any()
    for p in net.parameters():
        p.grad = ag.ones(*p.shape)
    net.zero_grad(set_to_none=False)
    assert all(not p.grad.detach().numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def _grads_with_a_graph_and_read_only(net: nn.Module) -> None:
    """Give net's first parameter a gradient with a graph of its own (a create_graph pass)
    and every other one a read-only gradient (a broadcast view)."""
    first, *rest = net.parameters()
    (first * first).sum().backward_sync(create_graph=True)
    assert first.grad.grad_fn is not None
    for p in rest:
        p.grad = ag.ones(1).expand(*p.shape)
        assert not p.grad.detach().numpy().flags.writeable


def test_zero_grad_without_set_to_none_zeroes_grads_with_a_graph_or_read_only():
    """As torch: a gradient with a graph is detached, a read-only one replaced; each ends
    all zeros, with no graph and not requiring grad."""
    net = Net()
    _grads_with_a_graph_and_read_only(net)
    net.zero_grad(set_to_none=False)
    for p in net.parameters():
        assert p.grad is not None and p.grad.shape == p.shape
        assert p.grad.grad_fn is None and not p.grad.requires_grad
        assert not p.grad.detach().numpy().any()


def test_sequential_indexing_and_repr():
    seq = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=64, out_features=128, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=128, out_features=10, bias=True)\n"
        ")"
    )
    named = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 2, 3)), ("flat", nn.Flatten())]))
    assert "(conv): Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1))" in repr(named)


# ----- state_dict --------------------------------------------------------------------------


def test_state_dict_round_trip_and_persistence():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]  # own tensors first, as torch
    assert not sd["fc1.weight"].requires_grad
    v = b.fc1.weight._version
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert b.fc1.weight._version > v
    for k in sd:
        np.testing.assert_array_equal(b.state_dict()[k].detach().numpy(), sd[k].detach().numpy())
    assert b.fc1.weight.requires_grad


def test_load_state_dict_errors_use_torch_wording():
    net = Net()
    sd = net.state_dict()
    del sd["fc1.bias"]
    sd["extra"] = ag.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        net.load_state_dict(sd)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "fc1.bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "extra". ' in msg
    assert msg.index("Missing") < msg.index("Unexpected")
    res = net.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra"]
    bad = net.state_dict()
    bad["fc1.weight"] = ag.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape"):
        net.load_state_dict(bad)


def test_deepcopy_gives_independent_parameters():
    net = Net()
    twin = copy.deepcopy(net)
    twin.fc1.weight._data[...] = 0
    assert net.fc1.weight.detach().numpy().any()
    assert isinstance(twin.fc1.weight, nn.Parameter)


# ----- layers ------------------------------------------------------------------------------


def test_linear_and_conv_default_init_bounds():
    ag.manual_seed(0)
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    assert np.abs(lin.weight.detach().numpy()).max() <= bound and np.abs(lin.weight.detach().numpy()).max() > 0.9 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    conv = nn.Conv2d(4, 6, 3)
    b = 1 / math.sqrt(4 * 9)
    assert conv.weight.shape == (6, 4, 3, 3) and np.abs(conv.weight.detach().numpy()).max() <= b
    assert lin.weight.dtype == ag.float32


def test_manual_seed_makes_init_reproducible():
    ag.manual_seed(7)
    a = nn.Linear(3, 3).weight.detach().numpy().copy()
    ag.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(3, 3).weight.detach().numpy(), a)


async def test_layers_forward_and_backward():
    ag.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 8),
        nn.LayerNorm(8), nn.Tanh(), nn.Dropout(0.1), nn.Linear(8, 3), nn.Sigmoid(),
    )
    out = model(ag.randn(2, 1, 8, 8))
    assert out.shape == (2, 3)
    await out.sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())


async def test_embedding_module_padding_idx():
    emb = nn.Embedding(10, 4, padding_idx=0)
    assert not emb.weight.detach().numpy()[0].any()
    out = emb(ag.tensor([[0, 2, 2]]))
    assert out.shape == (1, 3, 4)
    await out.sum().backward()
    assert not emb.weight.grad.detach().numpy()[0].any()
    np.testing.assert_array_equal(emb.weight.grad.detach().numpy()[2], [2, 2, 2, 2])


def test_layer_norm_module_defaults():
    ln = nn.LayerNorm((2, 3))
    np.testing.assert_array_equal(ln.weight.detach().numpy(), np.ones((2, 3)))
    assert not ln.bias.detach().numpy().any()
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None
    y = ln(ag.randn(4, 2, 3)).detach().numpy()
    np.testing.assert_allclose(y.reshape(4, -1).mean(1), 0, atol=1e-6)


def test_gelu_module_uses_elementwise_gelu():
    x = ag.tensor([-1.0, 0.0, 1.0])
    from math import erf, sqrt

    ref = [v * 0.5 * (1 + erf(v / sqrt(2))) for v in (-1.0, 0.0, 1.0)]
    np.testing.assert_allclose(nn.GELU()(x).detach().numpy(), ref, rtol=1e-5)
    np.testing.assert_array_equal(nn.GELU()(x).detach().numpy(), ag.ops.gelu(x).detach().numpy())


def test_dropout_module_respects_training_flag():
    d = nn.Dropout(0.5)
    x = ag.ones(100)
    assert d.eval()(x) is x
    d.train()
    assert (d(x).detach().numpy() == 0).any()


def test_loss_modules():
    x, t = ag.randn(4, 3), ag.tensor([0, 1, 2, 1])
    np.testing.assert_allclose(nn.CrossEntropyLoss()(x, t).detach().numpy(), F.cross_entropy(x, t).detach().numpy())
    np.testing.assert_allclose(
        nn.NLLLoss(reduction="sum")(F.log_softmax(x, 1), t).detach().numpy(),
        F.nll_loss(F.log_softmax(x, 1), t, reduction="sum").detach().numpy(),
    )
    y = ag.randn(4, 3)
    np.testing.assert_allclose(nn.MSELoss()(x, y).detach().numpy(), ((x.detach().numpy() - y.detach().numpy()) ** 2).mean(), rtol=1e-6)


def test_module_to_dtype():
    lin = nn.Linear(2, 2).to(ag.float64)
    assert lin.weight.dtype == ag.float64
    assert lin(ag.randn(3, 2, dtype=ag.float64)).dtype == ag.float64


# ----- init --------------------------------------------------------------------------------


def test_init_functions_write_in_place_and_bump_version():
    t = ag.empty(200, 300)
    v = t._version
    assert init.constant_(t, 0.5) is t and t._version == v + 1
    assert (t.detach().numpy() == 0.5).all()
    init.ones_(t)
    assert (t.detach().numpy() == 1).all()
    init.zeros_(t)
    assert not t.detach().numpy().any()
    ag.manual_seed(0)
    init.uniform_(t, -2, 3)
    assert t.detach().numpy().min() >= -2 and t.detach().numpy().max() <= 3
    init.normal_(t, 1.0, 0.5)
    assert abs(t.detach().numpy().mean() - 1.0) < 0.01 and abs(t.detach().numpy().std() - 0.5) < 0.01
    init.xavier_uniform_(t)
    assert np.abs(t.detach().numpy()).max() <= math.sqrt(6 / 500)
    init.xavier_normal_(t, gain=2.0)
    assert abs(t.detach().numpy().std() - 2.0 * math.sqrt(2 / 500)) < 0.005
    init.kaiming_uniform_(t, nonlinearity="relu")
    assert np.abs(t.detach().numpy()).max() <= math.sqrt(6 / 300)
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(t.detach().numpy().std() - math.sqrt(2 / 200)) < 0.005


def test_init_on_parameter_under_grad_is_allowed():
    p = nn.Parameter(ag.zeros(3, 3))
    init.ones_(p)
    assert p.requires_grad and p.is_leaf
    assert (p.detach().numpy() == 1).all()


def test_calculate_gain_and_fan_errors():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.xavier_uniform_(ag.zeros(3))


def test_reassigning_a_parameter_or_submodule_keeps_its_place():
    m = nn.Module()
    m.a = nn.Parameter(ag.ones(1))
    m.b = nn.Parameter(ag.ones(1))
    m.c = nn.Linear(1, 1)
    m.d = nn.ReLU()
    m.a = nn.Parameter(ag.zeros(1))
    m.c = nn.Tanh()
    assert [k for k, _ in m.named_parameters()] == ["a", "b"]
    assert [k for k, _ in m.named_children()] == ["c", "d"]
