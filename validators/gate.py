"""One place where a candidate is judged, whoever proposed it.

A Candidate is a kernel body for one op on one device, rendered into its
translation unit. Gate.judge runs the stages in order and stops at the first
failure:

  static        the body against the static rules (static_check.py)
  compile       the translation unit as the release build compiles it, within a time budget, with no
                variable-length arrays and a bounded stack frame
  symbols       the object's undefined symbols against an allowlist, and no writable data
  differential  a module holding the candidate runs, sandboxed, on shown, hidden and threshold cases
                for every declared dtype (inputs.py); numpy's float64 reference decides (compare.py);
                repeated runs in fresh, reused and production memory must agree; inputs must not
                change; passes on several threads and on one, streamed and not, at two
                instruction-set levels, against no-access pages (passes.py)
  sanitizers    the same under ASan + UBSan on every case up to passes.SANITIZER_CASE_LIMIT elements,
                outputs allocated to the exact byte

CUDA kernels go through the same stages. Where no GPU is present the stages that run the kernel are
left pending (where not even nvcc is, every stage after the static rules): the verdict accepts what could
be checked (static rules, nvcc, symbols) and says so, and
`tsgen validate --device cuda` on a machine with a GPU judges them in full (differential against the
numpy reference, compute-sanitizer memcheck and racecheck when it is installed).

The verdict says where it failed in a few lines a proposer can act on, without
revealing hidden seeds; `report` holds everything for a person.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
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

from tensorsmith_forge import catalog
from tensorsmith_forge.catalog.files import write_atomic
from tensorsmith_forge.catalog.model import OpSpec
from tensorsmith_forge.catalog.source_meaning import meaning

from . import compare, inputs, passes, static_check, symbols
from .build import CUDA_VARIANT, BuildError, CandidateBuilder
from .cuda import compute_sanitizer, gpu_count, sanitizer_problem
from .engine_limits import EngineLimits, read_limits
from .runner import PROGRESS, VALUE_SET, guards_start, load_arrays, write_job
from .sandbox import GiB, Limits, run_sandboxed

STAGES = ("static", "compile", "symbols", "differential", "sanitizers")
RUN_STAGES = ("differential", "sanitizers")  # the stages that run the kernel: a CUDA kernel's need a GPU
NVCC_STAGES = ("compile", "symbols", *RUN_STAGES)  # the stages that need a CUDA kernel compiled
# Why a machine leaves a CUDA kernel's stages pending: the short form MANIFEST and tables show, and the long one.
PENDING_WHY = {"no nvcc": "no CUDA compiler (nvcc) on this machine", "no GPU": "no CUDA device on this machine",
               "no compute-sanitizer": "compute-sanitizer cannot judge kernels on this machine"}  # fmt: skip
# compute-sanitizer's own verdict on a kernel (--error-exitcode, or its summary): only this is the candidate's fault.
CUDA_SANITIZER_EXIT = 86
CUDA_SANITIZER_REPORT = re.compile(r"ERROR SUMMARY: [1-9]\d* error")


@dataclass(frozen=True)
class Pending:
    """A stage's outcome when it could not judge the candidate for a reason that is not the candidate's."""

    reason: str
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


def gate_code_files() -> list[Path]:
    """The gate's own code: its modules, the C++ harness it builds, and the catalog it reads specs and case
    tables with."""
    here = Path(__file__).parent
    return sorted([*here.glob("*.py"), *(here / "csrc").glob("*"), *Path(catalog.__file__).parent.rglob("*.py")])


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def engine_sources(root: Path, device: str) -> list[Path]:
    """The runtime's sources a kernel is judged in besides its headers: the engines (runtime/src/core), and for a
    CUDA kernel the CUDA machinery (runtime/src/cuda), with the headers they and the gate's harness include
    (engine_limits.h sets the chunks and rows a kernel is handed, and the gate's threshold cases with them). Part
    of every kernel's identity here, and of its inputs for `tsgen regen`, so that a change to them judges the
    kernels again."""
    sources = sorted((root / "runtime" / "src" / "core").glob("*.cpp"))
    if device == "cuda":
        sources += sorted((root / "runtime" / "src" / "cuda").glob("*"))
    harness = sorted((root / "validators" / "csrc").glob("*"))  # its own text is the gate's code (validators)
    headers = included_headers([path.read_bytes() for path in [*sources, *harness]], root / "runtime" / "include")
    return sorted({*sources, *headers})


def included_headers(sources: list[bytes], include_dir: Path) -> list[Path]:
    """The headers under `include_dir` that the sources include, directly or through each other ("..."
    includes; conditional ones count, so the set errs on the side of more)."""
    found: set[Path] = set()
    pending = list(sources)
    while pending:
        for name in _INCLUDE.findall(pending.pop()):
            path = include_dir / name.decode()
            if path.is_file() and path not in found:
                found.add(path)
                pending.append(path.read_bytes())
    return sorted(found)


class Gate:
    def __init__(self, root: Path, cache_dir: Path | None = None, stages: tuple[str, ...] = STAGES,
                 wall_s: float = 240.0, compile_s: dict[str, float] | None = None, salt: bytes | None = None) -> None:  # fmt: skip
        self.root = root
        # Cached runtime objects, verdicts and the salt; TSGEN_GATE_CACHE shares them between checkouts
        # (every entry is keyed by content, so sharing is safe).
        self.cache_dir = cache_dir or Path(os.environ.get("TSGEN_GATE_CACHE", root / "build" / "gate"))
        self.builder = CandidateBuilder(root, self.cache_dir, compile_budget_s=compile_s)
        self.stages = stages
        self.wall_s = wall_s  # per sandboxed run; a hanging candidate costs this much
        self._salt = salt  # given: a worker judging for a driver (generator/ray_executor.py) uses the driver's
        self._limits: EngineLimits | None = None
        self._lock = threading.Lock()

    @property
    def salt(self) -> bytes:
        """The secret behind hidden cases: TSGEN_GATE_SALT (hex, e.g. a CI secret) when set, else random per
        machine and kept under build/; never in the repository, a prompt or a report."""
        with self._lock:  # judges run in threads: exactly one of them may create the salt
            if self._salt is None:
                self._salt = _salt_from_environment() or self._salt_from_file()
            return self._salt

    def _salt_from_file(self) -> bytes:
        path = self.cache_dir / "salt"
        if not path.exists():
            write_atomic(path, secrets.token_hex(32), mode=0o600)  # a secret: readable by its owner only
        return bytes.fromhex(path.read_text(encoding="utf-8").strip())

    def save_report(self, candidate: Candidate, verdict: Verdict) -> Path:
        """The full JSON report of the last judgement of this op and device, under build/gate/reports/."""
        path = self.cache_dir / "reports" / f"{candidate.op}.{candidate.device}.json"
        write_atomic(path, json.dumps(verdict.report, indent=2, default=str) + "\n")
        return path

    def judge(self, candidate: Candidate, on_stage: Callable[[str], None] | None = None) -> Verdict:
        """The verdict, from the cache when this exact candidate was judged by this exact gate before.
        `on_stage(stage)` is told when each stage starts (for progress displays)."""
        key = self._cache_key(candidate)
        cached = self.cache_dir / "verdicts" / f"{key}.json"
        if cached.exists():
            data = json.loads(cached.read_text(encoding="utf-8"))
            return Verdict(data["accepted"], data["stage"], data["message"], {**data["report"], "cached": True})
        verdict = self.judge_afresh(candidate, on_stage)
        if not verdict.report.get("harness_error"):  # a bug of the gate's own is not remembered as a verdict
            write_atomic(cached, json.dumps({"accepted": verdict.accepted, "stage": verdict.stage, "message": verdict.message,
                                             "report": verdict.report}, default=str))  # fmt: skip
        return verdict

    def judge_afresh(self, candidate: Candidate, on_stage: Callable[[str], None] | None = None) -> Verdict:
        """The verdict of running every stage now: no cache read or written."""
        if candidate.device not in ("cpu", "cuda"):
            return Verdict(False, "device", f"the gate has no {candidate.device} path")
        return self._judge(candidate, on_stage or (lambda _stage: None))

    def identity(self, candidate: Candidate) -> str:
        """What a verdict depends on that the repository holds: the kernel's own part (kernel_identity) and
        what every kernel shares, the meaning (catalog/source_meaning.py) of the gate's code with the catalog
        it reads specs and case tables with, and of the runtime the candidate runs in (engine and headers; for
        CUDA its machinery too). Equal identities mean the same gate judged the same kernel: MANIFEST.json
        records it for `tsgen validate --changed-since`, which re-judges only kernels whose identity a base
        revision did not accept."""
        digest = hashlib.sha256()
        gate_files = gate_code_files()
        sources = engine_sources(self.root, candidate.device)
        # The runtime's headers that the candidate, the engine and the gate harness include (not, say, the
        # bindings' python.h, which nothing the gate runs includes): an edit elsewhere changes no verdict.
        headers = included_headers([candidate.source.encode(), *(p.read_bytes() for p in gate_files + sources if p.suffix != ".py")],
                                   self.root / "runtime" / "include")  # fmt: skip
        for path in gate_files + sources + headers:  # by meaning: a comment or a reformatting re-judges nothing
            digest.update(path.name.encode() + b"\0" + meaning(path))
        digest.update(self.kernel_identity(candidate).encode())
        return digest.hexdigest()

    @staticmethod
    def kernel_identity(candidate: Candidate) -> str:
        """The kernel's own part of its identity: its translation unit and op table, as they are (the static
        check reads the body's text), its spec and device; not the gate or the runtime every kernel shares.
        `tsgen validate --changed-since` tells by it a kernel that changed from one only the runtime or the
        gate changed under."""
        digest = hashlib.sha256()
        for part in (candidate.spec.kernel_text, candidate.device, candidate.source, candidate.registration):
            digest.update(part.encode() + b"\0")
        return digest.hexdigest()

    def _cache_key(self, candidate: Candidate) -> str:
        """Everything a verdict depends on: the candidate's identity, what the judging machine adds to it
        (machine()), the hidden-case salt, the stages run, the CPU twin a CUDA kernel runs beside."""
        digest = hashlib.sha256(self.identity(candidate).encode())
        for part in (self.machine(candidate.device), self.salt.hex(), ",".join(self.stages), str(self.wall_s), candidate.companion or ""):
            digest.update(part.encode() + b"\0")
        return digest.hexdigest()

    def machine(self, device: str) -> str:
        """What the machine that judges `device` kernels adds to their verdicts: the compilers that build them
        and the stages it must leave pending. Machines that agree on it give the same verdicts."""
        compilers = self.builder.toolchain.version()
        if device == "cuda":
            compilers += " | " + (self.builder.cuda.version if self.builder.has_nvcc else "no nvcc")
        return f"{compilers} | pending: {self.pending_reason(device) or 'none'}"

    def pending_reason(self, device: str) -> str | None:
        """Why this machine cannot run every stage for `device` kernels (a key of PENDING_WHY), or None."""
        if device != "cuda":
            return None
        if not self.builder.has_nvcc:
            return "no nvcc"
        if gpu_count() == 0:
            return "no GPU"
        return "no compute-sanitizer" if "sanitizers" in self.stages and sanitizer_problem(self.builder.cuda) else None

    def pending_why(self, device: str) -> str:
        """The long form of pending_reason, with what the compute-sanitizer probe said where that is why."""
        reason = self.pending_reason(device)
        if reason is None:
            return ""
        detail = f" ({sanitizer_problem(self.builder.cuda)})" if reason == "no compute-sanitizer" else ""
        return PENDING_WHY[reason] + detail

    def pending_stages(self, device: str) -> tuple[str, ...]:
        """The stages this machine cannot run for `device` kernels: without nvcc, all but the static rules;
        without a GPU, those that run the kernel; where compute-sanitizer cannot run, the sanitizers."""
        reason = self.pending_reason(device)
        held = {None: (), "no nvcc": NVCC_STAGES, "no GPU": RUN_STAGES, "no compute-sanitizer": ("sanitizers",)}[reason]
        return tuple(stage for stage in self.stages if stage in held)

    def _judge(self, candidate: Candidate, on_stage: Callable[[str], None]) -> Verdict:
        pending = self.pending_stages(candidate.device)
        report: dict[str, Any] = {"op": candidate.op, "device": candidate.device, "proposer": candidate.proposer, "stages": {},
                                  "pending": list(pending)}  # fmt: skip
        scratch_root = self.cache_dir / "scratch"
        scratch_root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{candidate.op}-", dir=scratch_root))
        why = {stage: self.pending_why(candidate.device) for stage in pending}
        try:
            state: dict[str, Any] = {}
            for stage in (s for s in self.stages if s not in pending):
                on_stage(stage)
                started = time.monotonic()
                try:
                    outcome = getattr(self, f"_{stage}")(candidate, scratch, state, report)
                except Exception as exc:  # noqa: BLE001 - a harness bug (cases it cannot make) must reject, never crash the loop
                    report["harness_error"] = True
                    outcome = f"the gate could not judge it ({type(exc).__name__}: {exc}); treated as a rejection"
                report["stages"][stage] = {"seconds": round(time.monotonic() - started, 2), "passed": outcome is None}
                if isinstance(outcome, Pending):  # not the candidate's fault: not judged, and said so
                    why[stage] = outcome.reason
                    report["pending"].append(stage)
                elif outcome is not None:
                    report["verdict"] = {"accepted": False, "stage": stage, "message": outcome}
                    return Verdict(False, stage, outcome, report)
            report["verdict"] = {"accepted": True}
            report["pending_why"] = why
            message = "; ".join(f"{stage} pending: {reason}" for stage, reason in why.items())
            return Verdict(True, "all", message, report)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # ---- stages: each returns None (passed), the failure message, or Pending (not judged, not the candidate's fault) ----

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
        # The compile stage built the candidate as this module needs it (where a GPU will run it, the
        # release SASS): the module links that object. The CUDA driver maps far more address space than
        # it uses: no RLIMIT_AS there.
        if candidate.device == "cuda":
            limits = Limits(wall_s=self.wall_s, memory_bytes=None, file_bytes=4 * GiB)
            return self._run_pass(candidate, scratch, state, report, passes.cuda_pass(CUDA_VARIANT), limits, kernel_o=state.get("object"))
        limits = Limits(wall_s=self.wall_s, memory_bytes=4 * GiB, file_bytes=4 * GiB)
        for run_pass in (passes.RELEASE, passes.RELEASE_SERIAL):
            failure = self._run_pass(candidate, scratch, state, report, run_pass, limits, kernel_o=state.get("object"))
            if failure is not None:
                return failure
        return None

    def _sanitizers(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | Pending | None:
        if candidate.device == "cuda":
            return self._compute_sanitizer(candidate, scratch, state, report)
        limits = Limits(wall_s=self.wall_s, memory_bytes=None, file_bytes=4 * GiB)
        return self._run_pass(candidate, scratch, state, report, passes.SANITIZE, limits)

    def _cases(self, candidate: Candidate, state: dict) -> list[inputs.Case]:
        """Shown, hidden and threshold cases for every declared dtype, generated once per judgement and
        shared by every pass."""
        if "cases" not in state:
            limits = self.engine_limits()
            state["cases"] = [c for dtype in candidate.spec.dtypes
                              for c in [*inputs.generate_cases(candidate.spec, dtype, salt=self.salt, hidden=True),
                                        *inputs.threshold_cases(candidate.spec, dtype, salt=self.salt, limits=limits)]]  # fmt: skip
        return state["cases"]

    @functools.cached_property
    def _cuda_libraries(self) -> list[str]:
        """What the runner loads before the candidate's module, as `import tensorsmith` does: cuBLAS from the
        nvidia-cublas wheel, which the runtime then finds by its soname at the first float matmul on a GPU.
        The runtime package's own finder is used, read from the checkout (importing the package would load
        the built extension)."""
        path = self.root / "runtime" / "python" / "tensorsmith" / "_cuda_libs.py"
        spec = importlib.util.spec_from_file_location("_tensorsmith_cuda_libs", path)
        assert spec is not None and spec.loader is not None
        finder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(finder)
        library = finder.cublas_from_wheel(self.builder.cuda.major)
        return [] if library is None else [str(library)]

    def engine_limits(self) -> EngineLimits:
        with self._lock:
            if self._limits is None:
                self._limits = read_limits(self.root, self.builder.toolchain.compiler, self.cache_dir)
            return self._limits

    def _compute_sanitizer(self, candidate: Candidate, scratch: Path, state: dict, report: dict) -> str | Pending | None:
        """memcheck (out-of-bounds and misaligned accesses) and racecheck (shared-memory races) on the
        cases the CPU's sanitizers take. Only the tool's own report is the candidate's failure; a run that
        ends otherwise (the tool's trouble, seen on some GPU hosts) leaves the stage pending, saying why.
        (A machine where the tool fails a known-good kernel holds the stage pending before it starts.)"""
        tool = compute_sanitizer(self.builder.cuda)
        assert tool is not None  # pending_stages holds the stage where there is none
        limits = Limits(wall_s=self.wall_s * 4, memory_bytes=None, file_bytes=4 * GiB)
        for check in ("memcheck", "racecheck"):
            wrapper = [str(tool), f"--tool={check}", f"--error-exitcode={CUDA_SANITIZER_EXIT}", "--print-limit=8"]
            sanitized = replace(passes.cuda_pass(CUDA_VARIANT), label=f"sanitize-{check}", runs=lambda case: ("a",),
                                takes=passes.SANITIZE.takes)  # fmt: skip
            failure = self._run_pass(candidate, scratch, state, report, sanitized, limits, wrapper=wrapper)
            if failure is None:
                continue
            ran = report.get(sanitized.label, {})
            if ran.get("returncode") == CUDA_SANITIZER_EXIT or CUDA_SANITIZER_REPORT.search(ran.get("output", "")):
                return f"compute-sanitizer {check}: {failure}"
            return Pending(f"compute-sanitizer {check} ended without a report of its own: {failure.splitlines()[0]}")
        return None

    # ---- running ---------------------------------------------------------------------------------------

    def _run_pass(self, candidate: Candidate, scratch: Path, state: dict, report: dict, run_pass: passes.Pass, limits: Limits,
                  wrapper: list[str] | None = None, kernel_o: Path | None = None) -> str | None:  # fmt: skip
        """One sandboxed process running the pass's cases; None, or the first failure in words."""
        label = run_pass.label
        indexed = [(i, c) for i, c in enumerate(self._cases(candidate, state)) if run_pass.takes(c)]
        try:
            module = self.builder.build(candidate.source, candidate.registration, scratch, run_pass.variant,
                                        companion=candidate.companion, kernel_o=kernel_o)  # fmt: skip
        except BuildError as exc:
            return f"the {run_pass.variant} build failed:\n{exc}"
        run_dir = scratch / f"run-{label}"
        run_dir.mkdir()
        cases = [c for _, c in indexed]
        write_job(run_dir / "job.arrays", candidate.op, cases, [run_pass.runs(c) for c in cases])
        parity = candidate.companion is not None and candidate.device != "cpu"
        plan = run_pass.plan(candidate.device, parity) | {"preload": self._cuda_libraries if run_pass.variant == CUDA_VARIANT else []}
        (run_dir / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
        env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **run_pass.env(self.engine_limits())}
        if run_pass.variant == CUDA_VARIANT and os.environ.get("LD_LIBRARY_PATH"):  # where a host keeps its CUDA libraries
            env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
        if run_pass.variant == "sanitize":
            env |= _sanitizer_env(self.builder.toolchain.compiler)
        command = [*(wrapper or []), sys.executable, "-m", "tensorsmith_forge.validators.runner", str(module), "job.arrays", "out.arrays", "plan.json"]
        result = run_sandboxed(command, cwd=run_dir, env=env, limits=limits)
        report[label] = {"cases": len(cases), "wall_s": round(result.wall_s, 2), "isolation": result.isolation.describe()}
        if wrapper:  # what the wrapping tool (compute-sanitizer) said and how it ended
            report[label] |= {"returncode": result.returncode, "output": (result.stdout + result.stderr)[-4000:]}
        if run_pass.variant == "sanitize" and SANITIZER_REPORT.search(result.stderr):
            return "the sanitizers report:\n" + _sanitizer_excerpt(result.stderr) + _while_running(run_dir, cases, run_pass)
        if not result.ok:
            return f"the candidate's process {result.reason()}" + _while_running(run_dir, cases, run_pass) + _tail(result.stderr)
        try:
            outputs = load_arrays(run_dir / "out.arrays")
            record = json.loads((run_dir / "out.record.json").read_text(encoding="utf-8"))
            errors = dict(record["errors"])
        except (OSError, ValueError, KeyError, TypeError) as exc:  # the candidate shares the runner's process: its files are evidence, not truth
            return f"the candidate's process left unreadable results ({exc})"
        results = _Results(outputs, errors)
        try:
            mismatches = []
            for position, (i, case) in enumerate(indexed):
                found = self._check_case(candidate.spec, case, position, run_pass.runs(case), results, state.setdefault("expected", {}), i,
                                         candidate.device)  # fmt: skip
                if found is not None:
                    mismatches.append(found)
        except Exception as exc:  # noqa: BLE001 - a harness bug must reject, never crash the loop
            report["harness_error"] = True
            return f"the gate could not check the results ({type(exc).__name__}: {exc}); treated as a rejection"
        report[label]["mismatches"] = [json.loads(m.to_json()) for m in mismatches[:20]]
        report[label]["failed_cases"] = len(mismatches)
        # The first failure of every kind and run, whichever case came first (which one does depends on the salt).
        report[label]["first_of_each_kind"] = {f"{m.kind}/{m.run}": m.summary() for m in reversed(mismatches)}
        if mismatches:
            first = mismatches[0]
            more = f"\n({len(mismatches) - 1} more failing cases)" if len(mismatches) > 1 else ""
            return first.summary() + more
        return None

    @staticmethod
    def _check_case(spec: OpSpec, case: inputs.Case, position: int, runs: tuple[str, ...], results: _Results,
                    expected: dict, index: int, device: str) -> compare.Mismatch | None:  # fmt: skip
        """Every check of one case in one pass on `device`: each run's values against the reference for its
        value set (computed once per judgement and value set), its inputs left unchanged, and the runs on value set a
        against each other."""

        def reference(which: str) -> compare.Expected:
            if (index, which) not in expected:
                expected[index, which] = compare.expected_result(spec, case, which)
            return expected[index, which]

        for run in runs:
            which = VALUE_SET[run]
            if run in ("a", "b", "c", "g"):
                mismatch = compare.compare(spec, case, results.result(position, run), which=which, expected=reference(which), device=device)
                if mismatch is not None:
                    return replace(mismatch, run=run)
            mismatch = compare.inputs_unchanged(case, results.changed_inputs(position, run, len(case.operands)), which=which)
            if mismatch is not None:
                return replace(mismatch, run=run)
        if "a" not in runs:
            return None
        first = results.result(position, "a")
        if results.has(position, "cpu"):  # a CUDA candidate beside its CPU twin (Candidate.companion)
            mismatch = compare.device_parity(spec, case, results.result(position, "cpu"), first, on=device, expected=reference("a"))
            if mismatch is not None:
                return mismatch
        for run, why in (("a2", "whose new memory held different bytes: an element the kernel never wrote, or read "
                                "before writing, takes whatever the memory held"),
                         ("raw", "one with new memory filled by the gate, one with memory as the allocator gives it "
                                 "(as in production)")):  # fmt: skip
            if run not in runs:
                continue
            again = results.result(position, run)
            if isinstance(first, compare.Raised) or isinstance(again, compare.Raised):  # run a was right (checked above)
                mismatch = compare.compare(spec, case, again, which="a", expected=reference("a"))
                if mismatch is not None:
                    return replace(mismatch, run=run)
                continue
            mismatch = compare.compare_runs(spec, case, first, again)
            if mismatch is not None:
                return replace(mismatch, run=run, message=f"{mismatch.message}; the two runs were on the same inputs, {why}")
        return None


class _Results:
    """What one runner process reported: outputs, raised errors and changed inputs, by case position and run."""

    def __init__(self, outputs: dict[str, Any], errors: dict[str, Any]) -> None:
        self.outputs, self.errors = outputs, errors

    def has(self, position: int, run: str) -> bool:
        return f"{position}.{run}.out" in self.outputs or f"{position}.{run}" in self.errors

    def result(self, position: int, run: str) -> Any:
        key = f"{position}.{run}"
        if key in self.errors:
            error = self.errors[key]
            return compare.Raised(str(error["type"]), str(error["message"]), tuple(map(str, error.get("bases", ()))))
        return self.outputs[f"{key}.out"]

    def changed_inputs(self, position: int, run: str, count: int) -> list[Any]:
        """Each operand buffer after the run where the runner saw it differ from what it held, else None."""
        return [self.outputs.get(f"{position}.{run}.in{k}") for k in range(count)]


def _while_running(run_dir: Path, cases: list[inputs.Case], run_pass: passes.Pass) -> str:
    """The case and run the process was in when it stopped (from the runner's progress file), in words."""
    try:
        position, run = (run_dir / PROGRESS).read_text(encoding="utf-8").split()
        case = cases[int(position)]
    except (OSError, ValueError, IndexError):
        return ""
    where = {"g": "with every buffer starting right after a no-access page" if guards_start(int(position)) else
             "with every buffer ending at a no-access page"}.get(run, f"run {run}")  # fmt: skip
    return (f"\nwhile running {case.op}[{case.dtype}] case {case.id}{' (hidden)' if case.hidden else ''} {where}, "
            f"pass {run_pass.label}: {case.description}")


def _salt_from_environment() -> bytes | None:
    text = os.environ.get("TSGEN_GATE_SALT", "").strip()
    if not text:
        return None
    try:
        salt = bytes.fromhex(text)
    except ValueError:
        salt = b""
    if len(salt) < 16:  # the value itself is never repeated in the message: it is a secret
        raise ValueError("TSGEN_GATE_SALT must be at least 32 hexadecimal digits (a secret of 16 bytes or more)")
    return salt


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
