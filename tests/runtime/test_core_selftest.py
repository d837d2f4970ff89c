"""The C++ self-test of the runtime core (runtime/tests_cpp/selftest.cpp): the engines with hand-registered
kernels, built without Python, under ASan and UBSan (with float-cast-overflow)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import scipy_openblas64

from tensorsmith_forge.validators.build import BLAS_LINK

ROOT = Path(__file__).resolve().parents[2]


def test_core_selftest_passes_under_sanitizers(tmp_path: Path) -> None:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed: the C++ self-test cannot be built")
    binary = tmp_path / "selftest"
    sources = [*sorted((ROOT / "runtime" / "src" / "core").glob("*.cpp")), ROOT / "runtime" / "tests_cpp" / "selftest.cpp"]
    build = subprocess.run(
        # float-cast-overflow (a float converted to an integer type too narrow for it) is outside GCC's undefined
        [compiler, "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined,float-cast-overflow",
         "-fno-sanitize-recover=undefined,float-cast-overflow",
         f"-I{ROOT / 'runtime' / 'include'}", f"-I{scipy_openblas64.get_include_dir()}", *map(str, sources),
         *BLAS_LINK, "-o", str(binary)],  # the core's GEMM calls OpenBLAS (runtime/src/core/blas.cpp)
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300, env={"ASAN_OPTIONS": "detect_leaks=1"})
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
