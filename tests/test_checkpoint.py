"""Activation checkpointing (aiograd.autograd.checkpoint): same gradients as without it."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag

MODES = [pytest.param(True, id="reentrant"), pytest.param(False, id="non_reentrant")]


def _dropout(x: ag.Tensor, p: float = 0.5) -> ag.Tensor:
    keep = (ag.rand_like(x) >= p).to(x.dtype)
    return x * keep * (1.0 / (1.0 - p))


def _params(seed: int = 0) -> tuple[ag.Tensor, ag.Tensor, ag.Tensor]:
    ag.manual_seed(seed)
    x = ag.randn(4, 5, dtype=ag.float64, requires_grad=True)
    w = ag.randn(5, 6, dtype=ag.float64, requires_grad=True)
    b = ag.randn(6, dtype=ag.float64, requires_grad=True)
    return x, w, b


def _block(w: ag.Tensor, b: ag.Tensor, dropout: bool = False):
    def f(a: ag.Tensor) -> ag.Tensor:
        h = (a @ w + b).tanh()
        if dropout:
            h = _dropout(h)
        return (h * h).sin()

    return f


def _grads(*ts: ag.Tensor) -> list[np.ndarray]:
    out = [t.grad.numpy().copy() for t in ts]
    for t in ts:
        t.grad = None
    return out


async def _reference(dropout: bool, seed: int = 7) -> tuple[list[np.ndarray], float]:
    x, w, b = _params()
    ag.manual_seed(seed)
    loss = (_block(w, b, dropout)(x * 2.0) ** 2).sum()
    await loss.backward()
    return _grads(x, w, b), loss.item()


@pytest.mark.parametrize("use_reentrant", MODES)
@pytest.mark.parametrize("dropout", [False, True], ids=["plain", "dropout"])
async def test_same_gradients_as_without_checkpoint(use_reentrant, dropout) -> None:
    want, want_loss = await _reference(dropout)
    x, w, b = _params()
    ag.manual_seed(7)
    out = ag.checkpoint(_block(w, b, dropout), x * 2.0, use_reentrant=use_reentrant)
    loss = (out**2).sum()
    assert np.isclose(loss.item(), want_loss)
    await loss.backward()
    for got, exp in zip(_grads(x, w, b), want):
        assert np.allclose(got, exp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use_reentrant", MODES)
async def test_rng_stream_continues_as_without_checkpoint(use_reentrant) -> None:
    x, w, b = _params()
    ag.manual_seed(3)
    await (_block(w, b, True)(x) ** 2).sum().backward()
    after_plain = ag.rand(5).tolist()

    x, w, b = _params()
    ag.manual_seed(3)
    await (ag.checkpoint(_block(w, b, True), x, use_reentrant=use_reentrant) ** 2).sum().backward()
    assert ag.rand(5).tolist() == after_plain


@pytest.mark.parametrize("use_reentrant", MODES)
async def test_without_preserved_rng_state_dropout_masks_differ(use_reentrant) -> None:
    want, _ = await _reference(True)
    x, w, b = _params()
    ag.manual_seed(7)
    out = ag.checkpoint(_block(w, b, True), x * 2.0, use_reentrant=use_reentrant, preserve_rng_state=False)
    await (out**2).sum().backward()
    assert not np.allclose(_grads(x, w, b)[1], want[1])


async def test_non_reentrant_works_with_grad_for_params_and_inputs() -> None:
    want, _ = await _reference(False)
    x, w, b = _params()
    loss = (ag.checkpoint(_block(w, b), x * 2.0, use_reentrant=False) ** 2).sum()
    gw, gx = await ag.grad(loss, [w, x], retain_graph=True)
    assert np.allclose(gw.numpy(), want[1]) and np.allclose(gx.numpy(), want[0])
    (gb,) = await ag.grad(loss, [b])
    assert np.allclose(gb.numpy(), want[2])
    assert x.grad is None and w.grad is None and b.grad is None


async def test_non_reentrant_backward_with_inputs() -> None:
    want, _ = await _reference(False)
    x, w, b = _params()
    loss = (ag.checkpoint(_block(w, b), x * 2.0, use_reentrant=False) ** 2).sum()
    await loss.backward(inputs=[w])
    assert np.allclose(w.grad.numpy(), want[1])
    assert x.grad is None and b.grad is None


async def test_reentrant_refuses_grad_like_torch() -> None:
    x, w, b = _params()
    loss = (ag.checkpoint(_block(w, b), x, use_reentrant=True) ** 2).sum()
    with pytest.raises(RuntimeError, match=r"Checkpointing is not compatible with \.grad\(\)"):
        await ag.grad(loss, [x])
    assert w.grad is None


def test_non_reentrant_graph_holds_one_node_whose_edges_are_the_leaves() -> None:
    x, w, b = _params()
    y = ag.checkpoint(_block(w, b), x, use_reentrant=False)
    assert y.grad_fn.name() == "CheckpointBackward"
    leaves = {id(n.variable) for n, _ in y.grad_fn.next_functions}
    assert leaves == {id(x), id(w), id(b)}
    z = ag.checkpoint(_block(w, b), x, use_reentrant=True)
    assert z.grad_fn.name() == "_CheckpointFunctionBackward"


@pytest.mark.parametrize("use_reentrant", MODES)
async def test_multiple_outputs_and_non_tensor_args(use_reentrant) -> None:
    def f(a, scale, c):
        return a.sin() * scale, (a * c).exp()

    x = ag.tensor([0.1, 0.2], dtype=ag.float64, requires_grad=True)
    c = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    y1, y2 = f(x, 3.0, c)
    await (y1.sum() + y2.sum()).backward()
    want = _grads(x, c)
    y1, y2 = ag.checkpoint(f, x, 3.0, c, use_reentrant=use_reentrant)
    await (y1.sum() + y2.sum()).backward()
    for got, exp in zip(_grads(x, c), want):
        assert np.allclose(got, exp)


async def test_non_reentrant_one_output_unused() -> None:
    def f(a):
        return a.sin(), a.cos()

    x = ag.tensor([0.1, 0.2], dtype=ag.float64, requires_grad=True)
    y1, _ = ag.checkpoint(f, x, use_reentrant=False)
    await y1.sum().backward()
    assert np.allclose(x.grad.numpy(), np.cos([0.1, 0.2]))


async def test_non_reentrant_keyword_arguments() -> None:
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    y = ag.checkpoint(lambda a, *, k: a * k, x, k=3.0, use_reentrant=False)
    await y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        ag.checkpoint(lambda a, *, k: a * k, x, k=3.0, use_reentrant=True)


async def test_non_reentrant_captured_non_leaf_used_outside_too() -> None:
    w = ag.tensor([0.5, 1.5], dtype=ag.float64, requires_grad=True)
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)

    def run(ckpt: bool):
        h = w.exp()  # a non-leaf the block closes over, also used after it
        f = lambda a: (a * h).sin()  # noqa: E731
        y = ag.checkpoint(f, x, use_reentrant=False) if ckpt else f(x)
        return (y + h * h).sum()

    await run(False).backward()
    want = _grads(x, w)
    await run(True).backward()
    for got, exp in zip(_grads(x, w), want):
        assert np.allclose(got, exp)


async def test_non_reentrant_param_hook_fires_once_and_grads_are_staged() -> None:
    x, w, b = _params()
    calls = []
    w.register_hook(lambda g: calls.append(1))

    class Boom(ag.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    boom = Boom.apply(x).sum()  # recorded first: runs after the checkpoint node
    loss = (ag.checkpoint(_block(w, b), x, use_reentrant=False) ** 2).sum() + boom
    with pytest.raises(ValueError, match="boom"):
        await loss.backward()
    assert w.grad is None and b.grad is None and x.grad is None
    assert calls == [1]
    await (ag.checkpoint(_block(w, b), x, use_reentrant=False) ** 2).sum().backward()
    assert calls == [1, 1] and w.grad is not None


async def test_non_reentrant_double_backward() -> None:
    x = ag.tensor([1.5, -0.5], dtype=ag.float64, requires_grad=True)
    y = ag.checkpoint(lambda a: a * a * a, x, use_reentrant=False).sum()
    (g,) = await ag.grad(y, [x], create_graph=True)
    assert np.allclose(g.detach().numpy(), 3 * np.array([1.5, -0.5]) ** 2)
    (gg,) = await ag.grad(g.sum(), [x])
    assert np.allclose(gg.numpy(), 6 * np.array([1.5, -0.5]))


@pytest.mark.parametrize("use_reentrant", MODES)
async def test_nested_checkpoints(use_reentrant) -> None:
    want, _ = await _reference(False)
    x, w, b = _params()
    inner = _block(w, b)
    out = ag.checkpoint(lambda a: ag.checkpoint(inner, a, use_reentrant=use_reentrant), x * 2.0,
                        use_reentrant=use_reentrant)
    await (out**2).sum().backward()
    for got, exp in zip(_grads(x, w, b), want):
        assert np.allclose(got, exp)


def test_under_no_grad_checkpoint_just_runs() -> None:
    x, w, b = _params()
    with ag.no_grad():
        y = ag.checkpoint(_block(w, b), x, use_reentrant=False)
        z = ag.checkpoint(_block(w, b), x, use_reentrant=True)
    assert y.grad_fn is None and z.grad_fn is None
    assert np.allclose(y.numpy(), z.numpy())


def test_reentrant_warns_when_no_input_requires_grad() -> None:
    w = ag.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        ag.checkpoint(lambda a: a * w, ag.tensor([2.0]), use_reentrant=True)


async def test_second_backward_through_non_reentrant_checkpoint_fails_like_torch() -> None:
    x = ag.tensor([1.0], dtype=ag.float64, requires_grad=True)
    y = ag.checkpoint(lambda a: a.sin(), x, use_reentrant=False).sum()
    await y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        await y.backward()
    assert np.allclose(x.grad.numpy(), np.cos(1.0))


@pytest.mark.parametrize("offload", ["auto", "always", "never"])
@pytest.mark.parametrize("use_reentrant", MODES)
async def test_checkpoint_of_a_large_block_under_every_offload_mode(use_reentrant, offload) -> None:
    # A large output gives the checkpoint node work above the offload threshold: its backward
    # (a coroutine awaiting a nested pass) must still be awaited on the loop, never offloaded.
    ag.manual_seed(0)
    x = ag.randn(160, 128, dtype=ag.float64, requires_grad=True)
    w = ag.randn(128, 128, dtype=ag.float64, requires_grad=True)
    b = ag.randn(128, dtype=ag.float64, requires_grad=True)
    await (_block(w, b)(x) ** 2).sum().backward()
    expected = _grads(x, w, b)
    ag.set_offload(offload)
    try:
        await (ag.checkpoint(_block(w, b), x, use_reentrant=use_reentrant) ** 2).sum().backward()
    finally:
        ag.set_offload("auto")
    for got, want in zip(_grads(x, w, b), expected):
        np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("segments", [1, 2, 3])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_gives_the_gradients_of_the_plain_model(segments, use_reentrant) -> None:
    from aiograd.utils.checkpoint import checkpoint, checkpoint_sequential

    assert checkpoint is ag.checkpoint  # torch.utils.checkpoint's import path
    ag.manual_seed(0)
    model = ag.nn.Sequential(ag.nn.Linear(4, 5), ag.nn.Tanh(), ag.nn.Linear(5, 5), ag.nn.ReLU(), ag.nn.Linear(5, 2))
    x = ag.randn(3, 4, requires_grad=True)
    model(x).sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    out = checkpoint_sequential(model, segments, x, use_reentrant=use_reentrant)
    out.sum().backward()
    got = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    as_list = checkpoint_sequential(list(model.children()), segments, x, use_reentrant=use_reentrant)
    np.testing.assert_allclose(as_list.detach().numpy(), out.detach().numpy())
    with pytest.raises(ValueError, match="segments must be a positive integer"):
        checkpoint_sequential(model, 0, x)
    with pytest.raises(ValueError, match="6 segments for 5 functions"):
        checkpoint_sequential(model, 6, x)
