"""aiograd.nn's recurrent layers (aiograd/nn/rnn.py, aiograd/ops/recurrent.py) and aiograd.nn.utils.rnn.

Values and gradients against torch's (tests/data/rnn_reference.npz, written by
tests/data/make_rnn_reference.py from the cases in tests/rnn_reference.py), parameter names,
gradcheck and gradgradcheck of the fused op over its argument combinations, packed sequences,
torch's error messages, and the graph shape (one node per layer and direction).
"""

from __future__ import annotations

import copy
import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
from aiograd.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)
from aiograd.ops.nn.recurrent import rnn_layer
from helpers import check_grads
import rnn_reference as R

CASES, RESULTS = R.load()


def _state(case: dict[str, Any]) -> dict[str, np.ndarray]:
    res = RESULTS[case["name"]]
    return {k[3:]: v for k, v in res.items() if k.startswith("sd:")}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_layer_matches_torch(case: dict[str, Any]) -> None:
    """Outputs, final states and every gradient equal torch's, from torch's weights loaded as numpy arrays."""
    expected = RESULTS[case["name"]]
    got = R.run(ag, case, _state(case))
    want = {k: v for k, v in expected.items() if not k.startswith("sd:")}
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].shape == v.shape, k
        np.testing.assert_allclose(got[k], v, rtol=1e-9, atol=1e-10, err_msg=k)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_state_dict_keys_are_torchs(case: dict[str, Any]) -> None:
    module = getattr(nn, case["cls"])(R.I, R.H, **case["kwargs"])
    assert list(module.state_dict()) == case["state_keys"]
    for k, v in _state(case).items():
        assert tuple(module.state_dict()[k].shape) == v.shape


def test_pad_and_pack_utils_match_torch() -> None:
    expected = RESULTS["utils"]
    got = R.utils_results(ag)
    assert sorted(got) == sorted(expected)
    for k, v in expected.items():
        np.testing.assert_allclose(np.asarray(got[k], dtype=np.float64), v, atol=1e-12, err_msg=k)


# ----- gradcheck / gradgradcheck of the fused op ------------------------------------------------------

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _op_combos() -> list[tuple[str, bool, bool, bool, bool]]:
    out = []
    for mode, packed, reverse, bias in itertools.product(_GATES, (False, True), (False, True), (True, False)):
        for proj in ((False, True) if mode == "LSTM" else (False,)):
            if not bias and (packed or reverse):
                continue
            out.append((mode, packed, reverse, bias, proj))
    return out


@pytest.mark.parametrize("mode,packed,reverse,bias,proj", _op_combos())
def test_rnn_layer_gradcheck_and_gradgradcheck(mode: str, packed: bool, reverse: bool, bias: bool, proj: bool) -> None:
    """First derivatives from the numpy backward through time, second ones from the differentiable
    recompute (NOTE [Backward through time]), both against finite differences in float64."""
    rng = np.random.default_rng(len(mode) * 16 + packed * 8 + reverse * 4 + bias * 2 + proj)

    def t(*shape: int) -> ag.Tensor:
        return ag.tensor(rng.standard_normal(shape) * 0.6, dtype=ag.float64, requires_grad=True)

    steps, batch, size_in, hidden, p = 3, 2, 2, 2, 1
    g = _GATES[mode]
    hout = p if proj else hidden
    x = t(5, size_in) if packed else t(steps, batch, size_in)
    batch_sizes = np.array([2, 2, 1]) if packed else None
    args: list[Any] = [x, t(batch, hout), t(batch, hidden) if mode == "LSTM" else None, t(g * hidden, size_in),
                       t(g * hidden, hout), t(g * hidden) if bias else None, t(g * hidden) if bias else None,
                       t(p, hidden) if proj else None]
    given = [i for i, a in enumerate(args) if a is not None]

    def fn(*ts: ag.Tensor) -> tuple[ag.Tensor, ...]:
        full = list(args)
        for i, v in zip(given, ts):
            full[i] = v
        out, h, c = rnn_layer(*full, mode=mode, reverse=reverse, batch_sizes=batch_sizes)
        return (out, h) if c is None else (out, h, c)

    check_grads(fn, [args[i] for i in given])


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_module_gradgradcheck_two_layers_bidirectional_packed(cls: str) -> None:
    """Through the module: two layers, both directions, a packed batch of unsorted lengths."""
    ag.manual_seed(0)
    kwargs: dict[str, Any] = {"proj_size": 1} if cls == "LSTM" else {}
    module = getattr(nn, cls)(2, 2, num_layers=2, bidirectional=True, **kwargs).double()
    params = list(module.parameters())
    x = ag.tensor(np.random.default_rng(0).standard_normal((3, 2, 2)), requires_grad=True)

    def fn(x: ag.Tensor, w0: ag.Tensor, w1: ag.Tensor) -> ag.Tensor:
        module._parameters["weight_ih_l0"] = w0
        module._parameters["weight_hh_l1_reverse"] = w1
        out, _ = module(pack_padded_sequence(x, [2, 3], enforce_sorted=False))
        return pad_packed_sequence(out)[0]

    check_grads(fn, [x, params[0], module.weight_hh_l1_reverse])


