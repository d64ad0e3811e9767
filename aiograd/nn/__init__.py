"""aiograd.nn: modules, parameters, initialisation and the functional API, as torch.nn.

Built only on aiograd's public operations; ``await loss.backward()`` trains them.
"""

from . import functional, init, utils
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList
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
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
    Unflatten,
)
from .parameter import Parameter

__all__ = [
    "functional", "init", "utils", "Parameter", "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
    "ParameterDict", "Identity", "Linear", "Conv2d",
    "ReLU", "Tanh", "GELU", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "Flatten", "Unflatten", "MaxPool2d",
    "Embedding", "LayerNorm", "CrossEntropyLoss", "NLLLoss", "MSELoss",
]
