"""The GPU check within a fixed time budget, and its preflight: everything but the GPU, on any machine.

    scripts/device_check.sh [OUT_DIR]      on the GPU machine (OUT_DIR: build/device-check unless given)
    scripts/device_check.sh --preflight    anywhere: wheelhouse, imports, sm_90 build, the plan's timeouts
    scripts/device_check.sh --plan         the steps, their timeouts and the budget

The check probes the GPU, installs what the image lacks from the carried wheelhouse (build/wheelhouse: no
registry is reachable there), builds with CUDA for the GPU at hand, runs a smoke test, the CUDA tests, the gate
over today's shard of the CUDA kernels (gate_shard) and the benchmark against PyTorch. Each step runs under `timeout`; the timeouts add up
to less than BUDGET_S, well inside the 600 s one device command may run. A step that fails or times out stops
the check only when later steps need what it makes. Every step's output reaches its log under OUT_DIR line by
line, and steps.json is rewritten at each step's start and end, so a run cut short still returns what it
measured. OUT_DIR holds at most 8 files, as many as the device tool brings back.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))
import build_wheelhouse as wheelhouse  # the device's description, shared with the wheelhouse's download

RUN_LIMIT_S = 600  # what one command on the device machine may run (the device tool's limit)
BUDGET_S = 480  # the plan's worst case: the rest of RUN_LIMIT_S covers the start-up and the copy back
KILL_AFTER_S = 5  # `timeout` sends TERM at a step's limit, KILL this much later
MAX_OUT_FILES = 8  # the device tool brings back at most 8 files from $OUT
OUT_NAME = re.compile(r"[A-Za-z0-9._-]+")  # and only names made of these
RECORD = "steps.json"
CUDA_TESTS = ("tests/runtime/test_cuda_runtime.py", "tests/runtime/test_cuda_ops.py")
# Import names that differ from the project's (the rest: the name with '-' as '_').
IMPORT_NAMES = {"pyyaml": "yaml", "pytest-xdist": "xdist"}


@dataclass(frozen=True)
class Step:
    name: str
    timeout_s: int
    log: str  # its output's file under OUT_DIR (small steps share setup.log: the tool returns 8 files)
    command: tuple[str, ...]
    needed: bool = False  # later steps need what it makes: its failure stops the check
    writes: tuple[str, ...] = ()  # files under OUT_DIR the command writes itself

    @property
    def worst_case_s(self) -> int:
        return self.timeout_s + KILL_AFTER_S


GATE_SHARDS = 6  # the gate step judges one shard of the CUDA kernels (about 14 of 86, one wave of 16 jobs)


def gate_shard(day: int | None = None) -> int:
    """Which shard (1-based) the gate step judges: today's, so consecutive days cover the catalog."""
    return (datetime.now(UTC).toordinal() if day is None else day) % GATE_SHARDS + 1


def plan(python: str, out: Path, jobs: int) -> list[Step]:
    """The check's steps, in order. Timeouts: a few times what each should take on 16 cores and an H200,
    bounded so that their sum stays within BUDGET_S. The build has the most: about 900 CPU-seconds of sm_90
    compilation (measured as PTX here, x1.4 for ptxas) and pybind11's LTO link (64 s on this machine)."""
    pip = (python, "-m", "pip")
    found = str(wheelhouse.WHEELHOUSE.relative_to(ROOT)) if wheelhouse.WHEELHOUSE.is_relative_to(ROOT) else str(wheelhouse.WHEELHOUSE)
    install = (*pip, "install", "--no-index", "--only-binary=:all:", "--find-links", found, *wheelhouse.requirements())
    build = (*pip, "install", "--no-index", "--no-build-isolation", "--no-deps", "-v", "-e", ".")
    # 8 workers: 541 op x dtype cases fit the timeout, and a worker that crashes in a kernel is reported, not the end
    tests = (python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "8", "-rs", "--durations=10", *CUDA_TESTS)
    # One shard of the CUDA catalog, a different one each day: a kernel takes 25-60 s to judge on the GPU
    # (measured on an H200), so the whole catalog (86) would need minutes; 6 days judge it all.
    gate = (python, "-m", "tensorsmith_forge.generator", "validate", "--device", "cuda", "--jobs", str(jobs),
            "--shard", f"{gate_shard()}/{GATE_SHARDS}", "--json", str(out / "gate-cuda.json"))  # fmt: skip
    return [
        Step("probe", 10, "setup.log", (python, "scripts/cuda_probe.py"), needed=True),
        Step("install", 30, "setup.log", install, needed=True),
        Step("build", 200, "build.log", build, needed=True),
        Step("cuda", 15, "setup.log", (python, "scripts/device_check.py", "--smoke"), needed=True),
        Step("tests", 60, "tests.log", tests),
        Step("gate", 90, "gate.log", gate, writes=("gate-cuda.json",)),
        Step("bench", 40, "bench.log", (python, "benchmarks/bench_cuda.py", "--json", str(out / "bench-cuda.json")),
             writes=("bench-cuda.json",)),
    ]


