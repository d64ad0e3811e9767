"""Sparse COO tensors (aiograd/_sparse.py, aiograd/ops/sparse.py, aiograd.sparse): construction and its
errors, coalescing, conversions, products, sums and softmaxes, their gradients and layouts against
torch's (tests/data/sparse_torch.npz, written by tests/data/make_sparse.py), gradient checks, the
engine's accumulation of sparse gradients, clear errors for dense ops, and a GCN."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as F
from helpers import check_grads

TORCH = np.load(Path(__file__).parent / "data" / "sparse_torch.npz")
I = np.array([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]])  # (0, 2) twice: uncoalesced
V = np.array([3.0, 4.0, 5.0, 6.0, 1.0])
D = np.arange(6.0).reshape(3, 2) / 4 - 0.5
W = np.arange(9.0).reshape(3, 3) / 3 - 1.0
DENSE = np.array([[0.0, 0.0, 4.0], [4.0, 0.0, 5.0], [0.0, 6.0, 0.0]])


def leaf() -> ag.Tensor:
    return ag.sparse_coo_tensor(I, V, (3, 3), requires_grad=True)


def assert_sparse_grad(g: ag.Tensor, name: str) -> None:
    assert g.is_sparse and g.layout is ag.sparse_coo
    c = g.coalesce()
    np.testing.assert_array_equal(c.indices().numpy(), TORCH[name + "_indices"])
    np.testing.assert_allclose(c.values().numpy(), TORCH[name + "_values"], rtol=1e-12, atol=1e-12)


# ----- construction ---------------------------------------------------------------------------------


def test_construction_keeps_indices_values_and_size() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    assert s.is_sparse and s.layout is ag.sparse_coo and s.layout == ag.sparse_coo
    assert s.shape == (3, 3) and s.size() == (3, 3) and s.ndim == 2 and s.dim() == 2
    assert s.dtype == ag.float64  # a numpy array of values keeps its dtype
    assert s._nnz() == 5 and s.sparse_dim() == 2 and s.dense_dim() == 0 and s.numel() == 9
    assert not s.is_coalesced() and s.is_leaf and not s.requires_grad
    np.testing.assert_array_equal(s._indices().numpy(), I)
    np.testing.assert_array_equal(s._values().numpy(), V)
    assert not ag.ones(2).is_sparse and ag.ones(2).layout is ag.strided


def test_values_dtype_follows_torch_rules() -> None:
    assert ag.sparse_coo_tensor([[0, 1]], [1.0, 2.0]).dtype == ag.float32
    assert ag.sparse_coo_tensor([[0, 1]], [1, 2]).dtype == ag.int64
    assert ag.sparse_coo_tensor([[0, 1]], ag.tensor([1.0, 2.0], dtype=ag.float64)).dtype == ag.float64
    assert ag.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,), dtype=ag.float64).dtype == ag.float64


def test_legacy_constructors() -> None:
    s = ag.sparse.FloatTensor(ag.tensor(I), ag.tensor(V), (3, 3))
    assert s.is_sparse and s.dtype == ag.float32 and s.shape == (3, 3)
    assert ag.sparse.DoubleTensor(I, [1.0, 2.0, 3.0, 4.0, 5.0], (3, 3)).dtype == ag.float64


def test_size_is_inferred_from_indices_and_values() -> None:
    assert ag.sparse_coo_tensor(I, V).shape == (3, 3)
    hybrid = ag.sparse_coo_tensor([[0, 3]], np.ones((2, 4)))
    assert hybrid.shape == (4, 4) and hybrid.sparse_dim() == 1 and hybrid.dense_dim() == 1
    empty = ag.sparse_coo_tensor(np.zeros((2, 0), np.int64), np.zeros(0), (2, 2))
    assert empty._nnz() == 0 and empty.is_coalesced()
    np.testing.assert_array_equal(empty.to_dense().numpy(), np.zeros((2, 2)))


@pytest.mark.parametrize(
    "indices, values, size, message",
    [
        ([[0, 3]], [1.0, 2.0], (3,), "size is inconsistent with indices: for dim 0, size is 3 but found index 3"),
        ([[0, -1]], [1.0, 2.0], (3,), "found negative index -1 for dim 0"),
        ([[0, 1]], [1.0, 2.0, 3.0], (3,),
         "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3"),
        ([[0, 1], [0, 1]], [1.0, 2.0], (3,),
         "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 1, sparse_dim = 2, dense_dim = 0"),
        ([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 3), "values has incorrect size, expected [2, 3], got [2, 2]"),
        ([0, 1], [1.0, 2.0], None, "indices must be sparse_dim x nnz, but got: [2]"),
    ],
)
def test_construction_errors_are_torchs(indices: Any, values: Any, size: Any, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        ag.sparse_coo_tensor(indices, values, size)
    assert str(info.value) == message


def test_repr_follows_torchs_layout() -> None:
    s = ag.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,), dtype=ag.float64, requires_grad=True)
    assert repr(s) == (
        "tensor(indices=tensor([[0, 1]]),\n"
        "       values=tensor([1., 2.]),\n"
        "       size=(2,), nnz=2, dtype=float64, layout=aiograd.sparse_coo, requires_grad=True)"
    )
    assert repr(ag.sparse_coo) == "aiograd.sparse_coo" and repr(ag.strided) == "aiograd.strided"
    assert pickle.loads(pickle.dumps(ag.sparse_coo)) is ag.sparse_coo


# ----- coalescing, parts, conversions --------------------------------------------------------------------


def test_coalesce_sorts_and_sums_repeated_indices() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1, 2], [2, 0, 2, 1]])
    np.testing.assert_array_equal(c.values().numpy(), [4.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(c.to_dense().numpy(), s.to_dense().numpy())


def test_indices_and_values_need_a_coalesced_tensor() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    with pytest.raises(RuntimeError, match=r"^Cannot get values on an uncoalesced tensor, please call \.coalesce"):
        s.values()
    with pytest.raises(RuntimeError, match=r"^Cannot get indices on an uncoalesced tensor, please call \.coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match="^values expected sparse tensor layout but got Strided$"):
        ag.ones(2).values()
    with pytest.raises(RuntimeError, match="^coalesce expected sparse coordinate tensor layout but got Strided$"):
        ag.ones(2).coalesce()
    with pytest.raises(RuntimeError, match="^indices expected sparse coordinate tensor layout but got Strided$"):
        ag.ones(2).indices()


def test_to_dense_and_to_sparse_round_trip() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    np.testing.assert_array_equal(s.to_dense().numpy(), DENSE)
    back = ag.tensor(DENSE).to_sparse()
    assert back.is_sparse and back.is_coalesced() and back._nnz() == 4
    np.testing.assert_array_equal(back.to_dense().numpy(), DENSE)
    assert back.to_sparse() is back
    dense = ag.tensor(DENSE)
    assert dense.to_dense() is dense
    hybrid = dense.to_sparse(1)
    assert hybrid.sparse_dim() == 1 and hybrid.dense_dim() == 1 and hybrid._nnz() == 3
    np.testing.assert_array_equal(hybrid.to_dense().numpy(), DENSE)
    with pytest.raises(RuntimeError, match="sparse_dim argument !=self.sparse_dim"):
        hybrid.to_sparse(2)


def test_dtype_conversions_and_clone_stay_sparse() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3), dtype=ag.float32, requires_grad=True)
    d = s.double()
    assert d.is_sparse and d.dtype == ag.float64 and d.grad_fn.name() == "ToCopyBackward0"
    c = s.clone()
    assert c.is_sparse and c.grad_fn.name() == "CloneBackward0"
    ag.sparse.sum(d).backward_sync()
    assert s.grad.is_sparse and s.grad.dtype == ag.float32
    t = s.detach()
    assert t.is_sparse and not t.requires_grad


def test_transpose_is_sparse_and_differentiable() -> None:
    s = leaf()
    t = s.t()
    assert t.is_sparse and t.grad_fn.name() == "TBackward0"
    np.testing.assert_array_equal(t.to_dense().detach().numpy(), DENSE.T)
    np.testing.assert_array_equal(s.transpose(0, 1).to_dense().detach().numpy(), DENSE.T)
    (t.to_dense() * ag.tensor(W)).sum().backward_sync()
    assert s.grad.is_sparse
    np.testing.assert_allclose(s.grad.to_dense().numpy(), (W.T * (DENSE != 0)))


def test_scaling_and_adding_sparse_tensors_stays_sparse() -> None:
    s = leaf()
    for y, want in ((s * 2, 2 * DENSE), (2.0 * s, 2 * DENSE), (s / 4, DENSE / 4), (-s, -DENSE), (s + s, 2 * DENSE),
                    (s - s * 0.5, DENSE / 2)):
        assert y.is_sparse
        np.testing.assert_allclose(y.to_dense().detach().numpy(), want)
    np.testing.assert_allclose((ag.ones(3, 3, dtype=ag.float64) - s).detach().numpy(), 1 - DENSE)
    ag.sparse.sum(s * 3 + (-s) / 2).backward_sync()
    assert s.grad.is_sparse
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 2.5 * (DENSE != 0))


# ----- products ---------------------------------------------------------------------------------------


def test_products_equal_the_dense_ones() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    d = ag.tensor(D)
    want = DENSE @ D
    for got in (ag.sparse.mm(s, d), ag.mm(s, d), ag.spmm(s, d), s @ d, ag.matmul(s, d), s.mm(d), s.matmul(d)):
        assert not got.is_sparse
        np.testing.assert_allclose(got.numpy(), want)
    np.testing.assert_allclose((s @ ag.tensor(D[:, 0])).numpy(), DENSE @ D[:, 0])
    np.testing.assert_allclose(ag.mv(s, ag.tensor(D[:, 0])).numpy(), DENSE @ D[:, 0])
    np.testing.assert_allclose((ag.tensor(D.T) @ s).numpy(), D.T @ DENSE)
    np.testing.assert_allclose(ag.sparse.addmm(ag.ones(3, 2, dtype=ag.float64), s, d, beta=0.5, alpha=2).numpy(),
                               0.5 + 2 * want)
    np.testing.assert_allclose(ag.sparse.mm(ag.tensor(DENSE), d).numpy(), want)  # two dense: mm


def _torch_dense(name: str, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape)
    np.add.at(out, tuple(TORCH[name + "_indices"]), TORCH[name + "_values"])
    return out


def test_sparse_times_sparse_is_sparse_with_torchs_gradients() -> None:
    a = leaf()
    b = ag.sparse_coo_tensor([[0, 2, 1], [0, 1, 1]], [4.0, 5.0, 6.0], (3, 2), dtype=ag.float64, requires_grad=True)
    c = ag.sparse.mm(a, b)
    assert c.is_sparse and c.is_coalesced() and c.grad_fn.name() == "SparseSparseMatmulBackward0"
    np.testing.assert_allclose(c.to_dense().detach().numpy(), TORCH["spsp_forward"])
    (c.to_dense() * ag.tensor(np.arange(6.0).reshape(3, 2))).sum().backward_sync()
    assert a.grad.is_sparse and b.grad.is_sparse
    # torch stores zeros off the operands' entries; the gradients are equal as tensors
    np.testing.assert_allclose(a.grad.to_dense().numpy(), _torch_dense("spsp_a", (3, 3)))
    np.testing.assert_allclose(b.grad.to_dense().numpy(), _torch_dense("spsp_b", (3, 2)))
    check_grads(lambda x, y: ag.sparse.mm(x, y).to_dense().sin(), [leaf(), b.detach().requires_grad_()], second=False)


def test_product_errors() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    with pytest.raises(RuntimeError, match=r"^addmm: Argument #3 \(dense\): Expected dim 0 size 3, got 4$"):
        ag.sparse.mm(s, ag.ones(4, 2, dtype=ag.float64))
    with pytest.raises(RuntimeError, match=r"^expected scalar type Double but found Float$"):
        ag.sparse.mm(s, ag.ones(3, 2))
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        ag.mm(s, ag.ones(4, 2, dtype=ag.float64))
    with pytest.raises(NotImplementedError, match="matmul of two sparse tensors is not supported for sparse COO"):
        s @ s
    with pytest.raises(RuntimeError, match=r"^mat1 and mat2 shapes cannot be multiplied \(3x3 and 2x3\)$"):
        ag.sparse.mm(s, ag.sparse_coo_tensor([[0], [0]], [1.0], (2, 3)))


# ----- gradients and their layouts, against torch ----------------------------------------------------------


def test_sparse_mm_gives_a_sparse_gradient_like_torch() -> None:
    s, d = leaf(), ag.tensor(D, requires_grad=True)
    out = ag.sparse.mm(s, d)
    assert out.grad_fn.name() == "SparseAddmmBackward0"
    (out * ag.tensor(np.arange(6.0).reshape(3, 2))).sum().backward_sync()
    assert_sparse_grad(s.grad, "sparse_mm_s")
    np.testing.assert_allclose(d.grad.numpy(), TORCH["sparse_mm_d"], rtol=1e-12)


@pytest.mark.parametrize("op", ["mm", "spmm", "matmul", "@"])
def test_mm_gives_a_dense_gradient_like_torch(op: str) -> None:
    s, d = leaf(), ag.tensor(D, requires_grad=True)
    out = {"mm": ag.mm, "spmm": ag.spmm, "matmul": ag.matmul, "@": lambda a, b: a @ b}[op](s, d)
    assert out.grad_fn.name() == "MmBackward0"
    (out * ag.tensor(np.arange(6.0).reshape(3, 2))).sum().backward_sync()
    assert not s.grad.is_sparse
    np.testing.assert_allclose(s.grad.numpy(), TORCH["mm_s"], rtol=1e-12)
    np.testing.assert_allclose(d.grad.numpy(), TORCH["mm_d"], rtol=1e-12)


def test_to_dense_gives_a_sparse_gradient_at_the_unique_indices() -> None:
    s = leaf()
    (s.to_dense() * ag.tensor(W)).sum().backward_sync()
    assert_sparse_grad(s.grad, "to_dense")
    assert s.grad._nnz() == 4  # not one per repeated index: the gradient is not counted twice
    s = leaf()  # masked_grad=False: the whole dense gradient, sparse (torch's)
    (s.to_dense(masked_grad=False) * ag.tensor(W)).sum().backward_sync()
    assert s.grad.is_sparse and s.grad._nnz() == 8  # W's nonzeros
    np.testing.assert_allclose(s.grad.to_dense().numpy(), W)


def test_values_gradient_reads_each_entry() -> None:
    v = ag.tensor(V, requires_grad=True)
    s = ag.sparse_coo_tensor(I, v, (3, 3))
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0" and not s.is_leaf
    (s.to_dense() * ag.tensor(W)).sum().backward_sync()
    np.testing.assert_allclose(v.grad.numpy(), TORCH["values_grad"])


def test_sparse_sum_like_torch() -> None:
    s = leaf()
    r = ag.sparse.sum(s, 1)
    assert r.is_sparse and r.grad_fn.name() == "SparseSumBackward0"
    np.testing.assert_allclose(r.to_dense().detach().numpy(), TORCH["sum1_forward"])
    (r.to_dense() * ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64)).sum().backward_sync()
    assert_sparse_grad(s.grad, "sum1")
    s = leaf()
    total = ag.sparse.sum(s)
    assert not total.is_sparse and total.shape == () and total.item() == V.sum()
    assert total.grad_fn.name() == "SumBackward0"
    total.backward_sync()
    assert s.grad.is_sparse and np.all(s.grad.coalesce().values().numpy() == 1.0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        ag.sparse.sum(s, 5)


def test_tensor_sum_of_a_sparse_tensor_has_a_dense_gradient() -> None:
    s = leaf()
    total = s.sum()
    assert total.item() == V.sum()
    total.backward_sync()
    assert not s.grad.is_sparse
    np.testing.assert_array_equal(s.grad.numpy(), np.ones((3, 3)))
    np.testing.assert_allclose(leaf().sum(1).detach().numpy(), DENSE.sum(1))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_like_torch(name: str, dim: int) -> None:
    s = leaf()
    y = getattr(ag.sparse, name)(s, dim)
    assert y.is_sparse
    assert y.grad_fn.name() == ("SparseSoftmaxBackward0" if name == "softmax" else "SparseLogSoftmaxBackward0")
    c = y.coalesce()
    np.testing.assert_array_equal(c.indices().numpy(), TORCH[f"{name}{dim}_forward_indices"])
    np.testing.assert_allclose(c.values().detach().numpy(), TORCH[f"{name}{dim}_forward_values"], rtol=1e-12)
    (y.to_dense() * ag.tensor(W)).sum().backward_sync()
    assert_sparse_grad(s.grad, f"{name}{dim}")


def test_gradient_checks_through_sparse_ops() -> None:
    rng = np.random.default_rng(1)
    v = ag.tensor(rng.standard_normal(5), requires_grad=True)
    d = ag.tensor(rng.standard_normal((3, 2)), requires_grad=True)

    def layer(v: ag.Tensor, d: ag.Tensor) -> ag.Tensor:
        s = ag.sparse_coo_tensor(I, v, (3, 3))
        return ag.spmm(s, d).tanh() + ag.sparse.mm(s.t(), d) * ag.sparse.sum(s)

    check_grads(layer, [v, d])
    check_grads(lambda v: ag.sparse.softmax(ag.sparse_coo_tensor(I, v, (3, 3)), 1).to_dense().sin(), [v],
                second=False)


# ----- the engine: accumulating sparse gradients ---------------------------------------------------------


def test_sparse_gradients_accumulate_sparse_and_dense_ones_make_them_dense() -> None:
    s, d = leaf(), ag.tensor(D)
    (ag.sparse.mm(s, d).sum() + ag.sparse.mm(s, d).sum()).backward_sync()  # two sparse gradients meet
    assert s.grad.is_sparse
    once = leaf()
    ag.sparse.mm(once, d).sum().backward_sync()
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 2 * once.grad.to_dense().numpy())
    ag.sparse.mm(s, d).sum().backward_sync()  # into the existing sparse .grad
    assert s.grad.is_sparse
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 3 * once.grad.to_dense().numpy())
    (ag.mm(s, d).sum() + ag.sparse.mm(s, d).sum()).backward_sync()  # dense + sparse in one pass
    assert not s.grad.is_sparse
    dense_part = np.ones((3, 2)) @ D.T
    np.testing.assert_allclose(s.grad.numpy(), 4 * once.grad.to_dense().numpy() + dense_part)
    ag.sparse.mm(s, d).sum().backward_sync()  # a sparse gradient into a dense .grad
    np.testing.assert_allclose(s.grad.numpy(), 5 * once.grad.to_dense().numpy() + dense_part)


async def test_backward_awaited_and_retained_sparse_grad() -> None:
    v = ag.tensor(V, requires_grad=True)
    s = ag.sparse_coo_tensor(I, v, (3, 3))
    s.retain_grad()
    await ag.sparse.mm(s, ag.tensor(D)).sum().backward()
    assert s.grad.is_sparse
    np.testing.assert_allclose(v.grad.numpy(), s.grad.to_dense().numpy()[tuple(I)])


def test_anomaly_mode_reads_sparse_gradients() -> None:
    s = leaf()
    with ag.detect_anomaly():
        ag.sparse.mm(s, ag.tensor(D)).sum().backward_sync()
    assert s.grad.is_sparse
    bad = ag.sparse_coo_tensor(I, V, (3, 3), requires_grad=True)
    with ag.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values"):
        ag.sparse.mm(bad, ag.tensor(np.full((3, 2), np.nan))).sum().backward_sync()


def test_create_graph_through_a_sparse_product() -> None:
    v = ag.tensor(V, requires_grad=True)
    d = ag.tensor(D, requires_grad=True)
    s = ag.sparse_coo_tensor(I, v, (3, 3))
    (gd,) = ag.grad_sync(ag.sparse.mm(s, d).pow(2).sum(), [d], create_graph=True)
    gd.sum().backward_sync()
    # the same second derivatives through the dense adjacency
    dense_v = ag.tensor(V, requires_grad=True)
    dd = ag.tensor(D, requires_grad=True)
    dense_s = ag.sparse_coo_tensor(I, dense_v, (3, 3)).to_dense()
    (gdd,) = ag.grad_sync((dense_s @ dd).pow(2).sum(), [dd], create_graph=True)
    gdd.sum().backward_sync()
    np.testing.assert_allclose(v.grad.numpy(), dense_v.grad.numpy())
    np.testing.assert_allclose(d.grad.numpy(), dd.grad.numpy())


# ----- dense ops on a sparse tensor: one clear error ----------------------------------------------------------


@pytest.mark.parametrize(
    "call, what",
    [
        (lambda s: ag.exp(s), "exp"),
        (lambda s: s * ag.ones(3, 3, dtype=ag.float64), "multiply with an operand that is not a number"),
        (lambda s: s.relu(), "maximum"),
        (lambda s: s.reshape(9), "reshape()"),
        (lambda s: s.view(9), "view()"),
        (lambda s: s[0], "indexing"),
        (lambda s: ag.cat([s, s]), "concatenate"),
        (lambda s: s.mean(), "mean"),
        (lambda s: s.tolist(), "tolist()"),
    ],
)
def test_dense_ops_on_a_sparse_tensor_raise_naming_the_op(call: Any, what: str) -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    with pytest.raises(NotImplementedError) as info:
        call(s)
    assert str(info.value) == (f"{what} is not supported for sparse COO tensors (layout=aiograd.sparse_coo); "
                               "convert with .to_dense() first")


def test_conversions_to_numpy_and_mixed_adds() -> None:
    s = ag.sparse_coo_tensor(I, V, (3, 3))
    with pytest.raises(TypeError, match=r"^can't convert Sparse layout tensor to numpy\. Use Tensor\.to_dense\(\)"):
        s.numpy()
    # torch refuses sparse + dense (only dense + sparse); aiograd adds both ways, to a dense result
    np.testing.assert_allclose((s + ag.ones(3, 3, dtype=ag.float64)).numpy(), 1 + DENSE)
    np.testing.assert_allclose((ag.ones(3, 3, dtype=ag.float64) + s).numpy(), 1 + DENSE)
    with pytest.raises(RuntimeError, match="a Tensor with 9 elements cannot be converted to Scalar"):
        s.item()


# ----- graph networks ------------------------------------------------------------------------------------------


def _gcn(adj: ag.Tensor, x: ag.Tensor, w1: ag.Tensor, w2: ag.Tensor, labels: ag.Tensor) -> ag.Tensor:
    """pygcn's two layers: ``spmm(adj, x @ W)``."""
    hid = ag.relu(ag.spmm(adj, ag.mm(x, w1)))
    return F.cross_entropy(ag.spmm(adj, ag.mm(hid, w2)), labels)


