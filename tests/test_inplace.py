"""In-place ops (aiograd/ops/inplace.py): version counters, the leaf and saved-tensor
errors, history rebase checked against the out-of-place equivalent, CopySlices for
writes through views, and plain writes when nothing requires grad."""

from __future__ import annotations

import gc
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiograd as ag

ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def leaf(a: Any) -> ag.Tensor:
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def grads_of(fn: Callable[..., ag.Tensor], *arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Value and gradients of ``(fn(*leaves) * weights).sum()`` for fresh leaves."""
    xs = [leaf(a) for a in arrays]
    out = fn(*xs)
    w = ag.tensor(rand(*out.shape, seed=99))
    (out * w).sum().backward_sync()
    return out.detach().numpy().copy(), [x.grad.numpy() if x.grad is not None else np.zeros(x.shape) for x in xs]


def assert_same(f_inplace: Callable[..., ag.Tensor], f_outofplace: Callable[..., ag.Tensor], *arrays: np.ndarray) -> None:
    v1, g1 = grads_of(f_inplace, *arrays)
    v2, g2 = grads_of(f_outofplace, *arrays)
    np.testing.assert_allclose(v1, v2, rtol=1e-12, atol=1e-12)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ----- versions and plain writes -------------------------------------------------------------


def test_every_inplace_op_bumps_the_version_and_writes_the_same_array() -> None:
    x = ag.tensor(np.ones(3))
    arr = x.numpy()
    ops: list[Callable[[ag.Tensor], Any]] = [
        lambda t: t.add_(1), lambda t: t.sub_(ag.tensor(np.ones(3)), alpha=2), lambda t: t.mul_(3),
        lambda t: t.div_(2), lambda t: t.pow_(2), lambda t: t.neg_(), lambda t: t.exp_(),
        lambda t: t.clamp_(0, 1), lambda t: t.zero_(), lambda t: t.fill_(2), lambda t: t.copy_(ag.tensor([1, 2, 3])),
        lambda t: t.masked_fill_(np.array([True, False, False]), 0), lambda t: t.__setitem__(0, 5.0),
        lambda t: t.index_put_((np.array([1, 1]),), ag.tensor([1.0, 1.0]), accumulate=True),
        lambda t: t.__iadd__(1), lambda t: t.__isub__(1), lambda t: t.__imul__(2), lambda t: t.__itruediv__(2),
    ]
    for i, op in enumerate(ops, 1):
        assert op(x) is None or True
        assert x._version == i
        assert x.numpy() is arr
    np.testing.assert_allclose(x.numpy(), [5.0, 4.0, 3.0])


def test_augmented_assignment_keeps_the_object_and_matches_numpy() -> None:
    a = rand(2, 3)
    x = ag.tensor(a.copy())
    y = x
    x += 1
    x *= ag.tensor(a)
    x -= 2
    x /= 4
    assert x is y
    np.testing.assert_allclose(x.numpy(), ((a + 1) * a - 2) / 4)


def test_views_share_the_version_counter_and_see_writes() -> None:
    x = ag.tensor(np.zeros((3, 4)))
    row, col, t = x[1], x[:, 2], x.T
    row.fill_(1.0)
    assert x._version == row._version == col._version == t._version == 1
    assert x.numpy()[1].tolist() == [1.0] * 4 and col.numpy()[1] == 1.0
    x[0, ::2] = 7.0
    assert t.numpy()[2, 0] == 7.0 and row._version == 2


def test_the_version_counts_past_a_byte_and_a_saved_intermediate_sees_it() -> None:
    # NOTE [Version counters] (autograd/graph.py): an untracked bytearray, bumped with a carry;
    # a pointwise node keeps the saved intermediate's counter, not the Tensor (NOTE [Saved inputs])
    w = leaf([0.5, 1.0])
    z = (w * w).sin()  # SinBackward0 saves the product: its array, counter and snapshot
    counter = z.grad_fn.counter
    assert isinstance(counter, bytearray) and not gc.is_tracked(counter)
    x = ag.tensor([1.0])
    x._version_counter = counter  # as a view of the product would share it
    for _ in range(300):
        x.add_(1.0)
    assert x._version == 300 and isinstance(x._version, int)
    with pytest.raises(RuntimeError, match=r"saved by SinBackward0, is at version 300; expected version 0 instead"):
        ag.backward_sync(z.sum())


def test_a_change_of_256_versions_is_caught_with_and_without_an_earlier_change() -> None:
    # NOTE [Version counters]: a never-changed counter's snapshot is the shared ZERO_VERSION and
    # its check reads byte 0 (set by the first change, never cleared); any other is compared whole
    from aiograd.autograd.graph import ZERO_VERSION

    for earlier in (0, 1):
        w = leaf([0.5, 1.0])
        h = w * 2.0
        for _ in range(earlier):
            h.add_(0.0)
        z = h.sin()
        assert (z.grad_fn.version is ZERO_VERSION) == (earlier == 0)
        for _ in range(256):  # the count's low byte comes back to where it was
            h.add_(0.0)
        with pytest.raises(RuntimeError, match=f"is at version {256 + earlier}; expected version {earlier} instead"):
            ag.backward_sync(z.sum())


def test_a_view_of_a_saved_intermediate_changed_in_place_fails_the_backward() -> None:
    w = leaf([0.5, 1.0])
    h = w * 2.0
    z = ag.cos(h)  # saves h's array and counter; h itself may die
    v = h[0:1]
    del h
    v.mul_(3.0)
    with pytest.raises(RuntimeError, match=r"\[float64 \[2\]\], which is saved by CosBackward0, is at version 1; "
                                           r"expected version 0"):
        ag.backward_sync(z.sum())


def test_dtype_and_shape_rules() -> None:
    i = ag.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(ag.tensor([0.5, 0.5, 0.5]))
    i.add_(1)
    assert i.tolist() == [2, 3, 4] and i.dtype == ag.int64
    x = ag.zeros(3)
    with pytest.raises(RuntimeError):
        x.add_(ag.zeros(2, 3))
    y = ag.zeros(3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        y.add_(ag.zeros(2, 3))


def test_expanded_view_refuses_inplace_and_says_clone() -> None:
    e = ag.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="clone"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="clone"):
        e[0] = 1.0


# ----- the leaf rule and no_grad ---------------------------------------------------------------


def test_leaf_that_requires_grad_refuses_inplace_in_grad_mode() -> None:
    w = leaf(np.ones(3))
    for op in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.__setitem__(0, 1.0), lambda: w.zero_()):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            op()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[1:].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0] += 1
    assert w._version == 0 and w.detach().numpy().tolist() == [1.0, 1.0, 1.0]


def test_no_grad_allows_optimizer_style_updates_on_leaves() -> None:
    w = leaf(np.ones(3))
    (w * 2).sum().backward_sync()
    with ag.no_grad():
        w.sub_(w.grad, alpha=0.5)
        w[0] += 10
        w.grad.zero_()
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(w.detach().numpy(), [10.0, 0.0, 0.0])
    assert w.grad.numpy().tolist() == [0.0, 0.0, 0.0]


def test_no_grad_inplace_on_a_nonleaf_keeps_its_history() -> None:
    x = leaf(np.ones(2))
    y = x * 3
    fn = y.grad_fn
    with ag.no_grad():
        y.add_(1)
    assert y.grad_fn is fn
    y.sum().backward_sync()
    assert x.grad.numpy().tolist() == [3.0, 3.0]


# ----- saved tensors modified in place ------------------------------------------------------------


def test_modifying_a_saved_tensor_makes_backward_name_the_node() -> None:
    x = leaf(np.ones(3))
    y = x * 1
    z = (y * y).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*saved by MulBackward0"):
        z.backward_sync()


def test_modifying_a_saved_input_through_a_view_is_caught() -> None:
    x = leaf(np.ones((2, 2)))
    y = x.exp()
    z = y.log()  # saves y
    y[0].zero_()
    with pytest.raises(RuntimeError, match="saved by LogBackward0"):
        z.sum().backward_sync()


def test_inplace_on_a_plain_tensor_saved_by_a_node_is_caught() -> None:
    w = leaf(np.ones(2))
    data = ag.tensor(np.array([1.0, 2.0]))
    loss = (w * data).sum()
    data.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        loss.backward_sync()


def test_mul_inplace_keeps_the_old_value_for_its_own_backward() -> None:
    a = np.array([1.0, 2.0, 3.0])

    def f_in(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        y = x * 2
        y.mul_(w)
        y.mul_(y)
        return y

    assert_same(f_in, lambda x, w: ((x * 2) * w) * ((x * 2) * w), a, a + 1)


# ----- rebase: in-place equals out-of-place -------------------------------------------------------

BINARY = [
    ("add_", lambda y, o: y.add_(o, alpha=2.0), lambda y, o: y + 2.0 * o),
    ("sub_", lambda y, o: y.sub_(o), lambda y, o: y - o),
    ("mul_", lambda y, o: y.mul_(o), lambda y, o: y * o),
    ("div_", lambda y, o: y.div_(o), lambda y, o: y / o),
    ("pow_", lambda y, o: y.abs_().pow_(o), lambda y, o: y.abs() ** o),
    ("copy_", lambda y, o: y.copy_(o), lambda y, o: o + 0 * y),
    ("iadd", lambda y, o: y.__iadd__(o), lambda y, o: y + o),
    ("imul", lambda y, o: y.__imul__(o), lambda y, o: y * o),
    ("itruediv", lambda y, o: y.__itruediv__(o), lambda y, o: y / o),
]

UNARY = [
    ("neg_", lambda y: y.neg_(), lambda y: -y), ("exp_", lambda y: y.exp_(), lambda y: y.exp()),
    ("tanh_", lambda y: y.tanh_(), lambda y: y.tanh()), ("sin_", lambda y: y.sin_(), lambda y: y.sin()),
    ("sigmoid_", lambda y: y.sigmoid_(), lambda y: y.sigmoid()),
    ("relu_", lambda y: y.relu_(), lambda y: y.relu()),
    ("clamp_", lambda y: y.clamp_(-0.5, 0.5), lambda y: y.clamp(-0.5, 0.5)),
    ("zero_", lambda y: y.zero_(), lambda y: y * 0),
    ("fill_", lambda y: y.fill_(3.0), lambda y: y * 0 + 3.0),
    ("masked_fill_", lambda y: y.masked_fill_(np.array([True, False, True]), 2.0),
     lambda y: y.masked_fill(np.array([True, False, True]), 2.0)),
]


@pytest.mark.parametrize("name,f_in,f_out", BINARY, ids=[b[0] for b in BINARY])
def test_binary_inplace_rebase_matches_out_of_place(name: str, f_in: Any, f_out: Any) -> None:
    a, o = rand(2, 3) + 3, rand(3, seed=1) + 3  # away from 0: div, pow stay smooth

    def run(f: Any) -> Callable[[ag.Tensor, ag.Tensor], ag.Tensor]:
        def g(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
            y = x * 1.5  # a non-leaf
            r = f(y, w * w)
            return r * x

        return g

    assert_same(run(f_in), run(f_out), a, o)


@pytest.mark.parametrize("name,f_in,f_out", UNARY, ids=[u[0] for u in UNARY])
def test_unary_inplace_rebase_matches_out_of_place(name: str, f_in: Any, f_out: Any) -> None:
    assert_same(lambda x: f_in(x * 1.5) * x, lambda x: f_out(x * 1.5) * x, rand(2, 3) * 0.3)


def test_rebase_names_and_edges_follow_torch() -> None:
    x = leaf(np.ones(3))
    y = x * 2
    old = y.grad_fn
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0" and y.grad_fn.next_functions[0][0] is old
    assert y.output_nr == 0 and not y.is_leaf
    y.mul_(y)
    assert y.grad_fn.name() == "MulBackward0"
    z = x * 2
    z.copy_(ag.tensor([1.0, 2.0, 3.0]))
    assert z.grad_fn.name() == "CopyBackwards"
    z.zero_()
    assert z.grad_fn.name() == "ZeroBackward0"
    z[[0, 2]] = x[:2]
    assert z.grad_fn.name() == "IndexPutBackward0"
    z[0] = x[2]
    assert z.grad_fn.name() == "CopySlices"


def test_buffer_without_grad_becomes_part_of_the_graph() -> None:
    """``out = zeros(...); out[i] = f(x)`` is a common way to assemble a result."""

    def f_in(x: ag.Tensor) -> ag.Tensor:
        out = ag.zeros(3, 2, dtype=ag.float64)
        for i in range(3):
            out[i] = x[i] * (i + 1)
        out.add_(x)
        return out

    def f_out(x: ag.Tensor) -> ag.Tensor:
        return ag.stack([x[i] * (i + 1) for i in range(3)]) + x

    assert_same(f_in, f_out, rand(3, 2))


def test_copy_from_a_lower_precision_source_casts_the_gradient_back() -> None:
    src = ag.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = ag.zeros(2, dtype=ag.float64)
    y.copy_(src)
    (y * 3).sum().backward_sync()
    assert src.grad.dtype == ag.float32 and src.grad.tolist() == [3.0, 3.0]


# ----- writes through views (CopySlices) ----------------------------------------------------------


def test_setitem_and_inplace_through_views_of_a_nonleaf() -> None:
    def f_in(x: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
        y = x * 2
        y[0] = v[0] * v[1]  # setitem on the base
        y[:, 1] *= v[2]  # getitem + imul on a view + setitem back
        y[1:, ::-1].add_(v[:3].sum())  # a reversed view
        y.T[2].mul_(v[3])  # a view of a transposed view
        return y

    def f_out(x: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
        y = x * 2
        y = ag.cat([(v[0] * v[1]).expand(1, 3), y[1:]])
        col = y[:, 1] * v[2]
        y = ag.stack([y[:, 0], col, y[:, 2]], 1)
        y = ag.cat([y[:1], y[1:] + v[:3].sum()])
        y = ag.stack([y[:, 0], y[:, 1], y[:, 2] * v[3]], 1)
        return y

    assert_same(f_in, f_out, rand(3, 3), rand(4, seed=1))


def test_view_grad_fn_is_regenerated_after_the_write() -> None:
    x = leaf(rand(2, 3))
    y = x * 1
    row = y[0]
    row.mul_(3)
    assert y.grad_fn.name() == "CopySlices"
    assert row.grad_fn.name() == "AsStridedBackward0"
    row.sum().backward_sync()
    expected = np.zeros((2, 3))
    expected[0] = 3
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_other_live_views_see_the_new_history() -> None:
    """A view taken before an in-place write to its base must not route its gradient
    through the base's old history (torch regenerates it too)."""

    def f_in(x: ag.Tensor) -> ag.Tensor:
        y = x * 1
        top = y[0:2]  # taken before the writes
        alias = y.view(6)
        y[0].mul_(5)
        y.add_(x)
        return top.sum(0) + alias[:2]

    def f_out(x: ag.Tensor) -> ag.Tensor:
        y = ag.cat([x[:1] * 5, x[1:]]) + x
        return y[0:2].sum(0) + y.reshape(6)[:2]

    assert_same(f_in, f_out, rand(3, 2))


def test_buffer_view_taken_before_a_graph_write_follows_it() -> None:
    def f_in(x: ag.Tensor) -> ag.Tensor:
        buf = ag.zeros(2, 2, dtype=ag.float64)
        row = buf[0]
        buf[0] = x * 2
        return row * x

    assert_same(f_in, lambda x: (x * 2) * x, rand(2))


@st.composite
def view_write_case(draw: st.DrawFn) -> tuple[tuple[int, ...], Any, Any]:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    idx = draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    idx2 = draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    return shape, idx, idx2


@given(case=view_write_case())
def test_writes_through_random_basic_views_match_a_functional_reference(case: tuple[tuple[int, ...], Any, Any]) -> None:
    shape, idx, idx2 = case

    def f_in(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        y = x * 1
        v = y[idx]
        v.mul_(w[idx])  # in place through a view
        y[idx2] = y[idx2] * 2 + 1  # setitem on the base
        return y * x

    def f_out(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        # the same function through a mask: m marks the first view, m2 the second
        ids = np.arange(int(np.prod(shape))).reshape(shape)
        m = np.isin(ids, np.asarray(ids[idx]).ravel())
        m2 = np.isin(ids, np.asarray(ids[idx2]).ravel())
        y = ag.where(m, x * w, x)
        y = ag.where(m2, y * 2 + 1, y)
        return y * x

    assert_same(f_in, f_out, rand(*shape), rand(*shape, seed=1))


@ASYNCIO_ONLY
async def test_gradcheck_and_second_derivatives_through_inplace_ops() -> None:
    def f(x: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
        y = x * 1
        y.mul_(x)
        y[0] = v * v
        y[1:, 0].mul_(v[0])
        y.T[1].exp_()
        return y

    x, v = leaf(rand(3, 2) * 0.5), leaf(rand(2, seed=1))
    assert await ag.gradcheck(f, (x, v))
    assert await ag.gradgradcheck(f, (x, v))


async def test_grad_of_grad_through_setitem() -> None:
    x = leaf(np.array([1.0, 2.0]))
    y = ag.zeros(3, dtype=ag.float64)
    y[:2] = x ** 3
    y[2] = x[0] * x[1]
    (g,) = await ag.grad(y.sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3 + 2, 12 + 1])
    (gg,) = await ag.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), [6 + 1, 12 + 1])
