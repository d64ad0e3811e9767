"""The recorded graph (aiograd.autograd.graph): nodes, edges, numbering, names, hooks, metadata."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd.graph import (
    MAX_SEQUENCE_NR,
    AccumulateGrad,
    Edge,
    GraphRoot,
    Node,
    RemovableHandle,
    sum_to,
)


def _leaf(*vals: float) -> ag.Tensor:
    return ag.tensor(list(vals), requires_grad=True)


def test_sequence_nr_increases_in_recording_order() -> None:
    x = _leaf(1.0, 2.0)
    a = x * 2
    b = a + 1
    c = b.sin()
    seqs = [a.grad_fn.sequence_nr, b.grad_fn.sequence_nr, c.grad_fn.sequence_nr]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_accumulate_grad_has_the_maximum_sequence_nr() -> None:
    x = _leaf(1.0)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert isinstance(acc, AccumulateGrad)
    assert acc.name() == "AccumulateGrad"
    assert acc.sequence_nr == MAX_SEQUENCE_NR
    assert acc.sequence_nr > y.grad_fn.sequence_nr
    assert acc.variable is x


def test_accumulate_grad_is_shared_by_every_use_of_a_leaf() -> None:
    x = _leaf(1.0)
    a, b = x * 2, x + 1
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]


def test_topological_nr_zero_for_leaves_one_plus_max_of_children() -> None:
    x, w = _leaf(1.0, 2.0), _leaf(3.0, 4.0)
    a = x * w  # children: two AccumulateGrad (0)
    b = a.exp()  # 2
    c = b + x  # max(2, 0) + 1 = 3
    acc = a.grad_fn.next_functions[0][0]
    assert acc.topological_nr == 0
    assert a.grad_fn.topological_nr == 1
    assert b.grad_fn.topological_nr == 2
    assert c.grad_fn.topological_nr == 3


def test_topological_nr_of_node_with_only_constant_inputs_below_is_one() -> None:
    x = _leaf(1.0)
    y = x * ag.tensor([5.0])
    assert y.grad_fn.topological_nr == 1


def test_next_functions_hold_none_for_inputs_without_grad() -> None:
    x = _leaf(1.0, 2.0)
    c = ag.tensor([3.0, 4.0])
    y = x * c
    (n0, i0), (n1, i1) = y.grad_fn.next_functions
    assert isinstance(n0, AccumulateGrad) and i0 == 0
    assert (n1, i1) == (None, 0)
    z = c * x
    assert z.grad_fn.next_functions[0] == (None, 0)


def test_next_functions_point_to_the_producing_node_and_output_nr() -> None:
    x = _leaf(1.0, 2.0)
    a = x.sin()
    b = a * a
    assert b.grad_fn.next_functions == ((a.grad_fn, 0), (a.grad_fn, 0))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda x: x * 2, "MulBackward0"),
        (lambda x: x + 2, "AddBackward0"),
        (lambda x: x - 2, "SubBackward0"),
        (lambda x: x / 2, "DivBackward0"),
        (lambda x: x.sin(), "SinBackward0"),
        (lambda x: x.exp(), "ExpBackward0"),
        (lambda x: x.tanh(), "TanhBackward0"),
        (lambda x: -x, "NegBackward0"),
        (lambda x: x.sum(), "SumBackward0"),
        (lambda x: x.mean(), "MeanBackward0"),
    ],
)
def test_node_names_follow_torch(make, name) -> None:
    y = make(_leaf(1.0, 2.0))
    assert y.grad_fn.name() == name
    assert name in repr(y.grad_fn)
    assert f"grad_fn=<{name}>" in repr(y)


def test_no_node_without_requires_grad_or_in_no_grad() -> None:
    c = ag.tensor([1.0])
    assert (c * 2).grad_fn is None
    with ag.no_grad():
        assert (_leaf(1.0) * 2).grad_fn is None


def test_leaf_and_non_leaf() -> None:
    x = _leaf(1.0)
    y = x * 2
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and y.requires_grad
    assert ag.tensor([1.0]).is_leaf
    d = y.detach()
    assert d.is_leaf and not d.requires_grad


def test_metadata_is_a_per_node_dict() -> None:
    a = _leaf(1.0) * 2
    b = _leaf(1.0) * 2
    assert a.grad_fn.metadata == {}
    a.grad_fn.metadata["k"] = 1
    assert a.grad_fn.metadata is a.grad_fn.metadata
    assert a.grad_fn.metadata == {"k": 1}
    assert b.grad_fn.metadata == {}


def test_input_metadata_records_shape_and_dtype_of_outputs() -> None:
    x = ag.ones(2, 3, requires_grad=True)
    y = x.sum(dim=1)
    (meta,) = y.grad_fn.input_metadata
    assert meta.shape == (2,) and meta.dtype == np.float32
    assert y.grad_fn.num_inputs() == 1 and y.grad_fn.num_outputs() == 1


async def test_edges_live_in_named_slots_and_the_list_is_built_on_demand() -> None:
    # NOTE [Edges]: next0/next0_nr, next1/next1_nr, more_edges; next_edges is built from them.
    x = _leaf(1.0, 2.0)
    y = x.exp()
    z = y.sin()
    node = z.grad_fn
    assert node.next0 is y.grad_fn and node.next0_nr == 0 and node.n_edges == 1 and node.more_edges == ()
    assert node.next_edges == [Edge(y.grad_fn, 0)]
    assert node.next_functions == ((y.grad_fn, 0),)
    assert node.should_compute_output(0)
    w = _leaf(3.0, 4.0)
    p = ag.mul(y, w.detach())  # only input 0 needs a gradient
    assert p.grad_fn.n_edges == 2 and p.grad_fn.next1 is None and not p.grad_fn.should_compute_output(1)
    assert p.grad_fn.next_edges == [Edge(y.grad_fn, 0), None]
    # the gradient's metadata is the node's own (NOTE [Gradient metadata])
    assert node.grad_shape == (2,) and node.grad_dtype == np.float32 and node.n_inputs == 1
    await z.sum().backward()
    assert np.allclose(x.grad.numpy(), np.cos(np.exp([1.0, 2.0])) * np.exp([1.0, 2.0]))


def test_set_next_edge_and_assigning_next_edges_rewrite_the_slots() -> None:
    x, w, v = _leaf(1.0), _leaf(2.0), _leaf(3.0)
    node = (x * w).grad_fn
    acc_v = (v * 1).grad_fn.next0
    node.set_next_edge(1, Edge(acc_v, 0))
    assert node.next1 is acc_v
    node.next_edges = [None, Edge(acc_v, 0), Edge(acc_v, 0)]
    assert node.n_edges == 3 and node.next0 is None and node.more_edges == (Edge(acc_v, 0),)
    assert node.next_edges == [None, Edge(acc_v, 0), Edge(acc_v, 0)]
    with pytest.raises(IndexError):
        node.set_next_edge(3, None)


def test_hook_handles_remove() -> None:
    y = _leaf(1.0) * 2
    node = y.grad_fn
    h1 = node.register_prehook(lambda g: None)
    h2 = node.register_hook(lambda gi, go: None)
    assert isinstance(h1, RemovableHandle) and isinstance(h2, RemovableHandle)
    assert node._has_hooks()
    h1.remove()
    h2.remove()
    h2.remove()  # twice is fine
    assert not node._has_hooks()
    with node.register_prehook(lambda g: None):
        assert node._has_hooks()
    assert not node._has_hooks()


async def test_removed_hooks_do_not_run() -> None:
    x = _leaf(1.0, 2.0)
    y = (x * 2).sum()
    calls = []
    h = y.grad_fn.register_prehook(lambda g: calls.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    th = x.register_hook(lambda g: calls.append("tensor"))
    h.remove()
    th.remove()
    await y.backward()
    assert calls == ["post"]


async def test_node_apply_can_be_called_directly() -> None:
    x = _leaf(1.0, 2.0)
    y = x * 3
    (gx,) = [g for g in y.grad_fn.apply([np.ones(2, np.float32)]) if g is not None]
    assert np.allclose(gx, [3.0, 3.0])


def test_accumulate_grad_apply_directly_accumulates() -> None:
    x = _leaf(1.0, 2.0)
    acc = AccumulateGrad(x)
    assert acc.apply([np.array([1.0, 1.0], np.float32)]) == ()
    acc.apply([np.array([1.0, 2.0], np.float32)])
    assert x.grad.tolist() == [2.0, 3.0]


def test_graph_root_passes_its_grads() -> None:
    x = _leaf(1.0)
    a, b = x * 2, x.exp().exp()
    root = GraphRoot([Edge(a.grad_fn, 0), Edge(b.grad_fn, 0)], ["ga", "gb"])
    assert root.apply([]) == ["ga", "gb"]
    assert root.topological_nr == b.grad_fn.topological_nr + 1
    assert root.name() == "GraphRoot"


def test_base_node_apply_is_not_implemented() -> None:
    with pytest.raises(NotImplementedError, match="Node does not implement apply"):
        Node().apply([])


@pytest.mark.parametrize(
    "g_shape, shape",
    [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((4, 2, 3), ()), ((4, 2, 3), (2, 1))],
)
def test_sum_to_reduces_broadcast_gradients(g_shape, shape) -> None:
    g = np.arange(np.prod(g_shape), dtype=np.float64).reshape(g_shape)
    r = sum_to(g, shape)
    assert r.shape == shape
    ref = g.sum(axis=tuple(range(len(g_shape) - len(shape))))
    for i, s in enumerate(shape):
        if s == 1:
            ref = ref.sum(axis=i, keepdims=True)
    assert np.allclose(r, ref)


async def test_a_second_create_graph_backward_adds_to_grad_and_retained_grad() -> None:
    """accumulate_into_grad / accumulate_into_retained_grad with a Tensor gradient (a pass
    with ``create_graph``): added to an existing ``.grad``, never put in its place, and the
    sum keeps a graph. d(x**3)/dx at 3 is 27: two passes give 54, as torch."""
    x = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    h = x * 1.0
    h.retain_grad()
    y = h**3
    await y.backward(create_graph=True)
    assert x.grad.item() == 27.0 and h.grad.item() == 27.0
    first = x.grad
    await y.backward(create_graph=True)
    assert x.grad.item() == 54.0 and h.grad.item() == 54.0
    assert x.grad.grad_fn is not None and h.grad.grad_fn is not None
    assert first.item() == 27.0  # added out of place: the first gradient, in its graph, is intact
    # d(.grad)/dx = 2 * d2(x**3)/dx2 = 2 * 6x = 36 at 3
    (g2,) = await ag.grad(x.grad, [x])
    assert g2.item() == 36.0


async def test_a_plain_backward_after_a_create_graph_one_adds_too() -> None:
    x = ag.tensor(3.0, dtype=ag.float64, requires_grad=True)
    await (x**3).backward(create_graph=True)
    await (x**3).backward()
    assert x.grad.item() == 54.0
