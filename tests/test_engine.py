"""The backward engine (aiograd.autograd.engine): backward/grad keywords, order, hooks, staging,
callbacks, warnings, pruning, time slicing, concurrency and the blocking entry points."""

from __future__ import annotations

import gc
import warnings

import anyio
import numpy as np
import pytest

import aiograd as ag
from helpers import t64
from aiograd.autograd.engine import current_graph_task


def _all_nodes(t: ag.Tensor) -> list:
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        stack.extend(f for f, _ in n.next_functions)
    return out


def _log_prehooks(t: ag.Tensor, log: list) -> None:
    for n in _all_nodes(t):
        n.register_prehook(lambda g, name=n.name(): log.append(name))


# ----- backward and its keywords ----------------------------------------------------------


async def test_backward_fills_leaf_grads() -> None:
    x, w = t64([1.0, 2.0]), t64([3.0, 4.0])
    await ((x * w).sin().sum()).backward()
    assert np.allclose(x.grad.numpy(), np.cos([3.0, 8.0]) * [3.0, 4.0])
    assert np.allclose(w.grad.numpy(), np.cos([3.0, 8.0]) * [1.0, 2.0])
    assert x.grad.dtype == np.float64 and x.grad.grad_fn is None


async def test_gradients_accumulate_across_calls() -> None:
    x = t64([1.0, 2.0])
    await (x * x).sum().backward()
    await (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    await (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


async def test_leaf_used_twice_sums_its_gradients() -> None:
    x = t64([2.0])
    await (x * x + x.exp() + x).sum().backward()
    assert np.allclose(x.grad.numpy(), [4.0 + np.exp(2.0) + 1.0])


async def test_retain_graph_allows_a_second_pass() -> None:
    x = t64([1.0, 2.0])
    y = (x * x).sum()
    await y.backward(retain_graph=True)
    await y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


async def test_gradient_argument_for_non_scalar_outputs() -> None:
    x = t64([1.0, 2.0, 3.0])
    y = x * x
    await y.backward(ag.tensor([1.0, 0.0, 2.0], dtype=ag.float64))
    assert x.grad.tolist() == [2.0, 0.0, 12.0]


async def test_backward_with_several_roots_and_grad_tensors() -> None:
    x = t64([1.0, 2.0])
    y1, y2 = x * 2, (x * x).sum()
    await ag.backward([y1, y2], [ag.tensor([1.0, 10.0], dtype=ag.float64), None])
    assert x.grad.tolist() == [2.0 + 2.0, 20.0 + 4.0]
    z = t64([1.0])
    await ag.backward(z * 5)
    assert z.grad.tolist() == [5.0]


async def test_backward_inputs_restricts_accumulation_to_leaves_given() -> None:
    x, w = t64([1.0, 2.0]), t64([3.0, 4.0])
    await (x * w).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad is None


async def test_backward_inputs_accepts_a_single_tensor_and_non_leaves() -> None:
    x = t64([1.0, 2.0])
    h = x * 2
    out = (h * h).sum()
    await out.backward(inputs=h)
    assert h.grad.tolist() == [4.0, 8.0]
    assert x.grad is None


async def test_backward_inputs_non_leaf_and_leaf_together() -> None:
    x = t64([1.0, 2.0])
    h = x * 2
    await (h * h).sum().backward(inputs=[h, x])
    assert h.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]


async def test_grad_returns_tuple_and_leaves_dot_grad_alone() -> None:
    x, w = t64([1.0, 2.0]), t64([3.0, 4.0])
    y = (x * w).sum()
    gx, gw = await ag.grad(y, [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    assert gx.grad_fn is None and not gx.requires_grad


async def test_grad_with_respect_to_a_non_leaf() -> None:
    x = t64([1.0, 2.0])
    h = x.exp()
    y = (h * 3).sum()
    (gh,) = await ag.grad(y, h)
    assert gh.tolist() == [3.0, 3.0]


async def test_grad_outputs_weights_the_outputs() -> None:
    x = t64([1.0, 2.0])
    (g,) = await ag.grad(x * x, [x], grad_outputs=[ag.tensor([1.0, -1.0], dtype=ag.float64)])
    assert g.tolist() == [2.0, -4.0]


async def test_grad_with_several_outputs_sums() -> None:
    x = t64([1.0, 2.0])
    (g,) = await ag.grad([(x * x).sum(), (x * 3).sum()], [x])
    assert g.tolist() == [5.0, 7.0]


async def test_allow_unused_and_materialize_grads() -> None:
    x, unused = t64([1.0, 2.0]), t64([5.0])
    y = (x * 2).sum()
    gx, gu = await ag.grad(y, [x, unused], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 2.0] and gu is None
    gx, gu = await ag.grad(y, [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.0] and gu.dtype == np.float64
    with pytest.raises(ValueError, match="allow_unused"):
        await ag.grad(y, [x], allow_unused=False, materialize_grads=True)


async def test_create_graph_gives_higher_order_gradients() -> None:
    x = t64([2.0])
    y = x * x * x
    (g1,) = await ag.grad(y, [x], create_graph=True)
    assert g1.requires_grad and g1.tolist() == [12.0]
    (g2,) = await ag.grad(g1, [x], create_graph=True)
    assert g2.tolist() == [12.0]
    (g3,) = await ag.grad(g2, [x])
    assert g3.tolist() == [6.0]


async def test_create_graph_higher_order_of_transcendental_functions() -> None:
    x = t64([0.3, 1.1])
    (g1,) = await ag.grad(x.sin().sum(), [x], create_graph=True)
    (g2,) = await ag.grad(g1.sum(), [x], create_graph=True)
    (g3,) = await ag.grad(g2.sum(), [x])
    v = np.array([0.3, 1.1])
    assert np.allclose(g1.detach().numpy(), np.cos(v))
    assert np.allclose(g2.detach().numpy(), -np.sin(v))
    assert np.allclose(g3.numpy(), -np.cos(v))


async def test_backward_create_graph_makes_dot_grad_differentiable() -> None:
    x = t64([3.0])
    await (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [27.0]
    g = x.grad
    x.grad = None
    await g.sum().backward()
    assert x.grad.tolist() == [18.0]


async def test_mixed_second_derivative() -> None:
    x, y = t64([2.0]), t64([5.0])
    f = (x * x * y).sum()
    (gx,) = await ag.grad(f, [x], create_graph=True)  # 2xy
    (gxy,) = await ag.grad(gx.sum(), [y])  # 2x
    assert gxy.tolist() == [4.0]


# ----- execution order --------------------------------------------------------------------


async def test_order_prefers_higher_sequence_nr_like_torch() -> None:
    # Recorded: Sin(1) Cos(2) Exp(3) Add Sum. torch runs (checked against torch 2.x):
    # Sum, Add, Exp, Cos, Sin, AccumulateGrad.
    x = t64([0.5, 1.0])
    y, z = x.sin(), x.cos()
    w = y.exp()
    out = (w + z).sum()
    log: list[str] = []
    _log_prehooks(out, log)
    await out.backward()
    assert log == ["SumBackward0", "AddBackward0", "ExpBackward0", "CosBackward0", "SinBackward0", "AccumulateGrad"]


async def test_order_on_a_diamond_like_torch() -> None:
    x = t64([0.5, 1.0])
    a = x * 2
    b, c = a.sin(), a.exp()
    d = (b + c).sum()
    log: list[str] = []
    _log_prehooks(d, log)
    await d.backward()
    # a's node runs once, after both branches (dependency counting), as in torch
    assert log == ["SumBackward0", "AddBackward0", "ExpBackward0", "SinBackward0", "MulBackward0", "AccumulateGrad"]
    assert np.allclose(x.grad.numpy(), 2 * (np.cos([1.0, 2.0]) + np.exp([1.0, 2.0])))


async def test_each_node_runs_after_all_its_consumers() -> None:
    x = t64(np.linspace(0.1, 1.0, 4).tolist())
    h = x.tanh()
    terms = [h * float(k) for k in range(1, 6)]
    out = terms[0]
    for t in terms[1:]:
        out = out + t.exp()
    out = out.sum()
    log: list[str] = []
    _log_prehooks(out, log)
    await out.backward()
    assert log.count("TanhBackward0") == 1
    assert log.index("TanhBackward0") > max(i for i, n in enumerate(log) if n == "MulBackward0")


async def test_hook_order_tensor_pre_then_pre_then_apply_then_post() -> None:
    log: list[str] = []

    class Logged(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            log.append("apply")
            return g

    x = t64([1.0])
    y = Logged.apply(x)
    y.register_hook(lambda g: log.append("tensor_pre"))
    y.grad_fn.register_prehook(lambda g: log.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    await (y * 2).sum().backward()
    assert log == ["tensor_pre", "pre", "apply", "post"]


async def test_tensor_hook_can_replace_the_gradient() -> None:
    x = t64([1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    h = x * 1
    h.register_hook(lambda g: g + 1)
    await (h * 2).sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]


async def test_prehook_and_post_hook_can_replace_gradients() -> None:
    x = t64([1.0, 2.0])
    y = x * 3
    seen = {}

    def post(grad_inputs, grad_outputs):
        seen["in"] = [g.tolist() for g in grad_inputs if g is not None]
        seen["out"] = [g.tolist() for g in grad_outputs]
        return tuple(None if g is None else g * 0 + 7 for g in grad_inputs)

    y.grad_fn.register_prehook(lambda grads: (grads[0] * 2,))
    y.grad_fn.register_hook(post)
    await y.sum().backward()
    assert seen == {"in": [[6.0, 6.0]], "out": [[2.0, 2.0]]}
    assert x.grad.tolist() == [7.0, 7.0]


async def test_retain_grad_keeps_non_leaf_gradients_and_accumulates() -> None:
    x = t64([1.0, 2.0])
    h = x * 2
    h.retain_grad()
    assert h.retains_grad
    out = (h * h).sum()
    await out.backward(retain_graph=True)
    assert h.grad.tolist() == [4.0, 8.0]
    await out.backward()
    assert h.grad.tolist() == [8.0, 16.0]


async def test_grad_of_a_non_leaf_warns_like_torch_and_is_none() -> None:
    x = t64([1.0, 2.0])
    h = x * 2
    await (h * h).sum().backward()
    with pytest.warns(UserWarning, match=r"not a leaf Tensor is being accessed.*use \.retain_grad\(\)") as rec:
        assert h.grad is None
    assert [w.filename for w in rec] == [__file__]  # points at the user's line
    r = x * 3
    r.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert r.grad is None  # retains grad: no warning before backward either
        assert x.grad.tolist() == [8.0, 16.0]  # a leaf: no warning
        r.grad = ag.tensor([1.0, 1.0], dtype=ag.float64)
        assert r.grad.tolist() == [1.0, 1.0]


async def test_aiograd_itself_never_reads_grad_of_a_non_leaf() -> None:
    """A training step through hooks, checkpoint, higher order grads and an optimizer: with
    warnings as errors, none of aiograd's code may trip the non-leaf .grad warning."""
    ag.manual_seed(0)
    model = ag.nn.Sequential(ag.nn.Linear(3, 4), ag.nn.ReLU(), ag.nn.Linear(4, 1))
    opt = ag.optim.Adam(model.parameters(), lr=1e-2)
    x = ag.randn(5, 3, requires_grad=True)
    h = model[0](x)
    h.register_hook(lambda g: g * 1)
    y = ag.checkpoint(lambda t: model[2](model[1](t)), h, use_reentrant=False)
    (gx,) = await ag.grad(y.sum(), [x], create_graph=True)
    await (y.pow(2).mean() + gx.pow(2).sum()).backward()
    opt.step()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


async def test_retained_grad_sees_tensor_hook_result() -> None:
    x = t64([1.0])
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 5)
    await (h * 1).sum().backward()
    assert h.grad.tolist() == [5.0]
    assert x.grad.tolist() == [10.0]


async def test_post_accumulate_grad_hook_runs_at_commit_with_the_full_gradient() -> None:
    x = t64([1.0, 2.0])
    seen = []

    def hook(t):
        seen.append((t is x, t.grad.tolist()))

    h = x.register_post_accumulate_grad_hook(hook)
    await (x * x + x * 3).sum().backward()
    assert seen == [(True, [5.0, 7.0])]
    await (x * 1).sum().backward()
    assert seen[-1] == (True, [6.0, 8.0])
    h.remove()
    await (x * 1).sum().backward()
    assert len(seen) == 2


async def test_post_accumulate_grad_hook_can_step_the_parameter() -> None:
    w = t64([1.0, 1.0])

    def sgd(p):
        with ag.no_grad():
            p.data = p.detach().numpy() - 0.5 * p.grad.numpy()
        p.grad = None

    w.register_post_accumulate_grad_hook(sgd)
    await (w * ag.tensor([2.0, 4.0], dtype=ag.float64)).sum().backward()
    assert w.grad is None
    assert w.tolist() == [0.0, -1.0]


async def test_a_raising_post_accumulate_grad_hook_leaves_every_grad_written() -> None:
    """NOTE [Staged gradients]: every gradient is written before the first hook runs; a hook's
    error ends the call, and the hooks after it do not run."""
    a, b = t64([1.0, 2.0]), t64([3.0])
    ran = []

    def fails(t):
        raise ValueError("hook failed")

    for leaf in (a, b):  # whichever leaf commits first, the other's gradient is written too
        leaf.register_post_accumulate_grad_hook(fails)
        leaf.register_post_accumulate_grad_hook(ran.append)
    with pytest.raises(ValueError, match="hook failed"):
        await ((a * 2).sum() + (b * 5).sum()).backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [5.0]
    assert ran == []
    b._post_accumulate_hooks.clear()
    b.register_post_accumulate_grad_hook(ran.append)
    await (b * 1).sum().backward()  # the engine goes on
    assert b.grad.tolist() == [6.0] and ran == [b]


async def test_queue_callback_runs_after_commit_and_callbacks_can_queue_callbacks() -> None:
    x = t64([1.0])
    log = []

    def second():
        log.append("second")

    def first():
        log.append(("first", x.grad.tolist()))
        ag.queue_callback(second)

    class Cb(ag.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            ag.queue_callback(first)
            log.append("backward")
            return g

    await Cb.apply(x).sum().backward()
    assert log == ["backward", ("first", [1.0]), "second"]


async def test_queue_callback_from_a_hook() -> None:
    x = t64([1.0])
    y = x * 2
    log = []
    y.grad_fn.register_prehook(lambda g: ag.queue_callback(lambda: log.append("cb")))
    await y.sum().backward()
    assert log == ["cb"]
    assert current_graph_task() is None


async def test_warnings_in_custom_backward_are_reemitted_at_the_end() -> None:
    log = []

    class Warns(ag.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            warnings.warn("careful in backward", UserWarning)
            log.append("backward")
            return g

    x = t64([1.0])
    y = Warns.apply(x).sum()
    y.grad_fn.register_prehook(lambda g: ag.queue_callback(lambda: log.append("callback")))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *a, **k: log.append(("warning", str(message)))
        await y.backward()
    assert log == ["backward", "callback", ("warning", "careful in backward")]
    assert x.grad.tolist() == [1.0]


async def test_warning_in_backward_surfaces_through_pytest_warns() -> None:
    class Warns(ag.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            warnings.warn("deprecated thing", DeprecationWarning)
            return g

    x = t64([1.0])
    with pytest.warns(DeprecationWarning, match="deprecated thing"):
        await Warns.apply(x).sum().backward()


async def test_could_not_compute_gradients_when_the_graph_changes_during_the_pass() -> None:
    # Reachable only through a graph changed while the pass runs: a pre-hook drops one of
    # the two edges into `a` after the dependencies were counted.
    x = t64([1.0])
    a = x.exp()
    b, c = a * 2, a * 3
    out = b + c

    def cut(grads):
        c.grad_fn.set_next_edge(0, None)

    out.grad_fn.register_prehook(cut)
    x.grad = ag.tensor([9.0], dtype=ag.float64)
    with pytest.raises(RuntimeError, match="could not compute gradients for some functions"):
        await out.sum().backward()
    assert x.grad.tolist() == [9.0]


# ----- pruning ------------------------------------------------------------------------------


async def test_grad_does_not_run_nodes_that_do_not_lead_to_inputs() -> None:
    x, w = t64([1.0, 2.0]), t64([3.0])
    y = (x.sin() + w.exp().cos()).sum()
    log: list[str] = []
    _log_prehooks(y, log)
    (gx,) = await ag.grad(y, [x])
    assert np.allclose(gx.numpy(), np.cos([1.0, 2.0]))
    assert "ExpBackward0" not in log and "CosBackward0" not in log
    assert "SinBackward0" in log
    assert w.grad is None


async def test_grad_wrt_intermediate_does_not_run_below_it() -> None:
    x = t64([1.0])
    h = x.exp()
    y = (h.sin() * 2).sum()
    log: list[str] = []
    _log_prehooks(y, log)
    (gh,) = await ag.grad(y, [h])
    assert "ExpBackward0" not in log and "AccumulateGrad" not in log
    assert np.allclose(gh.numpy(), 2 * np.cos(np.exp(1.0)))


async def test_backward_inputs_prunes_too() -> None:
    x, w = t64([1.0]), t64([2.0])
    y = (x * 2 + w.exp()).sum()
    log: list[str] = []
    _log_prehooks(y, log)
    await y.backward(inputs=[x])
    assert "ExpBackward0" not in log
    assert x.grad.tolist() == [2.0] and w.grad is None


# ----- staged gradients ---------------------------------------------------------------------


class _Boom(ag.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 1

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


async def test_failed_pass_leaves_every_grad_untouched_and_engine_works_after() -> None:
    x, y, z = t64([1.0, 2.0]), t64([3.0]), t64([4.0])
    y.grad = ag.tensor([100.0], dtype=ag.float64)
    # recorded first, so it runs last: x's and y's AccumulateGrad run before it fails
    boom = _Boom.apply(z.exp()).sum()
    h = x * 2
    h.retain_grad()
    hooked = []
    x.register_post_accumulate_grad_hook(lambda t: hooked.append(t))
    loss = boom + (h * 3).sum() + (y * y).sum() * 10
    log: list[str] = []
    _log_prehooks(loss, log)
    with pytest.raises(ValueError, match="boom in backward"):
        await loss.backward()
    assert "AccumulateGrad" in log[: log.index("_BoomBackward")]  # a leaf was reached before the error
    assert x.grad is None and z.grad is None and h.grad is None
    assert y.grad.tolist() == [100.0]
    assert hooked == []
    await (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert len(hooked) == 1


async def test_error_from_a_hook_also_leaves_grads_untouched() -> None:
    x = t64([1.0])
    x.grad = ag.tensor([1.0], dtype=ag.float64)
    w = t64([1.0])
    y = (x * 2 + w.sin()).sum()

    def bad(g):
        raise KeyError("hook failed")

    y.grad_fn.register_hook(lambda gi, go: bad(gi))
    with pytest.raises(KeyError):
        await y.backward()
    assert x.grad.tolist() == [1.0] and w.grad is None


# ----- scheduling ---------------------------------------------------------------------------


async def test_long_chain_backward_yields_to_other_tasks() -> None:
    n = 50_000
    x = t64([1.0])
    y = x
    for _ in range(n):
        y = y * 1.0
    loss = y.sum()
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0)
        start = ticks
        await loss.backward()
        during = ticks - start
        done = True
    assert x.grad.tolist() == [1.0]
    assert during >= 5, f"the backward pass of {n} nodes let the ticker run only {during} times"


async def test_deep_chain_needs_no_recursion() -> None:
    x = t64([2.0])
    y = x
    for _ in range(5000):
        y = y + 0.0
    (g,) = await ag.grad(y.sum(), [x])
    assert g.tolist() == [1.0]


async def test_concurrent_passes_over_one_retained_graph_equal_sequential() -> None:
    x = t64(np.linspace(-1, 1, 8).tolist())
    w = t64(np.linspace(0.5, 2.0, 8).tolist())
    h = x
    for k in range(300):
        h = (h * w).tanh() + x * 0.01 if k % 2 else h.sin() * 1.5
    loss = h.sum()
    seq = [await ag.grad(loss, [x, w], retain_graph=True) for _ in range(2)]

    owners: list[int] = []
    for node in _all_nodes(loss):
        node.register_prehook(lambda g: owners.append(id(current_graph_task())))
    old = ag.get_time_slice()
    ag.set_time_slice(1e-7)  # yield at every check: the passes interleave
    results: dict[int, tuple] = {}
    try:
        async def one(i: int) -> None:
            results[i] = await ag.grad(loss, [x, w], retain_graph=True)

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(one, i)
    finally:
        ag.set_time_slice(old)
    for i in range(3):
        for got, want in zip(results[i], seq[0]):
            assert np.array_equal(got.numpy(), want.numpy())
    switches = sum(1 for a, b in zip(owners, owners[1:]) if a != b)
    assert switches >= 3, "the three passes did not interleave"


async def test_concurrent_backward_calls_accumulate_like_sequential_ones() -> None:
    x = t64([1.0, 2.0])
    h = x
    for _ in range(500):
        h = h * 1.0
    loss = (h * h).sum()
    old = ag.get_time_slice()
    ag.set_time_slice(1e-7)
    try:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(lambda: loss.backward(retain_graph=True))
    finally:
        ag.set_time_slice(old)
    assert x.grad.tolist() == [8.0, 16.0]


def test_time_slice_validation() -> None:
    with pytest.raises(ValueError, match="positive"):
        ag.set_time_slice(0)
    assert ag.get_time_slice() > 0


# ----- garbage collection (NOTE [Hot loop] (a)) ----------------------------------------------


@pytest.mark.asyncio  # asyncio and uvloop: the engine's own allocations do not depend on the loop
async def test_a_wide_backward_runs_no_garbage_collection() -> None:
    # 100,000 nodes side by side (issue 12): the stack's backward makes all the branches
    # ready at once, so the ready queue holds ~100,000 nodes. A queue that kept a
    # gc-tracked entry (and a gradient list) per queued node ran ~90 young collections in
    # this pass, among them a full (generation 2) one that walks the whole process's heap.
    n = 100_000
    x = t64([0.5, 1.5])
    loss = ag.stack([x * float(i) for i in range(n)]).sum()
    await ag.stack([x * 1.0 for _ in range(3)]).sum().backward()  # warm up (lazy imports)
    x.grad = None
    collections: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    before = ag.get_offload()
    ag.set_offload("never")  # the pass alone: no executor job for the stack's large node
    gc.collect()
    gc.callbacks.append(watch)
    try:
        await loss.backward()
    finally:
        gc.callbacks.remove(watch)
        ag.set_offload(before)
    assert 2 not in collections, f"a full collection ran during the backward: generations {collections}"
    assert collections == [], f"collections of generations {collections} ran during the backward"
    assert np.allclose(x.grad.numpy(), [n * (n - 1) / 2] * 2)


# ----- blocking entry points ----------------------------------------------------------------


def test_backward_sync_and_grad_sync_outside_a_loop() -> None:
    x = t64([1.0, 2.0])
    y = (x * x).sum()
    y.backward_sync(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0]
    ag.backward_sync(y, retain_graph=True)
    assert x.grad.tolist() == [4.0, 8.0]
    (g,) = ag.grad_sync(y, [x])
    assert g.tolist() == [2.0, 4.0]


async def test_backward_sync_inside_a_running_loop_says_to_await() -> None:
    x = t64([1.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match=r"await backward\(\.\.\.\)"):
        y.backward_sync()
    with pytest.raises(RuntimeError, match=r"await grad\(\.\.\.\)"):
        ag.grad_sync(y, [x])
    assert x.grad is None
    await y.backward()
    assert x.grad.tolist() == [2.0]


# ----- misuse of the gradient argument --------------------------------------------------------


@pytest.mark.parametrize("bad", [[1.0, 1.0], 1.0, "abc"], ids=["list", "float", "str"])
async def test_a_non_tensor_gradient_is_a_type_error_naming_its_type(bad: object) -> None:
    x = t64([1.0, 2.0])
    y = x * 2
    name = type(bad).__name__
    with pytest.raises(TypeError, match=rf"gradients can be either Tensors or None, but got {name}$"):
        await y.backward(bad)
    with pytest.raises(TypeError, match=rf"gradients can be either Tensors or None, but got {name}$"):
        await ag.backward([y], [bad])
    with pytest.raises(TypeError, match=rf"gradients can be either Tensors or None, but got {name}$"):
        await ag.grad([y], [x], [bad])
    with pytest.raises(TypeError, match=r"Tensors or None, but got numpy array of dtype <U1$"):
        await y.backward(np.array(["a", "b"]))
    assert x.grad is None


async def test_a_numpy_gradient_is_taken_as_one_gradient() -> None:
    x = t64([1.0, 2.0])
    await (x * 2).backward(np.array([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]
    await ag.backward([(x * 2)], [np.array([1.0, 1.0])])
    assert x.grad.tolist() == [4.0, 22.0]


async def test_without_retain_graph_the_pass_frees_the_saved_tensors() -> None:
    """retain_graph=False (the default without create_graph): each node releases what it
    saved as it runs, so a second pass through the graph raises torch's error and changes
    nothing; with retain_graph=True the same graph runs twice (as above)."""
    x = t64([1.0, 2.0])
    y = (x * x).sum()
    await y.backward(retain_graph=False)
    assert x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time"):
        await y.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    z = (x.exp() * x).sum()
    await ag.grad(z, [x])  # grad() frees it too
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        await ag.grad(z, [x])
