"""aiograd.nn: modules, parameters, initialisation and the functional API, as torch.nn.

Built only on aiograd's public operations; ``await loss.backward()`` trains them.
"""

import importlib as _importlib

from . import functional, init, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .modules import (
    Bilinear,
    CosineSimilarity,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    Embedding,
    Flatten,
    Identity,
    Linear,
    Module,
    PairwiseDistance,
    Sequential,
    Unflatten,
)
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    RMSNorm,
)
from .parameter import Parameter
from . import parallel
from .parallel import DataParallel
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    MaxPool1d,
    MaxPool2d,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "functional", "init", "utils", "Parameter", "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
    "ParameterDict", "Identity", "Linear", "Dropout", "Flatten", "Unflatten", "Embedding",
    "Bilinear", "Dropout1d", "Dropout2d", "Dropout3d", "CosineSimilarity", "PairwiseDistance",
    # activations
    "ReLU", "ReLU6", "SiLU", "Mish", "LeakyReLU", "ELU", "SELU", "CELU", "Hardtanh", "Hardsigmoid", "Hardswish",
    "LogSigmoid", "Softmin", "Softsign", "Tanhshrink", "Threshold", "GLU", "PReLU", "Softplus", "Hardshrink",
    "Softshrink", "Tanh", "Sigmoid", "GELU", "Softmax", "LogSoftmax",
    # convolution, pooling, resampling, padding
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "Upsample", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "AdaptiveAvgPool3d", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
    # normalization
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "GroupNorm",
    "LayerNorm", "RMSNorm",
    # losses
    "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "CrossEntropyLoss",
    "NLLLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
    "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    # attention, transformers
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerDecoder", "Transformer",
    # torch's single-device data parallelism
    "parallel", "DataParallel",
    # recurrent layers
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]

# torch's import paths (``torch.nn.modules.loss``...), imported as torch imports them, so that
# ``aiograd.nn.modules.module.Module`` resolves without an import statement of its own
for _path in ("module", "linear", "loss", "conv", "activation", "batchnorm", "instancenorm", "container", "dropout",
              "normalization", "pooling", "padding", "sparse", "flatten", "distance", "fold", "pixelshuffle",
              "upsampling", "transformer", "utils", "rnn"):
    _importlib.import_module(f"{__name__}.modules.{_path}")
del _path