def test_gcn_matches_torch_and_the_dense_adjacency() -> None:
    t = TORCH
    n = t["gcn_x"].shape[0]
    adj = ag.sparse_coo_tensor(t["gcn_adj_indices"], t["gcn_adj_values"], (n, n))
    labels = ag.tensor(t["gcn_labels"])
    results = []
    for a in (adj, adj.to_dense()):
        x, w1, w2 = (ag.tensor(t[k], requires_grad=True) for k in ("gcn_x", "gcn_w1", "gcn_w2"))
        loss = _gcn(a, x, w1, w2, labels)
        loss.backward_sync()
        results.append((loss.item(), x.grad.numpy(), w1.grad.numpy(), w2.grad.numpy()))
    sparse, dense = results
    np.testing.assert_allclose(sparse[0], t["gcn_loss"], rtol=1e-12)
    for got, other, want in zip(sparse[1:], dense[1:], (t["gcn_gx"], t["gcn_gw1"], t["gcn_gw2"])):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got, other, rtol=1e-10, atol=1e-12)


def test_gcn_gradcheck() -> None:
    t = TORCH
    n = t["gcn_x"].shape[0]
    adj = ag.sparse_coo_tensor(t["gcn_adj_indices"], t["gcn_adj_values"], (n, n))
    labels = ag.tensor(t["gcn_labels"])
    inputs = [ag.tensor(t[k][:, :], requires_grad=True) for k in ("gcn_x", "gcn_w1", "gcn_w2")]
    check_grads(lambda x, w1, w2: _gcn(adj, x, w1, w2, labels), inputs, second=False)


