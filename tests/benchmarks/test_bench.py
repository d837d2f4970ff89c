"""The benchmark script keeps working: its timing loop ranks a slow callable above a fast one, and a tiny run
(one case, one sample) fills the JSON report it promises. Timings themselves are not asserted."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

bench = pytest.importorskip("bench", reason="benchmarks/bench.py needs the built tensorsmith")


def test_time_case_reports_per_call_medians() -> None:
    medians = bench.time_case({"fast": lambda: None, "slow": lambda: time.sleep(0.002)}, repeats=3, min_sample_s=0.0)
    assert set(medians) == {"fast", "slow"}
    assert medians["slow"] >= 0.002 > medians["fast"] >= 0


def test_each_sample_follows_untimed_calls_that_wake_the_librarys_threads() -> None:
    # A worker woken from sleep can wait a scheduler tick before it runs: one untimed call is not enough, so a
    # sample's timed calls start only after WAKE_S of untimed ones.
    times: list[float] = []
    bench.time_case({"lib": lambda: times.append(time.perf_counter())}, repeats=1, min_sample_s=0.0, settle_s=0.0)
    calibration, first_untimed, timed = times[0], times[1], times[-1]  # min_sample_s=0: one timed call
    assert calibration <= first_untimed and len(times) >= 4
    assert timed - first_untimed >= bench.WAKE_S * 0.99, (timed - first_untimed, bench.WAKE_S)


def test_quick_run_writes_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--only", "^pointwise/add/small$", "--repeats", "1", "--no-torch", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["bound"]["gbps"] > 0 and report["bound"]["method"] in report["bound"]["probes"]
    [result] = report["results"]
    assert result["name"] == "pointwise/add/small"
    seconds = result["seconds"]
    assert seconds["tensorsmith"] > 0 and seconds["numpy"] > 0
    assert result["ratio"]["numpy"] == pytest.approx(seconds["tensorsmith"] / seconds["numpy"])
    assert result["gbps"]["tensorsmith"] == pytest.approx(result["bytes_moved"] / seconds["tensorsmith"] / 1e9)
    assert result["bound"] == {"gbps": report["bound"]["gbps"], "measured": "start"}  # small: the start's bound
    # Without torch the add goal cannot be judged, and the run says so instead of passing it.
    statuses = {goal["case"]: goal["status"] for goal in report["goals"]}
    assert statuses["pointwise/add/small"] == "not measured"
    printed = capsys.readouterr().out
    assert "bandwidth bound" in printed and "pointwise/add small" in printed


def test_a_large_case_is_judged_against_the_bound_measured_beside_it(tmp_path: Path) -> None:
    # The probe runs in the case's own round-robin: its GB/s, not the start's, is what the fraction divides by.
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--only", "^pointwise/add/large$", "--repeats", "2", "--no-torch", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    [result] = report["results"]
    assert result["bound"]["measured"] == "beside" and result["bound"]["gbps"] > 0
    assert "bound" not in result["seconds"]  # the probe is not a library
    [share] = [goal for goal in report["goals"] if goal["case"] == "pointwise/add/large" and goal["peer"] == "bound"]
    assert share["fraction"] == result["fraction_of_bound"]["tensorsmith"]
    assert share["status"] == ("met" if share["fraction"] >= 0.85 else "missed")
    assert result["fraction_of_bound"]["tensorsmith"] == pytest.approx(result["gbps"]["tensorsmith"] / result["bound"]["gbps"])


def test_the_thread_loops_report_a_speedup_per_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two sizes of the two-thread loop: medium ops (split over the cores by the engines) and ops below the engines'
    # parallel grain, where only a second Python thread can use a second core. Each reports one thread's time over
    # two threads' for every library timed.
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--only", "^threads/", "--repeats", "1", "--no-torch", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    shapes = {r["name"]: r["shape"] for r in report["results"]}
    assert shapes["threads/ops loop, 2 threads/one-core"] == str((bench.case_defs.ONE_CORE_ELEMENTS,))
    limits = (BENCHMARKS.parent / "runtime" / "include" / "tensorsmith" / "engine_limits.h").read_text()
    for grain in ("kPointwiseGrain", "kReduceGrain"):  # one range of the engines' grain: not split over cores
        assert bench.case_defs.ONE_CORE_ELEMENTS < 2 * int(re.search(rf"{grain} = (\d+);", limits).group(1))
    assert set(report["thread_speedups"]) == {"medium", "one-core"}
    for size, speedups in report["thread_speedups"].items():
        one = next(r for r in report["results"] if r["name"] == f"threads/ops loop, 1 thread/{size}")
        two = next(r for r in report["results"] if r["name"] == f"threads/ops loop, 2 threads/{size}")
        assert set(speedups) == {"tensorsmith", "numpy"}
        for lib, speedup in speedups.items():
            assert speedup == pytest.approx(one["seconds"][lib] / two["seconds"][lib])
    printed = capsys.readouterr().out
    assert "the same one-core ops" in printed and "the same medium ops" in printed
