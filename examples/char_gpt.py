"""A character-level GPT (pre-norm transformer blocks with causal self-attention) trained on the Python standard
library's own sources, which every machine with Python has, in tensorsmith and in a PyTorch twin side by side:
the same initial weights (tensorsmith's, through numpy), the same batches, the same AdamW. Prints the loss of both
as it goes and their largest relative gap, a text sample from the trained tensorsmith model, and writes the loss
curves to a PNG.

    python examples/char_gpt.py                    # 200 steps
    python examples/char_gpt.py --steps 20 --plot /tmp/gpt.png
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loss_plot import plot_losses  # examples/loss_plot.py

import tensorsmith as ts
from tensorsmith.nn import functional as F

HERE = Path(__file__).resolve().parent
CORPUS_MODULES = ("functools.py", "textwrap.py", "string.py", "fractions.py", "heapq.py", "bisect.py", "abc.py", "copy.py")


@dataclass(frozen=True)
class Config:
    block: int = 32  # characters of context
    width: int = 64
    heads: int = 4
    layers: int = 2
    batch: int = 16
    lr: float = 3e-3


@dataclass
class Run:
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def corpus() -> str:
    """Some modules of this Python's standard library, concatenated."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return "\n".join((stdlib / name).read_text(encoding="utf-8") for name in CORPUS_MODULES)


