"""aiograd.nn.utils: gradient clipping and parameter/vector conversion against torch 2.13 (values computed
with torch, written out here)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn
from aiograd.nn.utils import (
    clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm, parameters_to_vector,
    vector_to_parameters,
)

# torch.nn.utils.clip_grad_norm_([a, b], max_norm=2.0, norm_type=...) with a.grad = [3, -4],
# b.grad = [[1, 2], [0, -1]] (float32): (total norm, a.grad after, b.grad after).
CLIP_NORM = [
    (2.0, 5.5677642822265625, [1.0776317119598389, -1.4368422031402588],
     [0.3592105507850647, 0.7184211015701294, 0.0, -0.3592105507850647]),
    (1.0, 11.0, [0.5454545021057129, -0.7272726893424988],
     [0.1818181723356247, 0.3636363446712494, 0.0, -0.1818181723356247]),
    (math.inf, 4.0, [1.4999996423721313, -1.9999995231628418],
     [0.49999988079071045, 0.9999997615814209, 0.0, -0.49999988079071045]),
    (-math.inf, 0.0, [3.0, -4.0], [1.0, 2.0, 0.0, -1.0]),
    (0.0, 2.0, [2.9999985694885254, -3.999998092651367],
     [0.9999995231628418, 1.9999990463256836, 0.0, -0.9999995231628418]),
    (3.0, 4.657009601593018, [1.2883801460266113, -1.7178401947021484],
     [0.4294600486755371, 0.8589200973510742, 0.0, -0.4294600486755371]),
    (0.5, 51.069095611572266, [0.11748788505792618, -0.15665051341056824],
     [0.03916262835264206, 0.07832525670528412, 0.0, -0.03916262835264206]),
]


def _params(dtype=ag.float32):
    a, b = nn.Parameter(ag.zeros(2, dtype=dtype)), nn.Parameter(ag.zeros(2, 2, dtype=dtype))
    a.grad = ag.tensor([3.0, -4.0], dtype=dtype)
    b.grad = ag.tensor([[1.0, 2.0], [0.0, -1.0]], dtype=dtype)
    return a, b


@pytest.mark.parametrize("norm_type,total,a_grad,b_grad", CLIP_NORM, ids=[str(c[0]) for c in CLIP_NORM])
def test_clip_grad_norm_matches_torch(norm_type, total, a_grad, b_grad):
    a, b = _params()
    version = a.grad._version
    norm = clip_grad_norm_([a, b], 2.0, norm_type=norm_type)
    assert isinstance(norm, ag.Tensor) and norm.shape == () and norm.dtype == ag.float32
    np.testing.assert_allclose(norm.item(), total, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), a_grad, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy().ravel(), b_grad, rtol=1e-6)
    assert a.grad._version == version + 1  # scaled in place


def test_clip_grad_norm_keyword_forms():
    a, b = _params()
    g = a.grad
    assert clip_grad_norm_(a, 100.0, foreach=True).item() == 5.0  # a single tensor, foreach accepted
    assert a.grad is g and a.grad.numpy().tolist() == [3.0, -4.0]  # below max_norm: unchanged
    assert clip_grad_norm_([a, b], 1.0, norm_type="inf").item() == 4.0  # norm_type is read with float()
    with pytest.raises(ValueError, match="could not convert string to float: 'fro'"):
        clip_grad_norm_([a], 1.0, norm_type="fro")
    none = nn.Parameter(ag.zeros(2))
    assert clip_grad_norm_([none], 1.0).item() == 0.0 and none.grad is None


def test_clip_grad_norm_nonfinite():
    a, b = _params()
    a.grad = ag.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    assert math.isnan(clip_grad_norm_([a, b], 1.0).item())
    assert np.isnan(b.grad.numpy()).all()  # scaled by the NaN norm anyway, as torch


def test_clip_grad_norm_mixed_dtypes_and_empty():
    a = nn.Parameter(ag.zeros(2))
    b = nn.Parameter(ag.zeros(2, dtype=ag.float64))
    a.grad, b.grad = ag.tensor([3.0, 4.0]), ag.ones(2, dtype=ag.float64)
    norm = clip_grad_norm_([a, b], 1.0)
    assert norm.dtype == ag.float64 and a.grad.dtype == ag.float32
    np.testing.assert_allclose(norm.item(), math.sqrt(27), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), [3 / math.sqrt(27), 4 / math.sqrt(27)], rtol=1e-6)
    e = nn.Parameter(ag.zeros(0))
    e.grad = ag.zeros(0)
    assert clip_grad_norm_([e], 1.0).item() == 0.0
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        clip_grad_norm_([e], 1.0, norm_type=math.inf)
    assert clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_float16_and_complex():
    h = nn.Parameter(ag.ones(3, dtype=ag.float16))
    h.grad = ag.ones(3, dtype=ag.float16) * 100
    norm = clip_grad_norm_([h], 1.0)
    assert norm.dtype == ag.float16 and norm.item() == 173.25  # torch's value
    np.testing.assert_allclose(h.grad.numpy().astype(float), [0.5771] * 3, rtol=1e-3)
    c = nn.Parameter(ag.tensor([3 + 4j]))
    c.grad = ag.tensor([3 + 4j])
    assert clip_grad_norm_([c], 1.0).item() == 5.0
    np.testing.assert_allclose(c.grad.numpy(), [0.6 + 0.8j], rtol=1e-6)


def test_total_norm_and_clip_with_norm_split():
    a, b = _params()
    norm = get_total_norm([a.grad, b.grad])
    clip_grads_with_norm_([a, b], 2.0, norm)
    np.testing.assert_allclose(a.grad.numpy(), CLIP_NORM[0][2], rtol=1e-6)


def test_clip_grad_value_():
    a, b = _params()
    assert clip_grad_value_([a, b], 1.5) is None
    assert a.grad.numpy().tolist() == [1.5, -1.5] and b.grad.numpy().tolist() == [[1.0, 1.5], [0.0, -1.0]]
    assert a.grad.dtype == ag.float32
    clip_grad_value_(a, 0.5, foreach=False)
    assert a.grad.numpy().tolist() == [0.5, -0.5]
    c = nn.Parameter(ag.tensor([1j]))
    c.grad = ag.tensor([1j])
    with pytest.raises(RuntimeError, match="clamp is not supported for complex types"):
        clip_grad_value_([c], 1.0)


async def test_clip_after_backward_in_a_training_step():
    model = nn.Linear(3, 1)
    loss = (model(ag.ones(4, 3) * 10) ** 2).sum()
    await loss.backward()
    before = get_total_norm([p.grad for p in model.parameters()]).item()
    assert before > 1.0
    assert clip_grad_norm_(model.parameters(), 1.0).item() == pytest.approx(before)
    after = get_total_norm([p.grad for p in model.parameters()]).item()
    assert after == pytest.approx(1.0, rel=1e-5)


async def test_parameters_to_vector_is_differentiable():
    a = nn.Parameter(ag.tensor([[1.0, 2.0]]))
    b = nn.Parameter(ag.tensor(3.0))
    v = parameters_to_vector([a, b])
    assert v.shape == (3,) and v.requires_grad and v.detach().numpy().tolist() == [1.0, 2.0, 3.0]
    await (v * ag.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert a.grad.numpy().tolist() == [[1.0, 2.0]] and b.grad.item() == 3.0


def test_vector_to_parameters_shares_the_vector():
    a, b = nn.Parameter(ag.zeros(2)), nn.Parameter(ag.zeros(1, 2))
    vec = ag.arange(4.0)
    vector_to_parameters(vec, [a, b])
    assert a.detach().numpy().tolist() == [0.0, 1.0] and b.detach().numpy().tolist() == [[2.0, 3.0]]
    vec.numpy()[3] = 9.0
    assert b.detach().numpy().tolist() == [[2.0, 9.0]]
    with pytest.raises(TypeError, match="expected aiograd.Tensor, but got: list"):
        vector_to_parameters([1.0, 2.0], [a])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vector_to_parameters(parameters_to_vector([a, b]).detach(), [a, b])