class _SpecialSpmm(ag.Function):
    """pyGAT's sparse attention product (SpecialSpmmFunction): values become a sparse matrix, times ``b``."""

    @staticmethod
    def forward(ctx: Any, indices: ag.Tensor, values: ag.Tensor, shape: tuple[int, int], b: ag.Tensor) -> ag.Tensor:
        a = ag.sparse_coo_tensor(indices, values, shape)
        ctx.save_for_backward(a, b)
        ctx.N = shape[0]
        return ag.matmul(a, b)

    @staticmethod
    def backward(ctx: Any, grad_output: ag.Tensor) -> tuple[Any, ...]:
        a, b = ctx.saved_tensors
        grad_values = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_a_dense = grad_output.matmul(b.t())
            edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
            grad_values = grad_a_dense.view(-1)[edge_idx]
        if ctx.needs_input_grad[3]:
            grad_b = a.t().matmul(grad_output)
        return None, grad_values, None, grad_b


def test_gat_style_custom_function_matches_sparse_mm() -> None:
    rng = np.random.default_rng(2)
    idx = ag.tensor(I)
    e = ag.tensor(rng.standard_normal(5), requires_grad=True)
    h = ag.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    att = ag.exp(-ag.nn.functional.leaky_relu(e))
    out = _SpecialSpmm.apply(idx, att, (3, 3), h)
    gw = ag.tensor(rng.standard_normal((3, 4)))
    (out * gw).sum().backward_sync()
    e2 = ag.tensor(e.detach().numpy(), requires_grad=True)
    h2 = ag.tensor(h.detach().numpy(), requires_grad=True)
    ref = ag.sparse.mm(ag.sparse_coo_tensor(I, ag.exp(-ag.nn.functional.leaky_relu(e2)), (3, 3)), h2)
    (ref * gw).sum().backward_sync()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(e.grad.numpy(), e2.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.grad.numpy(), h2.grad.numpy(), rtol=1e-12)


