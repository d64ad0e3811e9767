"""A graph convolutional network (Kipf & Welling) on a random graph, written as pygcn writes it:
the normalized adjacency is a sparse COO tensor and each layer is ``torch.spmm(adj, x @ W)``.

The model and training code below take the ``torch`` module as an argument, so the same lines run
on aiograd (``import aiograd as torch``) and, for comparison, on PyTorch:

    python examples/gcn.py              # train with aiograd: loss and accuracy per epoch
    python examples/gcn.py --compare    # the same program on aiograd and torch (needs torch):
                                        # losses and the largest gradient difference per step
"""

from __future__ import annotations

import argparse
import math
import time
from types import ModuleType
from typing import Any

import numpy as np
import scipy.sparse as sp


def random_graph(n: int, features: int, classes: int, seed: int = 0) -> dict[str, Any]:
    """A planted-partition graph: nodes of one class link more often, features hint at the class."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    same = labels[:, None] == labels[None, :]
    p = np.where(same, 8.0 / n, 1.0 / n)
    upper = np.triu(rng.random((n, n)) < p, 1)
    adj = sp.coo_matrix(upper | upper.T, dtype=np.float32)
    x = (rng.random((n, features)) < 0.05).astype(np.float32)
    x[np.arange(n), labels * (features // classes) + rng.integers(0, features // classes, n)] = 1.0
    return {"adj": adj, "features": x, "labels": labels}


def normalize(mx: Any) -> Any:
    """Row-normalize a sparse matrix (pygcn's ``normalize``)."""
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1.0).flatten()
    r_inv[np.isinf(r_inv)] = 0.0
    return sp.diags(r_inv).dot(mx)


def sparse_mx_to_torch_sparse_tensor(torch: ModuleType, sparse_mx: Any) -> Any:
    """A scipy sparse matrix as a torch sparse COO tensor (pygcn's helper, with sparse_coo_tensor)."""
    sparse_mx = sparse_mx.tocoo().astype(np.float32)
    indices = torch.from_numpy(np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx.data)
    return torch.sparse_coo_tensor(indices, values, tuple(sparse_mx.shape))


def make_model(torch: ModuleType, nfeat: int, nhid: int, nclass: int, dropout: float) -> Any:
    """pygcn's GraphConvolution and GCN, built from the given module's nn."""
    nn = torch.nn
    F = torch.nn.functional

    class GraphConvolution(nn.Module):
        def __init__(self, in_features: int, out_features: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.empty(in_features, out_features))
            self.bias = nn.Parameter(torch.empty(out_features))
            stdv = 1.0 / math.sqrt(out_features)
            self.weight.data.uniform_(-stdv, stdv)
            self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input: Any, adj: Any) -> Any:
            support = torch.mm(input, self.weight)
            output = torch.spmm(adj, support)
            return output + self.bias

    class GCN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gc1 = GraphConvolution(nfeat, nhid)
            self.gc2 = GraphConvolution(nhid, nclass)
            self.dropout = dropout

        def forward(self, x: Any, adj: Any) -> Any:
            x = F.relu(self.gc1(x, adj))
            x = F.dropout(x, self.dropout, training=self.training)
            x = self.gc2(x, adj)
            return F.log_softmax(x, dim=1)

    return GCN()


def prepare(torch: ModuleType, data: dict[str, Any]) -> tuple[Any, Any, Any, Any, Any]:
    n = data["features"].shape[0]
    adj = normalize(data["adj"] + sp.eye(n))
    adj = sparse_mx_to_torch_sparse_tensor(torch, adj)
    features = torch.from_numpy(data["features"])
    labels = torch.from_numpy(data["labels"].astype(np.int64))
    idx_train = torch.from_numpy(np.arange(0, n // 2))
    idx_test = torch.from_numpy(np.arange(n // 2, n))
    return adj, features, labels, idx_train, idx_test


def train_steps(torch: ModuleType, model: Any, data: dict[str, Any], steps: int, lr: float = 0.01,
                log: bool = False) -> list[tuple[float, dict[str, np.ndarray]]]:
    """``steps`` epochs of pygcn's training loop; per epoch, the loss and the parameters' gradients."""
    F = torch.nn.functional
    adj, features, labels, idx_train, idx_test = prepare(torch, data)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)
    out = []
    for epoch in range(steps):
        t = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        if hasattr(loss_train, "backward_sync"):
            loss_train.backward_sync()
        else:
            loss_train.backward()
        grads = {name: p.grad.detach().numpy().copy() for name, p in model.named_parameters()}
        optimizer.step()
        out.append((float(loss_train.item()), grads))
        if log:
            model.eval()
            with torch.no_grad():
                pred = model(features, adj).argmax(1)
            acc = float((pred[idx_test] == labels[idx_test]).float().mean().item())
            print(f"epoch {epoch + 1:3d}  loss_train {loss_train.item():.4f}  acc_test {acc:.3f}  "
                  f"{(time.perf_counter() - t) * 1e3:.1f} ms")
    return out


def compare(steps: int, n: int) -> float:
    """Run the program on aiograd and on torch from the same weights; print losses and gradient gaps."""
    import torch as real_torch

    import aiograd

    data = random_graph(n, 64, 4)
    ours = make_model(aiograd, 64, 16, 4, dropout=0.0)
    theirs = make_model(real_torch, 64, 16, 4, dropout=0.0)
    with real_torch.no_grad():
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            q.copy_(real_torch.from_numpy(p.detach().numpy().copy()))
    a = train_steps(aiograd, ours, data, steps)
    b = train_steps(real_torch, theirs, data, steps)
    worst = 0.0
    for i, ((la, ga), (lb, gb)) in enumerate(zip(a, b)):
        gap = max(float(np.abs(ga[k] - gb[k]).max()) for k in ga)
        worst = max(worst, gap, abs(la - lb))
        print(f"step {i + 1}: loss aiograd {la:.6f}  torch {lb:.6f}  |diff| {abs(la - lb):.2e}  "
              f"max |grad diff| {gap:.2e}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true", help="run on aiograd and torch, compare")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args()
    if args.compare:
        worst = compare(min(args.epochs, 5), args.nodes)
        print(f"largest difference: {worst:.2e}")
        return
    import aiograd as torch

    torch.manual_seed(0)
    data = random_graph(args.nodes, 64, 4)
    model = make_model(torch, 64, 16, 4, dropout=0.5)
    train_steps(torch, model, data, args.epochs, log=True)


if __name__ == "__main__":
    main()
