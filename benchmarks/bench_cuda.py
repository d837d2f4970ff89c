"""Tensorsmith vs PyTorch on one CUDA device, side by side in one process.

    python benchmarks/bench_cuda.py [--quick] [--json FILE] [--repeats N]

Each case (every family: pointwise, reductions over inner and outer axes, index reductions, softmax and
log_softmax, matmul through cuBLAS and through the generated tiled kernel) runs for each library in turn,
`repeats` times. A sample is a batch of calls closed by a device-wide synchronise (no timing before the
queue is drained), divided by the batch size; the table shows the median sample. Ratio = tensorsmith's time
over PyTorch's (below 1: tensorsmith faster). GB/s counts bytes read + written once; "%copy" is that over
the bandwidth of a device-to-device copy measured at the start of the same run. Inputs are uploaded
contiguous; a strided case takes its view on the device. The JSON is rewritten after every case.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorsmith as ts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller cases")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--repeats", type=int, help="samples per library and case (default 15, quick 5)")
    args = parser.parse_args(argv)
    if not ts.cuda.is_available():
        print("bench_cuda: no CUDA device (ts.cuda.is_available() is False); nothing to measure", file=sys.stderr)
        return 2
    repeats = args.repeats or (5 if args.quick else 15)
    torch = _import_torch()
    sync = _synchronizer(torch)
    copy_gbps = _copy_bandwidth(torch, sync, (1 << 26) if args.quick else (1 << 28))
    print(f"tensorsmith {ts.__version__} | torch {torch.__version__ if torch else 'not installed'} | "
          f"device-to-device copy: {copy_gbps:.0f} GB/s (read + write)")
    print(f"median of {repeats} samples; ratio = tensorsmith / torch\n")
    print(f"{'case':<40} {'tensorsmith':>11} {'torch':>11} {'ratio':>6}  throughput (ts; torch)")
    _measure(_cases(torch, quick=args.quick), sync, repeats, copy_gbps, args.json)
    if args.json:
        print(f"\nwrote {args.json}")
    return 0


def _measure(cases: list[dict[str, Any]], sync: Callable[[], None], repeats: int, copy_gbps: float,
             json_path: str | None) -> list[dict[str, Any]]:  # fmt: skip
    """Times each case and prints its row. The JSON is rewritten after every case, so a run stopped part way
    (the GPU check's step timeout) still leaves every case it measured."""
    results = []
    for case in cases:
        seconds = {lib: _time(fn, sync, repeats) for lib, fn in case["impls"].items()}
        result = {k: v for k, v in case.items() if k not in ("impls", "inputs")} | {"seconds": seconds}
        if "torch" in seconds:
            result["ratio"] = seconds["tensorsmith"] / seconds["torch"]
        if case["bytes"]:
            result["gbps"] = {lib: case["bytes"] / s / 1e9 for lib, s in seconds.items()}
            result["fraction_of_copy"] = {lib: g / copy_gbps for lib, g in result["gbps"].items()}
        if case["flops"]:
            result["tflops"] = {lib: case["flops"] / s / 1e12 for lib, s in seconds.items()}
        results.append(result)
        _print_row(result)
        if json_path:
            tmp = f"{json_path}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"copy_gbps": copy_gbps, "repeats": repeats, "complete": len(results) == len(cases), "results": results},
                          f, indent=2)  # fmt: skip
            os.replace(tmp, json_path)  # whole or not at all, even when killed mid-write
    return results


def _import_torch() -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _synchronizer(torch: Any | None) -> Callable[[], None]:
    def sync() -> None:
        ts.cuda.synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    return sync


