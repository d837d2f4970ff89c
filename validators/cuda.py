"""The CUDA toolchain and device as the gate sees them.

nvcc is found as .ci/compile-cuda finds it ($CUDA_HOME, PATH, then the nvidia-cuda-nvcc wheel). A GPU is
present when the driver library loads and reports at least one device; the gate runs CUDA kernels only
then, and otherwise judges them as far as a machine without one can (static rules, nvcc, symbols).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Architectures the release build compiles for (CMakeLists.txt, TS_CUDA_ARCHITECTURES) and the one the
# compile stage checks against when no GPU decides it: PTX for the lowest, which the front end fully checks.
RELEASE_ARCHITECTURES = ("80", "90")
CHECK_ARCHITECTURE = RELEASE_ARCHITECTURES[0]
# As CMakeLists.txt compiles CUDA sources: constexpr helpers (tensorsmith/scalar_ops.h) run on the device, and
# no a*b+c fusion, so CUDA results round as the CPU kernels do; CMake's Release flags (-O3 -DNDEBUG).
NVCC_FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "--fmad=false", "-O3", "-DNDEBUG",
              "-Xcompiler", "-fPIC,-fvisibility=hidden,-ffp-contract=off", "-w")  # fmt: skip


class NvccMissing(RuntimeError):
    """No CUDA compiler on this machine."""


def find_nvcc() -> Path:
    home = os.environ.get("CUDA_HOME")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return Path(home) / "bin" / "nvcc"
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    try:
        import nvidia  # type: ignore[import-not-found]  # the nvidia-cuda-nvcc wheel

        for base in map(Path, nvidia.__path__):
            candidates = sorted(base.glob("cu*/bin/nvcc"))
            if candidates:
                return candidates[-1]
    except ImportError:
        pass
    raise NvccMissing("the gate needs nvcc for CUDA kernels: set CUDA_HOME, put nvcc on PATH, or pip install nvidia-cuda-nvcc")


@dataclass(frozen=True)
class CudaToolchain:
    nvcc: Path

    @staticmethod
    def find() -> CudaToolchain:
        return CudaToolchain(find_nvcc())

    @functools.cached_property
    def version(self) -> str:
        lines = subprocess.run([str(self.nvcc), "--version"], capture_output=True, text=True).stdout.splitlines()
        return lines[-1] if lines else "nvcc (unknown version)"

    @functools.cached_property
    def major(self) -> str:
        """The CUDA major version nvcc builds for ("13"), from its release line; "" where it does not say."""
        output = subprocess.run([str(self.nvcc), "--version"], capture_output=True, text=True).stdout
        match = re.search(r"release (\d+)\.", output)
        return match.group(1) if match else ""

    def runtime_link(self) -> list[str]:
        """How a module links the CUDA runtime: statically where the toolkit has libcudart_static.a, as the
        runtime's own build links it, else dynamically with an rpath: no LD_LIBRARY_PATH needed either way."""
        libraries = [self.cuda_home / name for name in ("lib64", "lib")]
        for directory in libraries:
            if (directory / "libcudart_static.a").exists():
                return [str(directory / "libcudart_static.a"), "-ldl", "-lrt", "-lpthread"]
        for directory in libraries:
            if any(directory.glob("libcudart.so*")):
                return [f"-L{directory}", "-lcudart", f"-Wl,-rpath,{directory}", "-ldl"]
        return ["-lcudart", "-ldl"]

    @functools.cached_property
    def cuda_home(self) -> Path:
        """The toolkit root (include/, lib64/): $CUDA_HOME, else the one nvcc runs from (through wrapper scripts)."""
        if os.environ.get("CUDA_HOME"):
            return Path(os.environ["CUDA_HOME"])
        listing = subprocess.run([str(self.nvcc), "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                                 capture_output=True, text=True).stderr  # fmt: skip
        for line in listing.splitlines():
            if line.startswith("#$ TOP="):
                return Path(line.split("=", 1)[1].strip()).resolve()
        return self.nvcc.resolve().parent.parent

    def gencode(self, architectures: tuple[str, ...], ptx_only: bool) -> list[str]:
        code = "compute" if ptx_only else "sm"
        return [f"-gencode=arch=compute_{a},code={code}_{a}" for a in architectures]


@functools.cache
def gpu_count() -> int:
    """CUDA devices the driver reports; 0 without a driver or a device (never raises)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


# A kernel with nothing wrong in it: compute-sanitizer must pass it, or the tool cannot run here.
_PROBE = r"""
#include <cstdio>
__global__ void fill(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 1.0f; }
int main() {
  float* x = nullptr;
  if (cudaMalloc(&x, 256 * sizeof(float)) != cudaSuccess) { std::printf("cudaMalloc failed\n"); return 2; }
  fill<<<2, 128>>>(x, 256);
  const cudaError_t error = cudaDeviceSynchronize();
  if (error != cudaSuccess) { std::printf("%s\n", cudaGetErrorString(error)); return 3; }
  return cudaFree(x) == cudaSuccess ? 0 : 4;
}
"""


def compute_sanitizer(toolchain: CudaToolchain) -> Path | None:
    """compute-sanitizer from PATH or the toolkit nvcc belongs to; None where neither has it."""
    found = shutil.which("compute-sanitizer")
    candidate = Path(found) if found else toolchain.cuda_home / "bin" / "compute-sanitizer"
    return candidate if candidate.is_file() else None


@functools.cache
def sanitizer_problem(toolchain: CudaToolchain) -> str | None:
    """Why compute-sanitizer cannot judge kernels on this machine's GPU, or None when it can: it is missing,
    or it fails on a known-good kernel (seen on some GPU hosts: "Device not supported", error 999). Then a
    kernel's failure under it would be the tool's, not the kernel's. Probed once per process."""
    tool = compute_sanitizer(toolchain)
    if tool is None:
        return "compute-sanitizer is not installed (it comes with the CUDA toolkit)"
    with tempfile.TemporaryDirectory(prefix="sanitizer-probe-") as scratch:
        source, binary = Path(scratch) / "probe.cu", Path(scratch) / "probe"
        source.write_text(_PROBE, encoding="utf-8")
        build = subprocess.run([str(toolchain.nvcc), "-arch=native", "-o", str(binary), str(source)], capture_output=True,
                               text=True, timeout=300)  # fmt: skip
        if build.returncode != 0:
            return f"the sanitizer probe did not compile: {_first_line(build.stderr)}"
        try:
            run = subprocess.run([str(tool), "--tool=memcheck", "--error-exitcode=86", str(binary)], capture_output=True,
                                 text=True, timeout=300)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "compute-sanitizer hung on a known-good kernel (300 s)"
    if run.returncode != 0:
        return f"compute-sanitizer fails on a known-good kernel (exit {run.returncode}): {_first_line(run.stdout + run.stderr)}"
    return None


def _first_line(text: str) -> str:
    lines = [line.strip(" =") for line in text.splitlines() if line.strip(" =")]
    return lines[0][:200] if lines else "no output"
