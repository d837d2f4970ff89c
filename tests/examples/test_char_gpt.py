"""examples/char_gpt.py, shortened: the loss of each step within 1 % of the PyTorch twin's (same weights, same
batches), a text sample drawn, the loss plot written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples import load_example

pytest.importorskip("torch", reason="the example's twin is PyTorch (pip install '.[examples]')")


def test_thirty_steps_track_pytorch_within_one_percent(tmp_path: Path) -> None:
    example = load_example("char_gpt")
    plot = tmp_path / "gpt.png"
    ours, theirs, text = example.train(steps=30, quiet=True, plot=plot, sample=40)
    assert len(ours.losses) == len(theirs.losses) == 30
    gaps = [abs(a - b) / b for a, b in zip(ours.losses, theirs.losses, strict=True)]
    assert max(gaps) < 0.01, gaps
    assert ours.losses[-1] < 0.9 * ours.losses[0]  # it learns
    assert len(text) == 40
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
