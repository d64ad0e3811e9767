"""Write tests/data/sparse_torch.npz: what torch 2.13 computes for the sparse cases of
tests/test_sparse.py (values, gradients and their layouts), so the tests compare with torch
without importing it. Run from the repository root with torch installed:

    python tests/data/make_sparse.py
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

warnings.simplefilter("ignore")  # torch's note that sparse invariant checks are off

I = np.array([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]])  # (0, 2) twice: uncoalesced
V = np.array([3.0, 4.0, 5.0, 6.0, 1.0])
D = np.arange(6.0).reshape(3, 2) / 4 - 0.5
W = np.arange(9.0).reshape(3, 3) / 3 - 1.0


def leaf() -> torch.Tensor:
    return torch.sparse_coo_tensor(torch.from_numpy(I), torch.from_numpy(V), (3, 3), requires_grad=True)


def sparse_parts(t: torch.Tensor, name: str, out: dict[str, np.ndarray]) -> None:
    t = t.coalesce()
    out[name + "_indices"] = t.indices().numpy()
    out[name + "_values"] = t.values().detach().numpy()


def main() -> None:
    out: dict[str, np.ndarray] = {}
    # sparse.mm: sparse gradient for the sparse operand, dense for the dense one
    s, d = leaf(), torch.from_numpy(D).requires_grad_()
    torch.sparse.mm(s, d).mul(torch.from_numpy(np.arange(6.0).reshape(3, 2))).sum().backward()
    assert s.grad.is_sparse
    sparse_parts(s.grad, "sparse_mm_s", out)
    out["sparse_mm_d"] = d.grad.numpy()
    # mm / spmm / @: a dense gradient for the sparse operand
    s, d = leaf(), torch.from_numpy(D).requires_grad_()
    torch.mm(s, d).mul(torch.from_numpy(np.arange(6.0).reshape(3, 2))).sum().backward()
    assert not s.grad.is_sparse
    out["mm_s"] = s.grad.numpy()
    out["mm_d"] = d.grad.numpy()
    # to_dense of an uncoalesced leaf: a sparse gradient at the unique indices
    s = leaf()
    (s.to_dense() * torch.from_numpy(W)).sum().backward()
    sparse_parts(s.grad, "to_dense", out)
    # the values given to sparse_coo_tensor: the gradient at each entry (the repeated one twice)
    v = torch.from_numpy(V).requires_grad_()
    (torch.sparse_coo_tensor(torch.from_numpy(I), v, (3, 3)).to_dense() * torch.from_numpy(W)).sum().backward()
    out["values_grad"] = v.grad.numpy()
    # sparse.sum over a dim (a sparse result) and over all (a dense one)
    s = leaf()
    r = torch.sparse.sum(s, 1)
    out["sum1_forward"] = r.to_dense().detach().numpy()
    (r.to_dense() * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    sparse_parts(s.grad, "sum1", out)
    # softmax and log_softmax over the specified entries
    for name, fn in (("softmax", torch.sparse.softmax), ("log_softmax", torch.sparse.log_softmax)):
        for dim in (0, 1):
            s = leaf()
            y = fn(s, dim)
            sparse_parts(y, f"{name}{dim}_forward", out)
            (y.to_dense() * torch.from_numpy(W)).sum().backward()
            sparse_parts(s.grad, f"{name}{dim}", out)
    # sparse.mm of two sparse matrices: a sparse product; each gradient at its operand's entries
    a = torch.sparse_coo_tensor(torch.from_numpy(I), torch.from_numpy(V), (3, 3), requires_grad=True)
    b = torch.sparse_coo_tensor(torch.tensor([[0, 2, 1], [0, 1, 1]]), torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64),
                                (3, 2), requires_grad=True)
    c = torch.sparse.mm(a, b)
    out["spsp_forward"] = c.to_dense().detach().numpy()
    (c.to_dense() * torch.from_numpy(np.arange(6.0).reshape(3, 2))).sum().backward()
    sparse_parts(a.grad, "spsp_a", out)
    sparse_parts(b.grad, "spsp_b", out)
    # a two-layer GCN step (pygcn's layers) from fixed weights
    rng = np.random.default_rng(0)
    n, f, h, c = 12, 5, 4, 3
    a = (rng.random((n, n)) < 0.3).astype(np.float64) + np.eye(n)
    a = a / a.sum(1, keepdims=True)
    ai = np.stack(np.nonzero(a))
    out.update(gcn_adj_indices=ai, gcn_adj_values=a[tuple(ai)], gcn_x=rng.standard_normal((n, f)),
               gcn_w1=rng.standard_normal((f, h)), gcn_w2=rng.standard_normal((h, c)),
               gcn_labels=rng.integers(0, c, n))
    adj = torch.sparse_coo_tensor(torch.from_numpy(ai), torch.from_numpy(out["gcn_adj_values"]), (n, n))
    w1 = torch.from_numpy(out["gcn_w1"]).requires_grad_()
    w2 = torch.from_numpy(out["gcn_w2"]).requires_grad_()
    x = torch.from_numpy(out["gcn_x"]).requires_grad_()
    hid = torch.relu(torch.spmm(adj, torch.mm(x, w1)))
    logits = torch.spmm(adj, torch.mm(hid, w2))
    loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(out["gcn_labels"]))
    loss.backward()
    out.update(gcn_loss=loss.detach().numpy(), gcn_gw1=w1.grad.numpy(), gcn_gw2=w2.grad.numpy(), gcn_gx=x.grad.numpy())
    np.savez(Path(__file__).with_name("sparse_torch.npz"), **out)
    print(f"wrote {len(out)} arrays")


if __name__ == "__main__":
    main()
