"""The gate runs the object the extension ships, and the shipped kernels' vector loops stay vector loops.

Each CPU kernel the gate compiles (its compile stage, validators/build.py's release flags) must hold, section
for section and instruction for instruction, what CMake compiled into tensorsmith._C from the same file. A flag
that drifts between the two (an -O level, a define a header reads, LTO recompiling kernels at link time) would
have the gate judge machine code that nobody runs; it fails here.

GCC inlines a helper by weighing the whole translation unit: one added to scalar_ops.h once left float32 pow's
helpers out of line, and its AVX-512 loop a loop of calls (18x slower; no result changed, so no other test saw
it). Where that matters, scalar_ops.h forces inlining; the second test finds any AVX2 or AVX-512 loop that calls
a ts::ops helper out of line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.project import Project
from tests.build_tree import build_tree, shipped_object
from validators.build import CandidateBuilder

ROOT = Project.locate(Path(__file__)).root
# One kernel per CPU kernel template the compile cost allows (sort's translation unit alone takes 55 CPU seconds),
# so each family's headers are compiled both ways.
KERNELS = ("add", "sin", "sum", "argmax", "softmax", "_standardize", "cumulative_sum", "matmul", "_sgd_update")
OBJDUMP = shutil.which("objdump")


def contents(obj: Path) -> list[str]:
    """Every section's bytes, the code disassembled with its relocations; not the header (it names the file)."""
    listing = subprocess.run([OBJDUMP, "-s", "-d", "-r", str(obj)], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if str(obj) not in line]


@pytest.mark.skipif(OBJDUMP is None, reason="objdump (binutils) is not installed")
@pytest.mark.parametrize("op", KERNELS)
def test_gate_compiles_the_shipped_object(op: str, tmp_path: Path) -> None:
    shipped = shipped_object(build_tree(), op)
    source = (ROOT / "generated" / "cpu" / f"{op}.cpp").read_text(encoding="utf-8")
    judged = CandidateBuilder(ROOT, tmp_path / "cache").kernel_object(source, tmp_path)
    shipped_lines, judged_lines = contents(shipped), contents(judged)
    differing = next((i for i, (a, b) in enumerate(zip(shipped_lines, judged_lines)) if a != b), None)
    if differing is None and len(shipped_lines) == len(judged_lines):
        return
    at = differing if differing is not None else min(len(shipped_lines), len(judged_lines))
    pytest.fail(f"generated/cpu/{op}.cpp: the gate's object differs from the one the extension links, from line {at} "
                f"of objdump -s -d -r:\n  shipped: {shipped_lines[at:at + 3]}\n  judged:  {judged_lines[at:at + 3]}\n"
                "validators/build.py's FLAGS['release'] and CMakeLists.txt's flags for generated kernels "
                "disagree")  # fmt: skip


# Helpers a vector loop may call: pow<double> is libm's pow outside pow_double_near's domain, per element by design
# (the spec's fast blocks take pow_double_near inline); complex math calls the C library's complex functions.
OUT_OF_LINE_ALLOWED = re.compile(r"ts::ops::pow<double>\(double, double\)|ts::complex<")
VECTOR_LOOP = re.compile(r"^[0-9a-f]+ <(.*::loop_avx(?:2|512)\(.*)>:$")
CALL = re.compile(r"R_X86_64_PLT32\s+(.+)-0x4$")


@pytest.mark.skipif(OBJDUMP is None, reason="objdump (binutils) is not installed")
def test_vector_loops_call_no_ts_ops_helper_out_of_line() -> None:
    tree = build_tree()
    found = []
    for source in sorted((ROOT / "generated" / "cpu").glob("*.cpp")):
        obj = shipped_object(tree, source.stem)
        listing = subprocess.run([OBJDUMP, "-dr", "-C", "--no-show-raw-insn", str(obj)], capture_output=True, text=True,
                                 check=True).stdout  # fmt: skip
        loop = None
        for line in listing.splitlines():
            if heading := re.match(r"^[0-9a-f]+ <(.*)>:$", line):
                loop = heading[1] if VECTOR_LOOP.match(line) else None
            elif loop and (call := CALL.search(line)) and "ts::ops::" in call[1]:
                if not OUT_OF_LINE_ALLOWED.search(call[1]):
                    found.append(f"{source.name}: {loop.split('(')[0]} calls {call[1]}")
    found = sorted(set(found))
    assert not found, "vector loops calling a ts::ops helper out of line (force it inline):\n" + "\n".join(found[:20])


def test_every_kernel_named_here_exists() -> None:
    missing = [op for op in KERNELS if not (ROOT / "generated" / "cpu" / f"{op}.cpp").exists()]
    assert not missing, f"no generated CPU kernel for {missing}: update KERNELS"
