"""Builds a candidate kernel into a small Python module of its own (_gate).

The module holds the hand-written runtime core and validators/csrc/gate_module.cpp
(compiled once per variant and cached by content hash under build/gate/), the op
table for the candidate's op alone, and the candidate's translation unit. The
runner loads it in a sandbox. Two variants: `release` (CMake's Release flags:
the candidate's object is the one the extension links, see CMakeLists.txt and
tests/validators/test_release_objects.py) and `sanitize` (ASan + UBSan; the
body compiled at the baseline instruction-set level only, see tensorsmith/isa.h).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pybind11
import scipy_openblas64

from .cuda import CHECK_ARCHITECTURE, NVCC_FLAGS, RELEASE_ARCHITECTURES, CudaToolchain, NvccMissing

FLAGS = {
    # CMake's Release flags for GCC and Clang. Not -O2: GCC 12 vectorises at -O3 loops that -O2's cheap cost model
    # leaves scalar, so an -O2 gate would judge other machine code than the extension runs.
    "release": ["-O3", "-DNDEBUG"],
    # No -ftrivial-auto-var-init here: a body could read an uninitialised local to tell this build from the
    # release one. Uninitialised reads show instead as runs that differ (every run starts on a wiped stack).
    "sanitize": ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                 "-fno-sanitize-recover=undefined", "-DTS_ISA_BASELINE_ONLY"],
}  # fmt: skip
# A kernel's own frame: enough for fixed-size tiles and lanes, not for a copy of its input. A recursion or a
# frame beyond it would overflow a production thread's stack on inputs the gate's sizes may not reach.
STACK_FRAME_LIMIT = 64 << 10
# The candidate's translation unit is compiled with these as errors (the runtime's own sources are not):
# a variable-length array is an allocation sized by the input that the heap rules never see.
CANDIDATE_CHECKS = ["-Werror=vla", f"-Werror=stack-usage={STACK_FRAME_LIMIT}"]
# Per process a compiler run starts, in CPU seconds: a body that compiles for minutes is rejected. CPU time, not
# wall time: a loaded machine (a CI runner's parallel tests) stretches the second, not the work a body asks for.
# The largest honest body, sort's (every dtype, direction and instruction-set level), takes about 55 CPU seconds at
# -O3 on an Intel Ice Lake VM, the slower of this project's machines.
COMPILE_BUDGET_S = {"cpu": 300.0, "cuda": 300.0}
WALL_FACTOR = 4  # a run still going after this many budgets of wall time waits rather than computes: it ends
BUDGET_USED = 0.9  # a failed run that used this share of its budget is taken as ended by the budget
COMPILER_MEMORY = 4 << 30  # RLIMIT_AS of g++ on a candidate (a template or constexpr bomb ends here too)
# The float flags of CMakeLists.txt: the ISA variants of a kernel must round alike (-ffp-contract=off), and
# loops with float comparisons or math calls vectorise (-fno-trapping-math -fno-math-errno).
COMMON = ["-std=c++17", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno"]
QUIET = ["-w"]  # the runtime's sources: their warnings are the build's business, not the gate's
# The runtime core calls OpenBLAS for float32/float64 GEMM (runtime/src/core/blas.cpp), as the extension does.
BLAS_LIBRARY = Path(scipy_openblas64.get_lib_dir()) / scipy_openblas64.get_library(fullname=True)
BLAS_LINK = [str(BLAS_LIBRARY), f"-Wl,-rpath,{BLAS_LIBRARY.parent}"]
BLAS_VERSION = f"scipy-openblas64 {scipy_openblas64.__version__}"  # its cblas.h is compiled into the runtime objects


CUDA_VARIANT = "cuda"  # release flags with the CUDA runtime compiled in (TS_WITH_CUDA): runs CUDA candidates on a GPU


class BuildError(Exception):
    """The candidate (or the runtime) did not compile; the message holds the compiler's first errors."""


