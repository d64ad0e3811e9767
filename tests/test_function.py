"""Custom Functions (aiograd.autograd.function): the ctx API, async and reentrant backward."""

from __future__ import annotations

import sys

import anyio
import numpy as np
import pytest

import aiograd as ag
from helpers import t64
from aiograd.autograd.engine import current_graph_task


class Square(ag.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


async def test_forward_and_backward() -> None:
    x = t64([1.0, 3.0])
    y = Square.apply(x)
    assert y.tolist() == [1.0, 9.0]
    assert y.grad_fn.name() == "SquareBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    await y.sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]


def test_forward_runs_without_recording() -> None:
    seen = {}

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, x):
            seen["enabled"] = ag.is_grad_enabled()
            inner = x * 2
            seen["inner_grad_fn"] = inner.grad_fn
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Probe.apply(t64([1.0]))
    assert seen == {"enabled": False, "inner_grad_fn": None}
    assert y.grad_fn.name() == "ProbeBackward"


def test_no_node_when_no_input_requires_grad_or_grad_disabled() -> None:
    assert Square.apply(t64([2.0], requires_grad=False)).grad_fn is None
    with ag.no_grad():
        assert Square.apply(t64([2.0])).grad_fn is None


def test_function_is_not_instantiated() -> None:
    with pytest.raises(RuntimeError, match="apply"):
        Square()


async def test_saved_tensors_are_freed_after_backward() -> None:
    x = t64([1.0])
    y = Square.apply(x)
    node = y.grad_fn
    assert node.saved_tensors[0] is x
    await y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors


async def test_saved_tensors_kept_with_retain_graph() -> None:
    x = t64([2.0])
    y = Square.apply(x)
    await y.sum().backward(retain_graph=True)
    await y.sum().backward()
    assert x.grad.tolist() == [8.0]


async def test_saving_an_output_and_none() -> None:
    class Exp(ag.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out, None)
            return out

        @staticmethod
        def backward(ctx, g):
            out, nothing = ctx.saved_tensors
            assert nothing is None
            return g * out

    x = t64([0.5])
    await Exp.apply(x).sum().backward()
    assert np.allclose(x.grad.numpy(), np.exp(0.5))


async def test_needs_input_grad_and_non_tensor_args() -> None:
    seen = {}

    class Scale(ag.Function):
        @staticmethod
        def forward(ctx, x, factor, y, *, offset=0.0):
            ctx.factor = factor
            seen["forward"] = ctx.needs_input_grad
            return x * factor + y + offset

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ctx.needs_input_grad
            return g * ctx.factor, None, (g if ctx.needs_input_grad[2] else None)

    x, y = t64([1.0]), t64([2.0], requires_grad=False)
    out = Scale.apply(x, 3.0, y, offset=1.0)
    assert out.tolist() == [6.0]
    assert out.grad_fn.next_functions[1] == (None, 0) and out.grad_fn.next_functions[2] == (None, 0)
    await out.sum().backward()
    assert seen == {"forward": (True, False, False), "backward": (True, False, False)}
    assert x.grad.tolist() == [3.0]


async def test_mark_non_differentiable_and_multiple_outputs() -> None:
    class SortLike(ag.Function):
        @staticmethod
        def forward(ctx, x):
            idx = ag.tensor(np.argsort(x.detach().numpy()))
            vals = ag.tensor(np.sort(x.detach().numpy()), dtype=ag.float64)
            mask = ag.tensor(np.ones(x.shape), dtype=ag.float64)
            ctx.mark_non_differentiable(mask)
            ctx.idx = idx.numpy()
            return vals, idx, mask

        @staticmethod
        def backward(ctx, g_vals, g_idx, g_mask):
            assert g_idx is None or not np.any(g_idx.numpy())
            out = np.zeros(g_vals.shape)
            out[ctx.idx] = g_vals.numpy()
            return ag.tensor(out, dtype=ag.float64)

    x = t64([3.0, 1.0, 2.0])
    vals, idx, mask = SortLike.apply(x.detach().requires_grad_())
    assert vals.requires_grad and not idx.requires_grad and not mask.requires_grad
    assert idx.dtype == np.int64
    xx = t64([3.0, 1.0, 2.0])
    vals, _, _ = SortLike.apply(xx)
    await (vals * ag.tensor([1.0, 10.0, 100.0], dtype=ag.float64)).sum().backward()
    assert xx.grad.tolist() == [100.0, 1.0, 10.0]


