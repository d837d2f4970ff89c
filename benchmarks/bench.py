"""Tensorsmith vs numpy vs PyTorch (CPU), side by side in one process.

    python benchmarks/bench.py [--quick] [--json FILE] [--only REGEX] [--repeats N] [--no-torch]

Every case (benchmarks/cases.py: pointwise, reduction, index_reduction, normalization, contraction at small,
medium and large sizes; a loop of ops on one Python thread and on two, at 64K and at 16K elements) is timed for
each library in turn, round-robin, `repeats` times; a sample is the mean
of enough calls to fill `min_sample_s`, taken after a short untimed pause (SETTLE_S: other libraries' idle
threads stop spinning) and untimed calls for WAKE_S (the library's own threads are awake, as in a loop of ops), and
the table shows the median sample. Ratios are tensorsmith's time
over the peer's (below 1: tensorsmith is faster). GB/s is bytes moved (inputs read + outputs written, at
least once) over time, and "%bound" that as a fraction of the bandwidth bound (benchmarks/bandwidth.py):
measured at the start of the run and, for the large cases, again beside each, its probe timed in the same
round-robin as the libraries (the bound drifts on a shared machine). Matmul is compute bound: GFLOP/s
(2 n^3 / time) instead.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bandwidth  # noqa: E402
import cases as case_defs  # noqa: E402

import tensorsmith as ts  # noqa: E402

LIBRARIES = ("tensorsmith", "numpy", "torch")
BOUND_PROBE = "bound"  # the bandwidth probe's entry when it is timed beside a case
GOALS = (  # issue 7: (case name, peer, the most tensorsmith's time may be as a multiple of the peer's)
    ("pointwise/add/large", "torch", 1.0),
    ("pointwise/add(out=)/large", "torch", 1.0),
    ("pointwise/multiply/large", "torch", 1.0),
    ("reduction/sum/large", "torch", 1.0),
    ("pointwise/exp/large", "torch", 1.0),
    ("normalization/softmax/large", "torch", 1.0),
    ("contraction/matmul float32/large", "torch", 1.1),
    ("pointwise/add/small", "torch", 1.0),
    # issue 21: each family the whole standard added, no slower than PyTorch by more than 1.2x
    ("sort/sort(axis=1)/large", "torch", 1.2),
    ("scan/cumulative_sum(axis=1)/large", "torch", 1.2),
    ("selection/take(axis=0)/large", "torch", 1.2),
    ("selection/concat(axis=0)/large", "torch", 1.2),
    ("selection/unique_values/large", "torch", 1.2),
    ("selection/x[mask]/large", "torch", 1.2),
    ("pointwise/multiply complex64/large", "torch", 1.2),
    # issue 24: numpy as well as PyTorch, on the rows where numpy was ahead
    ("reduction/sum(axis=0)/large", "numpy", 1.0),
    ("reduction/sum(axis=1) of x.T/large", "numpy", 1.0),
    ("pointwise/pow/large", "numpy", 1.0),
    ("pointwise/pow int32/large", "numpy", 1.0),
    ("pointwise/tanh float64/large", "numpy", 1.0),
    ("pointwise/log1p float64/large", "numpy", 1.0),
    ("pointwise/pow float64/large", "numpy", 1.0),
    ("pointwise/atan2 float64/large", "numpy", 1.0),
    ("pointwise/exp/small", "numpy", 1.0),
    ("pointwise/x[1:3] * 2.0/small", "numpy", 1.0),
    ("contraction/batched matmul float32/medium", "numpy", 1.0),
    ("selection/x[mask]/large", "numpy", 1.0),
    ("selection/unique_values/large", "numpy", 1.0),
    ("sort/sort(axis=1) unstable/large", "numpy", 1.0),
)
SHARE_GOALS = (  # issue 7: (case name, the least fraction of the bandwidth bound tensorsmith's GB/s may be)
    ("pointwise/add/large", 0.85),
    ("pointwise/multiply/large", 0.85),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller large cases (development)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--only", metavar="REGEX", help="run the cases whose family/op/size matches")
    parser.add_argument("--repeats", type=int, help="samples per library and case (default 20, quick 5)")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is installed")
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 20)
    min_sample_s = 0.002 if args.quick else 0.01

    torch, torch_note = _import_torch(args.no_torch)
    threads = _thread_counts(torch)
    bound = bandwidth.measure(buffer_bytes=(64 if args.quick else 256) << 20, repeats=5 if args.quick else 9)
    wanted = (lambda name: True) if args.only is None else (lambda name: re.search(args.only, name) is not None)
    selected = case_defs.build(case_defs.QUICK if args.quick else case_defs.FULL, torch, wanted)

    _print_header(args, repeats, min_sample_s, torch_note, threads, bound)
    results = []
    started = time.perf_counter()
    for case in selected:
        case_defs.probe(case)
        beside = case.size == "large" and case.bytes_moved is not None and bound.probe is not None
        impls = case.impls | ({BOUND_PROBE: bound.probe} if beside else {})
        medians = time_case(impls, repeats, min_sample_s, settle_seconds(case.family))
        bound_gbps = bound.probe.gbps(medians.pop(BOUND_PROBE)) if beside else None
        results.append(_result(case, medians, bound, bound_gbps))
        _print_row(results[-1])
    goals = [_goal(results, *goal) for goal in GOALS] + [_share_goal(results, *goal) for goal in SHARE_GOALS]
    _print_footer(results, goals, time.perf_counter() - started)

    if args.json:
        report = {"machine": _machine(), "mode": "quick" if args.quick else "full", "repeats": repeats,
                  "min_sample_s": min_sample_s, "torch": torch_note, "threads": threads,
                  "bound": {"gbps": bound.gbps, "method": bound.method, "probes": bound.probes, "notes": bound.notes,
                            "buffer_bytes": bound.buffer_bytes},
                  "results": results, "goals": goals, "thread_speedups": _thread_speedups(results)}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


# Untimed pause before each sample, so that no library is timed against another's idle threads. PyTorch's
# OpenMP workers spin for about 10 ms after each op (measured: a 16M-element add right after a torch call took
# 11 ms instead of 9.5), tensorsmith's for 20 ms (TS_SPIN_MS). Each OpenBLAS in the process (numpy's,
# tensorsmith's, PyTorch's BLAS) keeps its idle threads yield-spinning for about 0.1 s: without a longer pause,
# a 256² matmul took 14 ms instead of 1. A busy idle thread also misleads the scheduler: PyTorch's softmax ran
# 1.5x slower right after tensorsmith's workers had begun to spin.
SETTLE_S = 0.03
SETTLE_S_BLAS = 0.2
# Untimed calls after the pause, for at least this long (and at least one call): a worker woken from sleep can
# wait for the next scheduler tick (4 ms on this project's VMs) before it runs, so one untimed call left
# tensorsmith's 64K-element ops running on one core through a 2 ms sample (sin 134 us, 74-81 us once awake).
WAKE_S = 0.006


def settle_seconds(family: str) -> float:
    return SETTLE_S_BLAS if family == "contraction" else SETTLE_S


def time_case(impls: dict[str, Callable[[], Any]], repeats: int, min_sample_s: float,
              settle_s: float = SETTLE_S) -> dict[str, float]:
    """Median seconds per call for each library, the libraries interleaved so drift hits all alike."""
    numbers = {name: _calls_per_sample(fn, min_sample_s) for name, fn in impls.items()}
    samples: dict[str, list[float]] = {name: [] for name in impls}
    order = list(impls)
    for r in range(repeats):
        for name in order[r % len(order):] + order[: r % len(order)]:
            fn, number = impls[name], numbers[name]
            time.sleep(settle_s)
            waking = time.perf_counter()
            fn()
            while time.perf_counter() - waking < WAKE_S:
                fn()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(values) for name, values in samples.items()}


def _calls_per_sample(fn: Callable[[], Any], min_sample_s: float) -> int:
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_sample_s or number >= 1 << 20:
            return number
        number *= 2


def _result(case: case_defs.Case, medians: dict[str, float], bound: bandwidth.Bound,
            bound_beside_gbps: float | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"name": case.name, "family": case.family, "op": case.op, "size": case.size,
                              "shape": case.shape, "bytes_moved": case.bytes_moved, "flops": case.flops,
                              "seconds": medians, "unsupported": case.unsupported}  # fmt: skip
    mine = medians.get("tensorsmith")
    result["ratio"] = {peer: mine / medians[peer] for peer in ("numpy", "torch") if mine and peer in medians}
    if case.bytes_moved:
        result["gbps"] = {name: case.bytes_moved / s / 1e9 for name, s in medians.items()}
        # The bound measured beside the case where it was, else the run's.
        result["bound"] = {"gbps": bound_beside_gbps or bound.gbps, "measured": "beside" if bound_beside_gbps else "start"}
        result["fraction_of_bound"] = {name: gbps / result["bound"]["gbps"] for name, gbps in result["gbps"].items()}
    if case.flops:
        result["gflops"] = {name: case.flops / s / 1e9 for name, s in medians.items()}
    return result


def _goal(results: list[dict[str, Any]], name: str, peer: str, limit: float) -> dict[str, Any]:
    goal = {"case": name, "peer": peer, "limit": limit}
    found = next((r for r in results if r["name"] == name), None)
    if found is None or peer not in found["ratio"]:
        why = "not run (see --only)" if found is None else f"no {peer} or no tensorsmith time"
        return goal | {"status": "not measured", "why": why}
    ratio = found["ratio"][peer]
    return goal | {"ratio": ratio, "status": "met" if ratio <= limit else "missed"}


def _share_goal(results: list[dict[str, Any]], name: str, least: float) -> dict[str, Any]:
    goal = {"case": name, "peer": "bound", "least": least}
    found = next((r for r in results if r["name"] == name), None)
    if found is None or "tensorsmith" not in found.get("fraction_of_bound", {}):
        return goal | {"status": "not measured", "why": "not run (see --only)" if found is None else "no GB/s"}
    fraction = found["fraction_of_bound"]["tensorsmith"]
    return goal | {"fraction": fraction, "bound": found["bound"], "status": "met" if fraction >= least else "missed"}


# ---- environment ---------------------------------------------------------------------------------------------


def _import_torch(disabled: bool) -> tuple[Any | None, str]:
    if disabled:
        return None, "left out (--no-torch)"
    try:
        import torch
    except ImportError:
        return None, "not installed (pip install torch==2.13.0 to compare with it)"
    torch.set_num_threads(os.cpu_count() or 1)
    return torch, f"{torch.__version__}"


def _thread_counts(torch: Any | None) -> dict[str, Any]:
    """Threads each library may use: torch's intra-op pool, and every OpenBLAS loaded in this process
    (numpy's and tensorsmith's own) as the library reports it."""
    counts: dict[str, Any] = {"cores": os.cpu_count()}
    if torch is not None:
        counts["torch intra-op"] = torch.get_num_threads()
    for path in _loaded_openblas():
        library = ctypes.CDLL(path)
        getter = next((getattr(library, n) for n in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                                                     "openblas_get_num_threads") if hasattr(library, n)), None)  # fmt: skip
        owner = "tensorsmith" if "site-packages/scipy_openblas64" in path else Path(path).parent.parent.name
        counts[f"OpenBLAS ({owner}: {Path(path).name})"] = getter() if getter else "unknown"
    counts["numpy pointwise/reductions"] = 1
    return counts


def _loaded_openblas() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps.splitlines() if "openblas" in line.rsplit("/", 1)[-1]
                   and line.split()[-1].startswith("/")})  # fmt: skip


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))  # fmt: skip
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu or platform.processor(), "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "tensorsmith": ts.__version__, "load_average": os.getloadavg()}  # fmt: skip


# ---- output --------------------------------------------------------------------------------------------------


def _print_header(args, repeats, min_sample_s, torch_note, threads, bound) -> None:
    machine = _machine()
    print(f"tensorsmith {machine['tensorsmith']} | numpy {machine['numpy']} | torch {torch_note}")
    print(f"machine: {machine['cpu']}, {machine['cores']} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in machine['load_average'])} (other work skews absolute times; ratios hold better)")
    print("threads: " + ", ".join(f"{k} {v}" for k, v in threads.items()))
    print(bound.describe())
    print("  (a DRAM bound: cases that fit in the caches, like the medium ones, can go past 100%)")
    for note in bound.notes:
        print(f"  note: {note}")
    print(f"mode: {'quick' if args.quick else 'full'}; median of {repeats} samples per library, each >= "
          f"{min_sample_s * 1e3:g} ms of calls after a {SETTLE_S * 1e3:g} ms pause ({SETTLE_S_BLAS * 1e3:g} ms for "
          f"matmul) and {WAKE_S * 1e3:g} ms of untimed calls; ratio = tensorsmith time / peer time (below 1: "
          "tensorsmith faster)\n")
    print(f"{'case':<44} {'tensorsmith':>11} {'numpy':>11} {'torch':>11} {'ts/np':>7} {'ts/torch':>8}  throughput (ts; np; torch)")


def _print_row(r: dict[str, Any]) -> None:
    s = r["seconds"]
    cols = [_fmt_time(s.get(lib)) for lib in LIBRARIES]
    ratios = [f"{r['ratio'][p]:.2f}" if p in r["ratio"] else "-" for p in ("numpy", "torch")]
    if "gbps" in r:
        per = [f"{r['gbps'][lib]:.3g}" if lib in r["gbps"] else "-" for lib in LIBRARIES]
        frac = r["fraction_of_bound"].get("tensorsmith")
        beside = f" ({r['bound']['gbps']:.3g} beside it)" if r["bound"]["measured"] == "beside" else ""
        throughput = f"{'; '.join(per)} GB/s" + (f" = {100 * frac:.0f}% of bound{beside}" if frac is not None else "")
    else:
        per = [f"{r['gflops'][lib]:.3g}" if lib in r["gflops"] else "-" for lib in LIBRARIES]
        throughput = f"{'; '.join(per)} GFLOP/s"
    name = f"{r['family']}/{r['op']} {r['size']} {r['shape']}"
    print(f"{name:<44} {cols[0]:>11} {cols[1]:>11} {cols[2]:>11} {ratios[0]:>7} {ratios[1]:>8}  {throughput}")
    for lib, why in r["unsupported"].items():
        print(f"{'':<44} {lib} not timed: {why}")


def _thread_speedups(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per thread-loop size, each library's time on one thread over its time on two (above 1: it gained)."""
    speedups = {}
    for size in case_defs.THREAD_SIZES:
        one = next((r for r in results if r["name"] == f"threads/ops loop, 1 thread/{size}"), None)
        two = next((r for r in results if r["name"] == f"threads/ops loop, 2 threads/{size}"), None)
        if one is not None and two is not None:
            speedups[size] = {lib: one["seconds"][lib] / two["seconds"][lib] for lib in LIBRARIES
                              if lib in one["seconds"] and lib in two["seconds"]}  # fmt: skip
    return speedups


def _print_footer(results, goals, elapsed) -> None:
    print(f"\n{len(results)} cases in {elapsed:.1f} s")
    for size, speedups in _thread_speedups(results).items():
        print(f"two Python threads vs one, the same {size} ops (one thread's time / two threads'): "
              + ", ".join(f"{lib} {x:.2f}x" for lib, x in speedups.items()))
    for goal in goals:
        share = goal["peer"] == "bound"
        target = f">= {100 * goal['least']:.0f}% of the bound" if share else f"ts/{goal['peer']} <= {goal['limit']:g}"
        if goal["status"] == "not measured":
            print(f"goal {goal['case']}: {target}: not measured ({goal['why']})")
        elif share:
            print(f"goal {goal['case']}: {100 * goal['fraction']:.0f}% of the bound measured {goal['bound']['measured']} "
                  f"({goal['bound']['gbps']:.3g} GB/s; {target}): {goal['status']}")
        else:
            print(f"goal {goal['case']}: ts/{goal['peer']} = {goal['ratio']:.2f} (<= {goal['limit']:g}): {goal['status']}")


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
