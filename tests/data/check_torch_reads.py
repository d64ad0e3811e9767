"""Check with torch that torch.load(weights_only=True) reads what ag.save writes (run by hand; needs torch).

    PYTHONPATH=. python tests/data/check_torch_reads.py

The test suite runs without torch, so tests/test_serialization.py pins what
torch's reader depends on (layout, opcodes, globals); this script is the
end-to-end check behind those pins. It trains the model of
make_torch_checkpoints.py in aiograd, saves its state_dict, its Adam state and
a set of awkward tensors with ag.save, then in torch: loads each file with
weights_only=True (and mmap=True), compares every value, checks that views
saved from one aiograd array share one torch storage, runs the torch model
with the aiograd weights (same output) and continues training it in torch
from aiograd's optimizer state (same parameters as aiograd's next step).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiograd as ag  # noqa: E402
import aiograd.nn as nn  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402
from make_torch_checkpoints import Net as TorchNet  # noqa: E402


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.ln = nn.LayerNorm(6)
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(6 + 3 * 4 * 4, 4)

    def forward(self, tokens: ag.Tensor, image: ag.Tensor) -> ag.Tensor:
        e = self.ln(self.emb(tokens)).mean(1)
        c = F.relu(self.bn(self.conv(image))).flatten(1)
        return self.fc(ag.cat([e, c], 1))


def main() -> None:
    checks = 0
    folder = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 10, (4, 7))
    image = rng.standard_normal((4, 1, 4, 4)).astype(np.float32)

    net = Net()
    opt = ag.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        net(ag.from_numpy(tokens), ag.from_numpy(image)).square().mean().backward_sync()
        opt.step()
    ag.save(net.state_dict(), folder / "model.pt")
    ag.save(opt.state_dict(), folder / "adam.pt")

    for mmap in (False, True):
        sd = torch.load(folder / "model.pt", weights_only=True, mmap=mmap)
        for k, v in net.state_dict().items():
            assert np.array_equal(sd[k].numpy(), v.numpy()), k
            checks += 1
    tnet = TorchNet()
    tnet.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    net.eval()
    tnet.eval()
    with torch.no_grad():
        want = tnet(torch.from_numpy(tokens), torch.from_numpy(image)).numpy()
    got = net(ag.from_numpy(tokens), ag.from_numpy(image)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    checks += 1

    # aiograd's Adam state continues in torch: one more step on both sides gives the same parameters
    net.train()
    tnet.train()
    topt = torch.optim.Adam(tnet.parameters(), lr=0.01)
    saved = torch.load(folder / "adam.pt", weights_only=True)
    assert saved["param_groups"] == opt.state_dict()["param_groups"]
    for i, state in opt.state_dict()["state"].items():
        for k, v in state.items():
            assert np.array_equal(saved["state"][i][k].numpy(), v.numpy()), (i, k)
            checks += 1
    topt.load_state_dict(saved)
    opt.zero_grad()
    net(ag.from_numpy(tokens), ag.from_numpy(image)).square().mean().backward_sync()
    opt.step()
    topt.zero_grad()
    tnet(torch.from_numpy(tokens), torch.from_numpy(image)).square().mean().backward()
    topt.step()
    for (k, a), b in zip(net.state_dict().items(), tnet.state_dict().values()):
        if k == "conv.bias":
            # it feeds a BatchNorm in train mode, so its gradient is rounding noise (~1e-9), which
            # Adam's grad / sqrt(v) turns into a step of up to lr in any direction: not comparable
            # (its saved value and Adam state were compared exactly above)
            continue
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
        checks += 1
    assert all(s["step"].item() == 3.0 for s in topt.state_dict()["state"].values())

    # awkward tensors: views of one array, every dtype, 0-d, empty, Parameters, values
    x = ag.arange(24.0).reshape(4, 6)
    dtypes = ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "?", "c8", "c16", "u2", "u4", "u8")
    obj = {
        "x": x, "t": x.T, "s": x[1:3, 2:5], "col": x[:, 4], "flipped": x.flip(0),
        "dtypes": {d: ag.from_numpy((np.arange(3) * 7).astype(d)) for d in dtypes},
        "scalar": ag.tensor(2.5, dtype=ag.float64), "empty": ag.zeros(0, 3), "grad": ag.ones(2, requires_grad=True),
        "param": nn.Parameter(ag.ones(3)), "same": [x, x],
        "values": [1, -7, 2**70, 2.5, "s", None, True, b"b", {3}, 1j, (1, (2,)), ag.float16, ag.device("cpu")],
    }
    ag.save(obj, folder / "misc.pt")
    r = torch.load(folder / "misc.pt", weights_only=True)
    for key in ("x", "t", "s", "col", "flipped", "scalar", "empty", "grad"):
        assert np.array_equal(r[key].detach().numpy(), obj[key].detach().numpy()), key
        checks += 1
    for d in dtypes:
        assert r["dtypes"][d].numpy().dtype == np.dtype(d) and np.array_equal(r["dtypes"][d].numpy(),
                                                                                obj["dtypes"][d].numpy()), d
        checks += 1
    ptr = r["x"].untyped_storage().data_ptr()
    assert all(r[k].untyped_storage().data_ptr() == ptr for k in ("t", "s", "col")), "views must share a storage"
    assert r["s"].storage_offset() == 8 and r["t"].stride() == (1, 6) and r["col"].stride() == (6,)
    assert r["same"][0] is r["same"][1] is r["x"]
    assert type(r["param"]) is torch.nn.Parameter and r["grad"].requires_grad and r["scalar"].shape == ()
    assert r["values"][:-2] == obj["values"][:-2]
    assert r["values"][-2] is torch.float16 and r["values"][-1] == torch.device("cpu")
    checks += 6
    print(f"torch {torch.__version__} read everything ag.save wrote: {checks} checks passed")


if __name__ == "__main__":
    main()
