"""ag.save / ag.load (aiograd/serialization.py): torch's checkpoint format both ways, safely.

torch is not installed here: the files torch wrote are committed under
tests/data/torch_checkpoints/ (made by tests/data/make_torch_checkpoints.py,
with the values they must load to in expected.npz). The other direction (torch
reads what ag.save writes) is checked by tests/data/check_torch_reads.py with
torch, and here by pinning what torch's reader depends on: the archive layout,
only the pickle opcodes torch's weights-only unpickler reads, and only globals
from its allowlist.
"""

from __future__ import annotations

import collections
import io
import os
import pathlib
import pickle
import pickletools
import stat
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd import serialization

DATA = Path(__file__).resolve().parent / "data" / "torch_checkpoints"


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(DATA / "expected.npz") as z:
        return {k: z[k] for k in z.files}


class Net(nn.Module):
    """The model of make_torch_checkpoints.py, written with aiograd."""

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


def _zip_names(path_or_bytes: Any) -> list[str]:
    src = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, bytes) else path_or_bytes
    with zipfile.ZipFile(src) as z:
        return z.namelist()


def _saved_bytes(obj: Any) -> bytes:
    buf = io.BytesIO()
    ag.save(obj, buf)
    return buf.getvalue()


def _data_pkl(blob: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))


def _checkpoint(pkl: bytes, records: dict[str, bytes] | None = None, prefix: str = "archive") -> bytes:
    """A zip laid out as torch.save lays it out, holding ``pkl`` as its data.pkl."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{prefix}/data.pkl", pkl)
        z.writestr(f"{prefix}/byteorder", sys.byteorder)
        for key, data in (records or {}).items():
            z.writestr(f"{prefix}/data/{key}", data)
        z.writestr(f"{prefix}/version", "3\n")
    return buf.getvalue()


def _rewrite(blob: bytes, change: Any) -> bytes:
    """Copy a checkpoint, passing each (name, data) through ``change`` (None drops the entry)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = change(name, src.read(name))
            if data is not None:
                dst.writestr(name, data)
    return out.getvalue()


# ----- torch -> aiograd -----------------------------------------------------------------------

def test_torch_model_state_dict_loads_and_gives_torchs_forward(expected: dict[str, np.ndarray]) -> None:
    state = ag.load(DATA / "model_state.pt")
    assert isinstance(state, collections.OrderedDict)
    net = Net()
    assert list(state) == list(net.state_dict())  # torch's key names, num_batches_tracked included
    net.load_state_dict(state)
    net.eval()
    out = net(ag.from_numpy(expected["model.tokens"]), ag.from_numpy(expected["model.image"]))
    np.testing.assert_allclose(out.detach().numpy(), expected["model.out"], rtol=1e-5, atol=1e-6)
    assert state["bn.num_batches_tracked"].dtype == ag.int64 and state["bn.num_batches_tracked"].item() == 3
    for key, value in state.items():
        np.testing.assert_array_equal(value.numpy(), expected[f"model_state.{key}"])


async def test_torch_pretrained_weights_fine_tune_in_aiograd(expected: dict[str, np.ndarray]) -> None:
    net = Net()
    net.load_state_dict(ag.load(DATA / "model_state.pt"))
    opt = ag.optim.Adam(net.parameters(), lr=0.01)
    opt.load_state_dict(ag.load(DATA / "adam_state.pt"))
    loss = net(ag.from_numpy(expected["model.tokens"]), ag.from_numpy(expected["model.image"])).square().mean()
    await loss.backward()
    opt.step()
    assert opt.state[net.fc.weight]["step"].item() == 4.0


def test_torch_adam_state_dict_loads(expected: dict[str, np.ndarray]) -> None:
    sd = ag.load(DATA / "adam_state.pt")
    assert sd["param_groups"][0]["params"] == list(range(9))
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)
    for i, s in sd["state"].items():
        for k, v in s.items():
            np.testing.assert_array_equal(v.numpy(), expected[f"adam_state.{i}.{k}"])
    assert sd["state"][0]["step"].dtype == ag.float32 and sd["state"][0]["step"].shape == ()


def test_torch_parameters_load_as_parameters(expected: dict[str, np.ndarray]) -> None:
    params = ag.load(DATA / "parameters.pt")
    assert all(type(p) is nn.Parameter and p.requires_grad for p in params)
    for i, p in enumerate(params):
        np.testing.assert_array_equal(p.detach().numpy(), expected[f"parameters.{i}"])


