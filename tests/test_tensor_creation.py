"""Creation functions (tensor.py): torch's argument forms, and torch's errors for data that is not
a rectangular nest of numbers (never numpy's traceback)."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag


@pytest.mark.parametrize(
    "data, exc, phrase",
    [
        ("abc", TypeError, "invalid data type 'str'"),
        (["a", "b"], TypeError, "invalid data type 'str'"),
        ([1, "a"], TypeError, "invalid data type 'str'"),
        ([[1, 2], [3, "a"]], TypeError, "invalid data type 'str'"),
        (b"ab", TypeError, "invalid data type 'bytes'"),
        ([[1.0, 2.0], [3.0]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
        ([[1.0, 2.0], []], ValueError, r"expected sequence of length 2 at dim 1 \(got 0\)"),
        ([[1, 2], [3, 4, 5]], ValueError, r"expected sequence of length 2 at dim 1 \(got 3\)"),
        ([[[1], [2]], [[3], [4, 5]]], ValueError, r"expected sequence of length 1 at dim 2 \(got 2\)"),
        ([1.0, [2.0, 3.0]], TypeError, "must be real number, not list"),
        ([[1.0, 2.0], 3.0], TypeError, "not a sequence"),
        (None, RuntimeError, "Could not infer dtype of NoneType"),
        ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
        ({1: 2}, RuntimeError, "Could not infer dtype of dict"),
        (object(), RuntimeError, "Could not infer dtype of object"),
        ([1, 2**70], ValueError, "Overflow when unpacking long long"),
        (np.array(["a"]), TypeError, "can't convert np.ndarray of type numpy.str_"),
        (np.array([None]), TypeError, "can't convert np.ndarray of type numpy.object_"),
    ],
)
def test_bad_data_gives_torch_error(data, exc, phrase):
    with pytest.raises(exc, match=phrase):
        ag.tensor(data)
    with pytest.raises(exc, match=phrase):
        ag.as_tensor(data)


def test_good_nests_still_convert():
    assert ag.tensor([[1, 2], (3, 4)]).tolist() == [[1, 2], [3, 4]]
    assert ag.tensor(range(3)).tolist() == [0, 1, 2]
    assert ag.tensor([[], []]).shape == (2, 0)
    assert ag.tensor([True, 2.5]).dtype == np.float32
    assert ag.tensor([ag.tensor(1.0), 2.0]).tolist() == [1.0, 2.0]
    assert ag.tensor([np.ones(2), [1, 2]]).tolist() == [[1.0, 1.0], [1.0, 2.0]]


def test_from_numpy_refuses_non_numeric_arrays():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.str_"):
        ag.from_numpy(np.array(["a"]))


# ----- randint: torch's two forms ------------------------------------------------------------


def test_randint_high_size_form_is_torchs_most_common():
    ag.manual_seed(0)
    x = ag.randint(10, (1000,))
    assert x.shape == (1000,) and x.dtype == np.int64
    assert x.numpy().min() == 0 and x.numpy().max() == 9
    assert ag.randint(10, (2, 3)).shape == (2, 3) and ag.randint(10, [2, 3]).shape == (2, 3)
    assert ag.randint(10, size=(3,)).shape == (3,)
    assert ag.randint(high=10, size=(3,)).shape == (3,)


def test_randint_low_high_size_form():
    ag.manual_seed(0)
    for x in (ag.randint(3, 10, (1000,)), ag.randint(3, 10, size=(1000,)), ag.randint(low=3, high=10, size=(1000,)),
              ag.randint(3, high=10, size=(1000,))):
        assert x.numpy().min() == 3 and x.numpy().max() == 9
    assert ag.randint(10, (3,), dtype=ag.float32).dtype == np.float32
    assert ag.randint(10, (0,)).shape == (0,)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: ag.randint(10), TypeError, "randint\\(\\) missing required argument 'size'"),
        (lambda: ag.randint(10, 3), TypeError, "argument 'size' \\(position 2\\) must be tuple of ints, not int"),
        (lambda: ag.randint(0, (3,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=0 >= to=0"),
        (lambda: ag.randint(10, 3, (3,)), RuntimeError, "but got from=10 >= to=3"),
        (lambda: ag.randint(2.5, (3,)), TypeError, "randint\\(\\): argument 'high' \\(position 1\\) must be int, not float"),
        (lambda: ag.randint(1, 2, 3, (4,)), TypeError, "randint\\(\\) takes from 1 to 3 positional arguments but 4"),
    ],
)
def test_randint_misuse_gives_torch_errors(call, exc, phrase):
    with pytest.raises(exc, match=phrase):
        call()


# ----- issue 13: new_* methods, *_like functions, randperm, randint_like --------------------------


def test_new_methods_take_dtype_and_device_from_self() -> None:
    x = ag.zeros(2, dtype=ag.float64, device="cpu:1")
    for t in (x.new_zeros(2, 3), x.new_ones((2, 3)), x.new_empty(2, 3), x.new_full((2, 3), 7)):
        assert t.shape == (2, 3) and t.dtype == ag.float64 and str(t.device) == "cpu:1" and t.is_leaf
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_ones(1, dtype=ag.int64).dtype == ag.int64
    t = x.new_tensor([1, 2], requires_grad=True)
    assert t.dtype == ag.float64 and t.requires_grad and t.tolist() == [1.0, 2.0]
    assert x.new_zeros(2, device="cpu").device == ag.device("cpu")
    with pytest.raises(TypeError, match="new_full\\(\\): argument 'fill_value' must be a number, not str"):
        x.new_full((2,), "a")


def test_like_functions_follow_their_input() -> None:
    x = ag.arange(6).reshape(2, 3)
    assert ag.full_like(x, 2.7).tolist() == [[2, 2, 2], [2, 2, 2]]  # x's dtype, as torch
    assert ag.full_like(x, 2.5, dtype=ag.float64).dtype == ag.float64
    assert ag.empty_like(x).shape == (2, 3) and ag.empty_like(x).dtype == ag.int64
    r = ag.randint_like(x, 3, 5)
    assert r.dtype == ag.int64 and set(r.numpy().ravel()) <= {3, 4}
    assert ag.randint_like(ag.zeros(4), 2).dtype == ag.float32
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        ag.randint_like(x, 5, 3)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ag.rand_like(x)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ag.randn(2, dtype=ag.int64)


def test_randperm_is_a_permutation_with_torchs_checks() -> None:
    p = ag.randperm(10)
    assert p.dtype == ag.int64 and sorted(p.tolist()) == list(range(10))
    assert ag.randperm(0).shape == (0,) and ag.randperm(4, dtype=ag.float32).dtype == ag.float32
    assert ag.randperm(3, requires_grad=True, dtype=ag.float64).requires_grad
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1: \\[-1\\]"):
        ag.randperm(-1)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        ag.randperm(3000, dtype=ag.float16)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ag.randperm(300, dtype=ag.int8)
