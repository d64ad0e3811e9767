"""aiograd.functional (aiograd.autograd.functional): vjp, jvp, jacobian, hessian vs analytic results."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd import functional as F
from helpers import c64, t64


X = np.array([0.3, -1.2, 2.0])
A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]])


def f_vec(x):  # R^3 -> R^2: A @ sin(x) * x
    return ag.tensor(A, dtype=ag.float64) @ (x.sin() * x)


def jac_vec(x: np.ndarray) -> np.ndarray:
    return A * (np.cos(x) * x + np.sin(x))[None, :]


def test_module_is_exported() -> None:
    assert ag.functional is F
    assert set(F.__all__) == {"vjp", "jvp", "jacobian", "hessian"}


async def test_vjp_single_tensor() -> None:
    v = np.array([1.0, -2.0])
    out, g = await F.vjp(f_vec, c64(X), c64(v))
    assert isinstance(out, ag.Tensor) and isinstance(g, ag.Tensor)
    assert np.allclose(out.numpy(), A @ (np.sin(X) * X))
    assert np.allclose(g.numpy(), v @ jac_vec(X))
    assert not out.requires_grad and not g.requires_grad


async def test_vjp_scalar_output_without_v_and_tuples() -> None:
    x, y = c64([1.0, 2.0]), c64([3.0, 4.0])
    out, (gx, gy) = await F.vjp(lambda a, b: (a * b).sum(), (x, y))
    assert out.item() == 11.0
    assert gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
    outs, grads = await F.vjp(lambda a: (a * 2, a.exp()), [x], (c64([1.0, 1.0]), c64([1.0, 0.0])))
    assert isinstance(outs, tuple) and len(outs) == 2
    assert isinstance(grads, tuple) and len(grads) == 1
    assert np.allclose(grads[0].numpy(), [2.0 + np.e, 2.0])


async def test_vjp_requires_v_for_non_scalar_outputs() -> None:
    with pytest.raises(RuntimeError, match="v can only be None"):
        await F.vjp(f_vec, c64(X))
    with pytest.raises(RuntimeError, match="v has invalid size"):
        await F.vjp(f_vec, c64(X), c64([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        await F.vjp(f_vec, [1.0, 2.0])


async def test_vjp_independent_input_gives_zeros_or_raises_in_strict_mode() -> None:
    x, y = c64([1.0]), c64([2.0, 3.0])
    _, (gx, gy) = await F.vjp(lambda a, b: (a * 2).sum(), (x, y))
    assert gx.tolist() == [2.0] and gy.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        await F.vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        await F.vjp(lambda a: ag.tensor([1.0], dtype=ag.float64), x, strict=True)


async def test_vjp_leaves_inputs_untouched_and_works_under_no_grad() -> None:
    x = t64(X)
    with ag.no_grad():
        _, g = await F.vjp(lambda a: a.sin().sum(), x)
    assert np.allclose(g.numpy(), np.cos(X))
    assert x.grad is None


async def test_vjp_create_graph_is_differentiable() -> None:
    x = t64([2.0])
    _, g = await F.vjp(lambda a: (a * a * a).sum(), x, create_graph=True)  # 3x^2
    assert g.requires_grad
    (gg,) = await ag.grad(g.sum(), [x])
    assert gg.tolist() == [12.0]


async def test_jvp_single_and_tuple() -> None:
    v = np.array([0.5, 1.0, -1.0])
    out, jv = await F.jvp(f_vec, c64(X), c64(v))
    assert np.allclose(out.numpy(), A @ (np.sin(X) * X))
    assert np.allclose(jv.numpy(), jac_vec(X) @ v)
    x, y = c64([1.0, 2.0]), c64([3.0, 4.0])
    outs, jvs = await F.jvp(lambda a, b: (a * b, a + b.exp()), (x, y), (c64([1.0, 0.0]), c64([0.0, 1.0])))
    assert isinstance(outs, tuple) and isinstance(jvs, tuple) and len(jvs) == 2
    assert np.allclose(jvs[0].numpy(), [3.0, 2.0])
    assert np.allclose(jvs[1].numpy(), [1.0, np.exp(4.0)])


async def test_jvp_scalar_input_without_v() -> None:
    _, jv = await F.jvp(lambda a: a * a * a, c64(2.0))
    assert jv.item() == 12.0
    with pytest.raises(RuntimeError, match="v can only be None"):
        await F.jvp(f_vec, c64(X))


async def test_jvp_create_graph() -> None:
    x = t64([2.0])
    _, jv = await F.jvp(lambda a: a * a * a, x, c64([1.0]), create_graph=True)
    assert jv.tolist() == [12.0] and jv.requires_grad
    (g,) = await ag.grad(jv.sum(), [x])
    assert g.tolist() == [12.0]


async def test_jacobian_structures() -> None:
    j = await F.jacobian(f_vec, c64(X))
    assert isinstance(j, ag.Tensor) and j.shape == (2, 3)
    assert np.allclose(j.numpy(), jac_vec(X))

    x, y = c64([1.0, 2.0]), c64([3.0, 4.0, 5.0])
    jt = await F.jacobian(lambda a, b: a.sum() * b, (x, y))  # one output, tuple of inputs
    assert isinstance(jt, tuple) and len(jt) == 2
    assert jt[0].shape == (3, 2) and jt[1].shape == (3, 3)
    assert np.allclose(jt[0].numpy(), np.outer([3.0, 4.0, 5.0], [1.0, 1.0]))
    assert np.allclose(jt[1].numpy(), 3.0 * np.eye(3))

    jo = await F.jacobian(lambda a: (a * 2, a.sum()), x)  # tuple of outputs, one input
    assert isinstance(jo, tuple) and len(jo) == 2
    assert np.allclose(jo[0].numpy(), 2 * np.eye(2)) and np.allclose(jo[1].numpy(), [1.0, 1.0])

    jj = await F.jacobian(lambda a, b: (a * 2, b.exp()), (x, y))  # both tuples
    assert isinstance(jj[0], tuple) and jj[0][1].shape == (2, 3)
    assert not jj[0][1].numpy().any()
    assert np.allclose(jj[1][1].numpy(), np.diag(np.exp([3.0, 4.0, 5.0])))


async def test_jacobian_of_matrix_function_has_out_shape_plus_in_shape() -> None:
    m = np.arange(6.0).reshape(2, 3) / 5
    j = await F.jacobian(lambda a: a.tanh(), c64(m))
    assert j.shape == (2, 3, 2, 3)
    want = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for k in range(3):
            want[i, k, i, k] = 1 - np.tanh(m[i, k]) ** 2
    assert np.allclose(j.numpy(), want)


async def test_jacobian_strict_and_vectorize() -> None:
    x, y = c64([1.0]), c64([2.0])
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        await F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    jv = await F.jacobian(f_vec, c64(X), vectorize=True)
    assert np.allclose(jv.numpy(), jac_vec(X))


async def test_jacobian_create_graph() -> None:
    x = t64([1.0, 2.0])
    j = await F.jacobian(lambda a: a * a, x, create_graph=True)  # diag(2x)
    assert j.requires_grad
    (g,) = await ag.grad(j.sum(), [x])
    assert g.tolist() == [2.0, 2.0]


async def test_async_func_is_awaited() -> None:
    async def f(a):
        await anyio.sleep(0)
        return a.sin()

    j = await F.jacobian(f, c64(X))
    assert np.allclose(j.numpy(), np.diag(np.cos(X)))


async def test_hessian_single_input() -> None:
    def f(a):  # sum(x_i^3) + x0 * x1
        return (a * a * a).sum() + (a * ag.tensor([1.0, 0.0, 0.0], dtype=ag.float64)).sum() * (
            a * ag.tensor([0.0, 1.0, 0.0], dtype=ag.float64)
        ).sum()

    h = await F.hessian(f, c64(X))
    want = np.diag(6 * X)
    want[0, 1] = want[1, 0] = 1.0
    assert isinstance(h, ag.Tensor) and h.shape == (3, 3)
    assert np.allclose(h.numpy(), want)


async def test_hessian_tuple_inputs() -> None:
    x, y = c64([1.0, 2.0]), c64([3.0])
    h = await F.hessian(lambda a, b: (a * a * b).sum(), (x, y))
    assert isinstance(h, tuple) and isinstance(h[0], tuple)
    assert h[0][0].shape == (2, 2) and h[0][1].shape == (2, 1) and h[1][0].shape == (1, 2) and h[1][1].shape == (1, 1)
    assert np.allclose(h[0][0].numpy(), 2 * 3.0 * np.eye(2))
    assert np.allclose(h[0][1].numpy(), [[2.0], [4.0]])
    assert np.allclose(h[1][0].numpy(), [[2.0, 4.0]])
    assert np.allclose(h[1][1].numpy(), [[0.0]])


async def test_hessian_matrix_input_shape() -> None:
    m = np.array([[0.1, 0.2], [0.3, 0.4]])
    h = await F.hessian(lambda a: a.exp().sum(), c64(m))
    assert h.shape == (2, 2, 2, 2)
    assert np.allclose(h.numpy().reshape(4, 4), np.diag(np.exp(m).ravel()))


async def test_hessian_needs_a_single_element_output() -> None:
    with pytest.raises(RuntimeError, match="should contain a single element"):
        await F.hessian(lambda a: a * a, c64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        await F.hessian(lambda a: (a.sum(), a.sum()), c64([1.0, 2.0]))


async def test_hessian_strict_for_linear_function() -> None:
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is independent"):
        await F.hessian(lambda a: (a * 2).sum(), c64([1.0, 2.0]), strict=True)
    h = await F.hessian(lambda a: (a * 2).sum(), c64([1.0, 2.0]))
    assert not h.numpy().any()