def out_files(steps: list[Step]) -> list[str]:
    return sorted({RECORD, *(s.log for s in steps), *(f for s in steps for f in s.writes)})


def plan_problems(steps: list[Step]) -> list[str]:
    """Why the plan could outrun the device command or lose its results; empty when it cannot."""
    problems = [f"step {s.name}: timeout {s.timeout_s!r} is not a positive number of seconds"
                for s in steps if not isinstance(s.timeout_s, int) or s.timeout_s <= 0]  # fmt: skip
    names = [s.name for s in steps]
    problems += [f"step {name} appears twice" for name in sorted({n for n in names if names.count(n) > 1})]
    worst = sum(s.worst_case_s for s in steps)
    if worst > BUDGET_S:
        problems.append(f"the steps' timeouts add up to {worst} s (each plus {KILL_AFTER_S} s to kill), over the {BUDGET_S} s budget")
    if BUDGET_S > 0.8 * RUN_LIMIT_S:
        problems.append(f"the budget ({BUDGET_S} s) leaves under a fifth of the device command's {RUN_LIMIT_S} s")
    files = out_files(steps)
    if len(files) > MAX_OUT_FILES:
        problems.append(f"{len(files)} files under OUT_DIR ({', '.join(files)}): the device tool returns {MAX_OUT_FILES}")
    problems += [f"{name!r}: the device tool returns only names of letters, digits, '.', '_', '-'"
                 for name in files if not OUT_NAME.fullmatch(name)]  # fmt: skip
    return problems


def print_plan(steps: list[Step]) -> int:
    print(f"{'step':<8} {'timeout':>8}  {'log':<10} stops the check on failure")
    for s in steps:
        print(f"{s.name:<8} {s.timeout_s:>6} s  {s.log:<10} {'yes' if s.needed else 'no'}")
    print(f"worst case {sum(s.worst_case_s for s in steps)} s (each step plus {KILL_AFTER_S} s to kill) of a {BUDGET_S} s "
          f"budget; one device command may run {RUN_LIMIT_S} s. OUT_DIR files: {', '.join(out_files(steps))}")  # fmt: skip
    problems = plan_problems(steps)
    for problem in problems:
        print(f"plan: {problem}", file=sys.stderr)
    return 1 if problems else 0


# --- The check, on the GPU machine -------------------------------------------------------------------------


