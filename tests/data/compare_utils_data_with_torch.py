"""Compare aiograd.utils.data with torch.utils.data on the same inputs (run by hand; needs torch).

    PYTHONPATH=. python tests/data/compare_utils_data_with_torch.py

Prints OK or DIFF per case: unshuffled loaders over many sample kinds (batch
structure, dtypes, shapes, values), error types and texts, random_split
lengths and warnings. tests/test_utils_data.py pins what this showed.
"""
import collections, numpy as np, torch, warnings
import torch.utils.data as TD
import aiograd as ag
import aiograd.utils.data as AD

Point = collections.namedtuple("Point", "x y")

def describe(b):
    if isinstance(b, torch.Tensor): return ("T", str(b.dtype).replace("torch.", ""), tuple(b.shape), b.tolist())
    if isinstance(b, ag.Tensor): return ("T", str(b.dtype), tuple(b.shape), b.tolist())
    if isinstance(b, dict): return ("dict", type(b).__name__, {k: describe(v) for k, v in b.items()})
    if isinstance(b, tuple) and hasattr(b, "_fields"): return ("nt", type(b).__name__, [describe(v) for v in b])
    if isinstance(b, (list, tuple)): return (type(b).__name__, [describe(v) for v in b])
    if isinstance(b, np.ndarray): return ("nd", str(b.dtype), b.tolist())
    return ("py", type(b).__name__, b)

def samples(mod, lib):
    T = lambda a: lib.tensor(a) if lib is torch else ag.tensor(a)
    return {
        "ints": [1, 2, 3, 4, 5],
        "floats": [1.5, 2.5, 3.5],
        "bools": [True, False, True],
        "strs": ["a", "bb", "c"],
        "np_f32": [np.ones(3, np.float32) * i for i in range(5)],
        "np_i16_scalar": [np.int16(i) for i in range(5)],
        "np_f64_scalar": [np.float64(i) for i in range(5)],
        "np_bool_scalar": [np.bool_(i % 2) for i in range(5)],
        "dicts": [{"a": i, "b": float(i), "c": np.arange(2) + i, "s": str(i)} for i in range(5)],
        "tuples": [(i, float(i)) for i in range(5)],
        "lists": [[i, i + 1] for i in range(5)],
        "namedtuples": [Point(i, np.float32(i)) for i in range(5)],
        "nested": [{"p": (np.zeros((2, 2)) + i, [i, {"q": i * 1.0}])} for i in range(4)],
        "tensors": [T([float(i), 2.0]) for i in range(5)],
    }

for bs, dl in [(2, False), (2, True), (None, False), (3, False)]:
    ts, as_ = samples(TD, torch), samples(AD, ag)
    for name in ts:
        tl = list(TD.DataLoader(ts[name], batch_size=bs, drop_last=dl))
        al = list(AD.DataLoader(as_[name], batch_size=bs, drop_last=dl))
        a, b = [describe(x) for x in tl], [describe(x) for x in al]
        print("OK " if a == b else "DIFF", bs, dl, name)
        if a != b: print("  torch", a[0]); print("  ag   ", b[0])

# TensorDataset (fast path) vs torch
x = np.random.rand(11, 3).astype(np.float32); y = np.arange(11)
for nw in (0, 2):
    tl = list(TD.DataLoader(TD.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4))
    al = list(AD.DataLoader(AD.TensorDataset(ag.from_numpy(x), ag.from_numpy(y)), batch_size=4, num_workers=nw))
    print("OK " if [describe(b) for b in tl] == [describe(b) for b in al] else "DIFF", "TensorDataset", nw)
# errors
def err(f):
    try: f(); return "no error"
    except BaseException as e: return f"{type(e).__name__}: {e}"
