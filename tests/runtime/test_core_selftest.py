"""The C++ self-test of the runtime core (runtime/tests_cpp/selftest.cpp): the engines with hand-registered
kernels, built without Python, under ASan and UBSan (with float-cast-overflow)."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import scipy_openblas64

from tensorsmith_forge.validators.build import BLAS_LINK

ROOT = Path(__file__).resolve().parents[2]
# float-cast-overflow (a float converted to an integer type too narrow for it) is outside GCC's `undefined` group,
# so it is named.
SANITIZE = ["-std=c++17", "-O1", "-g", "-fsanitize=address,undefined,float-cast-overflow",
            "-fno-sanitize-recover=undefined,float-cast-overflow"]  # fmt: skip


def test_core_selftest_passes_under_sanitizers(tmp_path: Path) -> None:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed: the C++ self-test cannot be built")
    binary = tmp_path / "selftest"
    sources = [*sorted((ROOT / "runtime" / "src" / "core").glob("*.cpp")), ROOT / "runtime" / "tests_cpp" / "selftest.cpp"]
    includes = [f"-I{ROOT / 'runtime' / 'include'}", f"-I{scipy_openblas64.get_include_dir()}"]

    def compile_one(source: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        target = tmp_path / f"{source.stem}.o"
        command = [compiler, *SANITIZE, *includes, "-c", str(source), "-o", str(target)]
        return target, subprocess.run(command, capture_output=True, text=True, timeout=600)

    # One compiler per source, side by side (one g++ for all of them compiled them in turn: 2.5 minutes).
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        built = list(pool.map(compile_one, sources))
    failed = [result.stderr[-4000:] for _, result in built if result.returncode != 0]
    assert not failed, failed[0]
    link = subprocess.run([compiler, *SANITIZE, *(str(target) for target, _ in built), *BLAS_LINK, "-o", str(binary)],
                          capture_output=True, text=True, timeout=600)  # the core's GEMM calls OpenBLAS (blas.cpp)
    assert link.returncode == 0, link.stderr[-4000:]
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300, env={"ASAN_OPTIONS": "detect_leaks=1"})
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
