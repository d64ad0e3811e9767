"""aiograd.nn.functional and aiograd.nn modules against torch's results, case by case
(tests/nn_reference.py: each case is written once and run on both libraries; torch's
outputs and gradients are stored in tests/data/nn_reference.npz)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from nn_reference import CASES, DATA, Namespace, inputs, upstream

_REFERENCE = dict(np.load(DATA))
_NS = Namespace(F, nn, ag.float64, lambda a, rg: ag.tensor(a, requires_grad=rg), {})


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name: str) -> None:
    case = CASES[name]
    want = {k[len(name) + 1:]: v for k, v in _REFERENCE.items() if k.startswith(name + "/")}
    arrays = inputs(name, case)
    grad = case.grad if case.grad is not None else tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    ts = [_NS.tensor(a, i in grad) for i, a in enumerate(arrays)]
    params: list[tuple[str, Any]] = []
    if case.module is not None:
        m = case.module(_NS)
        m.load_state_dict({k[len("state/"):]: v for k, v in want.items() if k.startswith("state/")})
        params = list(m.named_parameters())
        res = case.run(_NS, m, *ts)
    else:
        res = case.run(_NS, *ts)
    extra = res[1:] if isinstance(res, tuple) else ()
    y = res[0] if isinstance(res, tuple) else res
    np.testing.assert_allclose(y.detach().numpy(), want["out"], rtol=1e-7, atol=case.atol)
    for j, r in enumerate(extra, 1):
        np.testing.assert_array_equal(r.numpy(), want[f"out{j}"])
    wrt = [ts[i] for i in grad] + [p for _, p in params]
    g = ag.tensor(upstream(name, tuple(y.shape)))
    gs = ag.grad(y, wrt, g, allow_unused=True, materialize_grads=True)
    for i, gi in zip(grad, gs):
        np.testing.assert_allclose(gi.numpy(), want[f"grad{i}"], rtol=1e-6, atol=1e-9, err_msg=f"input {i}")
    for (pname, _), gp in zip(params, gs[len(grad):]):
        np.testing.assert_allclose(gp.numpy(), want[f"pgrad/{pname}"], rtol=1e-6, atol=1e-9, err_msg=pname)
