"""The op tables (aiograd/ops/_table.py): one registration per op gives the function, the Tensor
methods, numpy's dispatch and ``__all__``; the typed stub matches them; a static reader sees every
Tensor member; typed Node constructors (NOTE [Typed nodes])."""

from __future__ import annotations

import gc

import ast
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import aiograd as ag
from aiograd.autograd.graph import Node, Shape
from aiograd.autograd.saved import Saved
from aiograd.ops import _stubgen
from aiograd.ops._table import BINARY_DUNDERS, TABLES, all_ops, tensor_bindings

PACKAGE = Path(ag.__file__).resolve().parent


def test_the_generated_stubs_are_up_to_date() -> None:
    for path, text in _stubgen.outputs().items():
        assert path.read_text() == text, f"{path.name} is out of date: run `python -m aiograd.ops._stubgen`"


def test_a_static_reader_sees_every_public_op() -> None:
    """aiograd/ops/__init__.pyi names the same ops as the package's computed ``__all__``."""
    tree = ast.parse(_stubgen.OPS_STUB_PATH.read_text())
    static_all = next(
        ast.literal_eval(n.value) for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"
    )
    imported = {a.asname for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert sorted(static_all) == sorted(ag.ops.__all__) and imported == set(static_all)


def _static_members() -> set[str]:
    """Tensor's members as a static reader (mypy, an editor) sees them: tensor.py's class body
    and the generated TensorMethods it derives from for type checkers."""
    names: set[str] = set()
    for path, cls in ((PACKAGE / "tensor.py", "Tensor"), (_stubgen.STUB_PATH, "TensorMethods")):
        tree = ast.parse(path.read_text())
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        names.add(t.id)
                        if t.id == "__slots__":
                            names.update(ast.literal_eval(node.value))
    return names


def test_a_static_reader_sees_every_runtime_member_of_tensor() -> None:
    implicit = set(dir(object)) | {"__module__", "__slots__", "__annotations__", "__weakref__", "__dict__", "__slotnames__"}
    runtime = set(dir(ag.Tensor)) - implicit
    unseen = sorted(runtime - _static_members())
    assert unseen == [], f"Tensor members no type checker can see: {unseen}"


def test_every_row_binds_its_tensor_attributes_to_the_registered_function() -> None:
    for op in all_ops():
        for attr in op.tensor_attributes():
            bound = getattr(ag.Tensor, attr)
            if attr in BINARY_DUNDERS or attr in op.reflected:  # a wrapper of the op (NotImplemented, swap)
                assert bound.__name__ == attr and bound is not op.fn
            elif bound is not op.fn:  # the op with its device check (NOTE [One device per op])
                assert bound.__wrapped__ is op.fn, attr
    assert set(tensor_bindings()) <= set(dir(ag.Tensor))
    x = ag.tensor([1.0, 2.0])
    assert (3.0 - x).tolist() == [2.0, 1.0] and (x - 3.0).tolist() == [-2.0, -1.0]


def test_every_exported_op_is_public_under_its_names() -> None:
    for op in all_ops():
        if op.export:
            for name in (op.name, *op.aliases):
                assert getattr(ag, name) is op.public, name  # checked(fn) (NOTE [Operands])
                assert name in ag.__all__, name


def test_public_functions_check_operands_and_methods_skip_the_check() -> None:
    sum_op = next(op for op in all_ops() if op.name == "sum")
    assert sum_op.public is not sum_op.fn and sum_op.public.__wrapped__ is sum_op.fn
    assert ag.Tensor.sum is sum_op.fn
    mm_op = next(op for op in all_ops() if op.name == "mm")
    assert ag.Tensor.mm.__wrapped__ is mm_op.fn  # the device check alone (NOTE [One device per op])
    x = ag.tensor([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.mm(x.T.to("cpu:1"))
    assert x.index_select(1, [1]).tolist() == [[2.0]]  # a method takes what the function refuses by type
    sin_op = next(op for op in all_ops() if op.name == "sin")
    assert sin_op.public is sin_op.fn  # a template's op checks its operand on its slow path
    with pytest.raises(TypeError, match=r"sin\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ag.sin([1.0])


def test_numpy_dispatch_comes_from_the_rows() -> None:
    x = ag.tensor([0.5, 1.5], requires_grad=True)
    y = np.sin(x)  # __array_ufunc__ -> the sin row
    assert isinstance(y, ag.Tensor) and y.grad_fn.name() == "SinBackward0"
    s = np.sum(x * 2)  # __array_function__ -> the sum row
    assert isinstance(s, ag.Tensor) and s.grad_fn.name() == "SumBackward0"
    m = np.max(x)  # an adapter: (np.max, _np_max) on the amax row
    assert m.grad_fn.name() == "AmaxBackward0"


def test_only_the_install_sets_attributes_on_tensor() -> None:
    """No ``setattr(Tensor, ...)``, ``Tensor.x = ...`` or ``globals()[...]`` in the package but in _table.install."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                # serialization.py: NOTE [Torch names in the fast pickler] (the C pickler finds a
                # global only as a module attribute)
                if node.func.id == "globals" and path.name not in ("graph.py", "serialization.py"):
                    offenders.append(f"{path.name}:{node.lineno} globals()")
                if node.func.id == "setattr" and node.args and getattr(node.args[0], "id", "") in ("Tensor", "tensor_cls"):
                    if path.name != "_table.py":
                        offenders.append(f"{path.name}:{node.lineno} setattr on Tensor")
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "Tensor":
                        offenders.append(f"{path.name}:{node.lineno} Tensor.{t.attr} =")
    assert offenders == []


def test_a_tensor_attribute_is_bound_by_one_row_only() -> None:
    owners: dict[str, str] = {}
    for op in all_ops():
        for attr in op.tensor_attributes():
            assert attr not in owners, f"Tensor.{attr}: {owners[attr]} and {op.family}.{op.name}"
            owners[attr] = f"{op.family}.{op.name}"


def test_families_have_one_table_each() -> None:
    families = [t.family for t in TABLES]
    assert len(families) == len(set(families))
    assert set(families) == {
        "pointwise.elementwise", "pointwise.special",
        "reduction.reduce", "reduction.scan", "reduction.sorting",
        "movement.shape", "movement.join", "movement.rearrange", "movement.diagonal",
        "indexing.index", "indexing.scatter", "indexing.search",
        "linalg",
        "nn.activation", "nn.loss", "nn.layers", "nn.conv", "nn.pool", "nn.resample", "nn.pad", "nn.normalization",
        "nn.attention", "nn.recurrent",
        "contract", "convert", "sampling", "sparse", "inplace",
    }


def test_a_family_is_its_module_path() -> None:
    """A table's ``family`` is its module's path under aiograd.ops, which the ops made from formulas and
    the stub generator use as their module (NOTE [Op tables])."""
    for table in TABLES:
        module = f"aiograd.ops.{table.family}"
        assert module in sys.modules, module
        for op in table:
            assert op.fn.__module__ == module or op.fn.__module__.startswith(module + "."), (table.family, op.name)


def test_every_differentiable_row_names_node_classes() -> None:
    for op in all_ops():
        for cls in op.nodes:
            assert issubclass(cls, Node), cls


# ----- typed nodes (NOTE [Typed nodes]) -----------------------------------------------------


class _ScaleBackward0(Node):
    __slots__ = ("x", "factor", "in_shape")
    x: Saved
    factor: float
    in_shape: Shape

    def apply(self, grads):
        return (grads[0] * self.factor,)


class _ScaleBackward1(_ScaleBackward0):
    __slots__ = ("extra",)
    extra: int


def test_a_typed_node_gets_a_constructor_of_its_fields_in_order() -> None:
    node = _ScaleBackward0(None, 2.0, (3,))
    assert (node.x, node.factor, node.in_shape) == (None, 2.0, (3,))
    assert list(inspect.signature(_ScaleBackward0).parameters) == ["x", "factor", "in_shape"]
    child = _ScaleBackward1("s", 1.0, (), 7)
    assert (child.x, child.extra) == ("s", 7)
    assert node.next_edges == [] and node.n_inputs == 0 and node._hooks is None


def test_release_variables_clears_the_saved_fields_only() -> None:
    node = _ScaleBackward1("saved", 2.0, (3,), 1)
    assert node._saves and node._saved_fields == ("x",)
    node.release_variables()
    assert node.x is None and node.factor == 2.0 and node.extra == 1


def test_a_field_missing_from_slots_is_refused_at_class_creation() -> None:
    with pytest.raises(TypeError, match="declares the field 'y' but not in __slots__"):

        class _Bad(Node):
            __slots__ = ("x",)
            x: Saved
            y: int


def test_recorded_ops_keep_only_shape_and_dtype_of_their_output() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x.sin()
    node = y.grad_fn
    assert node.grad_shape == (2,) and node.more_metadata == ()  # graph.py NOTE [Gradient metadata]
    meta = node.input_metadata[0]
    assert meta.shape == (2,) and meta.dtype == np.float32 and meta.device == x.device
    assert y._vc is None  # no version counter until saved, viewed or changed (NOTE [Lazy version counter])
    z = y.cos()  # CosBackward0 saves its input's array, counter and version (NOTE [Saved inputs])
    assert z.grad_fn.saved is y._data and z.grad_fn.counter is y._vc and y._version == 0
    assert z.grad_fn.version is ag.autograd.graph.ZERO_VERSION and not gc.is_tracked(y._vc)
    y[0] = 3.0  # an in-place change makes the counter and moves it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ag.backward_sync(z.sum())


def test_saved_inputs_are_released_after_backward() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    z = (x * x).sin()
    ag.backward_sync(z.sum())
    assert z.grad_fn.saved is None and z.grad_fn.next_functions[0][0].a is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ag.backward_sync(z.sum())


def test_a_pointwise_operator_is_the_op_itself_and_still_defers_to_the_other_operand() -> None:
    # NOTE [Own operator form]: no wrapper between ``a * b`` and the op's body
    assert ag.Tensor.__mul__.__code__ is ag.mul.__code__ and ag.Tensor.__mul__ is not ag.mul
    assert ag.Tensor.__add__.__code__ is ag.add.__code__

    class Other:
        def __rmul__(self, x: object) -> str:
            return "deferred"

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert x * Other() == "deferred"
    with pytest.raises(TypeError, match="argument 'other' \\(position 2\\) must be Tensor, not Other"):
        ag.mul(x, Other())
