"""``torch.nn.modules.transformer``, the import path torch code uses: the same classes as ``aiograd.nn``."""

from __future__ import annotations

from ..transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)

__all__ = [
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]
