"""Reference cases for aiograd.nn's recurrent layers against torch.nn, run by tests/test_nn_rnn.py.

Each case is run by the same code on either library (``lib`` is torch or aiograd): build the
layer in float64, feed it inputs made from numpy (seeded by the case's name), and take the
gradient of ``sum(output * g) + sum(h_n * gh) (+ sum(c_n * gc))`` for seeded weights ``g``.
Only torch's results are stored, with the torch module's state_dict (its key order too),
in tests/data/rnn_reference.npz, written by tests/data/make_rnn_reference.py (torch needed);
the test suite never imports torch.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "rnn_reference.npz"

T, B, I, H, P = 4, 3, 3, 4, 2


def _case(cls: str, name: str = "", batch_first: bool = False, hx: bool = True, packed: bool = False,
          unbatched: bool = False, **kwargs: Any) -> dict[str, Any]:
    parts = [cls] + [f"{k}={v}" for k, v in kwargs.items()]
    parts += [p for p, on in (("batch_first", batch_first), ("no_hx", not hx), ("packed", packed),
                              ("unbatched", unbatched)) if on]
    return {"name": name or ",".join(parts), "cls": cls, "kwargs": kwargs, "batch_first": batch_first, "hx": hx,
            "packed": packed, "unbatched": unbatched}


def layer_cases() -> list[dict[str, Any]]:
    """The argument combinations: each mode with layers, directions, bias, projection, layouts, packing."""
    cases = []
    for cls, extra in (("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("LSTM", {"proj_size": P}),
                       ("GRU", {})):
        for layers, bidirectional in ((1, False), (2, False), (1, True), (2, True)):
            cases.append(_case(cls, num_layers=layers, bidirectional=bidirectional, **extra))
        cases.append(_case(cls, bias=False, **extra))
        cases.append(_case(cls, batch_first=True, num_layers=2, **extra))
        cases.append(_case(cls, hx=False, **extra))
        cases.append(_case(cls, unbatched=True, num_layers=2, bidirectional=True, **extra))
        cases.append(_case(cls, unbatched=True, hx=False, **extra))
        cases.append(_case(cls, packed=True, num_layers=2, bidirectional=True, **extra))
        cases.append(_case(cls, packed=True, batch_first=True, hx=False, **extra))
    return cases


def cell_cases() -> list[dict[str, Any]]:
    cases = []
    for cls, extra in (("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})):
        cases.append(_case(cls, **extra))
        cases.append(_case(cls, bias=False, **extra))
        cases.append(_case(cls, hx=False, **extra))
        cases.append(_case(cls, unbatched=True, **extra))
    return cases


def _rng(name: str, salt: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{name}/{salt}".encode()))


LENGTHS = [2, 4, 1]  # unsorted: packing sorts them (enforce_sorted=False)


def inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    """The case's input arrays: x, h0 (and c0), and the loss weights g_out, g_h (and g_c)."""
    name, cls, kw = case["name"], case["cls"], case["kwargs"]
    cell = cls.endswith("Cell")
    directions = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    hout = kw.get("proj_size", 0) or H
    lstm = cls.startswith("LSTM")
    if cell:
        x_shape: tuple[int, ...] = (B, I)
        h_shape: tuple[int, ...] = (B, H)
        c_shape: tuple[int, ...] = (B, H)
        out_shape: tuple[int, ...] = ()
    else:
        x_shape = (B, T, I) if case["batch_first"] else (T, B, I)
        h_shape = (layers * directions, B, hout)
        c_shape = (layers * directions, B, H)
        out_shape = x_shape[:-1] + (directions * hout,)
    if case["unbatched"]:
        x_shape = x_shape[-1:] if cell else (T, I)
        h_shape = h_shape[-1:] if cell else (h_shape[0], h_shape[2])
        c_shape = c_shape[-1:] if cell else (c_shape[0], c_shape[2])
        out_shape = () if cell else (T, directions * hout)
    r = _rng(name, "inputs")
    arrays = {"x": r.standard_normal(x_shape), "h0": r.standard_normal(h_shape) * 0.5,
              "g_h": r.standard_normal(h_shape)}
    if lstm:
        arrays["c0"] = r.standard_normal(c_shape) * 0.5
        arrays["g_c"] = r.standard_normal(c_shape)
    if out_shape:
        arrays["g_out"] = r.standard_normal(out_shape)
    return arrays


