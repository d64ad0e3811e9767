"""examples/gpt.py: the tiny GPT trains on standard-library sources and its loss falls."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gpt.py"


def test_gpt_example_trains_and_its_loss_falls(capsys) -> None:
    spec = importlib.util.spec_from_file_location("gpt_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    result = gpt.main(["--steps", "40", "--tiny", "--sample", "40"])
    losses, val = result["losses"], result["val"]
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
    assert val[1] < val[0] - 1.0  # held-out text: from ~ln(vocab) to clearly below
    assert len(result["sample"]) == 8 + 40
    assert "validation loss" in capsys.readouterr().out
