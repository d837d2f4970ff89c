"""tensorsmith/complex_math.h, the complex functions every kernel computes on both devices, against glibc's
(which numpy calls), compiled for this machine's CPU: every pair of the gate's special parts and 10^5 random
points of every magnitude, near the branch points too (tests/runtime/complex_math_check.cpp). pow's e^(w log z)
is what CUDA kernels compute (the host keeps glibc's cpow), so this is where it is checked without a GPU.

Through the runtime, the same functions meet numpy itself in test_complex.py and in the gate."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ["sqrt", "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
             "atanh", "pow"]  # fmt: skip
# glibc computes these with the same formulas of the same real functions: no last-bit differences at all
EXACT_FORMULAS = {"exp", "sin", "cos", "sinh", "cosh"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, tuple[int, int, float]], str]:
    """Per function: (mismatches, points checked, worst error in ulps of |result|); and the first mismatches."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed: complex_math.h cannot be compiled for the host")
    binary = tmp_path_factory.mktemp("complex_math") / "check"
    build = subprocess.run(
        # the runtime's float flags (CMakeLists.txt): no a*b+c fusion, as on the device (--fmad=false)
        [compiler, "-std=c++17", "-O2", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno",
         f"-I{ROOT / 'runtime' / 'include'}", str(ROOT / "tests" / "runtime" / "complex_math_check.cpp"), "-o", str(binary)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    lines = {}
    for line in run.stdout.splitlines():
        name, mismatches, checked, worst = line.split()
        lines[name] = (int(mismatches), int(checked), float(worst))
    return lines, run.stderr


@pytest.mark.parametrize("name", FUNCTIONS)
def test_matches_glibc_on_every_special_pair_and_over_the_whole_range(report, name: str) -> None:
    lines, first_mismatches = report
    mismatches, checked, worst = lines[name]
    assert checked > 100_000
    assert mismatches == 0, f"{name}: {mismatches} of {checked} points differ from glibc:\n{first_mismatches}"
    assert worst > 0.0 or name in EXACT_FORMULAS  # the check measured something: a last-bit difference somewhere