# ----- graph shape -------------------------------------------------------------------------------------


def _node_names(t: ag.Tensor) -> list[str]:
    seen: set[int] = set()
    names = []
    stack = [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.append(n.name())
        stack.extend(f for f, _ in n.next_functions)
    return names


@pytest.mark.parametrize("cls,node", [("RNN", "RnnTanhBackward0"), ("LSTM", "LstmBackward0"), ("GRU", "GruBackward0")])
def test_one_node_per_layer_and_direction(cls: str, node: str) -> None:
    module = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True)
    out, _ = module(ag.randn(35, 2, 3))
    names = _node_names(out)
    assert names.count(node) == 4
    ops = [n for n in names if n != "AccumulateGrad"]
    assert len(ops) == 4 + 2  # the four layer-directions and, per layer, the cat of its two directions


def test_relu_node_name() -> None:
    out, _ = nn.RNN(2, 3, nonlinearity="relu")(ag.randn(4, 1, 2))
    assert out.grad_fn is not None and "RnnReluBackward0" in _node_names(out)


def test_backward_twice_without_retain_graph_fails() -> None:
    out, _ = nn.LSTM(2, 3)(ag.randn(4, 1, 2))
    loss = out.sum()
    loss.backward_sync(retain_graph=True)
    loss.backward_sync()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward_sync()


def test_no_grad_records_nothing() -> None:
    module = nn.GRU(2, 3)
    with ag.no_grad():
        out, h = module(ag.randn(4, 1, 2))
    assert out.grad_fn is None and not out.requires_grad and h.grad_fn is None


# ----- module surface ------------------------------------------------------------------------------------


def test_parameter_names_and_flat_weights() -> None:
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    names = ["weight_ih_l{}{}", "weight_hh_l{}{}", "bias_ih_l{}{}", "bias_hh_l{}{}", "weight_hr_l{}{}"]
    expected = [n.format(layer, suffix) for layer in range(2) for suffix in ("", "_reverse") for n in names]
    assert m._flat_weights_names == expected
    assert [n for n, _ in m.named_parameters()] == expected
    assert [w is getattr(m, n) for w, n in zip(m._flat_weights, expected)] == [True] * len(expected)
    assert len(m.all_weights) == 4 and all(len(ws) == 5 for ws in m.all_weights)
    assert m.all_weights[1][0] is m.weight_ih_l0_reverse
    assert tuple(m.weight_ih_l1.shape) == (16, 4) and tuple(m.weight_hh_l0.shape) == (16, 2)
    assert tuple(m.weight_hr_l0.shape) == (2, 4)
    m.flatten_parameters()  # a no-op, as torch's on CPU


def test_initialization_is_uniform_in_one_over_sqrt_hidden() -> None:
    ag.manual_seed(3)
    m = nn.GRU(5, 16, num_layers=2)
    bound = 1 / 4
    for p in m.parameters():
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound
        assert a.std() > bound / 3  # actually drawn
    ag.manual_seed(3)
    m2 = nn.GRU(5, 16, num_layers=2)
    assert all(np.array_equal(a.detach().numpy(), b.detach().numpy()) for a, b in zip(m.parameters(), m2.parameters()))


def test_repr_as_torch() -> None:
    assert repr(nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2, dropout=0.5, batch_first=True,
                        bias=False)) == ("LSTM(3, 4, proj_size=2, num_layers=2, bias=False, batch_first=True, "
                                         "dropout=0.5, bidirectional=True)")
    assert repr(nn.RNN(3, 4)) == "RNN(3, 4)"
    assert repr(nn.GRU(3, 4, dropout=0.25, num_layers=2)) == "GRU(3, 4, num_layers=2, dropout=0.25)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu", bias=False)) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"


def test_dropout_warning_and_training_mode() -> None:
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got dropout=0.5 "
                                         "and num_layers=1"):
        nn.LSTM(3, 4, dropout=0.5)
    ag.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    plain = nn.LSTM(3, 4, num_layers=2)
    plain.load_state_dict(m.state_dict())
    x = ag.randn(5, 2, 3)
    m.eval()
    np.testing.assert_allclose(m(x)[0].detach().numpy(), plain(x)[0].detach().numpy())
    m.train()
    assert not np.allclose(m(x)[0].detach().numpy(), plain(x)[0].detach().numpy())
    out, _ = m(x)
    assert "NativeDropoutBackward0" in _node_names(out) or len(_node_names(out)) > 2


