"""One training step (forward, backward, optimizer step) on the CPU, tensorsmith vs PyTorch side by side in one
process: the MLP of examples/mlp_digits.py on a batch of 64 digits. Each sample is the mean of a run of steps
after warm-up steps; the libraries alternate, and the table shows medians and the ratio (tensorsmith over
PyTorch; issue 22's goal is at most 1.0).

    python benchmarks/bench_training.py [--repeats N] [--steps N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.0


def _example(name: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def mlp_steps(batch: int = 64) -> tuple[Callable[[], float], Callable[[], float]]:
    import torch

    import tensorsmith as ts

    example = _example("mlp_digits")
    x, y, _, _ = example.digits(0)
    x, y = x[:batch], y[:batch]
    model = example.tensorsmith_model(128, 0)
    twin = example.torch_twin(model)
    ours = example._tensorsmith_step(model, ts.optim.AdamW(model.parameters(), lr=1e-3))
    theirs = example._torch_step(twin, torch.optim.AdamW(twin.parameters(), lr=1e-3))
    return (lambda: ours(x, y)), (lambda: theirs(x, y))


def timed(step: Callable[[], float], steps: int) -> float:
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - started) / steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=30, help="steps per sample")
    args = parser.parse_args(argv)
    rows = []
    for name, make in (("MLP digits 64-128-128-10, batch 64, AdamW", mlp_steps),):
        ours, theirs = make()
        for step in (ours, theirs):
            timed(step, 5)  # warm-up
        samples: dict[str, list[float]] = {"tensorsmith": [], "pytorch": []}
        for _ in range(args.repeats):
            samples["tensorsmith"].append(timed(ours, args.steps))
            samples["pytorch"].append(timed(theirs, args.steps))
        ts_s, torch_s = statistics.median(samples["tensorsmith"]), statistics.median(samples["pytorch"])
        rows.append((name, ts_s, torch_s))
    print(f"{'training step':45s} {'tensorsmith':>12s} {'pytorch':>12s} {'ratio':>7s}  goal")
    missed = 0
    for name, ts_s, torch_s in rows:
        ratio = ts_s / torch_s
        missed += ratio > GOAL
        print(f"{name:45s} {ts_s * 1e6:10.1f}us {torch_s * 1e6:10.1f}us {ratio:7.2f}  <= {GOAL} {'met' if ratio <= GOAL else 'MISSED'}")
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
