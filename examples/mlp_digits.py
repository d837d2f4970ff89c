"""An MLP trained on scikit-learn's bundled digits (8x8 images, 10 classes; no download), in tensorsmith and in a
PyTorch twin side by side: the same initial weights (tensorsmith's, copied through numpy), the same batches, the
same AdamW. Prints each epoch's mean loss, test accuracy and time for both, and writes the two loss curves to a
PNG.

    python examples/mlp_digits.py                 # 20 epochs
    python examples/mlp_digits.py --epochs 2 --plot /tmp/loss.png
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loss_plot import plot_losses  # examples/loss_plot.py

import tensorsmith as ts
from tensorsmith.nn import functional as F

HERE = Path(__file__).resolve().parent


@dataclass
class Run:
    """What one framework did: the loss of every step, and per epoch the test accuracy and the seconds taken."""

    losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def digits(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    test = order[:360]
    train = order[360:]
    return x[train], y[train], x[test], y[test]


def tensorsmith_model(hidden: int, seed: int) -> ts.nn.Module:
    g = ts.random.Generator(seed)
    return ts.nn.Sequential(ts.nn.Linear(64, hidden, generator=g), ts.nn.ReLU(), ts.nn.Linear(hidden, hidden, generator=g),
                            ts.nn.ReLU(), ts.nn.Linear(hidden, 10, generator=g))  # fmt: skip


def torch_twin(model: ts.nn.Module):  # noqa: ANN201
    """The same network in PyTorch, starting from the tensorsmith model's weights."""
    import torch

    layers = []
    for layer in model.children():
        if isinstance(layer, ts.nn.Linear):
            twin = torch.nn.Linear(layer.in_features, layer.out_features)
            with torch.no_grad():
                twin.weight.copy_(torch.from_numpy(np.asarray(layer.weight.detach())))
                twin.bias.copy_(torch.from_numpy(np.asarray(layer.bias.detach())))
            layers.append(twin)
        else:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def train(epochs: int = 20, batch_size: int = 64, hidden: int = 128, lr: float = 1e-3, seed: int = 0, quiet: bool = False,
          plot: Path | None = HERE / "mlp_digits_loss.png") -> tuple[Run, Run]:  # fmt: skip
    import torch
    from tqdm import tqdm

    x_train, y_train, x_test, y_test = digits(seed)
    model = tensorsmith_model(hidden, seed)
    twin = torch_twin(model)
    optimizer = ts.optim.AdamW(model.parameters(), lr=lr)
    twin_optimizer = torch.optim.AdamW(twin.parameters(), lr=lr)
    ours, theirs = Run(), Run()
    batches = np.random.default_rng(seed + 1)
    for epoch in range(epochs):
        order = batches.permutation(len(x_train))
        steps = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for run, step in ((ours, _tensorsmith_step(model, optimizer)), (theirs, _torch_step(twin, twin_optimizer))):
            started = time.perf_counter()
            for rows in tqdm(steps, desc=f"epoch {epoch + 1}/{epochs} {'tensorsmith' if run is ours else 'pytorch'}",
                             disable=quiet, leave=False):  # fmt: skip
                run.losses.append(step(x_train[rows], y_train[rows]))
            run.seconds.append(time.perf_counter() - started)
        ours.accuracies.append(_accuracy(model(ts.asarray(x_test)), y_test))
        with torch.no_grad():
            theirs.accuracies.append(float((twin(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()))
        if not quiet:
            n = len(steps)
            print(f"epoch {epoch + 1:3d}: loss {np.mean(ours.losses[-n:]):.5f} (pytorch {np.mean(theirs.losses[-n:]):.5f})  "
                  f"test accuracy {ours.accuracies[-1]:.4f} ({theirs.accuracies[-1]:.4f})  "
                  f"time {ours.seconds[-1] * 1e3:.1f} ms ({theirs.seconds[-1] * 1e3:.1f} ms, ratio "
                  f"{ours.seconds[-1] / theirs.seconds[-1]:.2f})")  # fmt: skip
    if plot is not None:
        plot_losses(ours.losses, theirs.losses, plot, "MLP on scikit-learn digits", log_scale=True)
        if not quiet:
            print(f"loss curves: {plot}")
    return ours, theirs


def _tensorsmith_step(model: ts.nn.Module, optimizer: ts.optim.Optimizer):  # noqa: ANN202
    def step(x: np.ndarray, y: np.ndarray) -> float:
        loss = F.cross_entropy(model(ts.asarray(x)), ts.asarray(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def _torch_step(model, optimizer):  # noqa: ANN001, ANN202
    import torch

    def step(x: np.ndarray, y: np.ndarray) -> float:
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def _accuracy(logits: ts.Tensor, labels: np.ndarray) -> float:
    return float((np.asarray(ts.argmax(logits.detach(), axis=1)) == labels).mean())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, default=HERE / "mlp_digits_loss.png", help="where the loss curves go")
    parser.add_argument("--quiet", action="store_true", help="no progress bars or epoch lines")
    args = parser.parse_args(argv)
    ours, theirs = train(args.epochs, args.batch_size, args.hidden, args.lr, args.seed, args.quiet, args.plot)
    if not args.quiet:
        gap = max(abs(a - b) / abs(b) for a, b in zip(ours.losses, theirs.losses, strict=True))
        print(f"largest relative difference of a step's loss from PyTorch's: {gap:.2e}; time per epoch "
              f"{np.median(ours.seconds) * 1e3:.1f} ms vs PyTorch {np.median(theirs.seconds) * 1e3:.1f} ms "
              f"(ratio {np.median(ours.seconds) / np.median(theirs.seconds):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
