"""aiograd.nn containers (ModuleList, ModuleDict, ParameterList, ParameterDict) and Identity/Unflatten, as torch.nn."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn


def test_module_list_registers_indexes_and_edits_like_a_list():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    assert layers[-1] is layers[2]
    assert isinstance(layers[1:], nn.ModuleList) and len(layers[1:]) == 2
    with pytest.raises(IndexError, match="index 3 is out of range"):
        layers[3]
    relu = nn.ReLU()
    layers.insert(1, relu)
    assert layers[1] is relu and [k for k, _ in layers.named_children()] == ["0", "1", "2", "3"]
    assert layers.pop(1) is relu and len(layers) == 3
    del layers[0]
    assert list(layers._modules) == ["0", "1"]
    layers[0] = nn.Tanh()
    layers += [nn.Sigmoid()]
    both = layers + nn.ModuleList([nn.ReLU()])
    assert [type(m).__name__ for m in both] == ["Tanh", "Linear", "Sigmoid", "ReLU"]
    assert set(layers.state_dict()) == {"1.weight", "1.bias"}
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        layers.extend(3)
    assert "0" not in dir(layers)


def test_module_list_repr_folds_repeats_as_torch():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(layers) == (
        "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n  (3): ReLU()\n)"
    )
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    d["c"] = nn.Tanh()
    d.update([("d", nn.Identity())])
    assert list(d) == ["a", "b", "c", "d"] and list(d.keys()) == ["a", "b", "c", "d"]
    assert "a" in d and len(d) == 4 and isinstance(d["b"], nn.ReLU)
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    assert isinstance(d.pop("b"), nn.ReLU) and "b" not in d
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        d.update([("x",)])
    d.clear()
    assert len(d) == 0


async def test_parameter_list_trains():
    ps = nn.ParameterList([ag.ones(2), nn.Parameter(ag.zeros(2)), "not a tensor"])
    assert isinstance(ps[0], nn.Parameter) and ps[0].requires_grad and ps[2] == "not a tensor"
    assert len(ps) == 3 and len(list(ps.parameters())) == 2
    assert set(ps.state_dict()) == {"0", "1"}
    ps.append(ag.full((2,), 3.0))
    loss = (ps[0] * ps[3]).sum()
    await loss.backward()
    assert ps[0].grad.numpy().tolist() == [3.0, 3.0]
    assert isinstance(ps[1:3], nn.ParameterList) and len(ps[1:3]) == 2
    assert "Parameter containing: [float32 of size 2]" in repr(ps)
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        ps()
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable"):
        ps.extend(ag.ones(2))


def test_parameter_dict():
    pd = nn.ParameterDict({"w": ag.ones(2, 2)})
    pd["b"] = nn.Parameter(ag.zeros(2))
    assert list(pd) == ["w", "b"] and isinstance(pd["w"], nn.Parameter)
    assert [k for k, _ in pd.named_parameters()] == ["w", "b"]
    assert pd.get("missing", 1) == 1 and pd.setdefault("s", ag.ones(1)).shape == (1,)
    assert pd.popitem()[0] == "s" and "s" not in pd
    assert list(reversed(pd)) == ["b", "w"] and list(pd.copy()) == ["w", "b"]
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key as it is not a string"):
        pd[1] = ag.ones(1)
    del pd["w"]
    assert list(pd.keys()) == ["b"] and len(list(pd.parameters())) == 1


def test_identity_and_unflatten():
    x = ag.arange(24.0).reshape(2, 12)
    assert nn.Identity(3, key="ignored")(x) is x
    assert nn.Unflatten(1, (3, 4))(x).shape == (2, 3, 4)
    assert nn.Unflatten(-1, [2, -1])(x).shape == (2, 2, 6)
    np.testing.assert_array_equal(nn.Flatten()(nn.Unflatten(1, (2, 6))(x)).numpy(), x.numpy())
    assert repr(nn.Unflatten(1, (3, 4))) == "Unflatten(dim=1, unflattened_size=(3, 4))"
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[5, 2\] don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (5, 2))(x)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        nn.Unflatten(1, (-1, -1))(x)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float"):
        nn.Unflatten(1, (2, 6.0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.Unflatten(2, (2, 6))(x)
