"""One place where a candidate is judged, whoever proposed it.

A Candidate is a kernel body for one op on one device, rendered into its
translation unit. Gate.judge runs the stages in order and stops at the first
failure:

  static        the body against the static rules (static_check.py)
  compile       the translation unit as the release build compiles it
  symbols       the object's undefined symbols against an allowlist, and no writable data
  differential  a module holding the candidate runs, sandboxed, on shown and hidden cases for
                every declared dtype (inputs.py); numpy's float64 reference decides (compare.py);
                runs with two canaries, in fresh and reused memory, must agree; inputs must not change
  sanitizers    the same on small cases, built with ASan + UBSan

CUDA kernels go through the same stages. Where no GPU is present the stages that run the kernel are
left pending (where not even nvcc is, every stage after the static rules): the verdict accepts what could
be checked (static rules, nvcc, symbols) and says so, and
`tsgen validate --device cuda` on a machine with a GPU judges them in full (differential against the
numpy reference, compute-sanitizer memcheck and racecheck when it is installed).

The verdict says where it failed in a few lines a proposer can act on, without
revealing hidden seeds; `report` holds everything for a person.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from generator.model import OpSpec

from . import compare, inputs, static_check, symbols
from .build import CUDA_VARIANT, BuildError, CandidateBuilder
from .cuda import gpu_count
from .runner import FILLS, load_arrays, write_job
from .sandbox import GiB, MiB, Limits, run_sandboxed

STAGES = ("static", "compile", "symbols", "differential", "sanitizers")
RUN_STAGES = ("differential", "sanitizers")  # the stages that run the kernel: a CUDA kernel's need a GPU
NVCC_STAGES = ("compile", "symbols", *RUN_STAGES)  # the stages that need a CUDA kernel compiled
# Why a machine leaves a CUDA kernel's stages pending: the short form MANIFEST and tables show, and the long one.
PENDING_WHY = {"no nvcc": "no CUDA compiler (nvcc) on this machine", "no GPU": "no CUDA device on this machine"}
SANITIZER_CASE_LIMIT = 4096  # elements per case: ASan runs stay small and fast
SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|SUMMARY: UndefinedBehaviorSanitizer")


@dataclass(frozen=True)
class Candidate:
    spec: OpSpec
    device: str
    body: str
    source: str  # the whole translation unit
    registration: str  # the op table for this op alone (dest.registration_context over a one-op catalog)
    proposer: str
    # A CUDA candidate's CPU twin (the op's committed CPU translation unit), run on the same cases where a
    # GPU runs the candidate: the two devices must agree. None for CPU candidates and new ops.
    companion: str | None = None

    @property
    def op(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    stage: str  # the stage that decided; "all" when accepted
    message: str  # a few lines a proposer or a person can act on
    report: dict[str, Any] = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        state = "accepted" if self.accepted else f"rejected at {self.stage}"
        return f"{state}: {self.message}" if self.message else state


class Gate:
    def __init__(self, root: Path, cache_dir: Path | None = None, stages: tuple[str, ...] = STAGES,
                 wall_s: float = 240.0) -> None:  # fmt: skip
        self.root = root
        # Cached runtime objects, verdicts and the salt; TSGEN_GATE_CACHE shares them between checkouts
        # (every entry is keyed by content, so sharing is safe).
        self.cache_dir = cache_dir or Path(os.environ.get("TSGEN_GATE_CACHE", root / "build" / "gate"))
        self.builder = CandidateBuilder(root, self.cache_dir)
        self.stages = stages
        self.wall_s = wall_s  # per sandboxed run; a hanging candidate costs this much
        self._salt: bytes | None = None
        self._lock = threading.Lock()

    @property
    def salt(self) -> bytes:
        """The secret behind hidden cases: random per machine, kept under build/, never in a prompt."""
        with self._lock:  # judges run in threads: exactly one of them may create the salt
            if self._salt is None:
                path = self.cache_dir / "salt"
                if not path.exists():
                    _write_atomic(path, secrets.token_hex(32))
                self._salt = bytes.fromhex(path.read_text(encoding="utf-8").strip())
            return self._salt

    def save_report(self, candidate: Candidate, verdict: Verdict) -> Path:
        """The full JSON report of the last judgement of this op and device, under build/gate/reports/."""
        path = self.cache_dir / "reports" / f"{candidate.op}.{candidate.device}.json"
        _write_atomic(path, json.dumps(verdict.report, indent=2, default=str) + "\n")
        return path

    def judge(self, candidate: Candidate, on_stage: Callable[[str], None] | None = None) -> Verdict:
        """The verdict, from the cache when this exact candidate was judged by this exact gate before.
        `on_stage(stage)` is told when each stage starts (for progress displays)."""
        key = self._cache_key(candidate)
        cached = self.cache_dir / "verdicts" / f"{key}.json"
        if cached.exists():
            data = json.loads(cached.read_text(encoding="utf-8"))
            return Verdict(data["accepted"], data["stage"], data["message"], {**data["report"], "cached": True})
        verdict = self._judge(candidate, on_stage or (lambda _stage: None))
        _write_atomic(cached, json.dumps({"accepted": verdict.accepted, "stage": verdict.stage, "message": verdict.message,
                                          "report": verdict.report}, default=str))  # fmt: skip
        return verdict

    def _cache_key(self, candidate: Candidate) -> str:
        """Everything a verdict depends on: the candidate, its spec, the gate's code, the runtime it runs
        in (engine and headers), the compiler, the hidden-case salt and the stages run."""
        digest = hashlib.sha256()
        gate_files = sorted([*Path(__file__).parent.glob("*.py"), *(Path(__file__).parent / "csrc").glob("*")])
        runtime_files = sorted([*(self.root / "runtime" / "src" / "core").glob("*.cpp"), *(self.root / "runtime" / "include").rglob("*.h")])
        for path in gate_files + runtime_files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        if candidate.device == "cuda":  # the CUDA machinery, runtime and compiler, and whether a GPU ran it
            cuda_files = sorted([*(self.root / "runtime" / "include").rglob("*.cuh"), *(self.root / "runtime" / "src" / "cuda").glob("*")])
            for path in cuda_files:
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
            digest.update(f"{self.builder.cuda.version if self.builder.has_nvcc else 'no nvcc'}|gpu={gpu_count() > 0}".encode())
        for part in (self.builder.toolchain.version(), self.salt.hex(), ",".join(self.stages), str(self.wall_s), candidate.spec.text,
                     candidate.device, candidate.source, candidate.registration, candidate.companion or ""):  # fmt: skip
            digest.update(part.encode() + b"\0")
        return digest.hexdigest()

    def pending_reason(self, device: str) -> str | None:
        """Why this machine cannot run every stage for `device` kernels (a key of PENDING_WHY), or None."""
        if device != "cuda":
            return None
        if not self.builder.has_nvcc:
            return "no nvcc"
        return "no GPU" if gpu_count() == 0 else None

    def pending_stages(self, device: str) -> tuple[str, ...]:
        """The stages this machine cannot run for `device` kernels: without nvcc, all but the static rules;
        without a GPU, those that run the kernel."""
        reason = self.pending_reason(device)
        held = () if reason is None else NVCC_STAGES if reason == "no nvcc" else RUN_STAGES
        return tuple(stage for stage in self.stages if stage in held)

    def _judge(self, candidate: Candidate, on_stage: Callable[[str], None]) -> Verdict:
        if candidate.device not in ("cpu", "cuda"):
            return Verdict(False, "device", f"the gate has no {candidate.device} path")
        pending = self.pending_stages(candidate.device)
        report: dict[str, Any] = {"op": candidate.op, "device": candidate.device, "proposer": candidate.proposer, "stages": {},
                                  "pending": list(pending)}  # fmt: skip
        scratch_root = self.cache_dir / "scratch"
        scratch_root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{candidate.op}-", dir=scratch_root))
        try:
            state: dict[str, Any] = {}
            for stage in (s for s in self.stages if s not in pending):
                on_stage(stage)
                started = time.monotonic()
                failure = getattr(self, f"_{stage}")(candidate, scratch, state, report)
                report["stages"][stage] = {"seconds": round(time.monotonic() - started, 2), "passed": failure is None}
                if failure is not None:
                    report["verdict"] = {"accepted": False, "stage": stage, "message": failure}
                    return Verdict(False, stage, failure, report)
            report["verdict"] = {"accepted": True}
            message = f"{', '.join(pending)} pending: {PENDING_WHY[self.pending_reason(candidate.device)]}" if pending else ""
            return Verdict(True, "all", message, report)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # ---- stages: each returns None (passed) or the failure message ----------------------------------

    def _static(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | None:
        violations = static_check.check_body(candidate.body, candidate.device)
        report["static"] = [str(v) for v in violations]
        if violations:
            return "\n".join(f"body {v}" for v in violations[:5])
        return None

    def _compile(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | None:
        try:
            ptx_only = candidate.device == "cuda" and gpu_count() == 0  # nothing here will run it: check, don't assemble
            state["object"] = self.builder.kernel_object(candidate.source, scratch, candidate.device, ptx_only)
        except BuildError as exc:
            return _map_to_body(str(exc), candidate.source)
        return None

    def _symbols(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | None:
        allowlist = symbols.CUDA_ALLOWLIST if candidate.device == "cuda" else symbols.DEFAULT_ALLOWLIST
        disallowed = symbols.check_symbols(state["object"], allowlist)
        data = symbols.writable_data_symbols(state["object"])
        report["symbols"] = {"disallowed": disallowed, "writable_data": data}
        if disallowed:
            return f"the kernel calls functions kernels may not use: {', '.join(disallowed[:8])}"
        if data:
            return f"the kernel defines static or global variables (state across calls): {', '.join(data[:8])}"
        return None

    def _differential(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | None:
        cases = self._cases(candidate, state)
        # The compile stage built the candidate as this module needs it (where a GPU will run it, the
        # release SASS): the module links that object. The CUDA driver maps far more address space than
        # it uses: no RLIMIT_AS there.
        cuda = candidate.device == "cuda"
        limits = Limits(wall_s=self.wall_s, memory_bytes=None if cuda else 4 * GiB, file_bytes=1024 * MiB)
        return self._run_cases(candidate, scratch, CUDA_VARIANT if cuda else "release", cases, report, limits,
                               kernel_o=state.get("object"))  # fmt: skip

    def _sanitizers(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | None:
        cases = [c for c in self._cases(candidate, state) if not c.hidden and c.size <= SANITIZER_CASE_LIMIT]
        if candidate.device == "cuda":
            return self._compute_sanitizer(candidate, scratch, cases, report)
        return self._run_cases(candidate, scratch, "sanitize", cases, report, Limits(wall_s=self.wall_s, memory_bytes=None,
                                                                                     file_bytes=1024 * MiB))  # fmt: skip

    def _cases(self, candidate: Candidate, state: dict) -> list[inputs.Case]:
        """Shown and hidden cases for every declared dtype, generated once per judgement."""
        if "cases" not in state:
            state["cases"] = [c for dtype in candidate.spec.dtypes for hidden in (False, True)
                              for c in inputs.generate_cases(candidate.spec, dtype, salt=self.salt, hidden=hidden)]  # fmt: skip
        return state["cases"]

    def _compute_sanitizer(self, candidate: Candidate, scratch: Path, cases: list[inputs.Case], report: dict) -> str | None:
        """memcheck (out-of-bounds and misaligned accesses) and racecheck (shared-memory races) on small cases."""
        tool = shutil.which("compute-sanitizer") or str(self.builder.cuda.cuda_home / "bin" / "compute-sanitizer")
        if not Path(tool).is_file():
            report["sanitize"] = {"skipped": "compute-sanitizer is not installed"}
            return None
        limits = Limits(wall_s=self.wall_s * 4, memory_bytes=None, file_bytes=1024 * MiB)
        for check in ("memcheck", "racecheck"):
            wrapper = [tool, f"--tool={check}", "--error-exitcode=86", "--print-limit=8"]
            failure = self._run_cases(candidate, scratch, CUDA_VARIANT, cases, report, limits, wrapper=wrapper, label=f"sanitize-{check}")
            if failure is not None:
                return f"compute-sanitizer {check}: {failure}"
        return None

    # ---- running ---------------------------------------------------------------------------------------

    def _run_cases(self, candidate: Candidate, scratch: Path, variant: str, cases: list[inputs.Case], report: dict,
                   limits: Limits, wrapper: list[str] | None = None, label: str | None = None,
                   kernel_o: Path | None = None) -> str | None:  # fmt: skip
        label = label or variant
        try:
            module = self.builder.build(candidate.source, candidate.registration, scratch, variant, companion=candidate.companion,
                                        kernel_o=kernel_o)  # fmt: skip
        except BuildError as exc:
            return f"the {variant} build failed:\n{exc}"
        run_dir = scratch / f"run-{label}"
        run_dir.mkdir()
        write_job(run_dir / "job.arrays", candidate.op, cases)
        env = {"PYTHONPATH": str(self.root), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        if variant == "sanitize":
            env |= _sanitizer_env(self.builder.toolchain.compiler)
        parity = ["parity"] if candidate.companion is not None and candidate.device != "cpu" else []
        command = [*(wrapper or []), sys.executable, "-m", "validators.runner", str(module), "job.arrays", "out.arrays", candidate.device,
                   *parity]  # fmt: skip
        result = run_sandboxed(command, cwd=run_dir, env=env, limits=limits)
        report[label] = {"cases": len(cases), "wall_s": round(result.wall_s, 2), "isolation": result.isolation.describe()}
        if variant == "sanitize" and SANITIZER_REPORT.search(result.stderr):
            return "the sanitizers report:\n" + _sanitizer_excerpt(result.stderr)
        if not result.ok:
            return f"the candidate's process {result.reason()}" + _tail(result.stderr)
        try:
            outputs = load_arrays(run_dir / "out.arrays")
            errors = json.loads((run_dir / "out.errors.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # the candidate shares the runner's process: its files are evidence, not truth
            return f"the candidate's process left unreadable results ({exc})"
        try:
            mismatches = [m for i, case in enumerate(cases) if (m := _check_case(candidate.spec, case, i, outputs, errors))]
        except Exception as exc:  # noqa: BLE001 - a harness bug must reject, never crash the loop
            return f"the gate could not check the results ({type(exc).__name__}: {exc}); treated as a rejection"
        report[label]["mismatches"] = [json.loads(m.to_json()) for m in mismatches[:20]]
        report[label]["failed_cases"] = len(mismatches)
        if mismatches:
            first = mismatches[0]
            more = f"\n({len(mismatches) - 1} more failing cases)" if len(mismatches) > 1 else ""
            return first.summary() + more
        return None


def _write_atomic(path: Path, text: str) -> None:
    """Readers (other threads, other checkouts sharing the cache) see the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _result(outputs: Any, errors: dict, index: int, run: str) -> Any:
    key = f"{index}.{run}"
    if key in errors:
        return compare.Raised(errors[key]["type"], errors[key]["message"], tuple(errors[key].get("bases", ())))
    return outputs[f"{key}.out"]


