"""The engine against a tiny synchronous reference backward, on random DAGs (hypothesis).

The reference is the textbook algorithm: order the nodes topologically by a
depth-first search, then walk them once, calling each node's own ``apply``
and summing the gradients that reach each node input. The engine (priority
queue, dependency counts, input buffers, staging, time slices) must agree.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import aiograd as ag
from aiograd.autograd.graph import AccumulateGrad, sum_to


def reference_backward(root: ag.Tensor) -> dict[int, np.ndarray]:
    """id(leaf) -> d root / d leaf, by a plain topological walk (root must be a scalar)."""
    start = root.grad_fn
    order: list = []
    seen: set[int] = set()
    stack = [(start, False)]
    while stack:  # iterative post-order DFS
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for e in node.next_edges:
            if e is not None and id(e[0]) not in seen:
                stack.append((e[0], False))
    order.reverse()  # every node before the nodes it sends gradients to

    buffers: dict[int, list] = {id(start): [np.ones(root.shape, root.dtype)]}
    result: dict[int, np.ndarray] = {}
    for node in order:
        grads = buffers.pop(id(node), None)
        if grads is None:
            continue
        if isinstance(node, AccumulateGrad):
            result[id(node.variable)] = grads[0]
            continue
        grads = [g if g is not None else np.zeros(m.shape, m.dtype) for g, m in zip(grads, node.input_metadata)]
        outs = node.apply(grads)
        for e, g in zip(node.next_edges, outs):
            if e is None or g is None:
                continue
            nxt, nr = e[0], e[1]
            meta = nxt.input_metadata[nr]
            g = np.asarray(g)
            if g.shape != meta.shape:
                g = sum_to(g, meta.shape)
            buf = buffers.setdefault(id(nxt), [None] * len(nxt.input_metadata))
            buf[nr] = g if buf[nr] is None else buf[nr] + g
    return result


OPS = ["add", "mul", "sin", "exp", "tanh", "sum", "broadcast", "matmul", "sub"]

programs = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=14
)


def build(program: list[tuple[str, int, int]], seed: int):
    rng = np.random.default_rng(seed)
    a = ag.tensor(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    b = ag.tensor(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    v = ag.tensor(rng.uniform(-1, 1, (3,)), requires_grad=True)  # broadcast along rows
    w = ag.tensor(rng.uniform(-1, 1, (3, 3)), requires_grad=True)  # for matmul
    s = ag.tensor(rng.uniform(-1, 1, ()), requires_grad=True)  # a 0-d leaf
    leaves = [a, b, v, w, s]
    pool = [a, b, v, s]
    for op, i, j in program:
        x, y = pool[i % len(pool)], pool[j % len(pool)]
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op == "sin":
            r = x.sin()
        elif op == "exp":
            r = x.tanh().exp()  # bounded, so long programs stay finite
        elif op == "tanh":
            r = x.tanh()
        elif op == "sum":
            r = x.sum()
        elif op == "broadcast":
            r = x.broadcast_to((2, 3)) if x.ndim <= 2 and x.shape in ((), (3,), (2, 3)) else x
        else:  # matmul: (2,3) @ (3,3), else (3,) @ (3,3)
            r = x @ w if x.shape in ((2, 3), (3,)) else x * 2
        pool.append(r)
    # several outputs share the recorded subexpressions
    loss = pool[-1].sum() + pool[len(pool) // 2].sum() * 0.5 + (pool[-1] * pool[-2]).sum() * 0.25
    return leaves, loss


@given(programs, st.integers(0, 2**31 - 1))
async def test_engine_matches_reference_on_random_dags(program, seed) -> None:
    leaves, loss = build(program, seed)
    assume(np.isfinite(loss.item()))
    want = reference_backward(loss)

    got = await ag.grad(loss, leaves, allow_unused=True, retain_graph=True)
    for leaf, g in zip(leaves, got):
        ref = want.get(id(leaf))
        if ref is None:
            assert g is None
        else:
            assert g is not None and g.shape == leaf.shape
            assert np.allclose(g.numpy(), ref, rtol=1e-10, atol=1e-12)

    await loss.backward()
    for leaf in leaves:
        ref = want.get(id(leaf))
        if ref is None:
            assert leaf.grad is None
        else:
            assert np.allclose(leaf.grad.numpy(), ref, rtol=1e-10, atol=1e-12)


@given(programs, st.integers(0, 2**31 - 1))
async def test_engine_matches_reference_with_tiny_time_slices(program, seed) -> None:
    leaves, loss = build(program, seed)
    assume(np.isfinite(loss.item()))
    want = reference_backward(loss)
    old = ag.get_time_slice()
    ag.set_time_slice(1e-9)
    try:
        got = await ag.grad(loss, leaves, allow_unused=True)
    finally:
        ag.set_time_slice(old)
    for leaf, g in zip(leaves, got):
        ref = want.get(id(leaf))
        assert (g is None) == (ref is None)
        if ref is not None:
            assert np.allclose(g.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_reference_agrees_with_analytic_gradient() -> None:
    x = ag.tensor([0.5, -0.25], dtype=ag.float64, requires_grad=True)
    y = (x.sin() * x + x.exp()).sum()
    ref = reference_backward(y)[id(x)]
    v = np.array([0.5, -0.25])
    assert np.allclose(ref, np.cos(v) * v + np.sin(v) + np.exp(v))
