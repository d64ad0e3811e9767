"""``torch.nn.modules.activation``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..activation import (
    CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax,
    Mish, PReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmin, Softplus, Softshrink, Softsign, Tanh,
    Tanhshrink, Threshold,
)
from ..transformer import MultiheadAttention

__all__ = [
    "Threshold", "ReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish", "Hardswish",
    "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink",
    "MultiheadAttention", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "LogSoftmax",
]