def test_gcn_example_trains(capsys: Any) -> None:
    """examples/gcn.py (pygcn's model and loop, run on aiograd): its training loss falls."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "examples" / "gcn.py"
    spec = importlib.util.spec_from_file_location("gcn_example", path)
    assert spec is not None and spec.loader is not None
    gcn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gcn)
    ag.manual_seed(0)
    data = gcn.random_graph(120, 16, 3)
    model = gcn.make_model(ag, 16, 8, 3, dropout=0.5)
    steps = gcn.train_steps(ag, model, data, 15, lr=0.05, log=True)
    losses = [loss for loss, _ in steps]
    assert losses[-1] < losses[0] - 0.2
    assert "acc_test" in capsys.readouterr().out


def test_hooks_and_custom_functions_receive_sparse_gradients() -> None:
    seen: list[ag.Tensor] = []
    s = leaf()
    s.register_hook(lambda g: seen.append(g))
    ag.sparse.mm(s, ag.tensor(D)).sum().backward_sync()
    assert seen[0].is_sparse and s.grad.is_sparse

    class Twice(ag.Function):
        @staticmethod
        def forward(ctx: Any, x: ag.Tensor) -> ag.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
            assert g.is_sparse
            return g * 2

    s = leaf()
    ag.sparse.sum(Twice.apply(s)).backward_sync()
    assert s.grad.is_sparse
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 2 * (DENSE != 0))
    (g,) = ag.grad_sync(ag.sparse.sum(leaf_s := leaf()), [leaf_s])
    assert g.is_sparse


def test_a_sparse_gradient_of_another_dtype_is_cast_and_optimizers_refuse_sparse_parameters() -> None:
    class Float32Grad(ag.Function):
        @staticmethod
        def forward(ctx: Any, s: ag.Tensor) -> ag.Tensor:
            ctx.save_for_backward(s)
            return ag.sparse.sum(s)

        @staticmethod
        def backward(ctx: Any, g: ag.Tensor) -> ag.Tensor:
            (s,) = ctx.saved_tensors
            return ag.sparse_coo_tensor(s._indices(), ag.ones(s._nnz(), dtype=ag.float32), s.shape)

    s = leaf()
    Float32Grad.apply(s).backward_sync()
    assert s.grad.is_sparse and s.grad.dtype == ag.float64
    p = ag.nn.Parameter(ag.sparse_coo_tensor(I, V, (3, 3)))
    ag.sparse.sum(p).backward_sync()
    with pytest.raises(NotImplementedError, match=r"^step\(\) is not supported for sparse COO tensors"):
        ag.optim.SGD([p], lr=0.1).step()


def test_gat_attention_with_sparse_softmax_equals_dense_masked_attention() -> None:
    """A graph attention layer two ways: attention scores on the edges, normalized by
    ``ag.sparse.softmax`` and applied by ``ag.sparse.mm``; and the dense form with the non-edges
    masked to -inf. Same output, same gradients for every parameter."""
    rng = np.random.default_rng(3)
    n, f, h = 6, 4, 3
    adj = (rng.random((n, n)) < 0.4) | np.eye(n, dtype=bool)
    edges = np.stack(np.nonzero(adj))
    x = ag.tensor(rng.standard_normal((n, f)))
    params = [rng.standard_normal((f, h)), rng.standard_normal(h), rng.standard_normal(h)]
    g_out = ag.tensor(rng.standard_normal((n, h)))
    grads = []
    for sparse in (True, False):
        w, a_src, a_dst = (ag.tensor(p, requires_grad=True) for p in params)
        wh = x @ w
        scores = F.leaky_relu((wh @ a_src)[:, None] + (wh @ a_dst)[None, :], 0.2)
        if sparse:
            att = ag.sparse.softmax(ag.sparse_coo_tensor(edges, scores[tuple(edges)], (n, n)), 1)
            out = ag.sparse.mm(att, wh)
        else:
            masked = ag.where(ag.tensor(adj), scores, ag.full((n, n), float("-inf"), dtype=ag.float64))
            out = ag.softmax(masked, 1) @ wh
        (out * g_out).sum().backward_sync()
        grads.append([out.detach().numpy(), w.grad.numpy(), a_src.grad.numpy(), a_dst.grad.numpy()])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_numpy_conversion_of_a_sparse_tensor_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^can't convert Sparse layout tensor to numpy"):
        np.asarray(ag.sparse_coo_tensor(I, V, (3, 3)))
