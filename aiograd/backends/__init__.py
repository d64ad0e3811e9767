"""``ag.backends``: torch's backend switches, as a build without CUDA or MPS reports them.

The flags real programs set (``ag.backends.cudnn.benchmark = True``,
``ag.backends.cuda.matmul.allow_tf32 = True``) are kept and change nothing: aiograd
computes with numpy. ``ag.backends.mps.is_available()`` and
``ag.backends.cudnn.is_available()`` are False, so device-agnostic code picks the CPU.
"""

from __future__ import annotations

from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
