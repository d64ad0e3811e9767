"""torch's everyday names (issue 18): dtype aliases, constants, ``Size``, the legacy
constructors and type names, formatting, CUDA/accelerator queries, torch's module
paths, ``Variable``, ``nn.parallel``.

Expected values come from torch (tests/data/torch_names.json, written by
tests/data/make_torch_names.py): each expression there is evaluated with
``T = aiograd`` and compared with torch's answer.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiograd as ag

TORCH = json.loads((Path(__file__).parent / "data" / "torch_names.json").read_text())
NS = {"T": ag, "np": np}


# ----- against torch's answers ---------------------------------------------------------------


@pytest.mark.parametrize("expr", sorted(TORCH["make"]))
def test_tensor_makers_match_torch(expr: str) -> None:
    want = TORCH["make"][expr]
    t = eval(expr, NS)
    assert isinstance(t, ag.Tensor)
    assert t.dtype == np.dtype(want["dtype"]) and list(t.shape) == want["shape"]
    if want["values"] is not None:
        got = np.real(t.numpy()) if t.dtype.kind == "c" else t.numpy()
        np.testing.assert_array_equal(got, np.array(want["values"], dtype=got.dtype))


@pytest.mark.parametrize("expr", sorted(TORCH["values"]))
def test_values_match_torch(expr: str) -> None:
    got = eval(expr, NS)
    got = list(got) if isinstance(got, tuple) else got
    assert got == TORCH["values"][expr]


@pytest.mark.parametrize("expr", sorted(TORCH["raises"]))
def test_errors_match_torch(expr: str) -> None:
    with pytest.raises(Exception) as info:
        eval(expr, NS)
    assert type(info.value).__name__ == TORCH["raises"][expr]


# ----- dtype names and constants -------------------------------------------------------------


def test_dtype_aliases_are_the_same_dtypes() -> None:
    assert ag.float is ag.float32 and ag.double is ag.float64 and ag.half is ag.float16
    assert ag.long is ag.int64 and ag.int is ag.int32 and ag.short is ag.int16 and ag.bool is ag.bool_
    assert ag.cfloat is ag.complex64 and ag.cdouble is ag.complex128
    assert ag.zeros(2).long().dtype == ag.long


def test_constants_are_python_floats() -> None:
    assert (ag.inf, ag.pi, ag.e) == (math.inf, math.pi, math.e)
    assert isinstance(ag.nan, float) and math.isnan(ag.nan)


def test_star_import_binds_torchs_builtin_shadowing_names() -> None:
    ns: dict[str, Any] = {}
    exec("from aiograd import *", ns)
    assert ns["float"] is ag.float32 and ns["long"] is ag.int64


def test_compile_leaves_the_model_as_it_runs() -> None:
    lin = ag.nn.Linear(2, 2)
    assert ag.compile(lin, mode="max-autotune", fullgraph=True) is lin

    @ag.compile(dynamic=True)
    def double(x: ag.Tensor) -> ag.Tensor:
        return x * 2

    assert double(ag.ones(2)).tolist() == [2.0, 2.0]


def test_precision_and_determinism_switches_are_kept() -> None:
    try:
        ag.set_float32_matmul_precision("high")
        ag.use_deterministic_algorithms(True, warn_only=True)
        assert ag.get_float32_matmul_precision() == "high" and ag.are_deterministic_algorithms_enabled()
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            ag.set_float32_matmul_precision("fast")
        assert ag.get_float32_matmul_precision() == "high"
    finally:
        ag.set_float32_matmul_precision("highest")
        ag.use_deterministic_algorithms(False)


# ----- Size -------------------------------------------------------------------------------


def test_size_is_a_tuple_with_numel_and_its_own_slices() -> None:
    s = ag.Size([2, 3, 4])
    assert s.numel() == 24 and s == (2, 3, 4) and hash(s) == hash((2, 3, 4))
    assert isinstance(s[1:], ag.Size) and s[-1] == 4 and isinstance(s[0], int)
    assert repr(s) == "aiograd.Size([2, 3, 4])"
    assert ag.Size(np.array([2, 3])) == (2, 3) and ag.Size([ag.tensor(5)]) == (5,)
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is ag.Size
    assert copy.deepcopy(s) == s


def test_size_refuses_what_is_not_an_int() -> None:
    with pytest.raises(TypeError, match=r"takes an iterable of 'int' \(item 1 is 'float'\)"):
        ag.Size([2, 2.0])


def test_shapes_are_sizes_and_serve_as_sizes() -> None:
    x = ag.randn(2, 3)
    assert isinstance(x.shape, ag.Size) and isinstance(x.size(), ag.Size)
    assert ag.zeros(x.shape).shape == (2, 3) and x.view(ag.Size([3, 2])).shape == (3, 2)
    assert x.new_zeros(x.shape[1:]).shape == (3,)
    assert np.zeros(x.shape).shape == (2, 3)


def test_recording_an_op_never_makes_a_size() -> None:
    # NOTE [Size at the surface]: the per-op path reads _data.shape, not the Size-making property
    import sys

    shape_code = ag.Tensor.shape.fget.__code__  # type: ignore[attr-defined]
    x, y = ag.randn(3, 4, requires_grad=True), ag.randn(4, 4, requires_grad=True)
    reads = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is shape_code:
            reads.append(frame.f_back.f_code.co_name)

    sys.setprofile(profile)
    try:
        out = ag.nn.functional.linear((x * 2 + x).sin() @ y, y).relu().sum()
    finally:
        sys.setprofile(None)
    assert out.grad_fn is not None and reads == []


def test_leaf_metadata_keeps_plain_tuples() -> None:
    # NOTE: the engine's shape checks compare metadata with arrays' shapes (plain tuples)
    x = ag.randn(2, 3, requires_grad=True)
    (x * 2).sum().backward_sync()
    assert x.grad is not None and x.grad.shape == (2, 3)
    meta = x._get_grad_accumulator().input_metadata[0]
    assert type(meta.shape) is tuple


# ----- the legacy constructors -------------------------------------------------------------


def test_tensor_of_a_tensor_shares_its_storage() -> None:
    x = ag.tensor([1, 2])
    y = ag.Tensor(x)
    assert y.dtype == ag.int64 and y is not x
    y[0] = 7
    assert x.tolist() == [7, 2] and x._version == y._version


def test_tensor_follows_the_default_dtype() -> None:
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.Tensor([1, 2]).dtype == ag.float64 and ag.Tensor(2).dtype == ag.float64
    finally:
        ag.set_default_dtype(ag.float32)


def test_tensor_refuses_torchs_refused_forms() -> None:
    with pytest.raises(TypeError, match="data must be a sequence"):
        ag.Tensor(2.5)
    with pytest.raises(TypeError):
        ag.Tensor([1.0], dtype=ag.float64)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ag.Tensor(2, "a")
    with pytest.raises(TypeError, match="expected a tensor of dtype float64, got int64"):
        ag.DoubleTensor(ag.tensor([1, 2]))


def test_typed_classes_check_instances_by_dtype() -> None:
    assert isinstance(ag.zeros(2), ag.FloatTensor) and not isinstance([1.0], ag.FloatTensor)
    assert isinstance(ag.nn.Parameter(ag.zeros(2)), ag.FloatTensor)
    assert ag.FloatTensor.dtype is ag.float32 and repr(ag.LongTensor) == "<class 'aiograd.LongTensor'>"
    assert ag.LongTensor(2, device="cpu").device == ag.device("cpu")


def test_type_casts_and_returns_itself_when_unchanged() -> None:
    x = ag.zeros(2, requires_grad=True)
    assert x.type(ag.float32) is x and x.type("torch.FloatTensor") is x and x.type(ag.FloatTensor) is x
    y = x.type("aiograd.DoubleTensor")
    assert y.dtype == ag.float64 and y.grad_fn is not None  # a differentiable cast, as to()
    assert x.type(np.float64).dtype == ag.float64  # numpy's scalar types serve as dtypes here
    with pytest.raises(ValueError, match="invalid type: 'builtins.list'"):
        x.type(list)
    with pytest.raises(ValueError, match="invalid type: 3"):
        x.type(3)


def test_format_of_zero_dim_tensors_only() -> None:
    loss = ag.tensor([0.5, 0.25]).sum()
    assert f"{loss:.3f}" == "0.750" and f"{loss}" == "0.75"
    assert format(ag.tensor([1.5, 2.0]), "") == repr(ag.tensor([1.5, 2.0]))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(ag.tensor([1.5]), ".2f")


def test_cuda_method_says_what_to_do() -> None:
    with pytest.raises(AssertionError, match="no CUDA devices.*is_available"):
        ag.zeros(2).cuda()


def test_size_keyword_of_creation_functions() -> None:
    assert ag.zeros(size=(2, 3), dtype=ag.long).dtype == ag.long
    assert ag.randn(size=[4], generator=ag.Generator().manual_seed(0)).shape == (4,)
    with pytest.raises(TypeError, match=r"ones\(\) got multiple values for argument 'size'"):
        ag.ones(2, size=(2,))


# ----- cuda, accelerator, backends --------------------------------------------------------------


def test_device_agnostic_code_takes_the_cpu_path() -> None:
    device = "cuda" if ag.cuda.is_available() else "cpu"
    if ag.accelerator.is_available():
        device = ag.accelerator.current_accelerator()
    x = ag.randn(2, device=device)
    assert x.device == ag.device("cpu") and not x.is_cuda
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        ag.accelerator.set_device_index(0)
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        ag.accelerator.empty_cache()


def test_cuda_seeding_leaves_aiogras_generator_alone() -> None:
    ag.manual_seed(3)
    a = ag.rand(3)
    ag.manual_seed(3)
    ag.cuda.manual_seed_all(99)
    ag.cuda.manual_seed(99)
    assert ag.rand(3).tolist() == a.tolist()


def test_backend_flags_are_settable() -> None:
    before = ag.backends.cudnn.benchmark, ag.backends.cuda.matmul.allow_tf32
    try:
        ag.backends.cudnn.benchmark = True
        ag.backends.cuda.matmul.allow_tf32 = True
        assert ag.backends.cudnn.benchmark and ag.backends.cuda.matmul.allow_tf32
    finally:
        ag.backends.cudnn.benchmark, ag.backends.cuda.matmul.allow_tf32 = before
    assert ag.backends.cudnn.version() is None  # type: ignore[func-returns-value]


# ----- modules: torch's paths, cpu/cuda/type, parallel --------------------------------------


def test_torch_module_paths_hold_aiogras_classes() -> None:
    from aiograd.nn.modules.loss import _Loss, _WeightedLoss
    from aiograd.nn.modules.module import Module
    from aiograd.nn.parameter import Parameter

    nn = ag.nn
    assert Module is nn.Module and Parameter is nn.Parameter
    assert issubclass(nn.CrossEntropyLoss, _WeightedLoss) and issubclass(nn.MSELoss, _Loss)
    for path, names in {
        "linear": ["Linear", "Identity", "Bilinear"], "conv": ["Conv1d", "Conv2d", "ConvTranspose2d"],
        "activation": ["ReLU", "GELU", "MultiheadAttention", "Softmax"], "batchnorm": ["BatchNorm1d", "BatchNorm2d"],
        "instancenorm": ["InstanceNorm2d"], "container": ["Sequential", "ModuleList", "ModuleDict"],
        "dropout": ["Dropout", "Dropout2d"], "normalization": ["LayerNorm", "GroupNorm"],
        "pooling": ["MaxPool2d", "AdaptiveAvgPool2d"], "padding": ["ZeroPad2d"], "sparse": ["Embedding"],
        "flatten": ["Flatten"], "distance": ["CosineSimilarity"], "fold": ["Unfold"],
        "pixelshuffle": ["PixelShuffle"], "upsampling": ["Upsample"], "transformer": ["TransformerEncoderLayer"],
        "loss": ["CrossEntropyLoss", "NLLLoss"],
    }.items():
        mod = getattr(nn.modules, path)
        for name in names:
            assert getattr(mod, name) is getattr(nn, name), f"nn.modules.{path}.{name}"
        assert all(getattr(mod, n) is getattr(nn, n) for n in mod.__all__)


def test_nn_modules_utils_argument_helpers() -> None:
    from aiograd.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple

    assert _pair(3) == (3, 3) and _pair([1, 2]) == (1, 2) and _single(2) == (2,)
    assert _triple(1) == (1, 1, 1) and _quadruple(0) == (0,) * 4 and _ntuple(2)("ab") == ("a", "b")


def test_autograd_variable_is_a_tensor() -> None:
    from aiograd.autograd import Function, Variable

    assert Function is ag.Function
    x = ag.ones(2)
    v = Variable(x, requires_grad=True)
    assert isinstance(v, ag.Tensor) and isinstance(x, Variable) and not isinstance([1], Variable)
    assert v.requires_grad and not x.requires_grad and v.is_leaf
    (v * 3).sum().backward_sync()
    assert v.grad is not None and v.grad.tolist() == [3.0, 3.0]
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(x, volatile=True)


def test_module_cpu_cuda_half_and_type() -> None:
    m: Any = ag.nn.Sequential(ag.nn.Linear(2, 3), ag.nn.BatchNorm1d(3))
    assert m.cpu() is m
    with pytest.raises(AssertionError, match="no CUDA devices"):
        m.cuda()
    assert m.half()[0].weight.dtype == ag.float16
    m.type(ag.DoubleTensor)
    assert m[0].weight.dtype == ag.float64 and m[1].num_batches_tracked.dtype == ag.float64  # all, as torch
    m.type("torch.FloatTensor")
    assert m[0].weight.dtype == ag.float32 and m[0].weight.requires_grad


def test_data_parallel_runs_the_module_on_the_whole_batch() -> None:
    lin = ag.nn.Linear(2, 3)
    dp = ag.nn.DataParallel(lin, device_ids=[0, 1])
    assert dp.module is lin and dp.device_ids == [] and ag.nn.parallel.DataParallel is ag.nn.DataParallel
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    x = ag.randn(4, 2)
    want = lin(x).tolist()
    assert dp(x).tolist() == want and dp(input=x).tolist() == want
    assert ag.nn.parallel.data_parallel(lin, x).tolist() == want
    assert ag.nn.parallel.data_parallel(lin, (x,), module_kwargs={}).tolist() == want
    out = dp(x).sum()
    out.backward_sync()
    assert lin.weight.grad is not None


def test_bfloat16_is_a_name_that_says_why_it_cannot_be_used() -> None:
    """numpy has no bfloat16: the name exists so code that lists dtypes runs (nanoGPT's train.py
    on a machine without bf16: ``{'bfloat16': torch.bfloat16, ...}['float16']``), and any use
    as a dtype says why it fails."""
    table = {"float32": ag.float32, "bfloat16": ag.bfloat16, "float16": ag.float16}
    assert table["float16"] == ag.float16 and repr(ag.bfloat16) == "aiograd.bfloat16"
    assert ag.bfloat16.is_floating_point and ag.bfloat16.itemsize == 2
    assert ag.cuda.is_bf16_supported() is False
    for use in (lambda: ag.zeros(2, dtype=ag.bfloat16), lambda: ag.ones(2).to(ag.bfloat16),
                lambda: ag.tensor([1.0], dtype=ag.bfloat16), lambda: ag.ones(2).type(ag.bfloat16)):
        with pytest.raises(TypeError, match="aiograd has no bfloat16: numpy, which holds aiograd's tensors"):
            use()