def test_torch_nested_containers_load(expected: dict[str, np.ndarray]) -> None:
    r = ag.load(DATA / "nested.pt")
    a = r["list"][0]
    np.testing.assert_array_equal(a.numpy(), expected["nested.a"])
    assert r["list"][1][1:] == ("text", 3, 2.5, None, True) and r["list"][2] == []
    assert r["list"][1][0].tolist() == [1, 2] and r["list"][1][0].dtype == ag.int64
    assert isinstance(r["ordered"], collections.OrderedDict) and list(r["ordered"]) == ["z", "a"]
    assert r["tuple"][1][1][0] == 3 and r["tuple"][1][1][1].tolist() == [0.0]
    assert (r["big"], r["neg"], r["bytes"], r["set"], r["complex"]) == (2**70, -123456789, b"\x00\xff", {1, 2}, 1 + 2j)
    assert r["dtype"] == ag.float64
    assert r["size"] == (2, 3)
    assert r["device"] == ag.device("cpu")
    assert r["same"][0] is r["same"][1] is a  # one tensor saved three times is one tensor loaded
    assert r["grad"].requires_grad and r["grad"].is_leaf
    full = ag.load(DATA / "nested.pt", weights_only=False)  # Python's unpickler, torch's names mapped the same way
    assert full.keys() == r.keys() and full["same"][0] is full["list"][0] and full["dtype"] == ag.float64
    np.testing.assert_array_equal(full["list"][0].numpy(), expected["nested.a"])


def test_torch_views_of_one_storage_share_memory(expected: dict[str, np.ndarray]) -> None:
    r = ag.load(DATA / "shared.pt")
    for key, value in r.items():
        np.testing.assert_array_equal(value.numpy(), expected[f"shared.{key}"])
        assert np.shares_memory(value.numpy(), r["base"].numpy()), key
    assert r["transpose"].numpy().strides == (4, 24)
    assert r["expanded"].numpy().strides == (0, 0)
    r["base"].numpy()[1, 3] = -1.0  # a write through the base shows in its views, as in torch
    assert r["slice"][0, 1].item() == -1.0 and r["transpose"][3, 1].item() == -1.0


def test_torch_every_dtype_aiograd_has_loads(expected: dict[str, np.ndarray]) -> None:
    r = ag.load(DATA / "dtypes.pt")
    for key, value in r.items():
        want = expected[f"dtypes.{key}"]
        assert value.dtype == want.dtype and value.shape == want.shape, key
        np.testing.assert_array_equal(value.numpy(), want)
    assert r["scalar"].shape == () and r["scalar"].item() == 3.25
    assert r["empty"].shape == (0, 4)


def test_torch_legacy_format_loads(expected: dict[str, np.ndarray]) -> None:
    r = ag.load(DATA / "legacy.pt")  # written with _use_new_zipfile_serialization=False
    for key, value in r["state"].items():
        np.testing.assert_array_equal(value.numpy(), expected[f"model_state.{key}"])
    for key, value in r["shared"].items():
        np.testing.assert_array_equal(value.numpy(), expected[f"shared.{key}"])
        assert np.shares_memory(value.numpy(), r["shared"]["base"].numpy()), key
    assert all(type(p) is nn.Parameter for p in r["params"])
    assert ag.load(DATA / "legacy.pt", weights_only=False)["state"].keys() == r["state"].keys()
    data = (DATA / "legacy.pt").read_bytes()
    with pytest.raises(RuntimeError, match=r"cannot load <BytesIO>: the data of storage .* truncated"):
        ag.load(io.BytesIO(data[:-10]))