def _time(fn: Callable[[], Any], sync: Callable[[], None], repeats: int) -> float:
    fn()  # warm-up: module loading, cuBLAS handles, allocator pools
    sync()
    number = 1
    while True:  # a batch long enough that launch and synchronise overheads average out
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        if time.perf_counter() - start >= 0.01 or number >= 1 << 14:
            break
        number *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def _copy_bandwidth(torch: Any | None, sync: Callable[[], None], nbytes: int) -> float:
    """GB/s of a device-to-device copy (bytes read + written), the best of tensorsmith's and torch's."""
    x = ts.asarray(np.zeros(nbytes // 4, dtype=np.float32), device="cuda")
    best = 2 * nbytes / _time(lambda: x.astype("float32"), sync, 5) / 1e9
    if torch is not None:
        a = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)
        best = max(best, 2 * nbytes / _time(lambda: b.copy_(a), sync, 5) / 1e9)
    return best


def _cases(torch: Any | None, quick: bool, device: str = "cuda") -> list[dict[str, Any]]:
    """Each case's inputs are uploaded contiguous and any other layout is made on `device` as a view, as a user's
    tensors are: a view made in numpy would be uploaded as a contiguous copy and time the contiguous path."""
    rng = np.random.default_rng(0)
    n = 1 << (22 if quick else 26)
    side = 2048 if quick else 8192
    rows, cols = (1024, 1024) if quick else (16384, 1024)
    mm = 2048 if quick else 8192
    cases = []

    def both(name, family, arrays, ts_fn, torch_fn, nbytes=None, flops=None, view=lambda args: args):
        ts_args = view([ts.asarray(a, device=device) for a in arrays])
        impls = {"tensorsmith": lambda: ts_fn(*ts_args)}
        inputs = {"tensorsmith": ts_args}
        if torch is not None and torch_fn is not None:
            t_args = view([torch.from_numpy(a).to(device) for a in arrays])
            impls["torch"] = lambda: torch_fn(*t_args)
            inputs["torch"] = t_args
        shape = "x".join(map(str, ts_args[0].shape))
        cases.append({"name": name, "family": family, "shape": shape, "strides": list(ts_args[0].strides), "bytes": nbytes,
                      "flops": flops, "impls": impls, "inputs": inputs})  # fmt: skip

    f32 = lambda *shape: rng.standard_normal(shape, dtype=np.float32)  # noqa: E731
    both("add f32", "pointwise", [f32(n), f32(n)], ts.add, torch and torch.add, 12 * n)
    both("exp f32", "pointwise", [f32(n)], ts.exp, torch and torch.exp, 8 * n)
    # Every other column of a device matrix: the offset-calculator path, not the packed one.
    both("add f32 strided", "pointwise", [f32(side, side), f32(side, side // 2)], ts.add, torch and torch.add,
         3 * 4 * side * side // 2, view=lambda args: [args[0][:, ::2], *args[1:]])
    both("add f32 + scalar row", "pointwise", [f32(side, side), f32(side)], ts.add, torch and torch.add, 8 * side * side)
    both("sum f32", "reduction", [f32(n)], ts.sum, torch and torch.sum, 4 * n)
    both("sum f32 axis=0", "reduction", [f32(side, side)], lambda x: ts.sum(x, axis=0),
         torch and (lambda x: torch.sum(x, dim=0)), 4 * side * side)
    both("sum f32 axis=1", "reduction", [f32(side, side)], lambda x: ts.sum(x, axis=1),
         torch and (lambda x: torch.sum(x, dim=1)), 4 * side * side)
    both("argmax f32 axis=1", "index_reduction", [f32(side, side)], lambda x: ts.argmax(x, axis=1),
         torch and (lambda x: torch.argmax(x, dim=1)), 4 * side * side)
    both("softmax f32", "normalization", [f32(rows, cols)], lambda x: ts.softmax(x, axis=-1),
         torch and (lambda x: torch.softmax(x, dim=-1)), 8 * rows * cols)
    both("log_softmax f32", "normalization", [f32(rows, cols)], lambda x: ts.log_softmax(x, axis=-1),
         torch and (lambda x: torch.log_softmax(x, dim=-1)), 8 * rows * cols)
    both("matmul f32 (cuBLAS)", "contraction", [f32(mm, mm), f32(mm, mm)], ts.matmul, torch and torch.matmul,
         flops=2 * mm**3)
    ints = [rng.integers(-8, 8, (1024, 1024)).astype(np.int32) for _ in range(2)]
    both("matmul int32 (generated tiles)", "contraction", ints, ts.matmul, None, flops=2 * 1024**3)
    return cases


def _print_row(r: dict[str, Any]) -> None:
    s = r["seconds"]
    fmt = lambda v: "-" if v is None else (f"{v * 1e6:.1f} us" if v < 1e-3 else f"{v * 1e3:.2f} ms")  # noqa: E731
    ratio = f"{r['ratio']:.2f}" if "ratio" in r else "-"
    if "gbps" in r:
        tp = "; ".join(f"{r['gbps'][lib]:.0f}" for lib in s) + f" GB/s = {100 * r['fraction_of_copy']['tensorsmith']:.0f}% of copy"
    else:
        tp = "; ".join(f"{r['tflops'][lib]:.1f}" for lib in s) + " TFLOP/s"
    print(f"{r['name'] + ' ' + r['shape']:<40} {fmt(s.get('tensorsmith')):>11} {fmt(s.get('torch')):>11} {ratio:>6}  {tp}")


if __name__ == "__main__":
    sys.exit(main())
