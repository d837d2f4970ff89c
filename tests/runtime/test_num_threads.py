"""ts.get_num_threads / ts.set_num_threads: the CPU engines' thread count from Python (ts::num_threads).

Each case runs in a fresh interpreter: the count is process-wide, and the default is read from TS_NUM_THREADS
once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "TS_NUM_THREADS"} | env
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment,
                            check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_default_follows_ts_num_threads() -> None:
    assert run("import tensorsmith as ts; print(ts.get_num_threads())", TS_NUM_THREADS="3").strip() == "3"


def test_the_default_is_the_cpus_this_process_may_run_on() -> None:
    assert run("import tensorsmith as ts; print(ts.get_num_threads())").strip() == str(len(os.sched_getaffinity(0)))


def test_set_num_threads_changes_the_count_and_no_result() -> None:
    # Sizes above every engine's parallel grain, so that 3 threads split what 1 does not; a float sum and
    # cumulative sum whose grouping would show a split that depended on the count. Batches of small products
    # (the engine splits them, each product whole); not a large one, whose float sums OpenBLAS groups
    # differently on one thread than on several (README: TS_NUM_THREADS).
    code = (
        "import numpy as np, tensorsmith as ts\n"
        "rng = np.random.default_rng(7)\n"
        "x = ts.asarray(rng.standard_normal((37, 70001), dtype=np.float32))\n"
        "m = ts.asarray(rng.standard_normal((64, 40, 40)))\n"
        "def results():\n"
        "    outs = [ts.sum(x), ts.sum(x, axis=0), ts.exp(x), ts.cumulative_sum(x, axis=1), ts.softmax(x, axis=1),\n"
        "            ts.sort(x, axis=1), m @ m]\n"
        "    return b''.join(np.asarray(o).tobytes() for o in outs)\n"
        "seen = {}\n"
        "for n in (1, 3, 2):\n"
        "    ts.set_num_threads(n)\n"
        "    assert ts.get_num_threads() == n, (n, ts.get_num_threads())\n"
        "    seen[n] = results()\n"
        "print(len(set(seen.values())))"
    )
    assert run(code, TS_NUM_THREADS="2").strip() == "1"


@pytest.mark.parametrize("bad", [0, -2])
def test_a_count_below_one_is_a_value_error_and_changes_nothing(bad: int) -> None:
    code = (
        "import tensorsmith as ts\n"
        f"try:\n    ts.set_num_threads({bad})\nexcept ValueError as e:\n    print(e)\n"
        "print(ts.get_num_threads())"
    )
    out = run(code, TS_NUM_THREADS="2").splitlines()
    assert out == [f"the number of threads must be at least 1, got {bad}", "2"]
