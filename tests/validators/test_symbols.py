"""The symbol allowlist admits every template-generated kernel, as the extension ships it and under the other
builds the gate uses, and rejects the library calls and static state a body must not have."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tensorsmith_forge.validators import symbols
from tensorsmith_forge.validators.build import COMMON, FLAGS
from tensorsmith_forge.validators.static_check import BODY_END, BODY_START
from tensorsmith_forge.validators.symbols import SymbolToolMissing, check_symbols, undefined_symbols, writable_data_symbols
from tests.build_tree import build_tree, shipped_object
from tests.helpers import once_per_session

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "runtime" / "include"
GENERATED = sorted((ROOT / "generated" / "cpu").glob("*.cpp"))
RELEASE = [*COMMON, *FLAGS["release"]]  # as validators/build.py builds candidates
SANITIZE = [*COMMON, *FLAGS["sanitize"]]
OTHER_BUILDS = {  # flags whose extra symbols the allowlist must also cover
    "O0": ["-std=c++17", "-O0"],
    "stack-protector": ["-std=c++17", "-O2", "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2"],
}

# A body no static check would pass, to show the symbol check catches the same things after compilation.
FORBIDDEN_INCLUDES = "#include <cstdio>\n#include <cstdlib>\n#include <dlfcn.h>\n#include <pthread.h>\n" \
                     "#include <sys/socket.h>\n#include <unistd.h>\n"  # fmt: skip
FORBIDDEN_BODY = """
    pthread_t thread;
    pthread_create(&thread, nullptr, nullptr, nullptr);
    FILE* file = std::fopen("/tmp/stolen", "w");
    const char* home = std::getenv("HOME");
    void* scratch = std::malloc(64);
    float* extra = new float[n];
    std::system("true");
    void* library = dlopen("libm.so.6", RTLD_NOW);
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    long pid = syscall(39);
    static const int64_t first_n = n;  // remembered across calls
    const void* keep[] = {file, home, scratch, extra, library, &sock, &pid, &first_n};
    std::memcpy(data[0], keep, sizeof keep);
"""
FORBIDDEN_SYMBOLS = ["pthread_create", "fopen", "getenv", "malloc", "operator new[](unsigned long)", "system",
                     "dlopen", "socket", "syscall", "__cxa_guard_acquire"]  # fmt: skip


def with_body(source: str, body: str, includes: str = "") -> str:
    before, rest = source.split(BODY_START, 1)
    header_end = before.index('#include "tensorsmith/kernel_api.h"\n') + len('#include "tensorsmith/kernel_api.h"\n')
    before = before[:header_end] + includes + before[header_end:]
    return before + BODY_START + rest.split("\n", 1)[0] + "\n" + body + "    " + BODY_END + rest.split(BODY_END, 1)[1]


@pytest.fixture(scope="module")
def shipped() -> dict[str, Path]:
    """Every generated CPU kernel's object as CMake compiled it into tensorsmith._C: the gate's release build of
    the same file (test_release_objects.py), so the whole catalog is checked without compiling it again."""
    tree = build_tree()
    return {source.stem: shipped_object(tree, source.stem) for source in GENERATED}


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> dict[str, Path]:
    """The objects build_objects makes, built once per test session."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not found: the symbol tests compile kernels")
    paths = once_per_session(tmp_path_factory, "kernel-objects",
                             lambda out: {name: str(path) for name, path in build_objects(compiler, out).items()})
    return {name: Path(path) for name, path in paths.items()}