def _check_case(spec: OpSpec, case: inputs.Case, index: int, outputs: Any, errors: dict) -> compare.Mismatch | None:
    """Every check of one case: values a and b against the reference (b reuses a's memory), the two
    runs on a against each other (canaries), and the inputs after each run."""
    for which, run in (("a", "a"), ("b", "b")):
        mismatch = compare.compare(spec, case, _result(outputs, errors, index, run), which=which)
        if mismatch is not None:
            return mismatch
        buffers = [outputs[f"{index}.{run}.in{k}"] for k in range(len(case.operands))]
        mismatch = compare.inputs_unchanged(case, buffers, which=which)
        if mismatch is not None:
            return mismatch
    first, again = _result(outputs, errors, index, "a"), _result(outputs, errors, index, "a2")
    if isinstance(first, compare.Raised):  # and run a was right to raise (checked above)
        return None if isinstance(again, compare.Raised) else compare.compare(spec, case, again, which="a")
    if f"{index}.cpu.out" in outputs:  # a CUDA candidate beside its CPU twin (Candidate.companion)
        mismatch = compare.device_parity(spec, case, outputs[f"{index}.cpu.out"], first)
        if mismatch is not None:
            return mismatch
    canary = _canary_left(np.asarray(first), np.asarray(again))
    if canary is not None:
        mismatch = compare.compare_runs(spec, case, first, again)
        assert mismatch is not None  # the canaries differ, so the two runs do
        message = f"output element {list(canary)} was never written: the canary put into new memory is still there"
        return replace(mismatch, kind="canary", message=message)
    return compare.compare_runs(spec, case, first, again)