for label, fT, fA in [
    ("stack", lambda: TD.default_collate([torch.zeros(2), torch.zeros(3)]), lambda: AD.default_collate([ag.zeros(2), ag.zeros(3)])),
    ("np stack", lambda: TD.default_collate([np.zeros(2), np.zeros(3)]), lambda: AD.default_collate([np.zeros(2), np.zeros(3)])),
    ("list size", lambda: TD.default_collate([[1, 2], [1]]), lambda: AD.default_collate([[1, 2], [1]])),
    ("object", lambda: TD.default_collate([object(), object()]), lambda: AD.default_collate([object(), object()])),
    ("np str", lambda: TD.default_collate([np.array(["a"]), np.array(["b"])]), lambda: AD.default_collate([np.array(["a"]), np.array(["b"])])),
    ("None", lambda: TD.default_collate([None, None]), lambda: AD.default_collate([None, None])),
    ("empty", lambda: TD.default_collate([]), lambda: AD.default_collate([])),
    ("complex", lambda: TD.default_collate([1j, 2j]), lambda: AD.default_collate([1j, 2j])),
    ("rs frac", lambda: TD.random_split(range(10), [0.5, 1.5]), lambda: AD.random_split(range(10), [0.5, 1.5])),
    ("rs frac neg", lambda: TD.random_split(range(10), [1.5, -0.5]), lambda: AD.random_split(range(10), [1.5, -0.5])),
    ("rs sum", lambda: TD.random_split(range(10), [3, 4]), lambda: AD.random_split(range(10), [3, 4])),
    ("rs gen", lambda: TD.random_split(range(10), [3, 7], generator=3), lambda: AD.random_split(range(10), [3, 7], generator=3)),
    ("rsampler", lambda: TD.RandomSampler(range(3), replacement=1), lambda: AD.RandomSampler(range(3), replacement=1)),
    ("rsampler n", lambda: TD.RandomSampler(range(3), num_samples=0), lambda: AD.RandomSampler(range(3), num_samples=0)),
    ("rsampler empty", lambda: TD.RandomSampler(range(0)), lambda: AD.RandomSampler(range(0))),
    ("wrs", lambda: TD.WeightedRandomSampler([[1.0]], 2), lambda: AD.WeightedRandomSampler([[1.0]], 2)),
    ("wrs n", lambda: TD.WeightedRandomSampler([1.0], 0), lambda: AD.WeightedRandomSampler([1.0], 0)),
    ("wrs r", lambda: TD.WeightedRandomSampler([1.0], 1, replacement=0), lambda: AD.WeightedRandomSampler([1.0], 1, replacement=0)),
    ("wrs neg", lambda: list(TD.WeightedRandomSampler([1.0, -1.0], 1)), lambda: list(AD.WeightedRandomSampler([1.0, -1.0], 1))),
    ("wrs too many", lambda: list(TD.WeightedRandomSampler([1.0, 0.0], 2, False)), lambda: list(AD.WeightedRandomSampler([1.0, 0.0], 2, False))),
    ("bs", lambda: TD.BatchSampler(range(3), 0, False), lambda: AD.BatchSampler(range(3), 0, False)),
    ("bs dl", lambda: TD.BatchSampler(range(3), 1, 0), lambda: AD.BatchSampler(range(3), 1, 0)),
    ("concat empty", lambda: TD.ConcatDataset([]), lambda: AD.ConcatDataset([])),
    ("concat neg", lambda: TD.ConcatDataset([range(3)])[-4], lambda: AD.ConcatDataset([range(3)])[-4]),
    ("td", lambda: TD.TensorDataset(torch.zeros(2), torch.zeros(3)), lambda: AD.TensorDataset(ag.zeros(2), ag.zeros(3))),
    ("td none", lambda: TD.TensorDataset(), lambda: AD.TensorDataset()),
    ("stackds", lambda: TD.StackDataset(), lambda: AD.StackDataset()),
    ("stackds size", lambda: TD.StackDataset([1], [1, 2]), lambda: AD.StackDataset([1], [1, 2])),
    ("ds getitem", lambda: TD.Dataset()[0], lambda: AD.Dataset()[0]),
    ("iterds iter", lambda: iter(TD.IterableDataset()), lambda: iter(AD.IterableDataset())),
    ("dl len iterable nolen", lambda: len(TD.DataLoader(TD.IterableDataset())), lambda: len(AD.DataLoader(AD.IterableDataset()))),
    ("dl shuffle iterable", lambda: TD.DataLoader(TD.IterableDataset(), shuffle=True), lambda: AD.DataLoader(AD.IterableDataset(), shuffle=True)),
    ("dl pf0", lambda: list(TD.DataLoader(range(3), num_workers=1, prefetch_factor=0)), lambda: list(AD.DataLoader(range(3), num_workers=1, prefetch_factor=0))),
    ("dl pf-1", lambda: TD.DataLoader(range(3), num_workers=1, prefetch_factor=-1), lambda: AD.DataLoader(range(3), num_workers=1, prefetch_factor=-1)),
    ("dl bs None sampler", lambda: TD.DataLoader(range(3), batch_size=None, shuffle=True), lambda: AD.DataLoader(range(3), batch_size=None, shuffle=True)),
    ("chain", lambda: list(TD.ChainDataset([range(3)])), lambda: list(AD.ChainDataset([range(3)]))),
    ("worker info set", lambda: setattr(torch.utils.data._utils.worker.WorkerInfo(id=0,num_workers=1,seed=0,dataset=None), "id", 1), lambda: setattr(AD.WorkerInfo(id=0,num_workers=1,seed=0,dataset=None), "id", 1)),
]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a, b = err(fT), err(fA)
    print("OK " if a == b else "DIFF", label, "|", a, "|", b if a != b else "")
# random_split lengths
for n, fr in [(10, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.7]), (5, [1/3]*3), (3, [0.1, 0.9]), (100, [0.8, 0.1, 0.1])]:
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        t = [len(s) for s in TD.random_split(range(n), fr)]
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        a = [len(s) for s in AD.random_split(range(n), fr)]
    print("OK " if t == a and [str(x.message) for x in w1] == [str(x.message) for x in w2] else "DIFF", n, fr, t, a, [str(x.message) for x in w2])

# iterable datasets with workers: batches round-robin, in torch's order
def make(base, info):
    class Stream(base):
        def __init__(self, n): self.n = n
        def __iter__(self):
            i = info()
            s, k = (0, 1) if i is None else (i.id, i.num_workers)
            return iter(range(s, self.n, k))
    return Stream
TS, AS = make(TD.IterableDataset, TD.get_worker_info), make(AD.IterableDataset, AD.get_worker_info)
for nw, bs, dl in [(2, 3, False), (2, 3, True), (3, 2, False), (2, None, False), (0, 4, False)]:
    t = [b.tolist() if hasattr(b, "tolist") else b for b in TD.DataLoader(TS(10), batch_size=bs, num_workers=nw, drop_last=dl)]
    a = [b.tolist() if hasattr(b, "tolist") else b for b in AD.DataLoader(AS(10), batch_size=bs, num_workers=nw, drop_last=dl)]
    print("OK " if t == a else "DIFF", nw, bs, dl, t, a if t != a else "")
