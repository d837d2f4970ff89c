"""scripts/device_check.py, the GPU check, without a GPU: its plan fits the device command's time, every step
is bounded by `timeout` and still leaves its log and steps.json when it is cut short, a needed step's failure
stops the rest, and a machine without a GPU is told why. The parts of the preflight that need the wheelhouse
run when it is built (python scripts/build_wheelhouse.py; .ci/run builds it) and skip, saying so, otherwise."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import build_wheelhouse  # noqa: E402 - from scripts/
import device_check  # noqa: E402
from device_check import Check, Step  # noqa: E402

PY = sys.executable


def run_check(tmp_path: Path, steps: list[Step]) -> tuple[int, dict, float]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    started = time.monotonic()
    rc = Check(out, steps, dict(os.environ, PYTHONUNBUFFERED="1")).run()
    return rc, json.loads((out / "steps.json").read_text()), time.monotonic() - started


def statuses(record: dict) -> dict[str, str]:
    return {entry["name"]: entry["status"] for entry in record["steps"]}


# --- The plan --------------------------------------------------------------------------------------------


def test_the_plan_fits_the_device_command_with_every_step_bounded(tmp_path: Path) -> None:
    steps = device_check.plan(PY, tmp_path, 16)
    assert device_check.plan_problems(steps) == []
    assert [s.name for s in steps] == ["probe", "install", "build", "cuda", "tests", "gate", "bench"]
    assert all(isinstance(s.timeout_s, int) and s.timeout_s > 0 for s in steps)
    worst = sum(s.timeout_s + device_check.KILL_AFTER_S for s in steps)
    assert worst <= device_check.BUDGET_S <= 0.8 * device_check.RUN_LIMIT_S == 480
    files = device_check.out_files(steps)
    assert len(files) <= 8 and {"steps.json", "gate-cuda.json", "bench-cuda.json"} <= set(files)
    # The JSON the gate and the benchmark write lands in OUT_DIR, where the device tool picks it up.
    assert str(tmp_path / "gate-cuda.json") in steps[5].command and str(tmp_path / "bench-cuda.json") in steps[6].command
    # The gate judges one shard a day, and consecutive days cover every shard.
    assert f"{device_check.gate_shard()}/{device_check.GATE_SHARDS}" in steps[5].command
    assert {device_check.gate_shard(day) for day in range(100, 100 + device_check.GATE_SHARDS)} == set(range(1, device_check.GATE_SHARDS + 1))


def test_plan_problems_name_what_would_overrun_or_be_lost(tmp_path: Path) -> None:
    steps = device_check.plan(PY, tmp_path, 16)
    long = [*steps, Step("extra", 60, "extra.log", ("true",))]
    assert any("over the 480 s budget" in p for p in device_check.plan_problems(long))
    unbounded = [Step("a", 0, "a.log", ("true",))]
    assert any("not a positive number" in p for p in device_check.plan_problems(unbounded))
    many_logs = [Step(f"s{i}", 1, f"s{i}.log", ("true",)) for i in range(8)]
    assert any("the device tool returns 8" in p for p in device_check.plan_problems(many_logs))
    assert any("letters, digits" in p for p in device_check.plan_problems([Step("a", 1, "a b.log", ("true",))]))


def test_the_shell_entry_point_prints_the_plan() -> None:
    result = subprocess.run([str(ROOT / "scripts" / "device_check.sh"), "--plan"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHON=PY), check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "worst case 480 s" in result.stdout and "gate " in result.stdout


# --- Running steps ---------------------------------------------------------------------------------------


def test_a_step_past_its_timeout_is_stopped_and_the_check_goes_on(tmp_path: Path) -> None:
    slow = Step("slow", 1, "slow.log", (PY, "-c", "print('begun', flush=True); import time; time.sleep(60)"))
    after = Step("after", 10, "after.log", (PY, "-c", "print('after ran')"))
    rc, record, seconds = run_check(tmp_path, [slow, after])
    assert rc == 1 and seconds < 15
    [entry, _] = record["steps"]
    assert entry["status"] == "timed out" and entry["timed_out"] and entry["rc"] == 124
    assert statuses(record)["after"] == "passed" and record["status"] == "FAILED"
    log = (tmp_path / "out" / "slow.log").read_text()
    assert "begun" in log and "=== slow: timed out" in log  # what it printed before the cut is kept
    assert "after ran" in (tmp_path / "out" / "after.log").read_text()


def test_a_step_that_ignores_term_is_killed(tmp_path: Path) -> None:
    ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ignoring TERM', flush=True); time.sleep(60)"
    stubborn = Step("stubborn", 1, "s.log", (PY, "-c", ignore))
    rc, record, seconds = run_check(tmp_path, [stubborn])
    assert rc == 1 and seconds < 1 + device_check.KILL_AFTER_S + 8
    assert record["steps"][0]["rc"] in (137, -9) and record["steps"][0]["status"] == "timed out"


def test_a_needed_step_that_fails_stops_the_rest(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    steps = [Step("first", 5, "a.log", (PY, "-c", "raise SystemExit(3)"), needed=True),
             Step("second", 5, "a.log", (PY, "-c", f"open({str(marker)!r}, 'w')"))]  # fmt: skip
    rc, record, _ = run_check(tmp_path, steps)
    assert rc == 1 and not marker.exists()
    assert statuses(record) == {"first": "failed", "second": "skipped: first did not pass"}
    assert record["steps"][0]["rc"] == 3


def test_steps_json_is_written_when_a_step_starts(tmp_path: Path) -> None:
    # The second step reads the record while it runs: the first is finished, itself is running.
    peek = "import json, sys; r = json.load(open(sys.argv[1])); print('seen:', [s['status'] for s in r['steps']])"
    steps = [Step("one", 5, "a.log", (PY, "-c", "print(1)")),
             Step("peek", 5, "a.log", (PY, "-c", peek, str(tmp_path / "out" / "steps.json")))]  # fmt: skip
    rc, record, _ = run_check(tmp_path, steps)
    assert rc == 0 and record["status"] == "passed"
    assert "seen: ['passed', 'running']" in (tmp_path / "out" / "a.log").read_text()


def test_a_straggler_holding_the_output_does_not_hang_the_check(tmp_path: Path) -> None:
    # A child in its own session (as the gate's sandboxed runs are) outlives `timeout` with the pipe open.
    leave = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], "
             "start_new_session=True); print('straggler', p.pid, flush=True)")  # fmt: skip
    rc, record, seconds = run_check(tmp_path, [Step("leaves", 5, "a.log", (PY, "-c", leave))])
    pid = int((tmp_path / "out" / "a.log").read_text().split("straggler ")[1].split()[0])
    os.kill(pid, signal.SIGKILL)
    assert rc == 0 and record["steps"][0]["status"] == "passed" and seconds < 12


def test_without_a_gpu_the_check_stops_at_the_probe_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    probe = subprocess.run([PY, str(ROOT / "scripts" / "cuda_probe.py")], capture_output=True, text=True, timeout=60, check=False)
    if probe.returncode == 0:
        pytest.skip(f"a GPU is here ({probe.stdout.strip()}): the whole check would run; scripts/device_check.sh runs it")
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    (wheels / "ruff-0.17.6-py3-none-any.whl").write_bytes(b"x")  # the check stops before anything installs it
    monkeypatch.setattr(build_wheelhouse, "WHEELHOUSE", wheels)
    out = tmp_path / "check"
    assert device_check.check(out) == 1
    record = json.loads((out / "steps.json").read_text())
    assert record["status"] == "FAILED" and record["gpu"]["error"].startswith("cuda_probe: ")
    assert statuses(record)["probe"] == "failed"
    assert all(s == "skipped: probe did not pass" for name, s in statuses(record).items() if name != "probe")
    assert "cuda_probe: " in (out / "setup.log").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["setup.log", "steps.json"]
    assert "device check FAILED" in capsys.readouterr().out.splitlines()[-1]


def test_the_check_refuses_to_start_without_its_wheelhouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(build_wheelhouse, "WHEELHOUSE", tmp_path / "empty")
    assert device_check.check(tmp_path / "out") == 2
    assert "name build/wheelhouse in the device tool's carry" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- The preflight ----------------------------------------------------------------------------------------


def test_the_wheelhouse_check_names_missing_and_unlisted_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pins = build_wheelhouse.read_lock()
    for name, version in pins.items():
        if name != "libcst":
            (tmp_path / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"x")
    (tmp_path / "six-1.16.0-py2.py3-none-any.whl").write_bytes(b"x")
    monkeypatch.setattr(build_wheelhouse, "WHEELHOUSE", tmp_path)
    with pytest.raises(device_check.PreflightFailure, match=r"missing: libcst==1\.9\.0; not listed: six==1\.16\.0"):
        device_check._preflight_wheelhouse()
    (tmp_path / f"libcst-{pins['libcst']}-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    (tmp_path / "six-1.16.0-py2.py3-none-any.whl").unlink()
    assert device_check._preflight_wheelhouse().startswith(f"{len(pins)} wheels")


def built_wheelhouse() -> None:
    if not build_wheelhouse.wheels(build_wheelhouse.WHEELHOUSE) or not build_wheelhouse.wheels(build_wheelhouse.IMAGE_STANDIN):
        pytest.skip("the wheelhouse is not built here: python scripts/build_wheelhouse.py (.ci/run builds it)")


def test_the_wheelhouse_resolves_for_the_devices_python(tmp_path: Path) -> None:
    built_wheelhouse()
    summary = device_check._preflight_resolve(tmp_path)
    assert summary.endswith("numpy from the image") and f"{len(build_wheelhouse.read_lock())} from the wheelhouse" in summary


def test_a_wheelhouse_without_a_needed_wheel_does_not_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built_wheelhouse()
    partial = tmp_path / "wheelhouse"
    partial.mkdir()
    for wheel in build_wheelhouse.wheels(build_wheelhouse.WHEELHOUSE):
        if not wheel.name.startswith("libcst-"):
            shutil.copy(wheel, partial)
    monkeypatch.setattr(build_wheelhouse, "WHEELHOUSE", partial)
    with pytest.raises(device_check.PreflightFailure, match="libcst"):
        device_check._preflight_resolve(tmp_path)


def test_the_wheels_install_and_import_on_the_devices_python(tmp_path: Path) -> None:
    built_wheelhouse()
    try:
        summary = device_check._preflight_imports(tmp_path)
    except device_check.Skipped as exc:
        pytest.skip(str(exc))
    assert "clang-format version 23.1.3" in summary and "ruff 0.17.6" in summary


# --- The workflow and .ci/run run the preflight -------------------------------------------------------------


def test_ci_runs_the_preflight() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    runs = [step.get("run", "") for step in workflow["jobs"]["generate-build-test"]["steps"]]
    [preflight] = [run for run in runs if "device_check.sh --preflight" in run]
    assert "python scripts/build_wheelhouse.py" in preflight
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # Two commands, not an && list: `set -e` would let a failed download skip the preflight silently.
    assert "\npython scripts/build_wheelhouse.py\nscripts/device_check.sh --preflight\n" in ci_run
