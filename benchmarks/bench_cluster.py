"""The whole catalog judged on a local Ray cluster of one node, then of two (issue 23): wall time of
`tsgen validate --executor ray` for each, and their ratio, from one run.

Each node is a separate raylet on this machine with `--cpus` Ray CPUs (one judgement at a time per CPU). The
driver starts with an empty verdict cache each time (every kernel is judged on the cluster); the nodes share this
machine's gate cache for the runtime objects they build (built once before the first timing, so neither run pays
for them). What the ratio says: how the judgements of a catalog spread over nodes, not what two machines would do
(here the nodes share this machine's cores).

    python benchmarks/bench_cluster.py [--ops GLOB] [--device cpu|cuda] [--cpus N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ray.cluster_utils import Cluster

ROOT = Path(__file__).resolve().parents[1]


def validate(address: str, args: argparse.Namespace, driver_cache: Path) -> tuple[float, str]:
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "validate", "--executor", "ray", "--ray-address", address]
    command += [*(["--ops", args.ops] if args.ops else []), *(["--device", args.device] if args.device else [])]
    env = {**os.environ, "TSGEN_GATE_CACHE": str(driver_cache)}
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"validate failed on the cluster:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return elapsed, next(line for line in reversed(result.stdout.splitlines()) if "kernels pass the gate" in line)


def node_args(args: argparse.Namespace) -> dict[str, int]:
    return {"num_cpus": args.cpus, "object_store_memory": 128 * 1024 * 1024}  # bundles and candidates: small


def timed_run(nodes: int, args: argparse.Namespace, scratch: Path) -> tuple[float, str]:
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**node_args(args), "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node_args(args))
        return validate(cluster.address, args, scratch / f"driver-{nodes}")
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", metavar="GLOB", help="only these ops (default: the whole catalog)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="only this device (default: both)")
    parser.add_argument("--cpus", type=int, default=1, help="Ray CPUs per node (default 1)")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("TSGEN_GATE_CACHE", str(ROOT / "build" / "gate"))  # the nodes' runtime objects
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        scratch = Path(tmp)
        warm = argparse.Namespace(**{**vars(args), "ops": "abs", "device": None})
        timed_run(1, warm, scratch / "warm")  # builds the runtime objects the nodes share
        one, summary_one = timed_run(1, args, scratch)
        two, summary_two = timed_run(2, args, scratch)
    print(f"{'nodes':>5}  {'wall s':>8}  result")
    print(f"{1:>5}  {one:>8.0f}  {summary_one}")
    print(f"{2:>5}  {two:>8.0f}  {summary_two}")
    print(f"2 nodes / 1 node: {two / one:.2f} of the wall time ({one / two:.2f}x faster)")


if __name__ == "__main__":
    main()
