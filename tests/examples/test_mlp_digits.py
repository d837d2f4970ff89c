"""examples/mlp_digits.py, shortened: tensorsmith's training matches its PyTorch twin step for step (same initial
weights and batches), and the loss plot is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.examples import load_example

pytest.importorskip("torch", reason="the example's twin is PyTorch (pip install '.[examples]')")
pytest.importorskip("sklearn", reason="the example trains on scikit-learn's digits (pip install '.[examples]')")


def test_two_epochs_match_pytorch_step_for_step(tmp_path: Path) -> None:
    example = load_example("mlp_digits")
    plot = tmp_path / "loss.png"
    ours, theirs = example.train(epochs=2, quiet=True, plot=plot)
    assert len(ours.losses) == len(theirs.losses) == 2 * 23
    np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-4)  # float32 rounding, not drift
    assert ours.losses[-1] < 0.7 * ours.losses[0]  # it learns
    assert abs(ours.accuracies[-1] - theirs.accuracies[-1]) <= 1 / 360
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
