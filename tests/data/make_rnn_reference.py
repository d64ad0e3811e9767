"""Regenerate tests/data/rnn_reference.npz from torch (the cases are in tests/rnn_reference.py).

    python tests/data/make_rnn_reference.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rnn_reference  # noqa: E402

if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    rnn_reference.write(torch)
    print(f"wrote {rnn_reference.DATA}")