def run(lib: Any, case: dict[str, Any], state: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Run ``case`` on ``lib``: outputs and gradients (and, for torch, the module's state_dict as ``sd:NAME``).
    ``state``: a torch state_dict (numpy arrays) to load into the module (aiograd)."""
    cls, kw = case["cls"], case["kwargs"]
    cell = cls.endswith("Cell")
    lstm = cls.startswith("LSTM")
    if cell:
        module = getattr(lib.nn, cls)(I, H, **kw)
    else:
        module = getattr(lib.nn, cls)(I, H, batch_first=case["batch_first"], **kw)
    module = module.double()
    if state is not None:
        module.load_state_dict(state)
    a = inputs(case)
    x = lib.tensor(a["x"], requires_grad=True)
    h0 = lib.tensor(a["h0"], requires_grad=True)
    c0 = lib.tensor(a["c0"], requires_grad=True) if lstm else None
    hidden: Any = None
    if case["hx"]:
        hidden = (h0, c0) if lstm else h0
    inp: Any = x
    rnn_utils = lib.nn.utils.rnn
    if case["packed"]:
        inp = rnn_utils.pack_padded_sequence(x, LENGTHS, batch_first=case["batch_first"], enforce_sorted=False)
    if cell:
        res = module(inp, hidden)
        out = None
        h_n, c_n = res if lstm else (res, None)
    else:
        out, hid = module(inp, hidden)
        h_n, c_n = hid if lstm else (hid, None)
        if case["packed"]:
            out, _ = rnn_utils.pad_packed_sequence(out, batch_first=case["batch_first"])
    loss = (h_n * lib.tensor(a["g_h"])).sum()
    if out is not None:
        loss = loss + (out * lib.tensor(a["g_out"])).sum()
    if c_n is not None:
        loss = loss + (c_n * lib.tensor(a["g_c"])).sum()
    if hasattr(loss, "backward_sync"):
        loss.backward_sync()
    else:
        loss.backward()
    result = {"h_n": h_n.detach().numpy(), "grad:x": x.grad.numpy()}
    if out is not None:
        result["out"] = out.detach().numpy()
    if c_n is not None:
        result["c_n"] = c_n.detach().numpy()
    if case["hx"]:
        result["grad:h0"] = h0.grad.numpy()
        if lstm:
            result["grad:c0"] = c0.grad.numpy()
    for pname, p in module.named_parameters():
        result[f"grad:{pname}"] = p.grad.numpy()
    if state is None:
        for k, v in module.state_dict().items():
            result[f"sd:{k}"] = v.detach().numpy()
    return result


def utils_results(lib: Any) -> dict[str, np.ndarray]:
    """pad_sequence / pack_sequence / pad_packed_sequence results and their gradients."""
    r = _rng("utils", "inputs")
    seqs_np = [r.standard_normal((n, 2)) for n in (2, 4, 1)]
    res: dict[str, np.ndarray] = {}
    U = lib.nn.utils.rnn
    for bf in (False, True):
        for side in ("right", "left"):
            seqs = [lib.tensor(s, requires_grad=True) for s in seqs_np]
            padded = U.pad_sequence(seqs, batch_first=bf, padding_value=-1.0, padding_side=side)
            w = lib.tensor(_rng("utils", f"w{bf}{side}").standard_normal(tuple(padded.shape)))
            loss = (padded * w).sum()
            loss.backward_sync() if hasattr(loss, "backward_sync") else loss.backward()
            res[f"pad_sequence:{bf}:{side}"] = padded.detach().numpy()
            for i, s in enumerate(seqs):
                res[f"pad_sequence:{bf}:{side}:grad{i}"] = s.grad.numpy()
    for enforce in (False, True):
        seqs = [lib.tensor(s, requires_grad=True) for s in (seqs_np if not enforce else sorted(seqs_np, key=len)[::-1])]
        packed = U.pack_sequence(seqs, enforce_sorted=enforce)
        res[f"pack_sequence:{enforce}:data"] = packed.data.detach().numpy()
        res[f"pack_sequence:{enforce}:batch_sizes"] = packed.batch_sizes.numpy()
        if packed.sorted_indices is not None:
            res[f"pack_sequence:{enforce}:sorted_indices"] = packed.sorted_indices.numpy()
            res[f"pack_sequence:{enforce}:unsorted_indices"] = packed.unsorted_indices.numpy()
        for bf in (False, True):
            for total in (None, 6):
                padded, lengths = U.pad_packed_sequence(packed, batch_first=bf, padding_value=0.5, total_length=total)
                res[f"pad_packed:{enforce}:{bf}:{total}"] = padded.detach().numpy()
                res[f"pad_packed:{enforce}:{bf}:{total}:lengths"] = lengths.numpy()
        padded, _ = U.pad_packed_sequence(packed)
        w = lib.tensor(_rng("utils", f"pp{enforce}").standard_normal(tuple(padded.shape)))
        loss = (padded * w).sum()
        loss.backward_sync() if hasattr(loss, "backward_sync") else loss.backward()
        for i, s in enumerate(seqs):
            res[f"pack_sequence:{enforce}:grad{i}"] = s.grad.numpy()
    return res


def _flat(results: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, Any]]:
    """One float64 vector and its layout {key: [offset, shape]} (few npz members: a small file)."""
    layout: dict[str, Any] = {}
    parts = []
    off = 0
    for k, v in results.items():
        v = np.asarray(v, dtype=np.float64)
        layout[k] = [off, list(v.shape)]
        parts.append(v.reshape(-1))
        off += v.size
    return np.concatenate(parts), layout


def write(torch: Any) -> None:
    """Run every case on torch and store the results (the generator script calls this)."""
    torch.manual_seed(0)
    arrays: dict[str, np.ndarray] = {}
    layouts: dict[str, Any] = {}
    cases = layer_cases() + cell_cases()
    for k, case in enumerate(cases):
        res = run(torch, case)
        arrays[f"case{k}"], layouts[case["name"]] = _flat(res)
        case["state_keys"] = list(getattr(torch.nn, case["cls"])(I, H, **case["kwargs"]).state_dict().keys())
        case["member"] = f"case{k}"
    arrays["utils"], layouts["utils"] = _flat(utils_results(torch))
    arrays["meta"] = np.array(json.dumps({"cases": cases, "layouts": layouts}))
    np.savez_compressed(DATA, **arrays)


def load() -> tuple[list[dict[str, Any]], dict[str, dict[str, np.ndarray]]]:
    """The stored cases, and per case name (and "utils") its results by key."""
    with np.load(DATA) as f:
        members = {k: f[k] for k in f.files}
    meta = json.loads(str(members["meta"]))
    results: dict[str, dict[str, np.ndarray]] = {}
    for name, layout in meta["layouts"].items():
        member = "utils" if name == "utils" else next(c["member"] for c in meta["cases"] if c["name"] == name)
        flat = members[member]
        results[name] = {k: flat[off:off + int(np.prod(shape))].reshape(shape) for k, (off, shape) in layout.items()}
    return meta["cases"], results
