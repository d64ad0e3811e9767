"""aiograd: reverse-mode automatic differentiation on numpy whose backward pass is an asyncio scheduler.

    import aiograd as ag
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = (x ** 2).sum()
    await loss.backward()
"""

from __future__ import annotations

from .tensor import *  # noqa: F401,F403
from .tensor import Tensor
from ._generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ._random import *  # noqa: F401,F403
from ._torch_names import *  # noqa: F401,F403  (float, long, inf... NOTE [Builtin names])
from ._torch_names import dtype
from ._legacy import *  # noqa: F401,F403
from ._torch_misc import *  # noqa: F401,F403
from .device import Device, device
from .autograd.executors import get_num_threads, get_offload, offload, set_num_threads, set_offload
from .ops import *  # noqa: F401,F403
from .autograd.api import backward, backward_sync, grad, grad_sync
from .autograd import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .autograd.engine import queue_callback, set_time_slice, get_time_slice
from .autograd.function import Function, once_differentiable
from .autograd.checkpoint import checkpoint
from . import functional
from .autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError
from . import autograd, linalg, nn, optim, profiler, return_types, viz
from . import testing
from . import accelerator, backends, cuda  # torch's device queries, answering "CPU only"
from . import utils
from . import serialization
from .serialization import load, save
from . import distributions
from . import sparse
from ._sparse import layout, sparse_coo, strided
from . import amp  # GradScaler / autocast, so mixed-precision training scripts run
from .amp import autocast
from .tensor import __all__ as _tensor_all
from ._random import __all__ as _random_all
from ._torch_names import __all__ as _names_all
from ._legacy import __all__ as _legacy_all
from ._torch_misc import __all__ as _misc_all
from .ops import __all__ as _ops_all

__version__ = "0.1.0"

__all__ = (
    list(_tensor_all)
    + list(_random_all)
    + ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]
    + list(_names_all)
    + list(_legacy_all)
    + list(_misc_all)
    + list(_ops_all)
    + [
        "Device", "device", "backward", "backward_sync", "grad", "grad_sync",
        "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
        "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "queue_callback",
        "set_time_slice", "get_time_slice", "set_offload", "get_offload", "offload", "set_num_threads", "get_num_threads",
        "Function", "once_differentiable", "autograd",
        "checkpoint", "functional", "linalg", "nn", "optim", "profiler", "return_types", "viz",
        "utils",
        "gradcheck", "gradgradcheck", "GradcheckError",
        "testing",
        "save", "load", "serialization",
        "distributions",
        "sparse", "layout", "sparse_coo", "strided",
        "amp", "autocast",
    ]
)
