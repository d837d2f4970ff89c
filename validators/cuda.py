"""The CUDA toolchain and device as the gate sees them.

nvcc is found as .ci/compile-cuda finds it ($CUDA_HOME, PATH, then the nvidia-cuda-nvcc wheel). A GPU is
present when the driver library loads and reports at least one device; the gate runs CUDA kernels only
then, and otherwise judges them as far as a machine without one can (static rules, nvcc, symbols).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Architectures the release build compiles for (CMakeLists.txt, TS_CUDA_ARCHITECTURES) and the one the
# compile stage checks against when no GPU decides it: PTX for the lowest, which the front end fully checks.
RELEASE_ARCHITECTURES = ("80", "90")
CHECK_ARCHITECTURE = RELEASE_ARCHITECTURES[0]
# As CMakeLists.txt compiles CUDA sources: constexpr helpers (tensorsmith/scalar_ops.h) run on the device, and
# no a*b+c fusion, so CUDA results round as the CPU kernels do.
NVCC_FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "--fmad=false", "-O3",
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
