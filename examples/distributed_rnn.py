"""pytorch/examples' RPC RNN, ported as torch writes it: embedding and decoder on a parameter server.

torch's ``distributed/rpc/rnn`` splits a word-language-model RNN between a
parameter server and a trainer: the ``EmbeddingTable`` and the ``Decoder``
live on the server (``dist.remote`` returns RRefs to them), the LSTM
(``aiograd.nn.LSTM``) stays with the trainer. ``RNNModel.forward`` calls the
server with torch's ``_remote_method`` helper (``dist.rpc_sync`` of a
function that runs the method on ``rref.local_value()``), so the graph of
one step crosses to the server and back twice; ``dist.backward`` runs it,
and ``DistributedOptimizer`` steps the server's parameters there and the
LSTM's here. The hidden state is carried from batch to batch and cut with
``detach_()`` (truncated backpropagation through time), as in torch.

As in torch, the trainer is synchronous: the driver runs it in a thread
(``await asyncio.to_thread(train, ...)``), where ``rpc_sync``, ``with
dist.context()``, ``dist.backward`` and the optimizer's ``step`` block
(docs: "Synchronous code, as torch writes it"). torch's sizes are kept
(batch 5, 7 tokens, embedding 2, hidden 3, 6 indices, 4 layers), in float64.
torch's example uses dropout 0.5; ``main`` takes ``dropout`` and defaults
to 0 so that the run can be compared with one process (dropout's random
masks come from each process's own generator): its gradients and parameters
equal those of the same model trained in one process.

    python examples/distributed_rnn.py                  # a local cluster: the server is its worker
    python examples/distributed_rnn.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from typing import Any, Callable

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn as nn

F64 = ag.float64
BATCH, NTOKEN, NINP, NHID, NINDICES, NLAYERS = 5, 7, 2, 3, 6, 4


# ----- torch's rnn.py ----------------------------------------------------------------------------


def _call_method(method: Callable[..., Any], rref: dist.RRef, *args: Any, **kwargs: Any) -> Any:
    """Run ``method`` on the value of ``rref`` (on its owner)."""
    return method(rref.local_value(), *args, **kwargs)


def _remote_method(method: Callable[..., Any], rref: dist.RRef, *args: Any, **kwargs: Any) -> Any:
    """Run ``method`` on the owner of ``rref`` and fetch the result back (blocking, as torch's)."""
    return dist.rpc_sync(rref.owner(), _call_method, args=(method, rref, *args), kwargs=kwargs)


def _parameter_rrefs(module: nn.Module) -> list[dist.RRef]:
    """An RRef per parameter of a module of this process."""
    return [dist.RRef(p) for p in module.parameters()]


def _init_lock() -> Any:
    """One lock per process for seeding and drawing initial weights.

    The server builds the embedding table and the decoder at once, each on a
    thread of its own (two ``dist.remote`` calls in flight), and aiograd's
    default generator is shared by the threads: seeded and drawn under this
    lock, each module gets the same weights as in one process. (torch's
    example does not seed.)
    """
    return dist.worker_local("examples.distributed_rnn.init_lock", threading.Lock)


class EmbeddingTable(nn.Module):
    """The encoding layer, kept on the parameter server."""

    def __init__(self, ntoken: int, ninp: int, dropout: float, seed: int) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        with _init_lock():
            ag.manual_seed(seed)
            self.encoder = nn.Embedding(ntoken, ninp, dtype=F64)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)

    def forward(self, input: ag.Tensor) -> ag.Tensor:
        return self.drop(self.encoder(input))


class Decoder(nn.Module):
    """The decoding layer, kept on the parameter server."""

    def __init__(self, ntoken: int, nhid: int, dropout: float, seed: int) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        with _init_lock():
            ag.manual_seed(seed + 1)
            self.decoder = nn.Linear(nhid, ntoken, dtype=F64)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, output: ag.Tensor) -> ag.Tensor:
        return self.decoder(self.drop(output))


def make_lstm(ninp: int, nhid: int, nlayers: int, dropout: float, seed: int) -> nn.LSTM:
    with _init_lock():
        ag.manual_seed(seed + 2)
        return nn.LSTM(ninp, nhid, nlayers, dropout=dropout, dtype=F64)


class RNNModel(nn.Module):
    """The embedding table and decoder on the server ``ps`` (RRefs), the LSTM here."""

    def __init__(self, ps: str, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.5,
                 seed: int = 0) -> None:
        super().__init__()
        self.emb_table_rref = dist.remote(ps, EmbeddingTable, args=(ntoken, ninp, dropout, seed))
        self.rnn = make_lstm(ninp, nhid, nlayers, dropout, seed)
        self.decoder_rref = dist.remote(ps, Decoder, args=(ntoken, nhid, dropout, seed))

    def forward(self, input: ag.Tensor, hidden: tuple[ag.Tensor, ag.Tensor]) -> tuple[ag.Tensor, Any]:
        emb = _remote_method(EmbeddingTable.forward, self.emb_table_rref, input)
        output, hidden = self.rnn(emb, hidden)
        decoded = _remote_method(Decoder.forward, self.decoder_rref, output)
        return decoded, hidden

    def parameter_rrefs(self) -> list[dist.RRef]:
        remote_params = []
        remote_params.extend(_remote_method(_parameter_rrefs, self.emb_table_rref))
        remote_params.extend(_parameter_rrefs(self.rnn))
        remote_params.extend(_remote_method(_parameter_rrefs, self.decoder_rref))
        return remote_params


