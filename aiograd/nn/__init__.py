"""aiograd.nn: modules, parameters, initialisation and the functional API, as torch.nn.

Built only on aiograd's public operations; ``await loss.backward()`` trains them.
"""

from . import functional, init
from .modules import (
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    GELU,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    MaxPool2d,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from .parameter import Parameter

__all__ = [
    "functional", "init", "Parameter", "Module", "Sequential", "ModuleList", "Identity", "Linear", "Conv2d",
    "ReLU", "Tanh", "GELU", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "Flatten", "MaxPool2d",
    "Embedding", "LayerNorm", "CrossEntropyLoss", "NLLLoss", "MSELoss",
]
