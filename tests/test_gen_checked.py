"""The public wrappers are generated, checked-in code (NOTE [Public wrappers] in
aiograd/ops/_common.py): aiograd/ops/_checked.py matches what ``_gen_checked`` renders from
the forwards, and each public op is that code, named and documented as its forward."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import aiograd as ag
import aiograd.nn.functional as F
from aiograd.ops import _checked, _gen_checked
from aiograd.ops._common import WRAPPED, tensor_hint, wrapper_name

PACKAGE = Path(ag.__file__).resolve().parent


def test_the_generated_wrappers_are_up_to_date() -> None:
    assert _gen_checked.is_fresh(), "aiograd/ops/_checked.py is out of date: run `python -m aiograd.ops._stubgen`"


def test_rendering_is_deterministic() -> None:
    assert _gen_checked.render() == _gen_checked.render()


def test_is_fresh_sees_a_changed_check_but_not_a_changed_layout(tmp_path: Path) -> None:
    text = _gen_checked.render()
    path = tmp_path / "_checked.py"
    path.write_text(text.replace("):\n", "):\n\n", 3))  # layout only
    assert _gen_checked.is_fresh(path)
    path.write_text(text.replace('raise operand_error("sum", "input", 1, input)', 'raise operand_error("sum", "x", 1, input)'))
    assert not _gen_checked.is_fresh(path)
    assert not _gen_checked.is_fresh(tmp_path / "missing.py")


def _needs_wrapper(fn: object) -> bool:
    return any(tensor_hint(p.annotation) is not None for p in inspect.signature(fn).parameters.values())  # type: ignore[arg-type]


def test_every_forward_with_a_tensor_parameter_has_its_factory() -> None:
    assert len(WRAPPED) > 300
    needing = {name for name, (fn, _) in WRAPPED.items() if _needs_wrapper(fn)}
    assert needing and all(hasattr(_checked, name) for name in needing)
    # and the module holds nothing else (no factory for a forward that is gone)
    factories = {n.removesuffix("__method") for n, v in vars(_checked).items() if inspect.isfunction(v) and "__" in n}
    assert factories == needing


@pytest.mark.parametrize("public", [ag.sum, ag.matmul, ag.linalg.solve, F.cross_entropy, F.linear, ag.sparse.mm],
                         ids=lambda f: f.__qualname__)
def test_a_public_op_is_the_generated_code_named_as_its_forward(public: object) -> None:
    fn = public.__wrapped__  # type: ignore[attr-defined]
    assert public.__code__.co_filename == str(PACKAGE / "ops" / "_checked.py")  # type: ignore[attr-defined]
    assert (public.__name__, public.__qualname__, public.__module__, public.__doc__) == (  # type: ignore[attr-defined]
        fn.__name__, fn.__qualname__, fn.__module__, fn.__doc__)
    assert inspect.signature(public) == inspect.signature(fn)
    # its own parameter list is the forward's (names, kinds, defaults), not *args/**kwargs
    own = inspect.signature(public, follow_wrapped=False)  # type: ignore[arg-type]
    assert [(p.name, p.kind, p.default) for p in own.parameters.values()] == [
        (p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert wrapper_name(fn) in WRAPPED


def test_the_generated_checks_raise_torch_errors() -> None:
    with pytest.raises(TypeError, match=re.escape("sum(): argument 'input' (position 1) must be Tensor, not str")):
        ag.sum("x")
    a, b = ag.ones(2, 2), ag.ones(2, 2).to("cpu:1")
    with pytest.raises(TypeError, match=re.escape("linear(): argument 'bias' (position 3) must be Tensor, not list")):
        F.linear(a, a, [1.0])
    for call in (lambda: ag.matmul(a, b), lambda: a.matmul(b), lambda: F.linear(a, a, b)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            call()
    assert F.linear(a, a, None).shape == (2, 2)


def test_no_code_is_compiled_from_strings_at_import() -> None:
    """Issue 22: no ``exec``/``compile`` of source strings anywhere in aiograd (the pointwise
    Node classes and the public wrappers are generated, checked-in modules)."""
    allowed: set[object] = set()
    call = re.compile(r"(?<![\w.])(exec|compile)\(")
    found = [
        f"{path.relative_to(PACKAGE)}:{i}"
        for path in sorted(PACKAGE.rglob("*.py")) if path not in allowed
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if call.search(line.split("#", 1)[0]) and not line.lstrip().startswith("def ")
    ]
    assert not found, found
