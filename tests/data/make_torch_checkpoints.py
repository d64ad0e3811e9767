"""Write the checkpoints of tests/test_serialization.py with torch (run by hand; needs the bench extra).

    python tests/data/make_torch_checkpoints.py

Each ``tests/data/torch_checkpoints/*.pt`` is what ``torch.save`` (torch 2.13)
writes; ``expected.npz`` holds the values the tests compare with, so the test
suite reads torch's files without torch installed. The model is small on
purpose (the whole folder stays well under 200 KB) but has every layer whose
parameter and buffer names a loader must match: Linear, Conv2d, BatchNorm2d
(running stats and num_batches_tracked), Embedding, LayerNorm.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "torch_checkpoints"


class Net(torch.nn.Module):
    """Tokens and a 1-channel image in, 4 scores out; tests/test_serialization.py mirrors it in aiograd."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)
        self.ln = torch.nn.LayerNorm(6)
        self.conv = torch.nn.Conv2d(1, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(6 + 3 * 4 * 4, 4)

    def forward(self, tokens: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        e = self.ln(self.emb(tokens)).mean(1)
        c = F.relu(self.bn(self.conv(image))).flatten(1)
        return self.fc(torch.cat([e, c], 1))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    torch.manual_seed(0)
    expected: dict[str, np.ndarray] = {}

    # a "pretrained" model: a few Adam steps in train mode move the BatchNorm running stats
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(3):
        tokens = torch.randint(0, 10, (5, 7))
        image = torch.randn(5, 1, 4, 4)
        loss = net(tokens, image).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    tokens = torch.randint(0, 10, (2, 7))
    image = torch.randn(2, 1, 4, 4)
    with torch.no_grad():
        out = net(tokens, image)
    torch.save(net.state_dict(), OUT / "model_state.pt")
    torch.save(opt.state_dict(), OUT / "adam_state.pt")
    torch.save(list(net.fc.parameters()), OUT / "parameters.pt")
    expected["model.tokens"] = tokens.numpy()
    expected["model.image"] = image.numpy()
    expected["model.out"] = out.numpy()
    for k, v in net.state_dict().items():
        expected[f"model_state.{k}"] = v.numpy()
    for i, s in opt.state_dict()["state"].items():
        for k, v in s.items():
            expected[f"adam_state.{i}.{k}"] = v.numpy()
    for i, p in enumerate(net.fc.parameters()):
        expected[f"parameters.{i}"] = p.detach().numpy()

    # nested containers of everything a weights-only file may hold
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    nested = {
        "list": [a, (torch.tensor([1, 2]), "text", 3, 2.5, None, True), []],
        "ordered": collections.OrderedDict([("z", torch.ones(2)), ("a", 7)]),
        "tuple": (1, (2, (3, torch.zeros(1)))),
        "big": 2**70,
        "neg": -123456789,
        "bytes": b"\x00\xff",
        "set": {1, 2},
        "complex": 1 + 2j,
        "dtype": torch.float64,
        "size": torch.Size([2, 3]),
        "device": torch.device("cpu"),
        "same": [a, a],  # one tensor twice: one object after loading
        "grad": torch.ones(2, requires_grad=True),
    }
    torch.save(nested, OUT / "nested.pt")
    expected["nested.a"] = a.numpy()

    # tensors sharing one storage: views with offsets and strides, written as one record
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    shared = {
        "base": base,
        "transpose": base.t(),
        "slice": base[1:3, 2:5],  # storage offset 8, non-contiguous
        "column": base[:, 4],  # offset 4, stride 6
        "expanded": base[0, :1].expand(3, 2),  # stride 0
        "flat_tail": base.view(-1)[20:],
    }
    torch.save(shared, OUT / "shared.pt")
    for k, v in shared.items():
        expected[f"shared.{k}"] = v.numpy()

    # one tensor of each dtype aiograd has, a 0-d tensor and an empty one
    dtypes = {}
    for dt in (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.uint8, torch.bool, torch.complex64, torch.complex128, torch.uint16, torch.uint32, torch.uint64):
        name = str(dt).removeprefix("torch.")
        if dt == torch.bool:
            dtypes[name] = torch.tensor([True, False, True])
        elif dt.is_complex:
            dtypes[name] = torch.tensor([1 + 2j, -3.5j], dtype=dt)
        else:
            dtypes[name] = torch.tensor([0, 1, 100], dtype=dt)
    dtypes["scalar"] = torch.tensor(3.25, dtype=torch.float64)
    dtypes["empty"] = torch.empty(0, 4)
    torch.save(dtypes, OUT / "dtypes.pt")
    for k, v in dtypes.items():
        expected[f"dtypes.{k}"] = v.numpy()

    # torch's format before 1.6 (pickles back to back, no zip), still found in old pretrained files
    legacy = {"state": net.state_dict(), "shared": shared, "params": list(net.fc.parameters())}
    torch.save(legacy, OUT / "legacy.pt", _use_new_zipfile_serialization=False)

    # a dtype aiograd does not have: loading names it
    torch.save({"w": torch.ones(2, dtype=torch.bfloat16)}, OUT / "bfloat16.pt")

    np.savez(OUT / "expected.npz", **expected)
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {len(list(OUT.iterdir()))} files, {total} bytes, to {OUT}")


if __name__ == "__main__":
    main()
