"""NOTE [Aliasing] in engine.py: the engine keeps, or writes into, only arrays nobody else holds."""

from __future__ import annotations

import numpy as np

import aiograd as ag

N = 100  # 10,000 elements: above the size where rules reuse their input gradient in place


def _x() -> ag.Tensor:
    ag.manual_seed(0)
    return ag.randn(N, N, dtype=ag.float64, requires_grad=True)


async def test_user_gradient_is_never_written() -> None:
    x = _x()
    g = ag.ones(N, N, dtype=ag.float64)
    await x.relu().backward(g)
    assert (g.numpy() == 1).all()
    await (x + 0.0).backward(g)  # a pass-through hands g on: .grad must not alias it
    x.grad.numpy()[0, 0] = 123.0
    assert (g.numpy() == 1).all()


async def test_gradient_held_by_a_hook_is_not_reused() -> None:
    x = _x()
    held: list[np.ndarray] = []
    y = (x * 2).exp()
    y.register_hook(lambda t: held.append(t.numpy()))
    await (y * 3.0).sum().backward()
    assert (held[0] == 3.0).all()


async def test_retained_gradient_is_not_reused() -> None:
    x = _x()
    r = (x * 2).relu()
    r.retain_grad()
    await (r * 3.0).sum().backward()
    assert (r.grad.numpy() == 3.0).all()
    np.testing.assert_allclose(x.grad.numpy(), 6.0 * (x.detach().numpy() > 0))


async def test_one_array_sent_to_two_consumers_is_not_reused() -> None:
    """AddBackward0 hands the same array to both inputs; neither consumer may write into it."""
    x = _x()
    await (x.sin() + x.cos()).sum().backward()
    xd = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xd) - np.sin(xd))


async def test_accumulating_into_existing_grad_keeps_earlier_results_intact() -> None:
    x = _x()
    await (x * 2).sum().backward()
    first = x.grad
    snapshot = first.numpy().copy()
    (g,) = await ag.grad((x * 5).sum(), [x])
    np.testing.assert_array_equal(first.numpy(), snapshot)  # grad() never touches .grad
    await (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 5.0)
    np.testing.assert_allclose(g.numpy(), 5.0)
