"""Normalization modules, as torch.nn's: BatchNorm1d/2d/3d (running statistics with
``momentum``, or their cumulative average when ``momentum=None``; ``num_batches_tracked``),
InstanceNorm1d/2d/3d, GroupNorm, LayerNorm and RMSNorm, with torch's parameters, buffers
(state_dict keys) and reprs."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, ones, tensor, zeros
from . import functional as F
from . import init
from .modules import Module, affine_parameters
from .._warn import user_stacklevel

__all__ = [
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "GroupNorm",
    "LayerNorm", "RMSNorm",
]


class _NormBase(Module):
    """What batch and instance norm share: affine weight/bias, running statistics as buffers."""

    _dims: tuple[int, ...] = ()  #: the input dims the module accepts
    _dims_message = ""

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, device: Any = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        affine_parameters(self, (num_features,), affine, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            raise ValueError(f"expected {self._dims_message} input (got {input.ndim}D input)")

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input, self.running_mean if track else None, self.running_var if track else None, self.weight, self.bias,
            bn_training, factor, self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input."""

    _dims = (2, 3)
    _dims_message = "2D or 3D"


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input."""

    _dims = (4,)
    _dims_message = "4D"


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input."""

    _dims = (5,)
    _dims_message = "5D"


class _InstanceNorm(_NormBase):
    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
        track_running_stats: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=affine)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = self._dims[0]
        feature_dim = input.ndim - unbatched
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features ({self.num_features}), but "
                    f"got: {input.shape[feature_dim]}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this warning by not "
                "passing in num_features, which is not used because affine=False",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        x = input.unsqueeze(0) if input.ndim == unbatched else input
        out = F.instance_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if input.ndim == unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) (or (C, L)) input."""

    _dims = (2, 3)
    _dims_message = "2D or 3D"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) (or (C, H, W)) input."""

    _dims = (3, 4)
    _dims_message = "3D or 4D"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) (or (C, D, H, W)) input."""

    _dims = (4, 5)
    _dims_message = "4D or 5D"


class GroupNorm(Module):
    """Normalization over groups of channels (weight ones, bias zeros, one per channel)."""

    def __init__(
        self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device: Any = None,
        dtype: Any = None, *, bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        affine_parameters(self, (num_channels,), affine, bias, dtype)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class _TrailingNorm(Module):
    """A normalization over the trailing ``normalized_shape`` dims, with an elementwise affine map."""

    def __init__(self, normalized_shape: Any, eps: Any, elementwise_affine: bool, bias: bool, dtype: Any) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        affine_parameters(self, self.normalized_shape, elementwise_affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        bias = getattr(self, "bias", None)
        if bias is not None:
            init.zeros_(bias)


class LayerNorm(_TrailingNorm):
    """Layer normalization over the trailing ``normalized_shape`` dims (weight ones, bias zeros)."""

    def __init__(
        self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, bias, dtype)
        if device is not None:
            self.to(device)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(_TrailingNorm):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims (weight ones;
    ``eps=None``: the dtype's machine epsilon)."""

    def __init__(
        self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True, device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, False, dtype)
        del self._parameters["bias"]  # torch's RMSNorm has no bias entry at all
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
