"""Convolution modules, as torch.nn's: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d,
Unfold and Fold, with torch's parameter shapes, initialization, ``padding_mode`` and reprs."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .modules import Module, kaiming_reset, weight_and_bias

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v: Any, n: int) -> tuple[Any, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """What torch's convolution modules share: argument checks, weight (out, in/groups, *k) or, transposed,
    (in, out/groups, *k), kaiming-uniform init, the padding modes, the repr."""

    _nd = 2
    _transposed = False

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
        groups: int, bias: bool, padding_mode: str, output_padding: Any = 0, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, nd)
        self.dilation = _ntuple(dilation, nd)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        if padding_mode != "zeros":  # F.pad's order: last dim first, each (left, right)
            if isinstance(padding, str):
                pads: list[int] = []
                if padding == "same":
                    for d, k in zip(self.dilation, self.kernel_size):
                        total = d * (k - 1)
                        pads = [total // 2, total - total // 2] + pads
                else:
                    pads = [0] * (2 * nd)
            else:
                pads = [int(v) for p in reversed(self.padding) for v in (p, p)]
            self._reversed_padding_repeated_twice = pads
        shape = ((in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups))
        weight_and_bias(self, (*shape, *self.kernel_size), out_channels if bias else None, dtype, device)

    def reset_parameters(self) -> None:
        kaiming_reset(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, input: Tensor, conv: Any) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _Conv(_ConvNd):
    """torch's signature of Conv1d/Conv2d."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device=device, dtype=dtype)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) (or (C, L)) input."""

    _nd = 1

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) (or (C, H, W)) input."""

    _nd = 2

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv2d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
        device: Any = None, dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         output_padding, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (torch's rule), or the module's own."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        lead = 2 if input.ndim == nd + 2 else 1
        size = list(output_size)
        if len(size) == lead + nd:
            size = size[lead:]
        if len(size) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or {lead + nd} elements "
                f"(got {len(output_size)})"
            )
        lo = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d]
              + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(nd)]
        for d in range(nd):
            if not lo[d] <= size[d] <= hi[d]:
                raise ValueError(
                    f"requested an output size of {size}, but valid sizes range from {lo} to {hi} (for an input of "
                    f"torch.Size({list(input.shape[lead:])}))"
                )
        return tuple(size[d] - lo[d] for d in range(nd))

    def _transposed_forward(self, input: Tensor, output_size: Any, conv: Any) -> Tensor:
        op = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The transpose of Conv1d (weight (in, out/groups, k))."""

    _nd = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return self._transposed_forward(input, output_size, F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """The transpose of Conv2d (weight (in, out/groups, kh, kw))."""

    _nd = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return self._transposed_forward(input, output_size, F.conv_transpose2d)


class Unfold(Module):
    """Sliding local blocks of (N, C, H, W) input as columns (N, C*kh*kw, L)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns (N, C*kh*kw, L) summed back into (N, C, *output_size)."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
