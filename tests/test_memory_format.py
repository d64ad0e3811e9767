"""Memory formats (aiograd/_memory_format.py, and clone/contiguous/to/the casts/the *_like functions
that take them): the layouts torch gives (compared by strides with values computed with torch),
is_contiguous per format, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag


def strides(t: ag.Tensor) -> tuple[int, ...]:
    return tuple(s // t._data.itemsize for s in t._data.strides)


def _x4() -> ag.Tensor:
    return ag.tensor(np.arange(120.0).reshape(2, 3, 4, 5))


# (what to copy, how) -> the strides torch 2.13 gives
LAYOUTS = [
    (lambda x: x.permute(0, 2, 3, 1).clone(), (60, 5, 1, 20)),  # preserve_format keeps the dim order
    (lambda x: x[:, :, ::2].clone(), (30, 10, 5, 1)),
    (lambda x: x.transpose(0, 1)[:, :, ::2].clone(), (10, 30, 5, 1)),
    (lambda x: x.contiguous(memory_format=ag.channels_last), (60, 1, 15, 3)),
    (lambda x: ag.zeros_like(x.contiguous(memory_format=ag.channels_last)), (60, 1, 15, 3)),
    (lambda x: x.contiguous(memory_format=ag.channels_last).double(), (60, 1, 15, 3)),
    (lambda x: ag.empty_like(x.transpose(0, 1)), (20, 60, 5, 1)),
    (lambda x: x.transpose(0, 1).clone(memory_format=ag.contiguous_format), (40, 20, 5, 1)),
    (lambda x: x.transpose(0, 1).to(ag.float32, memory_format=ag.contiguous_format), (40, 20, 5, 1)),
    (lambda x: ag.rand_like(x, memory_format=ag.channels_last), (60, 1, 15, 3)),
]


@pytest.mark.parametrize("make, want", LAYOUTS)
def test_copies_are_laid_out_as_torch_lays_them_out(make, want) -> None:
    y = make(_x4())
    assert strides(y) == want


def test_values_never_depend_on_the_layout() -> None:
    x = _x4()
    cl = x.contiguous(memory_format=ag.channels_last)
    assert cl.tolist() == x.tolist() and not cl.is_contiguous() and cl.is_contiguous(memory_format=ag.channels_last)
    assert cl.contiguous().is_contiguous() and cl.contiguous().tolist() == x.tolist()
    assert x.contiguous(memory_format=ag.channels_last) is not x and cl.contiguous(memory_format=ag.channels_last) is cl
    assert ag.full_like(cl, 2.0).is_contiguous(memory_format=ag.channels_last)
    m = ag.tensor(np.arange(6.0).reshape(2, 3))
    assert not m.t().clone().is_contiguous()  # preserved, so view(-1) fails as in torch
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        m.t().clone().view(-1)
    c3 = ag.zeros(2, 3, 4, 5, 6).contiguous(memory_format=ag.channels_last_3d)
    assert c3.is_contiguous(memory_format=ag.channels_last_3d) and strides(c3) == (360, 1, 90, 18, 3)


def test_to_returns_the_input_unless_something_changes() -> None:
    x = _x4()
    assert x.to(ag.float64) is x and x.to(memory_format=ag.preserve_format) is x
    assert x.to(memory_format=ag.contiguous_format) is x
    assert x.to(memory_format=ag.channels_last) is not x  # a new layout is a change (as torch)
    t = ag.zeros(2, 3).t()
    assert t.to(ag.float32, memory_format=ag.contiguous_format) is t  # torch keeps a 2-d tensor as it is
    w = ag.zeros(2, 3, 4, 5, requires_grad=True)
    assert w.to(memory_format=ag.channels_last).grad_fn.name() == "ToCopyBackward0"
    assert w.contiguous(memory_format=ag.channels_last).grad_fn.name() == "CloneBackward0"
    assert w.clone(memory_format=ag.channels_last).grad_fn.name() == "CloneBackward0"


def test_casts_take_memory_format() -> None:
    x = _x4()
    for cast in ("float", "double", "half", "long", "int", "short", "char", "byte", "bool"):
        y = getattr(x, cast)(memory_format=ag.channels_last)
        assert y.is_contiguous(memory_format=ag.channels_last), cast
    assert x.short().dtype == ag.int16 and x.char().dtype == ag.int8 and x.byte().dtype == ag.uint8
    assert x.cfloat().dtype == np.complex64 and x.cdouble().dtype == np.complex128


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.zeros(2, 3).contiguous(memory_format=ag.channels_last), RuntimeError,
         "required rank 4 tensor to use channels_last format"),
        (lambda: ag.zeros(2, 3).clone(memory_format=ag.channels_last_3d), RuntimeError,
         "required rank 5 tensor to use channels_last_3d format"),
        (lambda: ag.zeros(2, 3).to(memory_format=ag.channels_last), RuntimeError,
         "required rank 4 tensor to use channels_last format"),
        (lambda: ag.zeros_like(ag.zeros(2), memory_format=ag.channels_last), RuntimeError,
         "required rank 4 tensor to use channels_last format"),
        (lambda: ag.zeros(2, 3).t().contiguous(memory_format=ag.preserve_format), RuntimeError,
         "preserve memory format is unsupported by the contiguous operator"),
        (lambda: ag.zeros(2).clone(memory_format="channels_last"), TypeError, "memory_format must be a memory_format"),
    ],
)
def test_misuse_gives_torch_errors(call, exc, phrase) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)


def test_format_values_read_as_torchs() -> None:
    assert repr(ag.channels_last) == "aiograd.channels_last"
    assert isinstance(ag.contiguous_format, ag.memory_format)
    assert ag.zeros(2, 1, 1, 3).is_contiguous(memory_format=ag.channels_last)  # size-1 dims are free, as torch