class Block(ts.nn.Module):
    def __init__(self, c: Config, g: ts.random.Generator) -> None:
        super().__init__()
        self.heads = c.heads
        self.ln1 = ts.nn.LayerNorm(c.width)
        self.qkv = ts.nn.Linear(c.width, 3 * c.width, generator=g)
        self.proj = ts.nn.Linear(c.width, c.width, generator=g)
        self.ln2 = ts.nn.LayerNorm(c.width)
        self.fc = ts.nn.Linear(c.width, 4 * c.width, generator=g)
        self.out = ts.nn.Linear(4 * c.width, c.width, generator=g)

    def forward(self, x: ts.Tensor) -> ts.Tensor:
        b, t, width = x.shape
        qkv = self.qkv(self.ln1(x))

        def heads(part: int) -> ts.Tensor:
            piece = qkv[:, :, part * width : (part + 1) * width]
            return ts.permute_dims(ts.reshape(piece, (b, t, self.heads, width // self.heads)), (0, 2, 1, 3))

        y = F.scaled_dot_product_attention(heads(0), heads(1), heads(2), is_causal=True)
        x = x + self.proj(ts.reshape(ts.permute_dims(y, (0, 2, 1, 3)), (b, t, width)))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(ts.nn.Module):
    def __init__(self, vocab: int, c: Config, seed: int) -> None:
        super().__init__()
        g = ts.random.Generator(seed)
        self.tokens = ts.nn.Embedding(vocab, c.width, generator=g)
        self.positions = ts.nn.Embedding(c.block, c.width, generator=g)
        self.blocks = ts.nn.Sequential(*(Block(c, g) for _ in range(c.layers)))
        self.ln = ts.nn.LayerNorm(c.width)
        self.head = ts.nn.Linear(c.width, vocab, bias=False, generator=g)

    def forward(self, ids: ts.Tensor) -> ts.Tensor:
        t = ids.shape[-1]
        x = self.tokens(ids) + self.positions(ts.arange(t))
        return self.head(self.ln(self.blocks(x)))


def torch_twin(model: GPT, vocab: int, c: Config):  # noqa: ANN201
    """The same network in PyTorch with the same parameter names, loaded with the tensorsmith model's weights."""
    import torch
    from torch import nn

    class TorchBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(c.width), nn.LayerNorm(c.width)
            self.qkv, self.proj = nn.Linear(c.width, 3 * c.width), nn.Linear(c.width, c.width)
            self.fc, self.out = nn.Linear(c.width, 4 * c.width), nn.Linear(4 * c.width, c.width)

        def forward(self, x):  # noqa: ANN001, ANN202
            b, t, width = x.shape
            q, k, v = (p.reshape(b, t, c.heads, width // c.heads).permute(0, 2, 1, 3) for p in self.qkv(self.ln1(x)).split(width, -1))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.permute(0, 2, 1, 3).reshape(b, t, width))
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class TorchGPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens, self.positions = nn.Embedding(vocab, c.width), nn.Embedding(c.block, c.width)
            self.blocks = nn.Sequential(*(TorchBlock() for _ in range(c.layers)))
            self.ln, self.head = nn.LayerNorm(c.width), nn.Linear(c.width, vocab, bias=False)

        def forward(self, ids):  # noqa: ANN001, ANN202
            x = self.tokens(ids) + self.positions(torch.arange(ids.shape[-1]))
            return self.head(self.ln(self.blocks(x)))

    twin = TorchGPT()
    twin.load_state_dict({k: torch.from_numpy(np.asarray(v).copy()) for k, v in model.state_dict().items()})
    return twin


def train(steps: int = 200, config: Config = Config(), seed: int = 0, quiet: bool = False,
          plot: Path | None = HERE / "char_gpt_loss.png", sample: int = 300) -> tuple[Run, Run, str]:  # fmt: skip
    import torch
    from tqdm import tqdm

    text = corpus()
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    data = np.array([index[ch] for ch in text], dtype=np.int64)
    model = GPT(len(vocab), config, seed)
    twin = torch_twin(model, len(vocab), config)
    optimizer = ts.optim.AdamW(model.parameters(), lr=config.lr)
    twin_optimizer = torch.optim.AdamW(twin.parameters(), lr=config.lr)
    ours, theirs = Run(), Run()
    rng = np.random.default_rng(seed + 1)
    bar = tqdm(range(steps), desc="training", disable=quiet)
    for step in bar:
        starts = rng.integers(0, len(data) - config.block - 1, config.batch)
        window = np.stack([data[s : s + config.block + 1] for s in starts])
        x, y = window[:, :-1], window[:, 1:]

        started = time.perf_counter()
        loss = F.cross_entropy(ts.reshape(model(ts.asarray(x)), (-1, len(vocab))), ts.asarray(y.reshape(-1)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ours.losses.append(float(loss.detach()))
        ours.seconds += time.perf_counter() - started

        started = time.perf_counter()
        twin_loss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)).reshape(-1, len(vocab)), torch.from_numpy(y.reshape(-1)))
        twin_optimizer.zero_grad()
        twin_loss.backward()
        twin_optimizer.step()
        theirs.losses.append(float(twin_loss.detach()))
        theirs.seconds += time.perf_counter() - started
        bar.set_postfix(loss=f"{ours.losses[-1]:.4f}", pytorch=f"{theirs.losses[-1]:.4f}")
    generated = generate(model, vocab, config, sample, seed) if sample else ""
    if plot is not None:
        plot_losses(ours.losses, theirs.losses, plot, "character-level GPT on the standard library's sources")
    return ours, theirs, generated


def generate(model: GPT, vocab: list[str], config: Config, length: int, seed: int) -> str:
    """Characters drawn one at a time from the model's softmax, starting from a newline."""
    rng = np.random.default_rng(seed)
    ids = [vocab.index("\n")]
    with ts.no_grad():
        for _ in range(length):
            context = ts.asarray(np.array([ids[-config.block :]], dtype=np.int64))
            p = np.asarray(F.softmax(model(context)[0, -1], dim=-1), dtype=np.float64)
            ids.append(int(rng.choice(len(vocab), p=p / p.sum())))
    return "".join(vocab[i] for i in ids[1:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--layers", type=int, default=Config.layers)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, default=HERE / "char_gpt_loss.png")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    config = Config(layers=args.layers)
    ours, theirs, text = train(args.steps, config, args.seed, args.quiet, args.plot)
    gaps = [abs(a - b) / b for a, b in zip(ours.losses, theirs.losses, strict=True)]
    print(f"loss after {args.steps} steps: {ours.losses[-1]:.4f} (PyTorch {theirs.losses[-1]:.4f}); largest relative gap "
          f"of a step's loss {max(gaps):.2e}; time per step {ours.seconds / args.steps * 1e3:.1f} ms (PyTorch "
          f"{theirs.seconds / args.steps * 1e3:.1f} ms, ratio {ours.seconds / theirs.seconds:.2f})")  # fmt: skip
    print(f"loss curves: {args.plot}\n--- sample ---\n{text}")


if __name__ == "__main__":
    main()