def test_deepcopy_and_double() -> None:
    m = nn.GRU(2, 3, num_layers=2).double()
    c = copy.deepcopy(m)
    x = ag.randn(4, 1, 2, dtype=ag.float64)
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), c(x)[0].detach().numpy())
    assert c(x)[0].dtype == ag.float64


@pytest.mark.parametrize("make,call,error,message", [
    (lambda: nn.LSTM(3, 4, num_layers=2), lambda m: m(ag.zeros(5, 2, 3), (ag.zeros(2, 3, 4), ag.zeros(2, 2, 4))),
     RuntimeError, r"Expected hidden[0] size (2, 2, 4), got [2, 3, 4]"),
    (lambda: nn.LSTM(3, 4, num_layers=2), lambda m: m(ag.zeros(5, 2, 3), (ag.zeros(2, 2, 4), ag.zeros(1, 2, 4))),
     RuntimeError, r"Expected hidden[1] size (2, 2, 4), got [1, 2, 4]"),
    (lambda: nn.LSTM(3, 4), lambda m: m(ag.zeros(5, 2, 2)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 3, got 2"),
    (lambda: nn.LSTM(3, 4), lambda m: m(ag.zeros(5, 2, 3, 1)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: nn.LSTM(3, 4), lambda m: m(ag.zeros(5, 3), (ag.zeros(1, 1, 4), ag.zeros(1, 1, 4))), RuntimeError,
     "For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D) tensors"),
    (lambda: nn.GRU(3, 4), lambda m: m(ag.zeros(5, 2, 3), ag.zeros(1, 3, 4)), RuntimeError,
     "Expected hidden size (1, 2, 4), got [1, 3, 4]"),
    (lambda: nn.GRU(3, 4), lambda m: m(ag.zeros(5, 3), ag.zeros(1, 1, 4)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: nn.RNN(3, 4), lambda m: m(ag.zeros(5, 2, 3), ag.zeros(1, 4)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda: nn.RNN(3, 4), lambda m: m(ag.zeros(5, 2, 3, 3)), ValueError,
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    (lambda: nn.LSTM(3, 4), lambda m: m(ag.zeros(5, 2, 3, dtype=ag.float64)), ValueError,
     "RNN input dtype (float64) does not match weight dtype (float32)"),
    (lambda: nn.LSTMCell(3, 4), lambda m: m(ag.zeros(2, 2, 3)), ValueError,
     "LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: nn.GRUCell(3, 4), lambda m: m(ag.zeros(2, 3), ag.zeros(1, 2, 4)), ValueError,
     "GRUCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda: nn.RNNCell(3, 4), lambda m: m(ag.zeros(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 3"),
    (lambda: nn.RNNCell(10, 20, "relu"), lambda m: m(ag.zeros(3, 10), ag.zeros(3, 21)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 21, expected 20"),
    (lambda: nn.GRUCell(10, 20), lambda m: m(ag.zeros(3, 10), ag.zeros(5, 20)), RuntimeError,
     "Input batch size 3 doesn't match hidden0 batch size 5"),
    (lambda: nn.GRUCell(10, 20), lambda m: m(ag.zeros(3, 10), ag.zeros(20)), RuntimeError,
     "Input batch size 3 doesn't match hidden0 batch size 20"),
    (lambda: nn.LSTMCell(10, 20), lambda m: m(ag.zeros(3, 10), (ag.zeros(3, 20), ag.zeros(3, 21))), RuntimeError,
     "hidden1 has inconsistent hidden_size: got 21, expected 20"),
    (lambda: nn.LSTMCell(10, 20), lambda m: m(ag.zeros(3, 10), (ag.zeros(5, 20), ag.zeros(5, 20))), RuntimeError,
     "Input batch size 3 doesn't match hidden0 batch size 5"),
    (lambda: nn.LSTMCell(10, 20), lambda m: m(ag.zeros(3, 10), (ag.zeros(3, 1, 1, 20), ag.zeros(3, 1, 1, 20))),
     ValueError, "LSTMCell: Expected hx[0] to be 1D or 2D, got 4D instead"),
])
def test_forward_errors_as_torch(make: Any, call: Any, error: type[Exception], message: str) -> None:
    m = make()
    with pytest.raises(error) as info:
        call(m)
    assert message in str(info.value)


@pytest.mark.parametrize("make,error,message", [
    (lambda: nn.RNN(3, 4, proj_size=2), ValueError, "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: nn.RNN(3, 4, nonlinearity="gelu"), ValueError,
     "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: nn.LSTM(3, 4, proj_size=-1), ValueError, "proj_size should be a positive integer or zero"),
    (lambda: nn.LSTM(3, 4, dropout=2), ValueError, "dropout should be a number in range [0, 1]"),
    (lambda: nn.LSTM(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(0, 3), ValueError, "input_size must be greater than zero"),
    (lambda: nn.LSTM(3, 4, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(3, 4.0), TypeError, "hidden_size should be of type int, got: float"),
    (lambda: nn.LSTM(3, 4, bias=1), TypeError, "bias should be of type bool, got: int"),
])
def test_construction_errors_as_torch(make: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert message in str(info.value)


def test_rnn_nonlinearity_as_fourth_positional_argument() -> None:
    m = nn.RNN(3, 4, 2, "relu")
    assert m.nonlinearity == "relu" and m.num_layers == 2 and m.mode == "RNN_RELU"


# ----- packed sequences -----------------------------------------------------------------------------------


def test_packed_output_is_packed_and_equals_per_sequence_runs() -> None:
    """A packed batch gives each sequence what running it alone gives (its own length, no padding)."""
    ag.manual_seed(1)
    m = nn.LSTM(2, 3, num_layers=2, bidirectional=True).double()
    rng = np.random.default_rng(0)
    seqs = [ag.tensor(rng.standard_normal((n, 2))) for n in (3, 5, 1)]
    out, (h, c) = m(pack_sequence(seqs, enforce_sorted=False))
    assert isinstance(out, PackedSequence)
    assert out.batch_sizes.tolist() == [3, 2, 2, 1, 1]
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    assert lengths.tolist() == [3, 5, 1]
    for b, s in enumerate(seqs):
        alone, (ha, ca) = m(s)
        np.testing.assert_allclose(padded[b, :s.shape[0]].detach().numpy(), alone.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(h[:, b].detach().numpy(), ha.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(c[:, b].detach().numpy(), ca.detach().numpy(), atol=1e-12)
        np.testing.assert_array_equal(padded[b, s.shape[0]:].detach().numpy(), 0.0)


def test_packed_sequence_forms_and_conversions() -> None:
    data, bs = ag.randn(4, 2), ag.tensor([2, 1, 1])
    p = PackedSequence(data, bs)
    assert p.sorted_indices is None and p.unsorted_indices is None
    q = PackedSequence((data, bs))
    assert q.data is data and q.batch_sizes is bs
    r = PackedSequence(data, bs, ag.tensor([1, 0]))
    assert r.unsorted_indices is not None and r.unsorted_indices.tolist() == [1, 0]
    d = p.double()
    assert d.data.dtype == ag.float64 and d.batch_sizes is bs
    assert p.to(ag.float32) is p and not p.is_cuda
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")


def test_pack_errors_as_torch() -> None:
    x = ag.zeros(3, 2, 1)
    with pytest.raises(RuntimeError,
                       match="`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [1, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [2, 0])
    with pytest.raises(RuntimeError,
                       match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 \(batch_size=2\)"):
        pack_padded_sequence(x, [2, 2, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest sequence"):
        pad_packed_sequence(pack_sequence([ag.zeros(3, 1)]), total_length=2)


def test_unpad_and_unpack_round_trip() -> None:
    seqs = [ag.randn(n, 2) for n in (2, 4, 1)]
    for a, b in zip(unpack_sequence(pack_sequence(seqs, enforce_sorted=False)), seqs):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    padded = pad_sequence(seqs, batch_first=True)
    for a, b in zip(unpad_sequence(padded, ag.tensor([2, 4, 1]), batch_first=True), seqs):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_nn_utils_rnn_is_reachable_as_in_torch() -> None:
    assert nn.utils.rnn.pad_sequence is pad_sequence
    assert callable(nn.utils.clip_grad_norm_)


# ----- cells ----------------------------------------------------------------------------------------------


def test_cell_equals_one_step_of_the_layer() -> None:
    ag.manual_seed(0)
    layer = nn.GRU(3, 4).double()
    cell = nn.GRUCell(3, 4).double()
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = ag.randn(1, 2, 3, dtype=ag.float64)
    h = ag.randn(1, 2, 4, dtype=ag.float64)
    np.testing.assert_allclose(cell(x[0], h[0]).detach().numpy(), layer(x, h)[1][0].detach().numpy(), atol=1e-14)


async def test_lstm_backward_on_the_loop() -> None:
    m = nn.LSTM(3, 4, num_layers=2)
    out, (h, c) = m(ag.randn(6, 2, 3))
    await (out.sum() + c.sum()).backward()
    assert all(p.grad is not None for p in m.parameters())


def test_warnings_are_not_raised_by_a_plain_run() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.2)(ag.randn(2, 1, 3))
