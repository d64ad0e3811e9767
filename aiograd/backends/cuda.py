"""``ag.backends.cuda``: not built; ``matmul``'s precision flags may be set and change nothing."""

from __future__ import annotations

__all__ = ["is_built", "matmul", "MatmulFlags"]


class MatmulFlags:
    """The flags of ``ag.backends.cuda.matmul`` (TF32 and reduced-precision reductions), kept as set."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = MatmulFlags()


def is_built() -> bool:
    """False: aiograd has no CUDA."""
    return False
