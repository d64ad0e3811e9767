"""Arguments that are not tensors (NOTE [Operands] in ops/_common.py): torch's TypeError, in the
user's terms, from one check that every op shares; never a numpy traceback or an internal
AttributeError."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as F

x = ag.tensor([1.0, 2.0, 3.0])

FUNCTIONS = [
    (lambda: ag.exp("a"), "exp(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: ag.exp(None), "exp(): argument 'input' (position 1) must be Tensor, not NoneType"),
    (lambda: ag.relu([1.0]), "relu(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ag.sum([1.0, 2.0]), "sum(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ag.mean(None), "mean(): argument 'input' (position 1) must be Tensor, not NoneType"),
    (lambda: ag.reshape("ab", (2,)), "reshape(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: ag.softmax("a", 0), "softmax(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: ag.matmul(x, None), "matmul(): argument 'other' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.matmul(x, [1.0, 2.0, 3.0]), "matmul(): argument 'other' (position 2) must be Tensor, not list"),
    (lambda: x.matmul(None), "matmul(): argument 'other' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.add(x, "a"), "add(): argument 'other' (position 2) must be Tensor, not str"),
    (lambda: ag.add("a", x), "add(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: ag.add(None, 2.0), "add(): argument 'input' (position 1) must be Tensor, not NoneType"),
    (lambda: ag.mul(x, object()), "mul(): argument 'other' (position 2) must be Tensor, not object"),
    (lambda: ag.div(x, [1.0]), "div(): argument 'other' (position 2) must be Tensor, not list"),
    (lambda: ag.floor_divide(x, "a"), "floor_divide(): argument 'other' (position 2) must be Tensor, not str"),
    (lambda: ag.remainder(x, None), "remainder(): argument 'other' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.pow(x, None), "pow(): argument 'exponent' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.maximum(x, "a"), "maximum(): argument 'other' (position 2) must be Tensor, not str"),
    (lambda: ag.eq(x, None), "eq(): argument 'other' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.logical_and(x, "a"), "logical_and(): argument 'other' (position 2) must be Tensor, not str"),
    (lambda: ag.where(x > 0, x, "a"), "where(): argument 'other' (position 3) must be Tensor, not str"),
    (lambda: ag.where("a", x, x), "where(): argument 'condition' (position 1) must be Tensor, not str"),
    (lambda: ag.clamp(x, "a"), "clamp(): argument 'min' (position 2) must be Tensor, not str"),
    (lambda: ag.clamp_max(x, None), "clamp_max(): argument 'max' (position 2) must be Tensor, not NoneType"),
    (lambda: ag.add(x, np.array(["a"])), "add(): argument 'other' (position 2) must be Tensor, not ndarray of dtype <U1"),
    (lambda: x.add(None), "add(): argument 'other' (position 2) must be Tensor, not NoneType"),
    (lambda: x.add_("a"), "add_(): argument 'other' (position 1) must be Tensor, not str"),
    (lambda: x.mul_(None), "mul_(): argument 'other' (position 1) must be Tensor, not NoneType"),
    (lambda: x.clamp_(min="a"), "clamp_(): argument 'min' (position 1) must be Tensor, not str"),
    (lambda: ag.cat([x, "a"]), "expected Tensor as element 1 in argument 0, but got str"),
    (lambda: ag.stack([x, None]), "expected Tensor as element 1 in argument 0, but got NoneType"),
    (lambda: F.relu("a"), "relu(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: F.linear(x, None), "linear(): argument 'weight' (position 2) must be Tensor, not NoneType"),
    (lambda: F.cross_entropy(x[None], [0]), "cross_entropy(): argument 'target' (position 2) must be Tensor, not list"),
    (lambda: F.mse_loss(x, 1.0), "mse_loss(): argument 'target' (position 2) must be Tensor, not float"),
]


@pytest.mark.parametrize("call, message", FUNCTIONS, ids=[m.split("(")[0] + str(i) for i, (_, m) in enumerate(FUNCTIONS)])
def test_a_non_tensor_argument_gives_torchs_type_error(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


OPERATORS = [
    (lambda: x + "a", "unsupported operand type(s) for +: 'Tensor' and 'str'"),
    (lambda: x - None, "unsupported operand type(s) for -: 'Tensor' and 'NoneType'"),
    (lambda: None * x, "unsupported operand type(s) for *: 'NoneType' and 'Tensor'"),
    (lambda: x / [1.0], "unsupported operand type(s) for /: 'Tensor' and 'list'"),
    (lambda: x // "a", "unsupported operand type(s) for //: 'Tensor' and 'str'"),
    (lambda: x % None, "unsupported operand type(s) for %: 'Tensor' and 'NoneType'"),
    (lambda: x ** "a", "unsupported operand type(s) for ** or pow(): 'Tensor' and 'str'"),
    (lambda: x @ None, "unsupported operand type(s) for @: 'Tensor' and 'NoneType'"),
    (lambda: "a" @ x, "unsupported operand type(s) for @: 'str' and 'Tensor'"),
    (lambda: x & "a", "unsupported operand type(s) for &: 'Tensor' and 'str'"),
    (lambda: x < "a", "'<' not supported between instances of 'Tensor' and 'str'"),
    (lambda: x >= None, "'>=' not supported between instances of 'Tensor' and 'NoneType'"),
]


@pytest.mark.parametrize("call, message", OPERATORS, ids=[m.split(":")[0][-3:] for _, m in OPERATORS])
def test_an_operator_with_a_non_operand_gives_pythons_type_error(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_in_place_operator_with_a_non_operand_gives_pythons_type_error():
    y = ag.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+=: 'Tensor' and 'str'"):
        y += "a"
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for //=: 'Tensor' and 'NoneType'"):
        y //= None
    assert y.tolist() == [1.0, 2.0]


def test_equality_with_a_non_operand_is_false_as_in_torch():
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert (x == "a") is False
    assert x not in [None, "a"]


def test_numpy_operands_and_numbers_still_work():
    assert (x + np.ones(3)).tolist() == [2.0, 3.0, 4.0]
    assert (np.ones(3) + x).tolist() == [2.0, 3.0, 4.0]
    assert ag.add(2, x).tolist() == [3.0, 4.0, 5.0]
    assert (x @ np.ones(3, np.float32)).item() == 6.0
    assert (x + np.float32(1)).tolist() == [2.0, 3.0, 4.0]
    assert ag.where(np.array([True, False, True]), x, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert (x * True).tolist() == [1.0, 2.0, 3.0]


def test_public_functions_keep_their_name_doc_and_signature():
    import inspect

    assert ag.exp.__name__ == "exp" and ag.exp.__doc__
    assert list(inspect.signature(ag.sum).parameters)[:2] == ["input", "dim"]
    assert ag.sum(x, dim=0, keepdim=True).shape == (1,)
    assert ag.softmax(x, 0).shape == (3,) and F.softmax(x, dim=0).shape == (3,)


def test_where_with_shapes_that_do_not_broadcast_names_them():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"):
        ag.where(ag.tensor([True, False]), ag.ones(3), ag.zeros(3))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton dimension 1"):
        ag.where(ag.tensor([True, False, True]), ag.ones(2, 3), ag.zeros(2, 2))
    assert ag.where(ag.tensor([True, False, True]), ag.ones(2, 3), ag.zeros(2, 1)).shape == (2, 3)


# ----- the same rule for tensor-like and integer arguments of other ops ---------------------------

m = ag.tensor([[1.0, 2.0], [3.0, 4.0]])

OTHER_ARGUMENTS = [
    (lambda: m.mm(None), TypeError, "mm(): argument 'mat2' (position 2) must be Tensor, not NoneType"),
    (lambda: m.bmm("a"), TypeError, "bmm(): argument 'mat2' (position 2) must be Tensor, not str"),
    (lambda: m[0].dot("a"), TypeError, "dot(): argument 'tensor' (position 2) must be Tensor, not str"),
    (lambda: m.clone().copy_(None), TypeError, "copy_(): argument 'src' (position 1) must be Tensor, not NoneType"),
    (lambda: m.clone().fill_("a"), TypeError, "fill_(): argument 'value' (position 1) must be Tensor, not str"),
    (lambda: m.masked_fill(m > 1, "a"), TypeError, "masked_fill(): argument 'value' (position 3) must be Tensor, not str"),
    (lambda: m.clone().__setitem__(0, "a"), TypeError, "can't assign a str to a tensor of dtype float32"),
    (lambda: m.clone().__setitem__(0, [1.0, "a"]), TypeError, "invalid data type 'str'"),
    (lambda: m.scatter(0, ag.tensor([[0, 1]]), "a"), TypeError, "can't assign a str to a tensor of dtype float32"),
    (lambda: ag.zeros_like("a"), TypeError, "zeros_like(): argument 'input' (position 1) must be Tensor, not str"),
    (lambda: ag.randn_like(None), TypeError, "randn_like(): argument 'input' (position 1) must be Tensor, not NoneType"),
    (lambda: ag.full((2,), "a"), TypeError, "full(): argument 'fill_value' must be a number, not str"),
    (lambda: m.view(2.5, 2), TypeError, "view(): argument 'shape' must be tuple of ints, but found element of type float at pos 0"),
    (lambda: m.reshape(None), TypeError, "reshape(): argument 'shape' must be tuple of ints, but found element of type NoneType"),
    (lambda: m.expand("a"), TypeError, "expand(): argument 'size' must be tuple of ints, but found element of type str"),
    (lambda: m.permute(0, 1.0), TypeError, "permute(): argument 'dims' must be tuple of ints, but found element of type float at pos 1"),
    (lambda: m.repeat("a"), TypeError, "repeat(): argument 'repeats' must be tuple of ints"),
    (lambda: m.flip("a"), TypeError, "flip(): argument 'dims' must be tuple of ints"),
    (lambda: m.transpose("a", 0), TypeError, "dim must be an int, not str"),
    (lambda: m.unsqueeze(None), TypeError, "dim must be an int, not NoneType"),
    (lambda: ag.softmax(m, "a"), TypeError, "dim must be an int, not str"),
    (lambda: m.split("a"), TypeError, "split_size must be an int, not str"),
    (lambda: m.chunk("a"), TypeError, "chunks must be an int, not str"),
    (lambda: ag.layer_norm(m, "a"), TypeError, "layer_norm(): argument 'normalized_shape' must be tuple of ints"),
]


@pytest.mark.parametrize("call, exc, phrase", OTHER_ARGUMENTS, ids=[p.split("(")[0][:20] for _, _, p in OTHER_ARGUMENTS])
def test_other_misused_arguments_give_a_clear_error(call, exc, phrase):
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)


def test_a_float_size_is_never_truncated():
    with pytest.raises(TypeError, match="must be tuple of ints"):
        ag.zeros(2).view(2.5)  # int(2.5) == 2 would have made this "work"
    assert ag.zeros(2, 3).view(np.int64(3), 2).shape == (3, 2)
    assert ag.zeros(2, 3).transpose(np.int64(0), 1).shape == (3, 2)