# ----- torch's main.py ----------------------------------------------------------------------------


def make_data(epochs: int, batches: int, seed: int) -> tuple[Any, list[tuple[ag.Tensor, ag.Tensor]]]:
    """The initial hidden state and the batches (torch draws them at random too)."""
    rng = np.random.default_rng(seed)
    hidden = (ag.tensor(rng.standard_normal((NLAYERS, NINDICES, NHID))),
              ag.tensor(rng.standard_normal((NLAYERS, NINDICES, NHID))))
    data = [(ag.tensor(rng.integers(0, NTOKEN, (BATCH, NINDICES))), ag.tensor(rng.integers(0, NINDICES, (BATCH, NTOKEN))))
            for _ in range(epochs * batches)]
    return hidden, data


def train(ps: str, hidden: Any, data: list[tuple[ag.Tensor, ag.Tensor]], dropout: float, seed: int,
          lr: float) -> dict[str, Any]:
    """torch's _run_trainer: synchronous, on a driver thread."""
    model = RNNModel(ps, NTOKEN, NINP, NHID, NLAYERS, dropout, seed)
    opt = dist.DistributedOptimizer(ag.optim.SGD, model.parameter_rrefs(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    hidden = tuple(h.clone() for h in hidden)
    losses, first_grads = [], None
    for data_batch, target in data:
        with dist.context() as context_id:
            hidden[0].detach_()
            hidden[1].detach_()
            output, hidden = model(data_batch, hidden)
            loss = criterion(output, target)
            dist.backward(context_id, [loss])
            if first_grads is None:  # the LSTM's gradients of the first step (they live here)
                grads = dist.get_gradients(context_id)
                first_grads = [grads[p].numpy() for p in model.rnn.parameters()]
            opt.step(context_id)
        losses.append(float(loss.item()))
    emb, dec = model.emb_table_rref.to_here(), model.decoder_rref.to_here()
    return {"losses": losses, "first_grads": first_grads,
            "params": [p.detach().numpy() for m in (emb, model.rnn, dec) for p in m.parameters()]}


async def train_locally(hidden: Any, data: list[tuple[ag.Tensor, ag.Tensor]], seed: int,
                        lr: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The same model and steps in one process: its LSTM's first gradients and its final parameters."""
    emb, rnn, dec = EmbeddingTable(NTOKEN, NINP, 0.0, seed), make_lstm(NINP, NHID, NLAYERS, 0.0, seed), \
        Decoder(NTOKEN, NHID, 0.0, seed)
    modules = (emb, rnn, dec)
    opt = ag.optim.SGD([p for m in modules for p in m.parameters()], lr=lr)
    criterion = nn.CrossEntropyLoss()
    hidden = tuple(h.clone() for h in hidden)
    first_grads: list[np.ndarray] = []
    for data_batch, target in data:
        opt.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
        output, hidden = rnn(emb(data_batch), hidden)
        await criterion(dec(output), target).backward()
        if not first_grads:
            first_grads = [p.grad.numpy().copy() for p in rnn.parameters()]
        opt.step()
    return first_grads, [p.detach().numpy() for m in modules for p in m.parameters()]


async def main(address: str | None = None, epochs: int = 2, batches: int = 5, dropout: float = 0.0, seed: int = 0,
               lr: float = 0.05) -> dict[str, Any]:
    await dist.init(n_workers=1, address=address)
    try:
        hidden, data = make_data(epochs, batches, seed)
        ps = dist.workers()[0]
        result = await asyncio.to_thread(train, ps, hidden, data, dropout, seed, lr)
        if dropout == 0.0:
            first_grads, params = await train_locally(hidden, data, seed, lr)
            result["max_grad_diff"] = max(float(np.abs(a - b).max()) for a, b in zip(result["first_grads"], first_grads))
            result["max_param_diff"] = max(float(np.abs(a - b).max()) for a, b in zip(result.pop("params"), params))
        return result
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    parser.add_argument("--epochs", type=int, default=10, help="torch's example trains 10 epochs of 5 batches")
    args = parser.parse_args()
    result = asyncio.run(main(args.address, epochs=args.epochs))
    for epoch in range(args.epochs):
        print(f"Training epoch {epoch}: mean loss {np.mean(result['losses'][epoch * 5:(epoch + 1) * 5]):.4f}")
    print(f"largest gradient difference from one process (first step): {result['max_grad_diff']:.2e}")
    print(f"largest parameter difference from one process: {result['max_param_diff']:.2e}")