async def test_materialize_grads_default_and_disabled() -> None:
    received = []

    def make(materialize: bool):
        class Two(ag.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 1, x * 2

            @staticmethod
            def backward(ctx, g1, g2):
                received.append(g2 if g2 is None else g2.tolist())
                return g1 if g2 is None else g1 + g2 * 2

        return Two

    for materialize in (True, False):
        x = t64([1.0])
        a, _unused = make(materialize).apply(x)
        await a.sum().backward()
        assert x.grad.tolist() == [1.0]
    assert received == [[0.0], None]


async def test_returning_an_input_gives_a_new_output_tensor() -> None:
    class Identity(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = t64([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    assert np.shares_memory(y.detach().numpy(), x.detach().numpy())
    await y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


async def test_returning_a_plain_array_gradient_is_accepted() -> None:
    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return np.full(g.shape, 4.0)

    x = t64([1.0, 2.0])
    await F.apply(x).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


async def test_broadcast_gradient_is_reduced_to_the_input_shape() -> None:
    class F(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ag.ones(3, 2, dtype=ag.float64)

    x = t64([1.0, 2.0])
    await F.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


async def test_custom_backward_is_differentiable_with_create_graph() -> None:
    x = t64([3.0])
    (g,) = await ag.grad(Square.apply(x).sum(), [x], create_graph=True)
    assert g.requires_grad and g.tolist() == [6.0]
    (gg,) = await ag.grad(g.sum(), [x])
    assert gg.tolist() == [2.0]


async def test_once_differentiable_backward_records_nothing() -> None:
    seen = {}

    class Once(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ag.once_differentiable
        def backward(ctx, g):
            seen["enabled"] = ag.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = t64([3.0])
    (g,) = await ag.grad(Once.apply(x).sum(), [x], create_graph=True)
    assert seen["enabled"] is False
    assert g.tolist() == [6.0] and not g.requires_grad


async def test_async_backward() -> None:
    class Slow(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        async def backward(ctx, g):
            await anyio.sleep(0.001)
            assert current_graph_task() is not None
            return g * 3

    x = t64([1.0, 2.0])
    y = Slow.apply(Slow.apply(x)).sum()
    await y.backward()
    assert x.grad.tolist() == [9.0, 9.0]


async def test_async_once_differentiable() -> None:
    class Slow(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        @ag.once_differentiable
        async def backward(ctx, g):
            await anyio.sleep(0)
            return g * 3

    x = t64([1.0])
    (g,) = await ag.grad(Slow.apply(x).sum(), [x], create_graph=True)
    assert g.tolist() == [3.0] and not g.requires_grad


# ----- reentrant backward ----------------------------------------------------------------


class Reenter(ag.Function):
    """A backward that runs a nested backward over a fresh graph, ``depth`` levels deep."""

    max_depth_seen = 0

    @staticmethod
    def forward(ctx, x, depth):
        ctx.depth = depth
        return x * 2

    @staticmethod
    async def backward(ctx, g):
        gt = current_graph_task()
        Reenter.max_depth_seen = max(Reenter.max_depth_seen, gt.reentrant_depth)
        if ctx.depth == 0:
            return g * 2, None
        with ag.enable_grad():
            inner = ag.tensor([1.0], dtype=ag.float64, requires_grad=True)
            out = Reenter.apply(inner, ctx.depth - 1).sum()  # backward runs with grad mode off
        (gi,) = await ag.grad(out, [inner])  # == 2
        return g * gi, None


async def test_reentrant_backward_one_level() -> None:
    x = t64([1.0])
    await Reenter.apply(x, 1).sum().backward()
    assert x.grad.tolist() == [2.0]


@pytest.mark.timeout(60)
async def test_reentrant_backward_1000_levels_deep() -> None:
    Reenter.max_depth_seen = 0
    limit = sys.getrecursionlimit()
    x = t64([1.0])
    with anyio.fail_after(30):
        await Reenter.apply(x, 1000).sum().backward()
    assert x.grad.tolist() == [2.0]
    assert Reenter.max_depth_seen == 1000
    assert sys.getrecursionlimit() == limit


async def test_reentrant_backward_through_ag_backward_commits_nested_grads() -> None:
    param = t64([5.0])

    class UsesParam(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        async def backward(ctx, g):
            with ag.enable_grad():
                await (param * 3).sum().backward()
            return g

    x = t64([1.0])
    await UsesParam.apply(x).sum().backward()
    assert param.grad.tolist() == [3.0]
    assert x.grad.tolist() == [1.0]


async def test_reentrant_nested_task_nodes_run_before_the_outer_ones() -> None:
    log: list[str] = []

    class Nested(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        async def backward(ctx, g):
            log.append("nested-start")
            with ag.enable_grad():
                inner = ag.tensor([1.0], dtype=ag.float64, requires_grad=True)
                out = inner.sin().exp().sum()
            for n in (out.grad_fn, out.grad_fn.next_functions[0][0], out.grad_fn.next_functions[0][0].next_functions[0][0]):
                n.register_prehook(lambda grads, name=n.name(): log.append("inner:" + name))
            await ag.grad(out, [inner])
            log.append("nested-end")
            return g

    x = t64([1.0])
    other = x.cos()  # recorded first: lower sequence_nr, runs after the Nested node
    other.grad_fn.register_prehook(lambda grads: log.append("outer:CosBackward0"))
    y = Nested.apply(x.tanh())
    y.grad_fn.next_functions[0][0].register_prehook(lambda grads: log.append("outer:TanhBackward0"))
    await (y + other).sum().backward()
    assert log == [
        "nested-start",
        "inner:SumBackward0",
        "inner:ExpBackward0",
        "inner:SinBackward0",
        "nested-end",
        "outer:TanhBackward0",
        "outer:CosBackward0",
    ]


async def test_error_in_a_nested_pass_propagates_and_grads_stay() -> None:
    class Fails(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        async def backward(ctx, g):
            with ag.enable_grad():
                inner = ag.tensor([1.0, 2.0], requires_grad=True)
                out = inner * 2
            await ag.grad(out, [inner])  # non-scalar without grad_outputs
            return g

    x = t64([1.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        await Fails.apply(x).sum().backward()
    assert x.grad is None
    await Square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0]


# ----- misuse: torch's kind of error -------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "described"),
    [("abc", "str"), (3.0, "float"), ([1.0, 1.0], "list"), ({"g": 1}, "dict"),
     (np.array(["a", "b"]), "numpy array of dtype <U1")],
    ids=["str", "float", "list", "dict", "str-array"],
)
async def test_backward_returning_a_non_tensor_says_what_it_got(bad: object, described: str) -> None:
    class Bad(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return bad

    x = t64([1.0, 2.0])
    with pytest.raises(
        RuntimeError,
        match=rf"function BadBackward returned an invalid gradient at index 0 - expected Tensor or None "
        rf"\(got {described}\)",
    ):
        await Bad.apply(x).sum().backward()
    assert x.grad is None


async def test_save_for_backward_of_a_non_tensor_is_a_type_error() -> None:
    class SavesFloat(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None, 3.0)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = t64([1.0, 2.0])
    with pytest.raises(TypeError, match="save_for_backward can only save tensors, but argument 2 is of type float"):
        SavesFloat.apply(x)
    with ag.no_grad():  # not recorded: nothing is saved, as in torch
        assert SavesFloat.apply(x).tolist() == [2.0, 4.0]