@dataclass(frozen=True)
class Toolchain:
    compiler: str

    @staticmethod
    def find() -> Toolchain:
        compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        if not compiler:
            raise BuildError("no C++ compiler found (set CXX or install g++)")
        return Toolchain(compiler)

    def version(self) -> str:
        return subprocess.run([self.compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


class CandidateBuilder:
    def __init__(self, root: Path, cache_dir: Path, toolchain: Toolchain | None = None, jobs: int = 2,
                 compile_budget_s: dict[str, float] | None = None) -> None:  # fmt: skip
        self._cuda: CudaToolchain | None = None
        self.root = root
        self.cache_dir = cache_dir
        self.toolchain = toolchain or Toolchain.find()
        self.jobs = jobs
        self.compile_budget_s = compile_budget_s or COMPILE_BUDGET_S
        self._runtime_objects: dict[str, list[Path]] = {}
        self._lock = threading.Lock()

    @property
    def includes(self) -> list[str]:
        return [f"-I{self.root / 'runtime' / 'include'}", f"-I{pybind11.get_include()}",
                f"-I{sysconfig.get_paths()['include']}", f"-I{scipy_openblas64.get_include_dir()}"]  # fmt: skip

    @property
    def cuda(self) -> CudaToolchain:
        """nvcc, found on first use (CPU candidates never need it)."""
        if self._cuda is None:
            try:
                self._cuda = CudaToolchain.find()
            except NvccMissing as exc:
                raise BuildError(str(exc)) from exc
        return self._cuda

    @property
    def has_nvcc(self) -> bool:
        try:
            return self.cuda is not None
        except BuildError:
            return False

    def flags(self, variant: str) -> list[str]:
        if variant == CUDA_VARIANT:
            return [*FLAGS["release"], "-DTS_WITH_CUDA", f"-I{self.cuda.cuda_home / 'include'}"]
        return FLAGS[variant]

    def runtime_sources(self, variant: str = "release") -> list[Path]:
        cuda = sorted((self.root / "runtime" / "src" / "cuda").glob("*.c*")) if variant == CUDA_VARIANT else []
        return sorted([*(self.root / "runtime" / "src").glob("core/*.cpp"), *cuda, self.root / "validators" / "csrc" / "gate_module.cpp"])

    def runtime_objects(self, variant: str) -> list[Path]:
        """The runtime compiled for `variant`, once per content hash (shared by all candidates)."""
        with self._lock:
            if variant not in self._runtime_objects:
                self._runtime_objects[variant] = self._build_runtime(variant)
            return self._runtime_objects[variant]

    def _build_runtime(self, variant: str) -> list[Path]:
        sources = self.runtime_sources(variant)
        headers = sorted((self.root / "runtime" / "include").rglob("*.h*"))
        # Not the include paths: checkouts with the same content share these objects.
        cuda = [self.cuda.version] if variant == CUDA_VARIANT else []
        digest = hashlib.sha256(" ".join([self.toolchain.version(), *FLAGS.get(variant, []), *COMMON, *QUIET, BLAS_VERSION, *cuda]).encode())
        for path in [*sources, *headers]:
            digest.update(path.relative_to(self.root).as_posix().encode() + b"\0" + path.read_bytes())
        out_dir = self.cache_dir / f"runtime-{variant}-{digest.hexdigest()[:16]}"
        objects = [out_dir / (s.relative_to(self.root).as_posix().replace("/", "__") + ".o") for s in sources]
        if all(o.exists() for o in objects):
            return objects
        out_dir.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            list(pool.map(lambda pair: self.compile(pair[0], pair[1], variant), zip(sources, objects)))
        return objects

    def compile(self, source: Path, obj: Path, variant: str, candidate: bool = False) -> Path:
        """One source as `variant` compiles it; `candidate`: the candidate's own translation unit, held to
        CANDIDATE_CHECKS where the release build compiles it (ASan frames are larger)."""
        if source.suffix == ".cu":
            return self.compile_cuda(source, obj, ptx_only=False)
        tmp = obj.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}.o")
        checks = CANDIDATE_CHECKS if candidate and variant == "release" else QUIET
        self._run([self.toolchain.compiler, *COMMON, *checks, *self.flags(variant), *self.includes, "-c", str(source), "-o", str(tmp)],
                  self.compile_budget_s["cpu"], memory=COMPILER_MEMORY)  # fmt: skip
        os.replace(tmp, obj)  # atomic: a killed build never leaves a truncated cached object
        return obj

    def compile_cuda(self, source: Path, obj: Path, ptx_only: bool) -> Path:
        """A .cu file as the release build compiles it (SASS for every release architecture), or, where
        no GPU will run it, PTX for the lowest only: the same front end checks, in about half the time."""
        architectures = (CHECK_ARCHITECTURE,) if ptx_only else RELEASE_ARCHITECTURES
        tmp = obj.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}.o")
        self._run([str(self.cuda.nvcc), *NVCC_FLAGS, *self.cuda.gencode(architectures, ptx_only), "-DTS_WITH_CUDA",
                   f"-I{self.root / 'runtime' / 'include'}", "-c", str(source), "-o", str(tmp)], self.compile_budget_s["cuda"])  # fmt: skip
        os.replace(tmp, obj)
        return obj

    def link(self, objects: Sequence[Path], output: Path, variant: str) -> Path:
        cuda = self.cuda.runtime_link() if variant == CUDA_VARIANT else []
        self._run([self.toolchain.compiler, "-shared", "-pthread", *FLAGS.get(variant, FLAGS["release"]), "-o", str(output),
                   *map(str, objects), *BLAS_LINK, *cuda], self.compile_budget_s["cpu"])  # fmt: skip
        return output

    def build(self, kernel_source: str, registration_source: str, scratch: Path, variant: str, companion: str | None = None,
              kernel_o: Path | None = None) -> Path:  # fmt: skip
        """Compiles the candidate's translation unit and the op table for its op, links them with the
        runtime, and returns the module's path (named so Python imports it as `_gate`). `kernel_o`: the
        candidate already compiled with this variant's flags (the compile stage's object), linked as is."""
        runtime = self.runtime_objects(variant)
        registration_cpp = scratch / f"registration.{variant}.cpp"
        registration_cpp.write_text(registration_source, encoding="utf-8")
        if kernel_o is None:
            kernel_cpp = scratch / (f"kernel.{variant}.cu" if variant == CUDA_VARIANT else f"kernel.{variant}.cpp")
            kernel_cpp.write_text(kernel_source, encoding="utf-8")
            kernel_o = self.compile(kernel_cpp, scratch / f"kernel.{variant}.o", variant, candidate=True)
        registration_o = self.compile(registration_cpp, scratch / f"registration.{variant}.o", variant)
        extra = []
        if companion is not None:  # the CPU twin of a CUDA candidate, for the device-parity check
            companion_cpp = scratch / f"companion.{variant}.cpp"
            companion_cpp.write_text(companion, encoding="utf-8")
            extra.append(self.compile(companion_cpp, scratch / f"companion.{variant}.o", variant))
        module_dir = scratch / f"module-{variant}"
        module_dir.mkdir(exist_ok=True)
        return self.link([kernel_o, registration_o, *extra, *runtime], module_dir / f"_gate{sysconfig.get_config_var('EXT_SUFFIX')}", variant)

    def kernel_object(self, kernel_source: str, scratch: Path, device: str = "cpu", ptx_only: bool = False) -> Path:
        """The candidate alone, compiled as the release build would: for the symbol check, and (CPU) the
        object the release module links."""
        if device == "cuda":
            source = scratch / "kernel.release.cu"
            source.write_text(kernel_source, encoding="utf-8")
            return self.compile_cuda(source, scratch / "kernel.release.o", ptx_only)
        source = scratch / "kernel.release.cpp"
        source.write_text(kernel_source, encoding="utf-8")
        return self.compile(source, scratch / "kernel.release.o", "release", candidate=True)

    def _run(self, command: list[str], budget_s: float, memory: int | None = None) -> None:
        """Runs a compiler or linker in a session of its own, holding each process it starts (g++ forks
        cc1plus, nvcc a chain of tools) to `budget_s` CPU seconds: a run that goes past it, or past
        WALL_FACTOR times it in wall time, ends with a BuildError saying so."""
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "CUDA_HOME")}
        limited = shutil.which("prlimit") is not None  # util-linux's, as the sandbox's unshare (no preexec_fn: threads)
        if limited:
            # The soft limit sends SIGXCPU, so the compiler says which program it ended; the hard one kills.
            cpu = f"--cpu={math.ceil(budget_s)}:{math.ceil(budget_s) + 5}"
            command = ["prlimit", cpu, *([f"--as={memory}"] if memory is not None else []), "--", *command]
        wall_s = budget_s * WALL_FACTOR if limited else budget_s
        with tempfile.TemporaryFile() as err_file:  # not a pipe: nothing reads it while the run is waited on
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err_file, env=env,
                                       start_new_session=True)  # fmt: skip
            overran = threading.Event()
            watchdog = threading.Timer(wall_s, _end_session, (process.pid, overran))
            watchdog.start()
            try:
                _pid, status, usage = os.wait4(process.pid, 0)  # its usage counts every program it waited for
            except BaseException:  # an interrupted wait (a stopped regen) leaves no compiler running
                _end_session(process.pid, threading.Event())
                process.wait()
                raise
            finally:
                watchdog.cancel()
            process.returncode = os.waitstatus_to_exitcode(status)
            err_file.seek(0)
            err = err_file.read().decode("utf-8", "replace")
        if process.returncode == 0:
            return
        if overran.is_set():
            raise BuildError(f"the compiler ran {wall_s:g} s of wall time without finishing (its budget is "
                             f"{budget_s:g} CPU seconds): a kernel must compile in seconds")  # fmt: skip
        # rusage's user and system times are sampled, not what the limit is checked against: a run the limit
        # ended can show a little less than the budget (the known-bad bomb, ended at 60 s while both cores ran
        # tests).
        if limited and usage.ru_utime + usage.ru_stime >= BUDGET_USED * budget_s:
            raise BuildError(f"the compiler ran past the gate's compile budget of {budget_s:g} CPU seconds: a kernel "
                             "must compile in seconds (no long constant evaluations or deep template recursion)")  # fmt: skip
        raise BuildError(_first_errors(err))


def _end_session(pid: int, overran: threading.Event) -> None:
    """Ends a compiler's session (every process it started) once it has run out of wall time."""
    overran.set()
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own as the timer fired
        pass


def _first_errors(stderr: str, limit: int = 15) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    first = next((i for i, line in enumerate(lines) if "error" in line), 0)
    return "\n".join(lines[first : first + limit])
