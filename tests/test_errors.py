"""Misuse gives torch's error (DESIGN.md §1 wording), and the engine works afterwards."""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag


def _x() -> ag.Tensor:
    return ag.tensor([1.0, 2.0], requires_grad=True)


async def _engine_still_works() -> None:
    x = _x()
    await (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


async def test_backward_twice() -> None:
    x = _x()
    y = (x.sin() * x).sum()
    await y.backward()
    before = x.grad.tolist()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time \(or directly access saved tensors"):
        await y.backward()
    assert x.grad.tolist() == before
    await _engine_still_works()


async def test_grad_twice() -> None:
    x = _x()
    y = (x.exp()).sum()
    await ag.grad(y, [x])
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        await ag.grad(y, [x])
    await _engine_still_works()


async def test_non_scalar_without_gradient() -> None:
    x = _x()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        await (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        await ag.grad(x * 2, [x])
    assert x.grad is None
    await _engine_still_works()


async def test_no_grad_fn() -> None:
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        await ag.tensor([1.0]).sum().backward()
    x = _x()
    with ag.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        await y.backward()
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        await ag.backward([(x * 2).sum(), ag.tensor(1.0)])
    assert x.grad is None
    await _engine_still_works()


async def test_unused_input_without_allow_unused() -> None:
    x, unused = _x(), ag.tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in the graph"):
        await ag.grad((x * 2).sum(), [x, unused])
    await _engine_still_works()


async def test_input_that_does_not_require_grad() -> None:
    x = _x()
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        await ag.grad((x * 2).sum(), [ag.tensor([1.0])])
    await _engine_still_works()


async def test_hook_returning_a_wrong_shape() -> None:
    x = _x()
    y = x * 2
    y.register_hook(lambda g: ag.ones(3))
    with pytest.raises(RuntimeError, match=r"hook .*returned a gradient of shape \[3\] but expected shape \[2\]"):
        await y.sum().backward()
    assert x.grad is None
    await _engine_still_works()


async def test_leaf_hook_returning_a_wrong_shape() -> None:
    x = _x()
    x.register_hook(lambda g: ag.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"expected shape \[2\]"):
        await (x * 2).sum().backward()
    assert x.grad is None


async def test_invalid_gradient_shape_from_a_custom_function() -> None:
    class MyFn(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ag.ones(3)

    x = _x()
    with pytest.raises(
        RuntimeError,
        match=r"Function MyFnBackward returned an invalid gradient at index 0 - got \[3\] but expected shape compatible with \[2\]",
    ):
        await MyFn.apply(x).sum().backward()
    assert x.grad is None
    await _engine_still_works()


async def test_wrong_number_of_gradients_from_a_custom_function() -> None:
    class TwoGrads(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        await TwoGrads.apply(_x()).sum().backward()
    await _engine_still_works()


async def test_wrong_gradient_argument_shape() -> None:
    x = _x()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \[3\]"):
        await (x * 2).backward(ag.ones(3))
    with pytest.raises(RuntimeError, match="grad_tensors should have the same length as tensors"):
        await ag.backward([(x * 2).sum()], [None, None])
    await _engine_still_works()


def test_requires_grad_on_int_tensor() -> None:
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ag.tensor([1, 2], requires_grad=True)
    t = ag.tensor([1, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad_()
    assert not t.requires_grad


def test_requires_grad_false_on_non_leaf() -> None:
    y = _x() * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_queue_callback_outside_backward() -> None:
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        ag.queue_callback(lambda: None)


async def test_queue_callback_outside_backward_in_async_code() -> None:
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        ag.queue_callback(lambda: None)
    await _engine_still_works()


async def test_inference_mode_tensors_do_not_record() -> None:
    x = _x()
    with ag.inference_mode():
        y = (x * 2).sum()
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        await y.backward()
    await _engine_still_works()


async def test_hook_on_tensor_without_grad() -> None:
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ag.tensor([1.0]).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (_x() * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ag.tensor([1.0]).retain_grad()


def test_numpy_on_tensor_that_requires_grad() -> None:
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        _x().numpy()


def test_assigning_a_grad_of_the_wrong_shape_or_type() -> None:
    x = _x()
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ag.ones(3)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor"):
        x.grad = np.ones(2)


async def test_empty_inputs_for_backward() -> None:
    x = _x()
    with pytest.raises(RuntimeError, match="'inputs' argument to backward\\(\\) cannot be empty"):
        await (x * 2).sum().backward(inputs=[])
    await _engine_still_works()


async def test_inplace_modification_of_a_saved_tensor() -> None:
    class SaveIt(ag.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a

    base = ag.tensor([1.0, 2.0], requires_grad=True)
    x = base * 1
    y = SaveIt.apply(x).sum()
    x._bump_version()  # what an in-place op does
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified by an inplace operation"):
        await y.backward()
    assert base.grad is None
    await _engine_still_works()


async def test_backward_sync_inside_a_running_loop() -> None:
    y = (_x() * 2).sum()
    with pytest.raises(RuntimeError, match="cannot run inside a running event loop"):
        y.backward_sync()
    await _engine_still_works()
