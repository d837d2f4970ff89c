"""TS_NUM_THREADS, TS_SPIN_MS, TS_STREAM_MIN_BYTES and TS_PREFETCH are parsed by one helper (runtime/src/core/env.cpp):
a whole decimal integer in range, or a ValueError naming the variable, its value and what it must be.

strtoll saturates a number too large for a long long at LLONG_MAX and says so only through errno, and
stops quietly at the first character it cannot read: both were accepted before. Each case runs in a fresh
interpreter, since each variable is read once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# An op that reads each variable: a 3-element add reads the streaming threshold and the thread count; a
# 4M-element add on 2 threads starts the pool, which reads the spin window; the import reads TS_PREFETCH.
SCRIPT = "import numpy as np, tensorsmith as ts; x = ts.asarray(np.ones({n})); print(ts.sum(ts.add(x, x)).item())"
WHAT = {
    "TS_NUM_THREADS": "a positive integer",
    "TS_SPIN_MS": "a whole number of milliseconds from 0 to 60000",
    "TS_STREAM_MIN_BYTES": "a positive integer",
    "TS_PREFETCH": "0 or 1",
}
SIZE = {"TS_NUM_THREADS": 3, "TS_SPIN_MS": 4_000_000, "TS_STREAM_MIN_BYTES": 3, "TS_PREFETCH": 3}


def run_with(name: str, value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TS_NUM_THREADS": "2", name: value}
    return subprocess.run([sys.executable, "-c", SCRIPT.format(n=SIZE[name])], capture_output=True, text=True,
                          timeout=120, env=env, check=False)  # fmt: skip


SATURATING = "99999999999999999999999"
BAD = [
    ("TS_STREAM_MIN_BYTES", SATURATING, "outside 1 to 9223372036854775807"),
    ("TS_STREAM_MIN_BYTES", "-" + SATURATING, "outside 1 to 9223372036854775807"),
    ("TS_STREAM_MIN_BYTES", "9223372036854775808", "outside 1 to 9223372036854775807"),  # LLONG_MAX + 1
    ("TS_STREAM_MIN_BYTES", "0", "outside 1 to"),
    ("TS_STREAM_MIN_BYTES", "-5", "outside 1 to"),
    ("TS_STREAM_MIN_BYTES", " 5", "not a whole decimal number"),
    ("TS_STREAM_MIN_BYTES", "5 ", "not a whole decimal number"),
    ("TS_STREAM_MIN_BYTES", "0x10", "not a whole decimal number"),
    ("TS_STREAM_MIN_BYTES", "1e3", "not a whole decimal number"),
    ("TS_STREAM_MIN_BYTES", "", "not a whole decimal number"),
    ("TS_STREAM_MIN_BYTES", "+", "not a whole decimal number"),
    ("TS_NUM_THREADS", SATURATING, "outside 1 to 4096"),
    ("TS_NUM_THREADS", "4097", "outside 1 to 4096"),
    ("TS_NUM_THREADS", "0", "outside 1 to 4096"),
    ("TS_NUM_THREADS", "2.0", "not a whole decimal number"),
    ("TS_NUM_THREADS", "\t2", "not a whole decimal number"),
    ("TS_SPIN_MS", SATURATING, "outside 0 to 60000"),
    ("TS_SPIN_MS", "60001", "outside 0 to 60000"),
    ("TS_SPIN_MS", "5ms", "not a whole decimal number"),
    ("TS_PREFETCH", "2", "outside 0 to 1"),
    ("TS_PREFETCH", "on", "not a whole decimal number"),
]


@pytest.mark.parametrize("name, value, why", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_values_are_a_clear_error(name: str, value: str, why: str) -> None:
    run = run_with(name, value)
    assert run.returncode != 0, f"{name}={value!r} was accepted:\n{run.stdout}"
    # TS_PREFETCH is read at import, and pybind11 reports an error in a module's initialisation as ImportError.
    error = "ImportError" if name == "TS_PREFETCH" else "ValueError"
    assert f"{error}: {name} must be {WHAT[name]}, got '{value}' ({why}" in run.stderr, run.stderr[-2000:]


GOOD = [
    ("TS_STREAM_MIN_BYTES", "1"),
    ("TS_STREAM_MIN_BYTES", "+7"),
    ("TS_STREAM_MIN_BYTES", "0016"),
    ("TS_STREAM_MIN_BYTES", "9223372036854775807"),
    ("TS_NUM_THREADS", "1"),
    ("TS_NUM_THREADS", "+3"),
    ("TS_SPIN_MS", "0"),
    ("TS_SPIN_MS", "250"),
    ("TS_PREFETCH", "0"),
    ("TS_PREFETCH", "1"),
]


@pytest.mark.parametrize("name, value", GOOD, ids=[f"{n}={v!r}" for n, v in GOOD])
def test_good_values_are_taken(name: str, value: str) -> None:
    run = run_with(name, value)
    assert run.returncode == 0, run.stderr[-2000:]
    assert float(run.stdout) == 2.0 * SIZE[name]


def test_prefetch_hints_change_no_result() -> None:
    """Hints (ts::prefetch_ahead) reach past a row's end, and past the allocation's on its last row: issued or
    not, the same bytes come back and nothing faults."""
    script = (
        "import sys, numpy as np, tensorsmith as ts\n"
        "x = ts.asarray(np.random.default_rng(0).standard_normal((9, 70001), dtype=np.float32))\n"
        "outs = [ts.sum(x), ts.max(x, axis=1), ts.mean(x, axis=0), ts.softmax(x, axis=1), ts.log_softmax(x, axis=1)]\n"
        "sys.stdout.write(''.join(np.asarray(o).tobytes().hex() for o in outs))"
    )
    results = {}
    for hints in ("0", "1"):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False,
                             env={**os.environ, "TS_PREFETCH": hints})  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        results[hints] = run.stdout
    assert results["0"] and results["0"] == results["1"]