class Check:
    def __init__(self, out: Path, steps: list[Step], env: dict[str, str]) -> None:
        self.out, self.steps, self.env = out, steps, env
        self.record: dict[str, Any] = {
            "started": _now(), "status": "running", "budget_s": BUDGET_S, "worst_case_s": sum(s.worst_case_s for s in steps),
            "python": sys.executable, "gpu": None,
            "steps": [{"name": s.name, "status": "pending", "timeout_s": s.timeout_s, "log": s.log, "command": list(s.command)}
                      for s in steps],
        }  # fmt: skip
        self.tails: dict[str, list[str]] = {}

    def write_record(self) -> None:
        """steps.json, replaced whole (a run killed mid-write keeps the previous one)."""
        tmp = self.out / f".{RECORD}.tmp"
        tmp.write_text(json.dumps(self.record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.out / RECORD)

    def run(self) -> int:
        stopped_by = None
        for index, step in enumerate(self.steps):
            entry = self.record["steps"][index]
            if stopped_by:
                entry["status"] = f"skipped: {stopped_by} did not pass"
                continue
            try:
                ok = self.run_step(step, entry)
            except OSError as exc:  # the step could not even start (or its log could not be written)
                entry.update(status=f"failed to start: {exc}")
                self.write_record()
                ok = False
            if step.name == "probe":
                self.use_probe(ok)
            if not ok and step.needed:
                stopped_by = step.name
        failed = [e["name"] for e in self.record["steps"] if e["status"] != "passed"]
        self.record.update(status="passed" if not failed else "FAILED", finished=_now())
        self.write_record()
        self.print_summary()
        return 0 if not failed else 1

    def run_step(self, step: Step, entry: dict[str, Any]) -> bool:
        command = ["timeout", f"--kill-after={KILL_AFTER_S}", str(step.timeout_s), *step.command]
        entry.update(status="running", started=_now())
        self.write_record()
        tail: collections.deque[str] = collections.deque(maxlen=60)
        started = time.monotonic()
        with (self.out / step.log).open("a", encoding="utf-8") as log:
            _emit(log, f"=== {step.name} (timeout {step.timeout_s} s): {shlex.join(step.command)}\n")
            proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)  # fmt: skip
            reader = threading.Thread(target=_pump, args=(proc, log, tail), daemon=True)
            reader.start()
            try:
                rc = proc.wait(timeout=step.worst_case_s + 10)
            except subprocess.TimeoutExpired:  # only if `timeout` itself hangs
                proc.kill()
                rc = proc.wait()
            # A process that left the step's group (the gate's sandboxed children) can keep the pipe open:
            # the step is over when `timeout` returns, whatever still holds it.
            reader.join(timeout=5)
            seconds = time.monotonic() - started
            # timeout's exit after TERM; after KILL it dies with its group (-9), or exits 137 where it survives
            timed_out = rc in (124, 137, -9)
            status = "timed out" if timed_out else "passed" if rc == 0 else "failed"
            _emit(log, f"=== {step.name}: {status} (exit {rc}) in {seconds:.0f} s of {step.timeout_s} s\n")
        entry.update(status=status, rc=rc, seconds=round(seconds, 1), timed_out=timed_out)
        self.tails[step.name] = list(tail)
        self.write_record()
        return status == "passed"

    def use_probe(self, ok: bool) -> None:
        lines = self.tails.get("probe", [])
        if ok:
            found = [line for line in lines if line.startswith("{")]
            self.record["gpu"] = json.loads(found[-1]) if found else {"error": "the probe printed no JSON"}
            arch = self.env.get("TS_CUDA_ARCHITECTURES") or self.record["gpu"].get("arch")
            if arch:  # only the GPU at hand: half the build of the release's 80;90
                self.env["TS_CUDA_ARCHITECTURES"] = arch
        else:
            said = [line.strip() for line in lines if line.startswith("cuda_probe: ")] or [line.strip() for line in lines[-1:]]
            self.record["gpu"] = {"error": said[-1] if said else "the probe printed nothing"}
        self.write_record()

    def print_summary(self) -> None:
        # The device tool returns the end of the output: the results that matter, repeated last.
        for name, keep in (("tests", 4), ("gate", 6), ("bench", 18)):
            lines = [line for line in self.tails.get(name, []) if not line.startswith("=== ")][-keep:]
            if lines:
                print(f"\n--- {name} (end of {self.out / next(s.log for s in self.steps if s.name == name)})")
                print("".join(lines), end="")
        print(f"\n{'step':<8} {'status':<28} {'seconds':>8} {'timeout':>8}  log")
        for e in self.record["steps"]:
            seconds = f"{e['seconds']:.0f}" if "seconds" in e else "-"
            print(f"{e['name']:<8} {e['status']:<28} {seconds:>8} {e['timeout_s']:>8}  {e['log']}")
        gpu = self.record["gpu"] or {}
        print(f"GPU: {gpu.get('name', gpu.get('error', 'not probed'))}; device check {self.record['status']}; "
              f"logs and JSON in {self.out}")  # fmt: skip


def _pump(proc: subprocess.Popen[bytes], log: Any, tail: collections.deque[str]) -> None:
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            tail.append(line)
            _emit(log, line)
    except ValueError:  # the log was closed: the step ended while a straggler still wrote
        pass