def test_mmap_maps_records_lazily_and_copy_on_write(expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "shared.pt"
    path.write_bytes((DATA / "shared.pt").read_bytes())
    r = ag.load(path, mmap=True)
    for key, value in r.items():
        np.testing.assert_array_equal(value.numpy(), expected[f"shared.{key}"])
        assert np.shares_memory(value.numpy(), r["base"].numpy()), key
    assert isinstance(r["base"].numpy().base, np.memmap)
    r["base"].numpy()[...] = 0  # a private copy of the pages: the file is unchanged
    assert r["slice"].numpy().sum() == 0
    np.testing.assert_array_equal(ag.load(path)["base"].numpy(), expected["shared.base"])
    state = ag.load(DATA / "model_state.pt", mmap=True)
    with open(DATA / "model_state.pt", "rb") as fh:
        assert list(ag.load(fh, mmap=True)) == list(state)
    for key, value in state.items():
        np.testing.assert_array_equal(value.numpy(), expected[f"model_state.{key}"])
    with pytest.raises(ValueError, match="file path or a file on disk"):
        ag.load(io.BytesIO(path.read_bytes()), mmap=True)
    with pytest.raises(RuntimeError, match="legacy format"):
        ag.load(DATA / "legacy.pt", mmap=True)


def test_torch_dtype_aiograd_lacks_is_named() -> None:
    with pytest.raises(RuntimeError, match=r"bfloat16\.pt.*dtype torch\.bfloat16, which aiograd does not have"):
        ag.load(DATA / "bfloat16.pt")


# ----- aiograd -> torch: what torch's reader depends on -------------------------------------------

# torch 2.13's weights-only unpickler reads these opcodes and no others
TORCH_OPCODES = {
    "PROTO", "STOP", "GLOBAL", "REDUCE", "NEWOBJ", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE", "EMPTY_LIST",
    "EMPTY_DICT", "EMPTY_SET", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE",
    "SHORT_BINSTRING", "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT",
}
# names from torch 2.13's default weights-only allowlist (torch/_weights_only_unpickler.py), as written
# by protocol 2 (builtins spelled __builtin__)
TORCH_ALLOWED = {
    "collections OrderedDict", "__builtin__ set", "__builtin__ complex", "_codecs encode", "torch device",
    "torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_tensor_v3", "torch._utils _rebuild_parameter",
    "torch storage.UntypedStorage", "torch.storage UntypedStorage",
    *(f"torch {n}Storage" for n in ("Double", "Float", "Half", "Long", "Int", "Short", "Char", "Byte", "Bool",
                                     "ComplexDouble", "ComplexFloat")),
    *(f"torch {d}" for d in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                             "complex64", "complex128", "uint16", "uint32", "uint64")),
}


def _everything() -> dict[str, Any]:
    x = ag.arange(12.0).reshape(3, 4)
    net = Net()
    opt = ag.optim.Adam(net.parameters())
    net(ag.zeros(2, 7, dtype=ag.int64), ag.ones(2, 1, 4, 4)).sum().backward_sync()
    opt.step()
    return {
        "model": net.state_dict(), "adam": opt.state_dict(), "params": list(net.fc.parameters()),
        "x": x, "t": x.T, "s": x[1:, 2:], "flipped": x.flip(0),
        "dtypes": [ag.from_numpy(np.arange(3).astype(d)) for d in
                   ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "?", "c8", "c16", "u2", "u4", "u8")],
        "scalar": ag.tensor(2.5), "empty": ag.zeros(0, 3), "grad": ag.ones(2, requires_grad=True),
        "values": [1, -7, 2**40, 2**70, 2.5, "s", None, True, False, b"b", {3}, 1j, (1,), ag.float16,
                   ag.device("cpu")],
        "ordered": collections.OrderedDict(a=1),
    }


def test_saved_pickle_uses_only_opcodes_and_globals_torch_reads() -> None:
    pkl = _data_pkl(_saved_bytes(_everything()))
    names = set()
    opcodes = set()
    for op, arg, _ in pickletools.genops(pkl):
        opcodes.add(op.name)
        if op.name == "GLOBAL":
            names.add(arg)
    assert opcodes <= TORCH_OPCODES, opcodes - TORCH_OPCODES
    assert names <= TORCH_ALLOWED, names - TORCH_ALLOWED
    assert pkl[:2] == b"\x80\x02"  # protocol 2, as torch.save


def test_fast_pickler_writes_the_pure_picklers_bytes() -> None:
    # the C pickler writes stand-in globals renamed afterwards (NOTE [Torch names in the fast pickler]);
    # the pure-Python pickler writes torch's names directly: both must give the same bytes
    obj = _everything()
    del obj["values"]  # dtypes as values go to the pure pickler anyway
    fast, _ = serialization._pickle(obj)
    buf = io.BytesIO()
    serialization._PurePickler(buf).dump(obj)
    assert fast == buf.getvalue()


def test_data_that_spells_a_stand_in_falls_back_to_the_pure_pickler() -> None:
    name = serialization._REBUILD_TENSOR_V2
    trap = f"c{serialization.__name__}\n{name.attr}\n"
    r = ag.load(io.BytesIO(_saved_bytes({"s": trap, "w": ag.ones(2)})))
    assert r["s"] == trap and r["w"].tolist() == [1.0, 1.0]


