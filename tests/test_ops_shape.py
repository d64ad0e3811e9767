"""Views (aiograd/ops/movement/shape.py): torch's stride rule for view, the views of issue 13 (t, narrow,
select, diagonal, movedim, unflatten, unbind...) sharing memory and version with their base, in-place
changes through them reaching the base's gradient, node names and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aiograd as ag

ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


# ----- view: torch's stride rule (NOTE [View compatibility]) ---------------------------------

_VIEW_MSG = (
    r"view size is not compatible with input tensor's size and stride \(at least one dimension spans across "
    r"two contiguous subspaces\)\. Use \.reshape\(\.\.\.\) instead\."
)

# (make the input from a module m, new shape, whether torch 2.13 allows the view)
VIEW_CASES = [
    (lambda m: m.arange(6).reshape(2, 3).T, (6,), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (3, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (3, 1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (1, 3, 2, 1), True),
    (lambda m: m.arange(6).reshape(2, 3).T, (6, 1), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (2, 3), False),
    (lambda m: m.arange(6).reshape(2, 3).T, (-1,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 8), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (6, 4), False),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 2, 2, 2), True),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (3, 2, 4, 1), True),
    (lambda m: m.arange(24).reshape(2, 3, 4).permute(1, 0, 2), (24,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (2, 6), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (12,), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (2, 3, 2, 1), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, :, ::2], (4, 3), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (2, 8), True),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (16,), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (4, 4), False),
    (lambda m: m.arange(24).reshape(2, 3, 4)[:, 1:, :], (2, 2, 2, 2), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (12,), False),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (3, 2, 2), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (3, 4, 1), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (1, 3, 4), True),
    (lambda m: m.arange(3).reshape(3, 1).expand(3, 4), (4, 3), False),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (2,), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, :1], (2, 1, 1), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (2, 1), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, 1], (2,), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (4,), False),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (2, 2), True),
    (lambda m: m.arange(6).reshape(2, 3)[:, ::2], (2, 1, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (3, 2), True),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (6,), False),
    (lambda m: m.arange(6).reshape(2, 3).T.unsqueeze(1), (3, 1, 1, 2), True),
    (lambda m: m.zeros(0, 3).T, (0,), True),
    (lambda m: m.zeros(0, 3).T, (-1,), True),
    (lambda m: m.zeros(0, 3).T, (3, 0, 1), True),
    (lambda m: m.zeros(0, 3).T, (0, 5), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (3, 0), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (0,), True),
    (lambda m: m.zeros(2, 0, 3).permute(2, 0, 1), (6, 0), True),
    (lambda m: m.tensor(5.0), (1, 1), True),
    (lambda m: m.tensor(5.0), (), True),
    (lambda m: m.tensor(5.0), (1,), True),
    (lambda m: m.tensor(5.0), (-1,), True),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (2, 4), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (4, 2), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (2, 2, 2), True),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(0, 1), (8,), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (4, 2), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (2, 4), False),
    (lambda m: m.arange(8).reshape(2, 2, 2).transpose(1, 2), (8,), False),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (4,), False),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (2, 2), True),
    (lambda m: m.arange(12).reshape(3, 4)[1:, 1:3], (2, 1, 2), True),
]


@pytest.mark.parametrize("make, shape, allowed", VIEW_CASES)
def test_view_is_allowed_exactly_where_torch_allows_it(make, shape, allowed) -> None:
    x = make(ag)
    expected = np.reshape(np.array(x.numpy()), shape)
    if not allowed:
        with pytest.raises(RuntimeError, match=_VIEW_MSG):
            x.view(shape)
        assert x.reshape(shape).tolist() == expected.tolist()  # reshape copies instead
        return
    v = x.view(*shape) if shape else x.view(())
    assert v.shape == expected.shape and v.tolist() == expected.tolist()
    assert v.numel() == 0 or np.shares_memory(v.numpy(), x.numpy())
    assert v._version_counter is x._version_counter


def test_writes_through_a_view_reach_the_base() -> None:
    x = ag.arange(24.0).reshape(2, 3, 4)[:, :, ::2]
    v = x.view(12)
    v.mul_(-1)
    assert (x.numpy() <= 0).all() and x._version == v._version == 1
    y = ag.arange(6.0).reshape(2, 3).T
    y.view(3, 1, 2)[1, 0, 1] = 100.0
    assert y[1, 1].item() == 100.0


def test_transpose_then_view_raises_and_contiguous_view_works() -> None:
    x = ag.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=_VIEW_MSG):
        x.T.view(6)
    with pytest.raises(RuntimeError, match=_VIEW_MSG):
        x.T.view_as(ag.zeros(6))
    c = x.T.contiguous()
    assert c.is_contiguous() and not x.T.is_contiguous()
    assert c.view(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert x.contiguous() is x


async def test_contiguous_records_clone_backward_and_reshape_names_follow_torch() -> None:
    w = ag.arange(6.0).reshape(2, 3).requires_grad_()
    c = w.T.contiguous()
    assert c.grad_fn.name() == "CloneBackward0"
    assert w.T.reshape(6).grad_fn.name() == "UnsafeViewBackward0"  # a copy
    assert w.T.reshape(3, 1, 2).grad_fn.name() == "ReshapeAliasBackward0"  # a strided view
    assert w.reshape(3, 2).grad_fn.name() == "ViewBackward0"
    assert w.T.view(3, 1, 2).grad_fn.name() == "ViewBackward0"
    await (c * ag.arange(6.0).reshape(3, 2)).sum().backward()
    assert w.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4),
    data=st.data(),
)
def test_view_agrees_with_numpys_no_copy_reshape(shape: tuple[int, ...], data: st.DataObject) -> None:
    """A view exists exactly when numpy can reshape without a copy (two implementations of one rule)."""
    base = np.arange(int(np.prod(shape)) * 2, dtype=np.float64)[::2].reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    arr = base.transpose(perm)
    x = ag.from_numpy(arr)
    n = arr.size
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=3))
    if n == 0:
        new = tuple(sizes) + (0,)
    else:
        new = tuple(sizes) + (-1,) if n % int(np.prod(sizes)) == 0 else (n,)
    numpy_views = np.shares_memory(arr.reshape(new), arr) or n == 0
    try:
        v = x.view(new)
    except RuntimeError as e:
        assert "view size is not compatible" in str(e)
        assert not numpy_views
    else:
        assert numpy_views
        assert v.tolist() == arr.reshape(new).tolist()


def test_view_and_reshape_shape_errors_follow_torch() -> None:
    x = ag.zeros(2, 3)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[4, -1\]' is invalid for input of size 6"):
        x.view(4, -1)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape \[-2, 3\]"):
        x.reshape(-2, 3)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape \[-1, 0\] because the "
                       "unspecified dimension size -1 can be any value and is ambiguous"):
        ag.zeros(0, 3).view(-1, 0)
    assert ag.zeros(0, 3).view(3, -1).shape == (3, 0)


# ----- the views of issue 13: t, narrow, select, diagonal, movedim, unflatten, unbind, ravel -----

_VIEWS = {
    "t": lambda x: x.t(),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(1, -1),
    "diagonal": lambda x: x.diagonal(1),
    "movedim": lambda x: x.movedim(0, 1),
    "moveaxis": lambda x: ag.moveaxis(x, (0, 1), (1, 0)),
    "unflatten": lambda x: x.unflatten(1, (2, -1)),
    "unbind": lambda x: x.unbind(1)[2],
    "ravel": lambda x: x.ravel(),
    "swapdims": lambda x: x.swapdims(0, 1),
    "tensor_split": lambda x: x.tensor_split(2, 1)[1],
}


@pytest.mark.parametrize("name", list(_VIEWS))
def test_views_share_memory_and_version_and_writes_reach_the_base(name: str) -> None:
    base = ag.tensor(np.arange(12.0).reshape(3, 4))
    v = _VIEWS[name](base)
    assert np.shares_memory(v.numpy(), base.numpy()) and v._base is base
    assert v._version_counter is base._version_counter
    before = base.numpy().copy()
    v.add_(100.0)
    changed = base.numpy() != before
    assert changed.sum() == v.numel() and base._version == 1


@pytest.mark.parametrize("name", [n for n in _VIEWS if n != "ravel"])
async def test_an_in_place_change_through_a_view_flows_into_the_gradient_of_the_base(name: str) -> None:
    w = ag.tensor(np.arange(1.0, 13.0).reshape(3, 4), requires_grad=True)
    y = w * 1.0
    _VIEWS[name](y).mul_(3.0)  # CopySlices on y: the viewed elements count three times
    await y.sum().backward()
    mask = np.zeros((3, 4), bool)
    probe = ag.tensor(np.arange(12.0).reshape(3, 4))
    mask.reshape(-1)[_VIEWS[name](probe).numpy().reshape(-1).astype(int)] = True
    np.testing.assert_array_equal(w.grad.numpy(), np.where(mask, 3.0, 1.0))


def test_view_node_names_follow_torch() -> None:
    x = ag.randn(3, 1, 4, dtype=ag.float64, requires_grad=True)
    names = {
        "TBackward0": x[:, 0].t(), "TransposeBackward0": x.transpose(0, 2), "SqueezeBackward0": x.squeeze(),
        "SqueezeBackward1": x.squeeze(1), "SqueezeBackward2": x.squeeze((0, 1)), "UnsqueezeBackward0": x.unsqueeze(0),
        "SliceBackward0": x.narrow(2, 1, 2), "SelectBackward0": x.select(2, 0), "DiagonalBackward0": x.diagonal(0, 0, 2),
        "PermuteBackward0": x.movedim(0, 2), "ViewBackward0": x.unflatten(2, (2, 2)),
    }
    for name, y in names.items():
        assert y.grad_fn.name() == name
    assert x.swapaxes(0, 1).grad_fn.name() == x.swapdims(0, 1).grad_fn.name() == "TransposeBackward0"
    assert x.transpose(0, 2).ravel().grad_fn.name() == "ViewBackward0"  # contiguous copy, then view (as torch)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda x: ag.randn(2, 3, 4).t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
        (lambda x: x.narrow(0, 0, -1), RuntimeError, "narrow(): length must be non-negative."),
        (lambda x: x.narrow(0, 4, 0), IndexError, "start out of range (expected to be in range of [-3, 3], but got 4)"),
        (lambda x: x.narrow(0, 2, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
        (lambda x: ag.tensor(1.0).narrow(0, 0, 1), RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
        (lambda x: x.narrow(0, 1.0, 1), TypeError, "narrow(): argument 'start' must be int"),
        (lambda x: x.select(0, 3), IndexError, "select(): index 3 out of range for tensor of size [3, 4] at dimension 0"),
        (lambda x: ag.tensor(1.0).select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
        (lambda x: x.unflatten(1, (3, 2)), RuntimeError,
         "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor"),
        (lambda x: x.unflatten(1, ()), RuntimeError, "unflatten: sizes must be non-empty"),
        (lambda x: x.unflatten(1, (2.0, 2)), TypeError, "unflatten(): argument 'sizes' must be tuple of ints"),
        (lambda x: x.movedim((0, 0), (1, 0)), RuntimeError, "movedim: repeated dim in `source` ([0, 0])"),
        (lambda x: x.movedim((0, 1), (1,)), RuntimeError,
         "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of dims as "
         "destination ([1] dims)"),
        (lambda x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
        (lambda x: x.permute(0), RuntimeError, "is not equal to len(dims) = 1"),
        (lambda x: x.permute(0, 0), RuntimeError, "permute(): duplicate dims are not allowed."),
        (lambda x: x.expand(3, 5), RuntimeError,
         "The expanded size of the tensor (5) must match the existing size (4) at non-singleton dimension 1.  "
         "Target sizes: [3, 5].  Tensor sizes: [3, 4]"),
        (lambda x: x.expand(-1, 3, 4), RuntimeError,
         "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    ],
)
def test_view_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call(ag.zeros(3, 4))
    assert phrase in str(info.value)


def test_view_values_against_numpy() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ag.tensor(a)
    np.testing.assert_array_equal(x[0].t().numpy(), a[0].T)
    np.testing.assert_array_equal(x.narrow(-1, -3, 2).numpy(), a[..., 1:3])
    np.testing.assert_array_equal(x.narrow(1, ag.tensor(1), 1).numpy(), a[:, 1:2])
    np.testing.assert_array_equal(x.select(1, -1).numpy(), a[:, -1])
    np.testing.assert_array_equal(x.unflatten(-1, (2, 2)).numpy(), a.reshape(2, 3, 2, 2))
    np.testing.assert_array_equal(np.ravel(x).numpy(), a.ravel())
    np.testing.assert_array_equal(np.moveaxis(x, 0, -1).numpy(), np.moveaxis(a, 0, -1))
    np.testing.assert_array_equal(np.swapaxes(x, 0, 2).numpy(), np.swapaxes(a, 0, 2))
    assert ag.tensor(5.0).t().shape == () and ag.tensor(5.0).ravel().shape == (1,)