def build_objects(compiler: str, out: Path) -> dict[str, Path]:
    """Softmax and exp under the builds the gate does not ship, the forbidden body, ts::ops::exp alone and a
    complex product per instruction-set level; in parallel, into out."""
    forbidden = out / "forbidden.cpp"
    forbidden.write_text(with_body((ROOT / "generated/cpu/add.cpp").read_text(), FORBIDDEN_BODY, FORBIDDEN_INCLUDES))
    jobs = {f"softmax.{name}": (ROOT / "generated/cpu/softmax.cpp", flags) for name, flags in OTHER_BUILDS.items()}

    # ts::ops::exp of the real widths alone: the exp op's complex kernels call libm's exp (e^x (cos y + i sin y))
    real_exp = out / "real_exp.cpp"
    real_exp.write_text('#include "tensorsmith/scalar_ops.h"\n'
                        "float exp_float(float x) { return ts::ops::exp(x); }\n"
                        "double exp_double(double x) { return ts::ops::exp(x); }\n")  # fmt: skip
    # A complex product at each instruction-set level (tensorsmith/isa.h's targets), as a kernel's loop inlines it
    for level, target in (("baseline", ""), ("avx2", "TS_TARGET_AVX2 "), ("avx512", "TS_TARGET_AVX512 ")):
        product = out / f"complex_product_{level}.cpp"
        product.write_text('#include "tensorsmith/complex.h"\n#include "tensorsmith/isa.h"\n'
                           f"{target}ts::complex64 product64(ts::complex64 a, ts::complex64 b) {{ return a * b; }}\n"
                           f"{target}ts::complex128 product128(ts::complex128 a, ts::complex128 b) {{ return a * b; }}\n")
        jobs[f"complex_product.{level}"] = (product, RELEASE)
    jobs |= {"exp.sanitize": (ROOT / "generated/cpu/exp.cpp", SANITIZE), "forbidden": (forbidden, RELEASE),
             "real_exp.sanitize": (real_exp, SANITIZE)}  # fmt: skip

    def build(name: str) -> tuple[str, Path]:
        source, flags = jobs[name]
        target = out / f"{name}.o"
        command = [compiler, *flags, f"-I{INCLUDE}", "-c", str(source), "-o", str(target)]
        subprocess.run(command, check=True, capture_output=True)
        return name, target

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return dict(pool.map(build, jobs))


def test_there_are_generated_kernels_to_check():
    assert len(GENERATED) >= 40


def test_shipped_kernels_pass(shipped):
    assert {op: found for op, obj in shipped.items() if (found := check_symbols(obj))} == {}
    assert {op: found for op, obj in shipped.items() if (found := writable_data_symbols(obj))} == {}


@pytest.mark.parametrize("build", OTHER_BUILDS)
def test_other_builds_pass(objects, build):
    assert check_symbols(objects[f"softmax.{build}"]) == []


def test_sanitizer_symbols_need_the_flag(objects):
    extra = check_symbols(objects["exp.sanitize"])
    assert extra and all(re.match(r"__(asan|ubsan)_", symbol) for symbol in extra)
    assert check_symbols(objects["exp.sanitize"], sanitized=True) == []


def test_libm_and_registration_are_what_kernels_need(shipped, objects):
    needed = set().union(*(undefined_symbols(obj) for obj in shipped.values()))
    assert "pow" in needed  # float64 pow still calls libm
    # ts::ops' own forms, inlined (they vectorise; libm's calls do not); libm's float64 expm1 and log1p are still
    # called by complex expm1 and by logaddexp (log, logf: log_softmax, a row; exp: logaddexp's e**-|d|, and the
    # complex functions of tensorsmith/complex_math.h, which compute complex64 in double)
    assert {"expf", "sinf", "cosf", "tanhf", "expm1f", "log1pf", "powf", "tanh"} & needed == set()
    assert {"expf", "exp"} & set(undefined_symbols(objects["real_exp.sanitize"])) == set()  # the exp op's own form, both widths
    assert "exp" in undefined_symbols(objects["exp.sanitize"])  # the check sees libm where it is called: complex exp
    assert any(symbol.startswith("ts::Registry::set_kernel(") for symbol in needed)


def test_complex_products_fuse_in_registers_above_the_baseline(objects):
    # The AVX2 and AVX-512 levels compile with FMA, so complex multiply's std::fma is an instruction there, not a
    # call to libm per element (complex64 multiply of 65536 elements: 164 us, then 18; numpy 18). The baseline
    # (SSE2) has none and calls libm, which rounds the same.
    fma_calls = {level: {"fma", "fmaf"} & set(undefined_symbols(objects[f"complex_product.{level}"]))
                 for level in ("baseline", "avx2", "avx512")}  # fmt: skip
    assert fma_calls == {"baseline": {"fma", "fmaf"}, "avx2": set(), "avx512": set()}


@pytest.mark.parametrize("symbol", FORBIDDEN_SYMBOLS)
def test_forbidden_call_is_rejected(objects, symbol):
    assert symbol in check_symbols(objects["forbidden"])


def test_static_state_is_found(objects):
    found = writable_data_symbols(objects["forbidden"])
    assert any(name.endswith("::first_n") for name in found)
    assert any(name.startswith("guard variable for") for name in found)


def test_missing_nm_is_named(objects, monkeypatch):
    monkeypatch.setattr(symbols.shutil, "which", lambda name: None)
    with pytest.raises(SymbolToolMissing, match="nm"):
        undefined_symbols(objects["forbidden"])


def test_not_an_object_file(tmp_path):
    junk = tmp_path / "junk.o"
    junk.write_text("not an object")
    with pytest.raises(ValueError, match="could not read"):
        undefined_symbols(junk)