def test_saved_archive_is_laid_out_as_torchs(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    ag.save(_everything()["model"], path)
    ours = _zip_names(path)
    theirs = _zip_names(DATA / "model_state.pt")
    assert [n.split("/", 1)[1] for n in ours] == [n.split("/", 1)[1] for n in theirs]
    assert {n.split("/", 1)[0] for n in ours} == {"model"}  # one folder, named after the file as torch does
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0  # aligned data
        assert z.read("model/version") == b"3\n" and z.read("model/byteorder") == sys.byteorder.encode()
    # and torch's own files are read by the same rules: their globals are the ones we write
    globals_theirs = {a for op, a, _ in pickletools.genops(_data_pkl((DATA / "model_state.pt").read_bytes()))
                      if op.name == "GLOBAL"}
    globals_ours = {a for op, a, _ in pickletools.genops(_data_pkl(path.read_bytes())) if op.name == "GLOBAL"}
    assert globals_ours == globals_theirs


def test_round_trip_keeps_values_types_and_sharing() -> None:
    obj = _everything()
    r = ag.load(io.BytesIO(_saved_bytes(obj)))
    assert list(r["model"]) == list(obj["model"]) and isinstance(r["model"], collections.OrderedDict)
    for k, v in obj["model"].items():
        np.testing.assert_array_equal(r["model"][k].numpy(), v.numpy())
    assert all(type(p) is nn.Parameter for p in r["params"])
    for a, b in zip(obj["dtypes"], r["dtypes"]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.shares_memory(r["x"].numpy(), r["t"].numpy()) and np.shares_memory(r["x"].numpy(), r["s"].numpy())
    np.testing.assert_array_equal(r["flipped"].numpy(), obj["flipped"].numpy())  # a negative stride: a copy
    assert r["values"][:-2] == obj["values"][:-2]
    assert r["values"][-2] == ag.float16 and r["values"][-1] == ag.device("cpu")
    assert r["scalar"].shape == () and r["empty"].shape == (0, 3) and r["grad"].requires_grad
    assert r["adam"]["param_groups"] == obj["adam"]["param_groups"]


def test_one_storage_written_once_and_shared_again() -> None:
    torch_file = (DATA / "shared.pt").read_bytes()
    loaded = ag.load(io.BytesIO(torch_file))
    again = _saved_bytes(loaded)
    records = [n for n in _zip_names(again) if "/data/" in n]
    assert len(records) == 1 == len([n for n in _zip_names(torch_file) if "/data/" in n])
    r = ag.load(io.BytesIO(again))
    assert all(np.shares_memory(v.numpy(), r["base"].numpy()) for v in r.values())


async def test_optimizer_state_round_trips_and_steps_the_same(tmp_path: Path) -> None:
    def make() -> tuple[Net, Any]:
        ag.manual_seed(0)
        net = Net()
        return net, ag.optim.Adam(net.parameters(), lr=0.01)

    tokens, image = ag.zeros(2, 7, dtype=ag.int64), ag.ones(2, 1, 4, 4)
    a, opt_a = make()
    await a(tokens, image).square().mean().backward()
    opt_a.step()
    await ag.offload(ag.save, {"model": a.state_dict(), "opt": opt_a.state_dict()}, tmp_path / "ckpt.pt")
    b, opt_b = make()
    ckpt = ag.load(tmp_path / "ckpt.pt")
    b.load_state_dict(ckpt["model"])
    opt_b.load_state_dict(ckpt["opt"])
    for net, opt in ((a, opt_a), (b, opt_b)):
        opt.zero_grad()
        await net(tokens, image).square().mean().backward()
        opt.step()
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=k)


# ----- safety -------------------------------------------------------------------------------------

class _RunsShell:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


class _TouchesFile:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (pathlib.Path.touch, (self.marker,))


def test_a_file_naming_os_system_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = _checkpoint(pickle.dumps({"w": _RunsShell(marker)}, protocol=2))
    module = os.system.__module__  # posix (nt on Windows): the name pickle writes
    with pytest.raises(pickle.UnpicklingError, match=rf"Weights only load failed.*GLOBAL {module}\.system"):
        ag.load(io.BytesIO(evil))
    assert not marker.exists()


def test_any_global_outside_the_allowlist_is_refused_by_name_and_weights_only_false_opts_out(tmp_path: Path) -> None:
    marker = tmp_path / "touched"
    path = tmp_path / "evil.pt"
    path.write_bytes(_checkpoint(pickle.dumps([ag.ones(1).numpy(), _TouchesFile(marker)], protocol=2)))
    with pytest.raises(serialization.WeightsOnlyError, match=r"evil\.pt.*Unsupported global: GLOBAL numpy"):
        ag.load(path)
    assert not marker.exists()
    loaded = ag.load(path, weights_only=False)  # the opt-out: runs what the file names
    assert marker.exists() and loaded[0].tolist() == [1.0]


def test_refusal_comes_before_later_calls_and_other_opcodes_are_refused() -> None:
    # protocol 4 opcodes (FRAME, SHORT_BINUNICODE...) are outside what torch's reader accepts: refused too
    with pytest.raises(serialization.WeightsOnlyError, match="Unsupported operand"):
        ag.load(io.BytesIO(_checkpoint(pickle.dumps({"a": 1}, protocol=4))))
    # a REDUCE of something that is not an allowed callable
    pkl = b"\x80\x02ctorch\nfloat32\n)R."
    with pytest.raises(serialization.WeightsOnlyError, match="unrecognized function"):
        ag.load(io.BytesIO(_checkpoint(pkl)))


class Allowed:
    def __init__(self, n: int) -> None:
        self.n = n

    def __reduce__(self) -> Any:
        return (Allowed, (self.n,))


def test_safe_globals_allow_a_trusted_class() -> None:
    blob = _saved_bytes({"cfg": Allowed(3)})
    with pytest.raises(serialization.WeightsOnlyError, match=r"GLOBAL .*Allowed was not an allowed global"):
        ag.load(io.BytesIO(blob))
    with serialization.safe_globals([Allowed]):
        assert serialization.get_safe_globals() == [Allowed]
        assert ag.load(io.BytesIO(blob))["cfg"].n == 3
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([(os.system, "posix.system")])
    try:  # a blocked module stays blocked
        with pytest.raises(serialization.WeightsOnlyError, match="whose module posix is blocked"):
            ag.load(io.BytesIO(_checkpoint(b"\x80\x02cposix\nsystem\n.")))
    finally:
        serialization.clear_safe_globals()


# ----- nothing lost -------------------------------------------------------------------------------

class _Explodes:
    def __reduce__(self) -> Any:
        raise RuntimeError("boom while pickling")


def test_a_failed_save_leaves_the_previous_file_and_no_stray_files(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ckpt.pt"
    ag.save({"w": ag.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="boom while pickling"):
        ag.save({"w": ag.zeros(1000), "x": _Explodes()}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)  # fails after every byte was written
    with pytest.raises(OSError, match="No space left"):
        ag.save({"w": ag.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]
    assert ag.load(path)["w"].tolist() == [1.0, 1.0, 1.0]

    class Interrupt:
        def __reduce__(self) -> Any:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ag.save([Interrupt()], tmp_path / "new.pt")
    assert os.listdir(tmp_path) == ["ckpt.pt"]


@pytest.mark.skipif(os.name != "posix", reason="file modes and symlinks as POSIX has them")
def test_save_keeps_the_files_mode_and_follows_symlinks(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    ag.save(ag.ones(1), path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as open(path, "wb") makes it
    path.chmod(0o640)
    ag.save(ag.ones(2), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    link = tmp_path / "latest.pt"
    link.symlink_to(path)
    ag.save(ag.ones(3), link)
    assert link.is_symlink() and ag.load(path).shape == (3,)


def test_paths_pathlikes_and_file_objects(tmp_path: Path) -> None:
    t = ag.arange(4.0)
    ag.save(t, str(tmp_path / "a.pt"))
    ag.save(t, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as fh:
        ag.save(t, fh)
    with open(tmp_path / "c.pt", "rb") as fh:
        assert ag.load(fh).tolist() == [0.0, 1.0, 2.0, 3.0]
    for name in ("a.pt", "b.pt"):
        assert ag.load(str(tmp_path / name)).tolist() == [0.0, 1.0, 2.0, 3.0]

    class Stream(io.RawIOBase):  # not seekable, like a socket or a pipe
        def __init__(self, data: bytes) -> None:
            self.data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b: Any) -> int:
            return self.data.readinto(b)

    assert ag.load(Stream((tmp_path / "a.pt").read_bytes())).tolist() == [0.0, 1.0, 2.0, 3.0]
    stream = io.BytesIO(b"header" + (tmp_path / "a.pt").read_bytes())  # a checkpoint inside a larger stream
    stream.seek(6)
    assert ag.load(stream).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="path or a binary file object"):
        ag.save(t, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("damage", ["truncated", "cut_in_records", "garbage", "empty", "missing_record",
                                    "flipped_byte", "short_record", "pickle_truncated", "legacy"])
def test_a_corrupt_file_is_reported_naming_it_and_the_problem(tmp_path: Path, damage: str) -> None:
    good = _saved_bytes({"w": ag.arange(64.0), "b": ag.ones(3)})
    if damage == "truncated":
        bad, phrase = good[: len(good) // 2], "truncated or corrupt"
    elif damage == "cut_in_records":
        bad, phrase = good[:-30], "truncated or corrupt"
    elif damage == "garbage":
        bad, phrase = b"this is not a checkpoint", "not a torch checkpoint"
    elif damage == "empty":
        bad, phrase = b"", "empty"
    elif damage == "missing_record":
        bad, phrase = _rewrite(good, lambda n, d: None if n.endswith("data/1") else d), "record archive/data/1 is missing"
    elif damage == "flipped_byte":
        bad = _rewrite(good, lambda n, d: d)  # entries at known places
        i = bad.index(np.arange(64.0, dtype=np.float32)[5:7].tobytes())
        bad = bad[:i] + b"\xff" + bad[i + 1:]
        phrase = "corrupt"
    elif damage == "short_record":
        bad, phrase = _rewrite(good, lambda n, d: d[:-4] if n.endswith("data/0") else d), "expected 256"
    elif damage == "pickle_truncated":
        bad, phrase = _rewrite(good, lambda n, d: d[:-9] if n.endswith("data.pkl") else d), "truncated"
    else:  # torch's format before 1.6, cut after its magic number
        bad, phrase = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2), "pickle ends in the middle"
    path = tmp_path / "broken.pt"
    path.write_bytes(bad)
    with pytest.raises(RuntimeError) as info:
        ag.load(path)
    assert type(info.value) is RuntimeError
    assert "broken.pt" in str(info.value) and phrase in str(info.value), str(info.value)


def test_big_endian_files_are_swapped() -> None:
    good = _saved_bytes(ag.tensor([1.5, -2.0]))

    def to_big(name: str, data: bytes) -> bytes:
        if name.endswith("/byteorder"):
            return b"big"
        if "/data/" in name:
            return np.frombuffer(data, "<f4").astype(">f4").tobytes()
        return data

    assert ag.load(io.BytesIO(_rewrite(good, to_big))).tolist() == [1.5, -2.0]


def test_torch_devices_as_values() -> None:
    assert serialization._device("cpu") == ag.device("cpu")
    assert serialization._device("cpu", 1) == ag.device("cpu:1")
    assert serialization._device("cuda", 0) == "cuda:0"  # a device aiograd lacks stays torch's string


def test_map_location() -> None:
    good = _saved_bytes({"w": ag.ones(2)})
    on_gpu = _rewrite(good, lambda n, d: d.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
                      if n.endswith("data.pkl") else d)
    with pytest.raises(RuntimeError, match="device 'cuda:0'.*map_location='cpu'"):
        ag.load(io.BytesIO(on_gpu))
    assert ag.load(io.BytesIO(on_gpu), map_location="cpu")["w"].device == ag.device("cpu")
    assert ag.load(io.BytesIO(on_gpu), map_location={"cuda:0": "cpu:1"})["w"].device == ag.device("cpu:1")
    assert ag.load(io.BytesIO(good), map_location=ag.device("cpu:2"))["w"].device == ag.device("cpu:2")
    seen = []
    r = ag.load(io.BytesIO(on_gpu), map_location=lambda storage, loc: seen.append(loc) or storage)
    assert seen == ["cuda:0"] and r["w"].tolist() == [1.0, 1.0]


# ----- safetensors --------------------------------------------------------------------------------

def test_safetensors_round_trip(tmp_path: Path) -> None:
    state = Net().state_dict()
    path = tmp_path / "model.safetensors"
    serialization.save_safetensors(dict(state), path, metadata={"format": "pt"})
    loaded = serialization.load_safetensors(path)
    assert list(loaded) == sorted(state) or set(loaded) == set(state)
    for k, v in state.items():
        np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())
        loaded[k].numpy()[...] = 0  # writable
    via_load = ag.load(path)  # as torch.load, a .safetensors path is read as one
    assert set(via_load) == set(state)
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(RuntimeError, match=r"cannot load '.*model\.safetensors'"):
        serialization.load_safetensors(path)


def test_safetensors_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ModuleNotFoundError, match=r"aiograd\[serialization\]"):
        serialization.save_safetensors({"w": ag.ones(1)}, tmp_path / "w.safetensors")