def _emit(log: Any, text: str) -> None:
    log.write(text)
    log.flush()
    sys.stdout.write(text)
    sys.stdout.flush()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check(out: Path) -> int:
    if shutil.which("timeout") is None:
        print("device check: no `timeout` (coreutils) here: every step runs under it", file=sys.stderr)
        return 2
    if not wheelhouse.wheels(wheelhouse.WHEELHOUSE):
        print("device check: build/wheelhouse/ holds no wheel (no registry is reachable on the GPU machine): run "
              "`python scripts/build_wheelhouse.py` first, and name build/wheelhouse in the device tool's carry", file=sys.stderr)  # fmt: skip
        return 2
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    steps = plan(sys.executable, out, os.cpu_count() or 1)
    for name in out_files(steps):  # an earlier run's files would mix with this one's
        (out / name).unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(PYTHONUNBUFFERED="1", TS_CUDA="1", CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 1),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")  # no registry there: never ask one  # fmt: skip
    return Check(out, steps, env).run()


def smoke() -> int:
    """The `cuda` step: what the image and the build hold, then one op on the GPU."""
    import numpy as np

    print(f"python {sys.version.split()[0]} ({sys.executable})")
    names = sorted({wheelhouse.requirement_name(r) for r in wheelhouse.requirements()} | {"torch", "nvidia-cublas"})
    print("packages: " + ", ".join(f"{n} {_installed(n)}" for n in names))
    for tool in (["cmake", "--version"], ["nvcc", "--version"],
                 ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem", "--format=csv,noheader"]):  # fmt: skip
        try:
            lines = subprocess.run(tool, capture_output=True, text=True, timeout=10, check=False).stdout.strip().splitlines()
            print(f"{tool[0]}: {lines[-1] if tool[0] == 'nvcc' and lines else lines[0] if lines else '(no output)'}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"{tool[0]}: {exc}")
    import tensorsmith as ts

    print(f"build: {ts.build_info()}")
    if not ts.cuda.is_available():
        try:  # the runtime's own reason
            ts.asarray([1.0], device="cuda")
        except Exception as exc:  # noqa: BLE001 - reported, not handled
            print(f"cuda: not available: {exc}")
        else:
            print("cuda: ts.cuda.is_available() is False")
        return 1
    x = ts.asarray(np.arange(8, dtype=np.float32), device="cuda")
    y = ts.add(x, x).cpu().numpy()
    if not np.array_equal(y, 2 * np.arange(8, dtype=np.float32)):
        print(f"cuda: add on the device gave {y}")
        return 1
    print(f"cuda: {ts.cuda.device_count()} device(s); add ran on {x.device}")
    return 0


def _installed(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


# --- The preflight, anywhere -------------------------------------------------------------------------------


class PreflightFailure(Exception):
    pass


class Skipped(Exception):
    pass


def preflight() -> int:
    started = time.monotonic()
    results: list[str] = []
    with tempfile.TemporaryDirectory(prefix="device-preflight-") as scratch:
        tmp = Path(scratch)
        parts: list[tuple[str, Callable[[], str]]] = [
            ("plan", _preflight_plan),
            ("wheelhouse", _preflight_wheelhouse),
            (f"resolves for CPython {wheelhouse.DEVICE_PYTHON}", lambda: _preflight_resolve(tmp)),
            (f"installs and imports on CPython {wheelhouse.DEVICE_PYTHON}", lambda: _preflight_imports(tmp)),
            ("the check's own code", _preflight_local),
            ("builds for sm_90", lambda: _preflight_sm90(tmp)),
        ]
        for name, part in parts:
            part_started = time.monotonic()
            try:
                outcome = f"ok: {part()}"
                results.append("ok")
            except Skipped as exc:
                outcome = f"SKIPPED: {exc}"
                results.append("skipped")
            except PreflightFailure as exc:
                outcome = f"FAILED: {exc}"
                results.append("failed")
            print(f"preflight: {name}: {outcome} ({time.monotonic() - part_started:.0f} s)", flush=True)
    verdict = "FAILED" if "failed" in results else "passed"
    print(f"preflight {verdict}: {results.count('ok')} ok, {results.count('skipped')} skipped, "
          f"{results.count('failed')} failed, in {time.monotonic() - started:.0f} s")  # fmt: skip
    return 1 if verdict == "FAILED" else 0


def _run(command: list[str], timeout_s: int, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False, **kwargs)
    except subprocess.TimeoutExpired:
        raise PreflightFailure(f"{shlex.join(command[:4])} ... ran past {timeout_s} s") from None
    except OSError as exc:
        raise PreflightFailure(f"cannot run {command[0]}: {exc}") from None


def _last_lines(text: str, count: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-count:])


def _preflight_plan() -> str:
    steps = plan(sys.executable, ROOT / "build" / "device-check", os.cpu_count() or 1)
    problems = plan_problems(steps)
    if shutil.which("timeout") is None:
        problems.append("no `timeout` (coreutils) here")
    if problems:
        raise PreflightFailure("; ".join(problems))
    return (f"{len(steps)} steps, each under `timeout`; worst case {sum(s.worst_case_s for s in steps)} s of a {BUDGET_S} s "
            f"budget ({RUN_LIMIT_S} s per device command); {len(out_files(steps))} files under OUT_DIR")  # fmt: skip


def _preflight_wheelhouse() -> str:
    pins = wheelhouse.read_lock()
    held = wheelhouse.wheels(wheelhouse.WHEELHOUSE)
    if not held:
        raise PreflightFailure(f"{wheelhouse.WHEELHOUSE} holds no wheel: python scripts/build_wheelhouse.py")
    found = dict(wheelhouse.wheel_name_version(w.name) for w in held)
    if len(found) < len(held):
        raise PreflightFailure("two wheels of one project: python scripts/build_wheelhouse.py keeps one of each")
    missing = sorted(f"{n}=={v}" for n, v in pins.items() if found.get(n) != v)
    extra = sorted(f"{n}=={v}" for n, v in found.items() if pins.get(n) != v)
    if missing or extra:
        raise PreflightFailure(f"not what scripts/device-wheels.txt lists (missing: {', '.join(missing) or '-'}; not listed: "
                               f"{', '.join(extra) or '-'}): python scripts/build_wheelhouse.py")  # fmt: skip
    size = wheelhouse.size_mib(held)
    if size > wheelhouse.WHEELHOUSE_LIMIT_MIB:
        raise PreflightFailure(f"{size:.1f} MiB, over {wheelhouse.WHEELHOUSE_LIMIT_MIB} MiB")
    tree = _travelling_tree_mib()
    if tree is not None and tree + size > 64:
        raise PreflightFailure(f"the working tree ({tree:.1f} MiB) and the wheelhouse ({size:.1f} MiB) exceed the 64 MiB that travels")
    travel = f"; {tree + size:.1f} MiB travel with the working tree, of 64" if tree is not None else ""
    return f"{len(held)} wheels, {size:.1f} MiB{travel}"


def _travelling_tree_mib() -> float | None:
    """What the device tool sends besides `carry`: tracked and untracked-but-not-ignored files."""
    try:
        listing = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                                 timeout=60, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    paths = (ROOT / p for p in listing.decode().split("\0") if p)
    return sum(p.stat().st_size for p in paths if p.is_file()) / 2**20


def _image_wheels() -> list[str]:
    held = {wheelhouse.wheel_name_version(w.name) for w in wheelhouse.wheels(wheelhouse.IMAGE_STANDIN)}
    wanted = [tuple(r.split("==")) for r in wheelhouse.IMAGE]
    missing = [f"{n}=={v}" for n, v in wanted if (wheelhouse.canonical(n), v) not in held]
    if missing:
        raise PreflightFailure(f"{wheelhouse.IMAGE_STANDIN} lacks the image's {', '.join(missing)}: python scripts/build_wheelhouse.py")
    return [wheelhouse.canonical(n) for n, _ in wanted]


def _pip_for_device(*extra: str) -> list[str]:
    return [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--find-links",
            str(wheelhouse.WHEELHOUSE), "--find-links", str(wheelhouse.IMAGE_STANDIN), *wheelhouse.target_args(), *extra,
            *wheelhouse.requirements()]  # fmt: skip


def _preflight_resolve(tmp: Path) -> str:
    """pip resolves what pyproject asks for from the wheelhouse and the image alone, for the device's Python:
    every need is met, every listed wheel is used, and only what the image has comes from the image."""
    image = _image_wheels()
    report = tmp / "resolve.json"
    result = _run(_pip_for_device("--dry-run", "--quiet", "--report", str(report), "--target", str(tmp / "dry")), 180)
    if result.returncode != 0:
        raise PreflightFailure(f"pip cannot resolve from the wheelhouse: {_last_lines(result.stderr + result.stdout)}")
    chosen = {wheelhouse.canonical(item["metadata"]["name"]): item["download_info"]["url"]
              for item in json.loads(report.read_text(encoding="utf-8"))["install"]}  # fmt: skip
    from_image = sorted(n for n, url in chosen.items() if wheelhouse.IMAGE_STANDIN.name in url)
    unused = sorted(set(wheelhouse.read_lock()) - set(chosen))
    if from_image != sorted(image):
        raise PreflightFailure(f"took {from_image} from the image's packages, expected {sorted(image)}")
    if unused:
        raise PreflightFailure(f"nothing needs {', '.join(unused)}: remove it from scripts/device-wheels.txt")
    return f"{len(chosen)} projects: {len(chosen) - len(from_image)} from the wheelhouse, {', '.join(from_image)} from the image"


def _preflight_imports(tmp: Path) -> str:
    site = tmp / "site"
    result = _run(_pip_for_device("--quiet", "--target", str(site)), 300)
    if result.returncode != 0:
        raise PreflightFailure(f"pip install --target failed: {_last_lines(result.stderr + result.stdout)}")
    python = _find_python(wheelhouse.DEVICE_PYTHON)
    if python is None:
        raise Skipped(f"installed for {wheelhouse.DEVICE_PYTHON}, not imported: no Python {wheelhouse.DEVICE_PYTHON} here "
                      f"(python{wheelhouse.DEVICE_PYTHON} on PATH, pyenv's, or PREFLIGHT_PYTHON=...)")  # fmt: skip
    modules = [IMPORT_NAMES.get(n, n.replace("-", "_")) for n in map(wheelhouse.requirement_name, wheelhouse.requirements())]
    pins = {wheelhouse.requirement_name(r): r.split("==")[1] for r in wheelhouse.requirements() if "==" in r}
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1")
    result = _run([python, "-s", "-c", _IMPORT_CHECK, *modules], 120, env=env)
    if result.returncode != 0:
        raise PreflightFailure(f"{python}: {_last_lines(result.stderr + result.stdout)}")
    versions = result.stdout
    wrong = [f"{name} (pinned {pin})" for name, pin in pins.items() if pin not in versions]
    if wrong:
        raise PreflightFailure(f"formatter versions differ from pyproject's pins: {', '.join(wrong)}; printed {versions.strip()!r}")
    return f"{len(modules)} modules import under {python}; {' / '.join(versions.strip().splitlines())}"


# Run by the device's Python over the installed wheels: each module imports, the formatters' binaries run, and
# OpenBLAS's library loads (what the build links).
_IMPORT_CHECK = r"""
import ctypes, importlib, pathlib, subprocess, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
import clang_format, scipy_openblas64
from ruff.__main__ import find_ruff_bin
binary = pathlib.Path(clang_format.__file__).parent / "data" / "bin" / "clang-format"
for tool in (binary, find_ruff_bin()):
    print(subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=True, timeout=30).stdout.strip())
ctypes.CDLL(str(pathlib.Path(scipy_openblas64.get_lib_dir()) / scipy_openblas64.get_library(fullname=True)))
"""


def _find_python(version: str) -> str | None:
    candidates = [os.environ.get("PREFLIGHT_PYTHON"), shutil.which(f"python{version}"),
                  *map(str, sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))), f"/usr/bin/python{version}"]  # fmt: skip
    for candidate in filter(None, candidates):
        try:
            found = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                                   text=True, timeout=30, check=False).stdout.strip()  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        if found == version:
            return candidate
    return None


