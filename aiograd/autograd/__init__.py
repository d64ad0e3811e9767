"""The autograd package: ``backward`` and ``grad`` (awaitable) and their blocking twins, grad
mode and anomaly detection, custom ``Function``\\ s and the legacy ``Variable``.

The functions are defined in ``api.py`` (they check the user's arguments and hand the
pass to the engine); this module names them and binds them on first use (NOTE [Layers]).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from . import grad_mode
from .grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)

if TYPE_CHECKING:
    from .api import Gradients, backward, backward_sync, grad, grad_sync, run_backward, run_grad
    from .function import Function, once_differentiable
    from .variable import Variable

__all__ = [
    "backward",
    "grad",
    "backward_sync",
    "grad_sync",
    "grad_mode",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "Function",
    "once_differentiable",
    "Variable",
]

# NOTE [Layers]: the core modules form layers, and a module imports only from its own layer
# or the ones below it, without a cycle (tests/test_layout.py checks every import statement,
# those inside functions too, TYPE_CHECKING blocks aside):
#
#   leaves        _dtypes, device, _size, _aio, _sparse, _memory_format, _optional,
#                 autograd.grad_mode, autograd.backward_call
#   graph         autograd.graph (Node, Edge, AccumulateGrad, VersionCounter, hooks; it
#                 never names Tensor)
#                 and this package's __init__
#   Tensor        tensor.py
#   above Tensor  autograd.saved, autograd.accumulate, autograd.variable, _generator
#                 (Generator.get_state makes a Tensor), _random (rand, randn...)
#   the engine    autograd.ready_queue, monitor, background, blas_threads, executors, engine,
#                 function
#   front end     autograd.api (backward, grad and their blocking twins)
#
# The ops, and checkpoint, functional and gradcheck (which use them), come above all these.
# Two edges go up, both bound late and both inherent:
#
# - This package. Python runs a package's __init__ before any module in it, so tensor.py's
#   first import from aiograd.autograd runs this file while tensor.py is half made: it
#   imports only leaves at its top. The front end, ``Function`` and ``Variable`` (all
#   above Tensor) are named in ``_LATE`` and imported by ``__getattr__`` on first use.
#   ``Tensor.backward`` reaches the front end the same way (``_autograd.run_backward`` in
#   tensor.py), as torch's Tensor.backward calls torch.autograd.backward: a method of a
#   lower layer that starts the upper one. The lookup costs about a microsecond per
#   backward call (never per op).
# - ``AccumulateGrad.apply`` in graph.py imports autograd.accumulate inside the
#   function: a leaf's node is made by Tensor, so it sits below it, while adding into
#   ``.grad`` makes Tensors. The engine never calls it (it stages leaf gradients).
#
# No other import in these modules crosses a layer.
_LATE = {  # name: the module that defines it
    name: f"{__name__}.{module}"
    for module, names in (
        ("api", ("backward", "grad", "backward_sync", "grad_sync", "run_backward", "run_grad", "Gradients")),
        ("function", ("Function", "once_differentiable")),
        ("variable", ("Variable",)),
    )
    for name in names
}


def __getattr__(name: str) -> Any:
    module = _LATE.get(name)
    if module is not None:  # (Tensor.backward comes here: sys.modules first, importlib the first time)
        return getattr(sys.modules.get(module) or importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