def _canary_left(first: np.ndarray, again: np.ndarray) -> tuple[int, ...] | None:
    """The first output index whose bytes are the fill of run a in run a and the fill of run a2 in run a2:
    an element the kernel never wrote."""
    if first.shape != again.shape or first.dtype != again.dtype or first.size == 0:
        return None
    item = first.dtype.itemsize
    a = np.ascontiguousarray(first).view(np.uint8).reshape(-1, item)
    b = np.ascontiguousarray(again).view(np.uint8).reshape(-1, item)
    left = np.all(a == FILLS["a"], axis=1) & np.all(b == FILLS["a2"], axis=1)
    if not left.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(left)), first.shape))


def _map_to_body(errors: str, source: str) -> str:
    """Compiler messages point into kernel.release.cpp (.cu); say `body line N` where they point into the body."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(static_check.BODY_START)), None)
    end = next((i for i, line in enumerate(lines) if line.strip() == static_check.BODY_END), None)

    def to_body(match: re.Match[str]) -> str:
        line = int(match["line"] or match["nv_line"])  # g++: file:line:col; nvcc: file(line)
        col = f":{match['col']}" if match["col"] else ""
        if start is not None and end is not None and start + 1 < line <= end:
            return f"body line {line - start - 1}{col}"
        return f"template line {line}{col}"

    text = re.sub(r"\S*kernel\.release\.(?:cpp|cu)(?::(?P<line>\d+):(?P<col>\d+)|\((?P<nv_line>\d+)\))", to_body, errors)
    return re.sub(r"\S*kernel\.release\.(?:cpp|cu)", "<candidate>", text)


def _sanitizer_env(compiler: str) -> dict[str, str]:
    def library(name: str) -> str:
        return subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()

    return {
        # The interpreter is not instrumented, so ASan's runtime must be loaded first; libstdc++ too, or
        # ASan's __cxa_throw interceptor finds no real __cxa_throw when the module throws.
        "LD_PRELOAD": f"{library('libasan.so')} {library('libstdc++.so.6')}",
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }


def _sanitizer_excerpt(stderr: str, limit: int = 12) -> str:
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if SANITIZER_REPORT.search(line))
    return "\n".join(lines[start : start + limit])


def _tail(stderr: str, limit: int = 8) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return ("\n" + "\n".join(lines[-limit:])) if lines else ""