def _preflight_local() -> str:
    """The check's own entry points load here: the package and the commands its steps run."""
    result = _run([sys.executable, "-c", "import tensorsmith, tensorsmith_forge.generator.cli, tensorsmith_forge.validators.gate"], 120,
                  cwd=ROOT)  # fmt: skip
    if result.returncode != 0:
        raise PreflightFailure(f"the project does not import ({_last_lines(result.stderr)}): pip install --no-build-isolation -e '.[dev]'")
    result = _run([sys.executable, "benchmarks/bench_cuda.py", "--help"], 60, cwd=ROOT)
    if result.returncode != 0:
        raise PreflightFailure(f"benchmarks/bench_cuda.py --help: {_last_lines(result.stderr)}")
    probe = _run([sys.executable, "scripts/cuda_probe.py"], 30, cwd=ROOT)
    if probe.returncode == 0:
        return f"imports; the GPU probe finds {json.loads(probe.stdout)}"
    if probe.returncode != 1 or not probe.stderr.startswith("cuda_probe: "):
        raise PreflightFailure(f"the GPU probe crashed instead of saying why (exit {probe.returncode}): {_last_lines(probe.stderr)}")
    return f"imports; the GPU probe says why it finds none here ({probe.stderr.strip()})"


def _preflight_sm90(tmp: Path) -> str:
    try:
        from tensorsmith_forge.validators.cuda import NVCC_FLAGS, CudaToolchain, NvccMissing, find_nvcc
    except ImportError as exc:
        raise PreflightFailure(f"cannot import the gate's CUDA toolchain ({exc}): pip install -e '.[dev]'") from None
    try:
        nvcc = find_nvcc()
    except NvccMissing as exc:
        raise PreflightFailure(str(exc)) from None
    # One generated kernel with the gate's flags, as sm_90 machine code: the CUDA headers and machinery compile for
    # Hopper, and ptxas's report names the architecture of every function it assembled.
    result = _run([str(nvcc), *NVCC_FLAGS, "-Xptxas=-v", "-gencode=arch=compute_90,code=sm_90", "-DTS_WITH_CUDA", "-I",
                   "runtime/include", "-c", "generated/cuda/add.cu", "-o", str(tmp / "add.sm_90.o")], 180, cwd=ROOT)  # fmt: skip
    if result.returncode != 0:
        raise PreflightFailure(f"nvcc for sm_90: {_last_lines(result.stderr)}")
    assembled = result.stdout.count("for 'sm_90'") + result.stderr.count("for 'sm_90'")
    if not assembled:
        raise PreflightFailure(f"nvcc assembled no sm_90 function: {_last_lines(result.stderr + result.stdout)}")
    done = [f"generated/cuda/add.cu assembles to sm_90 ({assembled} functions; {nvcc})"]
    home = CudaToolchain(nvcc).cuda_home  # where the real nvcc lives, not a wrapper on PATH
    if not any((home / lib / "libcudart.so").exists() for lib in ("lib64", "lib", "targets/x86_64-linux/lib")):
        done.append(f"CMake configure not run: the toolkit at {home} has no libcudart.so, which FindCUDAToolkit needs "
                    "(the layout of the nvidia-cuda-* wheels); the device's image has a full toolkit")  # fmt: skip
        return "; ".join(done)
    done.append(_cmake_configure(tmp, nvcc))
    return "; ".join(done)


