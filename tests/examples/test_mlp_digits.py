"""examples/mlp_digits.py, shortened: tensorsmith's training matches its PyTorch twin step for step (same initial
weights and batches), and the loss plot is written."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the example's twin is PyTorch (pip install '.[examples]')")
pytest.importorskip("sklearn", reason="the example trains on scikit-learn's digits (pip install '.[examples]')")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp_digits.py"


def load_example():
    spec = importlib.util.spec_from_file_location("mlp_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_two_epochs_match_pytorch_step_for_step(tmp_path: Path) -> None:
    example = load_example()
    plot = tmp_path / "loss.png"
    ours, theirs = example.train(epochs=2, quiet=True, plot=plot)
    assert len(ours.losses) == len(theirs.losses) == 2 * 23
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-4)  # float32 rounding, not drift
    assert ours.losses[-1] < 0.7 * ours.losses[0]  # it learns
    assert abs(ours.accuracies[-1] - theirs.accuracies[-1]) <= 1 / 360
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
