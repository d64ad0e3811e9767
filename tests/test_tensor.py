"""Tensor behaviours that belong to no op: pickling and deep copies (NOTE [Pickled tensors])."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import aiograd as ag


def test_pickling_a_leaf_with_a_grad_keeps_requires_grad_and_drops_the_grad() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == [1.0, 2.0] and y.requires_grad and y.is_leaf
    assert y.grad is None and y.dtype == x.dtype
    (y * 3).sum().backward()  # a working leaf of its own
    assert y.grad.tolist() == [3.0, 3.0] and x.grad.tolist() == [2.0, 2.0]


def test_pickling_a_non_leaf_gives_a_leaf_that_requires_grad() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = pickle.loads(pickle.dumps(x * 3))
    assert y.tolist() == [3.0, 6.0] and y.requires_grad and y.grad_fn is None and y.is_leaf


def test_pickling_keeps_dtype_shape_and_parameters() -> None:
    t = ag.arange(6, dtype=ag.int32).reshape(2, 3).T
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == ag.int32 and u.shape == (3, 2) and u.tolist() == t.tolist() and not u.requires_grad
    p = pickle.loads(pickle.dumps(ag.nn.Parameter(ag.ones(2))))
    assert isinstance(p, ag.nn.Parameter) and p.requires_grad


def test_deepcopy_copies_a_leafs_grad_and_refuses_a_non_leaf() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    z = copy.deepcopy(x)
    assert z.grad.tolist() == [2.0, 2.0] and z.requires_grad
    z.grad.add_(1.0)
    assert x.grad.tolist() == [2.0, 2.0]  # a copy, not a view
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\)"):
        copy.deepcopy(x * 2)
    model = copy.deepcopy(ag.nn.Linear(2, 2))
    assert isinstance(model.weight, ag.nn.Parameter)


def test_new_tensor_sets_every_slot_as_init_tensor_does() -> None:
    # NOTE [One tensor initializer]: new_tensor writes _init_tensor's stores out
    from aiograd.tensor import Tensor, new_tensor

    data = np.zeros(3)
    made = new_tensor(data, ag.device("cpu"))
    wrapped = Tensor._wrap(data, ag.device("cpu"))
    for slot in Tensor.__slots__:
        if slot != "__weakref__":
            assert getattr(made, slot) is getattr(wrapped, slot), slot
