"""One training step (forward, backward, optimizer step) on the CPU, tensorsmith vs PyTorch side by side in one
process: the MLP of examples/mlp_digits.py on a batch of 64 digits and the GPT of examples/char_gpt.py on a batch
of 16 windows of 32 characters. Each sample is the mean of a run of steps
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
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import SETTLE_S_BLAS  # noqa: E402  (beside this script)
GOAL = 1.0


def _example(name: str):  # noqa: ANN202
    """examples/NAME.py as a module (the examples import their neighbours, loss_plot.py)."""
    examples = ROOT / "examples"
    if str(examples) not in sys.path:
        sys.path.insert(0, str(examples))
    spec = importlib.util.spec_from_file_location(name, examples / f"{name}.py")
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


def gpt_steps() -> tuple[Callable[[], float], Callable[[], float]]:
    """examples/char_gpt.py's model (2 layers, width 64, 4 heads, 32 characters, batch 16) and its twin."""
    import torch

    import tensorsmith as ts
    from tensorsmith.nn import functional as F

    example = _example("char_gpt")
    config = example.Config()
    text = example.corpus()
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    data = np.array([index[ch] for ch in text[: 20 * config.block]], dtype=np.int64)
    window = np.stack([data[i * config.block : i * config.block + config.block + 1] for i in range(config.batch)])
    x, y = window[:, :-1], window[:, 1:]
    model = example.GPT(len(vocab), config, 0)
    twin = example.torch_twin(model, len(vocab), config)
    optimizer = ts.optim.AdamW(model.parameters(), lr=config.lr)
    twin_optimizer = torch.optim.AdamW(twin.parameters(), lr=config.lr)

    def ours() -> float:
        loss = F.cross_entropy(ts.reshape(model(ts.asarray(x)), (-1, len(vocab))), ts.asarray(y.reshape(-1)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    def theirs() -> float:
        loss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)).reshape(-1, len(vocab)), torch.from_numpy(y.reshape(-1)))
        twin_optimizer.zero_grad()
        loss.backward()
        twin_optimizer.step()
        return float(loss.detach())

    return ours, theirs


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
    for name, make in (("MLP digits 64-128-128-10, batch 64, AdamW", mlp_steps),
                       ("char GPT 2 layers x 64, 16 x 32 characters, AdamW", gpt_steps)):  # fmt: skip
        ours, theirs = make()
        for step in (ours, theirs):
            timed(step, 5)  # warm-up
        samples: dict[str, list[float]] = {"tensorsmith": [], "pytorch": []}
        for r in range(args.repeats):
            pair = [("tensorsmith", ours), ("pytorch", theirs)]
            for library, step in pair[r % 2 :] + pair[: r % 2]:
                # As bench.py does: the other library's idle threads (its OpenBLAS's spin for up to 0.1 s)
                # stop before a sample, and one untimed step (milliseconds of ops, longer than bench.py's WAKE_S)
                # wakes this one's. Without the pause PyTorch's
                # step ran 2x slower right after tensorsmith's had left its OpenBLAS threads spinning.
                time.sleep(SETTLE_S_BLAS)
                step()
                samples[library].append(timed(step, args.steps))
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