def _cmake_configure(tmp: Path, nvcc: Path) -> str:
    """CMakeLists.txt configured as the device's build is (TS_CUDA=ON for architecture 90), stopping short of the build."""
    import pybind11

    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    cmake = shutil.which("cmake", path=search)
    if cmake is None:
        raise PreflightFailure("no cmake here (pip install -r requirements-build.txt)")
    ninja = shutil.which("ninja", path=search)
    generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
    result = _run([cmake, "-S", str(ROOT), "-B", str(tmp / "cmake"), *generator, "-DTS_CUDA=ON", "-DTS_CUDA_ARCHITECTURES=90",
                   "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"],
                  180, env=dict(os.environ, CUDACXX=str(nvcc)))  # fmt: skip
    said = [line for line in result.stdout.splitlines() if "tensorsmith: CUDA" in line]
    if result.returncode != 0 or not said or "CUDA ON" not in said[0] or "architectures 90)" not in said[0]:
        raise PreflightFailure(f"CMake configure (TS_CUDA=ON, 90): {_last_lines(result.stderr + result.stdout)}")
    return f"CMake configures it ({said[0].strip('- ').strip()})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "build" / "device-check", help="where logs and JSON go")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--preflight", action="store_true", help="prove everything but the GPU, here")
    mode.add_argument("--plan", action="store_true", help="print the steps, their timeouts and the budget")
    mode.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # the check's `cuda` step
    args = parser.parse_args(argv)
    if args.preflight:
        return preflight()
    if args.plan:
        return print_plan(plan(sys.executable, args.out, os.cpu_count() or 1))
    if args.smoke:
        return smoke()
    return check(args.out)


if __name__ == "__main__":
    sys.exit(main())
