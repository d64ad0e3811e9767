"""``aiograd.nn.parallel``: torch's data-parallel wrappers, in their single-device form.

aiograd has no CUDA devices to split a batch across, so ``DataParallel`` runs its
module on the whole batch, as torch's ``DataParallel`` does on a machine without
GPUs. Wrapping still changes what torch code sees: the wrapped module is
``.module`` and its ``state_dict`` keys start with ``module.``.
"""

from __future__ import annotations

from typing import Any, Sequence

from .modules import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Runs ``module`` on its inputs (one device: the batch is not split).

    ``device_ids`` and ``output_device`` are accepted for torch's signature and kept
    empty / None, as torch keeps them when it finds no GPU.
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[Any] = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    """``module(*inputs, **module_kwargs)`` (``inputs``: a tuple of arguments, or one tensor).

    torch's function raises without GPUs; here it is the one-device case, run in place.
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
