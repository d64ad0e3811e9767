"""aiograd.distributed._wire: the tensor table, arrays as out-of-band frames, never a graph."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.distributed._wire import encode

pytestmark = pytest.mark.distributed


def test_tensors_travel_as_numpy_buffers_not_graphs() -> None:
    x = ag.randn(256, 256, dtype=ag.float64, requires_grad=True)
    y = (x * 2.0).tanh()
    payload, crossing = encode((y, [y, 3], {"k": x}), with_grad=True)
    assert crossing == [y, x]  # in table order, each once
    big = [f for f in payload.frames if memoryview(f).nbytes >= y._data.nbytes]
    assert len(big) == 2 and np.shares_memory(np.frombuffer(big[0], dtype=np.float64), y._data)
    assert b"TanhBackward" not in bytes(payload.frames[0])  # no graph in the pickle
    (a, (b, _), d), received = payload.decode()
    assert a is b and received == [a, d["k"]]
    assert a.grad_fn is None and not a.requires_grad  # attached by the receiver's RecvRpcBackward only
    np.testing.assert_array_equal(a.numpy(), y.detach().numpy())


def test_parameters_stay_parameters_and_arrays_arrive_writeable() -> None:
    p = ag.nn.Parameter(ag.tensor([1.0, 2.0]))
    payload, crossing = encode([p, np.arange(3.0)], with_grad=False)
    assert crossing == []
    (q, arr), received = payload.decode()
    assert isinstance(q, ag.nn.Parameter) and q.requires_grad and q.grad_fn is None and received == []
    assert q._data.flags.writeable and arr.flags.writeable


def test_outside_autograd_a_tensor_arrives_as_a_fresh_leaf_keeping_requires_grad() -> None:
    # NOTE [Pickled tensors]: as pickle does, both ways; the graph and .grad stay behind.
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    x.grad = ag.ones(2)
    frozen = ag.nn.Parameter(ag.tensor([3.0]), requires_grad=False)
    payload, crossing = encode((x, x * 2.0, ag.tensor([1.0]), frozen), with_grad=False)
    assert crossing == []
    (a, b, c, d), _ = payload.decode()
    assert a.requires_grad and a.is_leaf and a.grad is None
    assert b.requires_grad and b.is_leaf and b.grad_fn is None
    assert not c.requires_grad
    assert isinstance(d, ag.nn.Parameter) and not d.requires_grad


def test_small_values_travel_inline_and_large_ones_as_frames() -> None:
    from distributed.protocol import Serialize

    from aiograd.distributed._wire import INLINE_BYTES, from_wire, to_wire

    small, _ = encode(ag.ones(4), with_grad=False)
    big, _ = encode(ag.ones(INLINE_BYTES // 4 + 1), with_grad=False)
    assert isinstance(to_wire(small), bytes)  # one frame: the small array is inside the pickle
    assert isinstance(to_wire(big), Serialize)
    t, _ = from_wire(to_wire(small)).decode()
    np.testing.assert_array_equal(t.numpy(), np.ones(4, np.float32))


def test_functions_by_value_stay_by_value_with_the_by_reference_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE [By-reference cache]: a function first sent by reference, then registered to travel
    # by value, travels by value: a cached "by reference" answer does not outlive the change.
    import importlib

    import cloudpickle

    (tmp_path / "aiograd_wire_cache_probe.py").write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("aiograd_wire_cache_probe")
    try:
        by_ref, _ = encode(module.f, with_grad=False)
        assert b"aiograd_wire_cache_probe" in bytes(by_ref.frames[0]) and b"return" not in bytes(by_ref.frames[0])
        cloudpickle.register_pickle_by_value(module)
        try:
            by_value, _ = encode(module.f, with_grad=False)
        finally:
            cloudpickle.unregister_pickle_by_value(module)
        del sys.modules["aiograd_wire_cache_probe"]
        monkeypatch.syspath_prepend(str(tmp_path / "nowhere"))
        (tmp_path / "aiograd_wire_cache_probe.py").unlink()  # unimportable now: only a by-value pickle loads
        importlib.invalidate_caches()
        g, _ = by_value.decode()
        assert g(1) == 2
    finally:
        sys.modules.pop("aiograd_wire_cache_probe", None)


@pytest.mark.parametrize("arr", [
    np.arange(12.0).reshape(3, 4), np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)),
    np.arange(20.0)[::3], np.array(2.5), np.zeros((0, 3), np.float32), np.array([True, False]),
    np.array([1 + 2j], np.complex64), np.arange(6, dtype=">i2").reshape(2, 3),
], ids=["c", "fortran", "strided", "0d", "empty", "bool", "complex", "big-endian"])
def test_small_arrays_travel_inside_the_pickle_with_dtype_shape_and_order(arr: np.ndarray) -> None:
    # NOTE [Small arrays]: no frame of their own, rebuilt writable, one array for two tensors.
    t = ag.tensor(arr)
    payload, _ = encode((t, t.detach(), arr), with_grad=False)
    assert len(payload.frames) == 1
    (a, b, c), _ = payload.decode()
    for got in (a._data, c):
        assert got.dtype == arr.dtype and got.shape == arr.shape and got.flags.writeable
        np.testing.assert_array_equal(got, arr)
    for got, sent in ((a._data, t._data), (c, arr)):  # the memory order too, as numpy's pickling keeps it
        fortran = [x.flags.f_contiguous and not x.flags.c_contiguous for x in (got, sent)]
        assert fortran[0] == fortran[1] and (got.flags.c_contiguous or got.flags.f_contiguous)
    assert (b._data is a._data) == (t.detach()._data is t._data)


# ----- NOTE [Functions pickled once] ------------------------------------------------------------

_PROBE = '''
SCALE = 2
ITEMS = [1]


def scaled(x):
    return x * SCALE


def counted(x):
    return x + len(ITEMS)


def assigns(x):
    global SCALE
    SCALE = x
    return x


def closes_over(k):
    def add(x):
        return x + k
    return add
'''


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A module registered to travel by value (as ``__main__``'s functions do)."""
    import importlib

    import cloudpickle

    (tmp_path / "aiograd_wire_once_probe.py").write_text(_PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("aiograd_wire_once_probe")
    cloudpickle.register_pickle_by_value(module)
    yield module
    cloudpickle.unregister_pickle_by_value(module)
    sys.modules.pop("aiograd_wire_once_probe", None)


def _roundtrip(value: Any) -> Any:
    payload, _ = encode(value, with_grad=False)
    return payload.decode()[0]


def test_a_function_reading_constants_is_pickled_once_and_unpickled_once(probe: Any) -> None:
    from aiograd.distributed import _wire

    f = probe.scaled
    first, second = _roundtrip(f), _roundtrip(f)
    assert first is second and first is not f and first(3) == 6
    assert _wire._pickled_functions[id(f)].fn is f
    assert bytes(encode(f, with_grad=False)[0].frames[0]) == bytes(encode(f, with_grad=False)[0].frames[0])


def test_a_rebound_global_or_default_is_pickled_afresh(probe: Any) -> None:
    f = probe.scaled
    before = _roundtrip(f)
    probe.SCALE = 5
    after = _roundtrip(f)
    assert after is not before and (before(1), after(1)) == (2, 5)
    f.__defaults__ = (7,)
    assert _roundtrip(f)() == 35


def test_functions_reading_mutable_state_or_assigning_globals_travel_afresh_each_call(probe: Any) -> None:
    from aiograd.distributed import _wire

    counted, assigns = probe.counted, probe.assigns
    first = _roundtrip(counted)
    probe.ITEMS.append(2)  # the same list, changed in place
    second = _roundtrip(counted)
    assert first is not second and (first(0), second(0)) == (1, 2)
    assert id(counted) not in _wire._pickled_functions and id(assigns) not in _wire._pickled_functions
    assert _roundtrip(assigns) is not _roundtrip(assigns)  # NOTE [Functions sent by value]: fresh globals


def test_closures_over_constants_are_kept_and_over_objects_are_not(probe: Any) -> None:
    from aiograd.distributed import _wire

    add2, add_list = probe.closes_over(2), probe.closes_over([1])
    assert _roundtrip(add2) is _roundtrip(add2) and _roundtrip(add2)(1) == 3
    assert id(add_list) not in _wire._pickled_functions and _roundtrip(add_list)([0]) == [0, 1]


def test_functions_by_reference_are_not_affected(probe: Any) -> None:
    from aiograd.distributed._agent import natural_key

    payload, _ = encode(natural_key, with_grad=False)
    assert b"_rebuild" not in bytes(payload.frames[0]) and b"natural_key" in bytes(payload.frames[0])
    assert payload.decode()[0] is natural_key


# ----- NOTE [One pickler per thread] ----------------------------------------------------------------


class _SendsWhilePickled:
    """An object whose pickling encodes another message (the thread's pickler is busy then)."""

    def __reduce__(self) -> Any:
        inner, _ = encode(ag.tensor([5.0]), with_grad=False)
        return (_SendsWhilePickled._rebuilt, (bytes(inner.frames[0]),))

    @staticmethod
    def _rebuilt(frames0: bytes) -> float:
        from aiograd.distributed._wire import Payload

        return float(Payload([frames0]).decode()[0].numpy()[0])


def test_the_threads_pickler_keeps_nothing_of_a_message_and_nests() -> None:
    import gc
    import weakref

    from aiograd.distributed import _wire

    x = ag.randn(4096, dtype=ag.float64, requires_grad=True)  # an out-of-band frame
    gone = weakref.ref(x)
    payload, crossing = encode((x, x), with_grad=True)
    assert crossing == [x]
    (a, b), _ = payload.decode()
    assert a is b
    p = _wire._picklers.pickler
    assert not p.busy and p.crossing == [] and p.rrefs == [] and p.buffers == [] and p.file.getvalue() == b""
    del x, payload, crossing, a, b
    gc.collect()
    assert gone() is None  # the kept pickler holds no tensor of a past message
    (t, got), _ = encode((ag.tensor([1.0]), _SendsWhilePickled()), with_grad=False)[0].decode()
    assert got == 5.0 and t.numpy().tolist() == [1.0] and _wire._picklers.pickler is p


def test_a_structured_array_keeps_its_fields() -> None:
    # NOTE [Small arrays]: a dtype's string form would drop the fields; numpy's own pickling keeps them.
    arr = np.zeros(2, dtype=[("a", "<f4"), ("b", "<i2")])
    arr["b"] = [3, 4]
    got = _roundtrip(arr)
    assert got.dtype == arr.dtype and got["b"].tolist() == [3, 4]
