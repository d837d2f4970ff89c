"""The examples' loss plot: tensorsmith's curve over its PyTorch twin's, to a PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def plot_losses(ours: Sequence[float], theirs: Sequence[float], path: Path, title: str, log_scale: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(theirs, label="PyTorch", linewidth=2.5, alpha=0.6)
    ax.plot(ours, label="tensorsmith", linewidth=1)
    ax.set(xlabel="step", ylabel="cross-entropy", yscale="log" if log_scale else "linear", title=title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
