"""Write tests/data/torch_names.json: torch's answers for the names tests/test_torch_names.py checks.

Each expression is written once with ``T`` for the library, evaluated here with
``T = torch`` and in the test with ``T = aiograd``. Run with torch installed (the
``bench`` extra): ``python tests/data/make_torch_names.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

T = torch

# expressions that make a tensor: dtype, shape and (for data, not uninitialised memory) values
MAKE = [
    "T.Tensor(3, 4)", "T.Tensor()", "T.Tensor([1, 2])", "T.Tensor([[1.5, 2], [3, 4]])", "T.Tensor((2, 3))",
    "T.Tensor(T.Size([2, 3]))", "T.Tensor(np.array([1, 2]))", "T.Tensor(T.tensor([1, 2]))",
    "T.FloatTensor(2, 3)", "T.FloatTensor([1, 2])", "T.DoubleTensor([1, 2])", "T.HalfTensor([1.5])",
    "T.LongTensor([1, 2])", "T.LongTensor(3)", "T.IntTensor([1.7, -1.7])", "T.ShortTensor([3])",
    "T.CharTensor([-3])", "T.ByteTensor([1, 255])", "T.BoolTensor([1, 0])", "T.LongTensor(T.tensor([4, 5]))",
    "T.zeros(size=(2, 3))", "T.ones(size=[2])", "T.empty(size=(2, 1))", "T.rand(size=(3,))", "T.randn(size=(1, 2))",
    "T.full(size=(2,), fill_value=3.0)", "T.zeros(2).type(T.float64)", "T.zeros(2).type('torch.DoubleTensor')",
    "T.zeros(2).type(T.DoubleTensor)", "T.ones(2).type(T.long)", "T.zeros(2, dtype=T.long).type(T.FloatTensor)",
    "T.arange(3, dtype=T.long)", "T.ones(2, dtype=T.half)", "T.ones(2, dtype=T.int)", "T.ones(2, dtype=T.short)",
    "T.ones(2, dtype=T.bool)", "T.ones(2, dtype=T.double)", "T.ones(2, dtype=T.float)", "T.ones(2, dtype=T.cfloat)",
    "T.ones(2, dtype=T.cdouble)", "T.ones(2, dtype=T.uint8)", "T.zeros(1, dtype=T.double).new(2, 3)",
    "T.zeros(1, dtype=T.long).new([1, 2])", "T.zeros(1).new()", "T.zeros(1, dtype=T.int).new(T.Size([2]))",
]
RANDOM = {
    "T.zeros(1, dtype=T.double).new(2, 3)", "T.zeros(1, dtype=T.int).new(T.Size([2]))", "T.Tensor(3, 4)",
    "T.Tensor(T.Size([2, 3]))", "T.FloatTensor(2, 3)", "T.LongTensor(3)", "T.empty(size=(2, 1))",
    "T.rand(size=(3,))", "T.randn(size=(1, 2))",
}
# expressions that give a plain value (str, bool, number, tuple)
VALUES = [
    "T.zeros(2).type()", "T.zeros(2, dtype=T.float64).type()", "T.zeros(2, dtype=T.float16).type()",
    "T.zeros(2, dtype=T.int64).type()", "T.zeros(2, dtype=T.int32).type()", "T.zeros(2, dtype=T.int16).type()",
    "T.zeros(2, dtype=T.int8).type()", "T.zeros(2, dtype=T.uint8).type()", "T.zeros(2, dtype=T.bool).type()",
    "T.zeros(2, dtype=T.complex64).type()", "T.zeros(2, dtype=T.complex128).type()",
    "isinstance(T.zeros(2), T.FloatTensor)", "isinstance(T.zeros(2), T.LongTensor)",
    "isinstance(T.zeros(2, dtype=T.long), T.LongTensor)", "isinstance(T.zeros(2, dtype=T.bool), T.BoolTensor)",
    "isinstance(T.zeros(2, dtype=T.float64), T.DoubleTensor)", "isinstance(T.zeros(2), T.Tensor)",
    "isinstance(T.FloatTensor([1]), T.Tensor)", "issubclass(T.FloatTensor, T.Tensor)",
    "format(T.tensor(1.5), '+.2f')", "format(T.tensor(-0.25), '.3e')", "format(T.tensor(3), 'd')",
    "format(T.tensor(3), '>4')", "f'{T.tensor(1.5)}'", "format(T.tensor(True), '')",
    "T.zeros(2).is_cuda", "T.inf", "T.pi", "T.e", "str(T.nan)",
    "T.Size([2, 3]).numel()", "T.Size([]).numel()", "T.Size([2, 3]) == (2, 3)", "tuple(T.Size([2, 3])[1:])",
    "isinstance(T.Size([2, 3])[1:], T.Size)", "isinstance(T.Size([2]) + (3,), T.Size)",
    "isinstance((1,) + T.Size([2]), T.Size)", "tuple(T.Size([2]) + (3,))", "isinstance(T.zeros(2, 3).shape, T.Size)",
    "isinstance(T.zeros(2, 3).size(), T.Size)", "T.zeros(2, 3).size(1)", "T.zeros(2, 3).shape.numel()",
    "T.cuda.is_available()", "T.cuda.device_count()", "T.cuda.is_initialized()", "T.cuda.manual_seed(1)",
    "T.cuda.manual_seed_all(1)", "T.cuda.seed()", "T.cuda.seed_all()", "T.cuda.empty_cache()",
    "T.cuda.memory_allocated()", "T.cuda.max_memory_allocated()", "T.cuda.is_bf16_supported()",
    "T.accelerator.is_available()", "T.accelerator.current_accelerator()", "T.accelerator.device_count()",
    "T.backends.mps.is_available()", "T.backends.mps.is_built()", "T.backends.cudnn.is_available()",
    "T.backends.cudnn.benchmark", "T.backends.cudnn.deterministic", "T.backends.cudnn.enabled",
    "T.backends.cuda.matmul.allow_tf32", "T.backends.cuda.is_built()",
    "T.zeros(2, 3).nelement()", "T.zeros(2, 3).ndimension()", "T.zeros(2).is_cpu", "T.zeros(2).get_device()",
    "T.zeros(2, dtype=T.uint8).is_signed()", "T.zeros(2, dtype=T.bool).is_signed()",
    "T.zeros(2, dtype=T.int8).is_signed()", "T.zeros(2).is_complex()", "T.zeros(2, dtype=T.cfloat).is_complex()",
    "T.zeros(2).itemsize", "T.zeros(3, dtype=T.double).nbytes", "T.finfo().eps", "T.finfo(T.half).max",
    "T.finfo(T.double).tiny", "T.finfo(T.float).min", "T.finfo(T.float).bits", "T.iinfo(T.long).max",
    "T.iinfo(T.uint8).min", "T.iinfo(T.int).bits", "isinstance(T.float, T.dtype)", "T.numel(T.zeros(2, 3))",
    "T.is_floating_point(T.zeros(2))", "T.is_floating_point(T.zeros(2, dtype=T.long))", "T.is_complex(T.zeros(2))",
    "T.get_float32_matmul_precision()", "T.are_deterministic_algorithms_enabled()",
]
# expressions that raise: the exception's type
RAISES = [
    "T.Tensor(2.5)", "T.Tensor(-1)", "T.zeros(2).type('torch.Foo')", "T.zeros(2).type('float64')",
    "format(T.tensor([1.5]), '.2f')", "format(T.tensor([1.5, 2]), '.2f')", "T.zeros(2).cuda()",
    "T.Size([2.0])", "T.Size(5)", "T.zeros((2, 3), size=(2,))", "T.cuda.synchronize()", "T.cuda.current_device()",
    "T.cuda.get_device_name()", "T.accelerator.current_device_index()", "T.accelerator.synchronize()",
    "T.nn.Linear(2, 3).cuda()", "T.finfo(T.long)", "T.iinfo(T.float32)", "T.numel([1])", "T.is_floating_point(1.0)",
    "T.zeros(1, dtype=T.double).new(T.zeros(2))",
]

# nn.init: deterministic fills (values) and refusals (type and message)
INIT = [
    "T.nn.init.dirac_(T.empty(4, 2, 3), groups=2)", "T.nn.init.dirac_(T.empty(2, 2, 3, 3))",
    "T.nn.init.dirac_(T.empty(3, 5, 1, 2, 2))", "T.nn.init.dirac_(T.empty(6, 1, 3), groups=3)",
    "T.nn.init.eye_(T.empty(2, 3))", "T.nn.init.eye_(T.empty(3, 2))", "T.nn.init.constant_(T.empty(2, dtype=T.long), 2.7)",
    "T.nn.init.orthogonal_(T.empty(0, 3))", "T.nn.init.zeros_(T.empty(2, 2))", "T.nn.init.ones_(T.empty(3))",
]
INIT_RAISES = [
    "T.nn.init.orthogonal_(T.empty(2))", "T.nn.init.sparse_(T.empty(2, 3, 4), 0.5)",
    "T.nn.init.dirac_(T.empty(2, 2))", "T.nn.init.dirac_(T.empty(5, 2, 3), groups=2)",
    "T.nn.init.eye_(T.empty(2, 2, 2))", "T.nn.init.xavier_uniform_(T.empty(3))",
    "T.nn.init.kaiming_normal_(T.empty(3, 2), mode='fan_x')", "T.nn.init.calculate_gain('foo')",
    "T.nn.init.calculate_gain('leaky_relu', 'x')", "T.nn.init.uniform_(T.empty(2, dtype=T.long))",
    "T.nn.init.normal_(T.empty(2, dtype=T.long))", "T.nn.init.trunc_normal_(T.empty(3), a=0.5, b=0.1)",
]


def plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return list(v)
    return v


def main() -> None:
    ns = {"T": torch, "np": np}
    out: dict[str, Any] = {"make": {}, "values": {}, "raises": {}, "init": {}, "init_raises": {}}
    for expr in MAKE:
        t = eval(expr, ns)
        out["make"][expr] = {
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "values": None if expr in RANDOM else t.real.tolist() if t.is_complex() else t.tolist(),
        }
    for expr in VALUES:
        out["values"][expr] = plain(eval(expr, ns))
    for expr in RAISES:
        try:
            eval(expr, ns)
        except Exception as e:  # noqa: BLE001  (recording which type torch raises)
            out["raises"][expr] = type(e).__name__
        else:
            raise AssertionError(f"{expr} did not raise")
    for expr in INIT:
        out["init"][expr] = {"shape": list((t := eval(expr, ns)).shape), "values": t.tolist()}
    for expr in INIT_RAISES:
        try:
            eval(expr, ns)
        except Exception as e:  # noqa: BLE001
            out["init_raises"][expr] = [type(e).__name__, str(e)]
        else:
            raise AssertionError(f"{expr} did not raise")
    path = Path(__file__).with_name("torch_names.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
