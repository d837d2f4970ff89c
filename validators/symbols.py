"""What a compiled kernel object links to and keeps, judged against an allowlist.

validators/static_check.py reads the body's source; this reads the object file the compiler made of the
whole translation unit, where every function the code reaches outside it is an undefined symbol however
the source spelled the call (through the template's headers, a template, a using-declaration, an alias).
So a body that slipped a call past the static rules is caught here, and a kernel cannot lean on a library
to do its work (research note kernel_agents.md §2.1, exploit 7; §5 step 2).

DEFAULT_ALLOWLIST is what the template-generated kernels need. It was read off the objects of every
generated/cpu/*.cpp compiled with -O0, -O2, -O3 -march=native, -fPIC -fstack-protector-strong and the
sanitizer flags (tests/validators/test_symbols.py keeps that true): libm, the mem* functions, and what the
registration function uses (Registry::set_kernel, the std::string holding the op name, unwinding), and the
the vendor-BLAS GEMM entry points contraction templates register for float32/float64/complex (tensorsmith/blas.h). Anything
else is rejected: threads, files, sockets, dlopen, getenv, system, malloc and operator new, syscall, and
__cxa_guard_* (a static local). `writable_data_symbols` finds state that would outlive a call.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


class SymbolToolMissing(RuntimeError):
    """Neither nm (binutils) nor llvm-nm is installed."""


@dataclass(frozen=True)
class Allowlist:
    exact: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]  # each must match the whole demangled name

    def allows(self, symbol: str) -> bool:
        return symbol in self.exact or any(pattern.fullmatch(symbol) for pattern in self.patterns)

    def extended(self, *patterns: str) -> Allowlist:
        return Allowlist(self.exact, self.patterns + tuple(re.compile(p) for p in patterns))


# fmt: off
LIBM = (r"(?:sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|atanh|sincos|exp|exp2|expm1|log|log2|"
        r"log10|log1p|pow|sqrt|cbrt|hypot|fabs|fmod|remainder|floor|ceil|trunc|round|lround|llround|nearbyint|"
        r"rint|lrint|llrint|fmin|fmax|fdim|fma|copysign|nextafter|frexp|ldexp|modf|scalbn|ilogb|logb|erf|erfc|"
        r"tgamma|lgamma)[fl]?")
# libm's complex functions, which the complex kernels' transcendental functions call (std::complex's; numpy
# calls the same ones), and libgcc's complex multiply and divide helpers.
LIBM_COMPLEX = r"c(?:sin|cos|tan|asin|acos|atan|sinh|cosh|tanh|asinh|acosh|atanh|exp|log|sqrt|pow|abs)[fl]?|__(?:mul|div)[sdx]c3"
STD_STRING = r"std::(?:__cxx11::)?basic_string<char, std::char_traits<char>, std::allocator<char> >"

DEFAULT_ALLOWLIST = Allowlist(
    exact=frozenset({
        "memcpy", "memmove", "memset", "memcmp",  # copies; the compiler also emits them for loops and arrays
        "strlen",  # std::string built from the op name (-O0)
        "operator delete(void*)", "operator delete(void*, unsigned long)",  # that std::string's destructor
        "__gxx_personality_v0", "_Unwind_Resume",  # unwinding through the registration function
        "__stack_chk_fail",  # -fstack-protector (the default on several distributions)
        "_GLOBAL_OFFSET_TABLE_",  # defined by the linker; referenced by position-independent code
    }),
    patterns=tuple(re.compile(p) for p in (
        LIBM,
        LIBM_COMPLEX,
        r"ts::Registry::set_kernel\(.*\)",  # registration
        r"ts::isa::allowed\(\)",  # registration: the instruction-set level TS_ISA allows (bodies may not name it)
        r"ts::isa::prefetch_hints\(\)",  # in ts::prefetch_ahead: whether hints are issued (bodies may not name it)
        r"ts::blas_[sdcz]gemm\(ts::GemmArgs const&\)",  # float32/float64/complex contraction kernels (tensorsmith/blas.h)
        STD_STRING + r"::.*",  # the op name passed to set_kernel
        r"std::allocator<char>::~?allocator\(\)",  # (-O0)
        r"std::__throw_\w+\(.*\)",  # std::string's error paths
    )),
)
# What nvcc's host code adds to a CUDA kernel object (fat-binary registration, launch stubs, the static
# handle its registration keeps) and what the CUDA family machinery calls (tensorsmith/cuda/*.cuh): the
# device guard and launch checks, the current stream, split-reduction scratch memory, and cuBLAS GEMM
# for the floating dtypes (tensorsmith/cuda/blas.h). Device code itself links to nothing on the host.
CUDA_PATTERNS = (
    r"__cuda\w+", r"__nv_\w+", r"__fatbinwrap\w*",
    r"cuda(?:GetLastError|LaunchKernel)(?:_ptsz)?",
    r"ts::cuda::DeviceGuard::(?:DeviceGuard\(int\)|~DeviceGuard\(\))",
    r"__cxa_guard_(?:acquire|release|abort)", "atexit",  # nvcc's function-local static of the fat-binary handle
    r"ts::cuda::(?:check\(cudaError, char const\*\)|check_launch\(char const\*\)|current_stream\(int\))",
    r"ts::cuda::Workspace::(?:Workspace\(unsigned long, int\)|~Workspace\(\))",
    r"ts::cuda::blas_[sdhbcz]gemm\(ts::GemmArgs const&\)",
)
CUDA_ALLOWLIST = DEFAULT_ALLOWLIST.extended(*CUDA_PATTERNS)
# Writable data nvcc itself defines in a kernel object: the fat-binary handle and wrapper, module registration.
_NVCC_DATA = re.compile(r"(?:guard variable for )?__device_stub__.*|(?:_ZL)?\d*__(?:cuda|nv|fatbinwrap|fatDeviceText)\w*|"
                        r"__nv_\w+|\S*__cudaFatCubinHandle\S*|\S*__nv_module_id\S*")
# fmt: on
SANITIZER_PATTERNS = (r"__(?:asan|ubsan)_\w+",)  # what -fsanitize=address,undefined adds

# Sections whose symbols are writable (thread-local ones included); .data.rel.ro is read-only after relocation.
_WRITABLE_SECTION = re.compile(r"\.(?:data|bss|tdata|tbss)(?!\.rel\.ro)(?:\..*)?")
_UNWINDER_DATA = "DW.ref."  # the compiler's pointer to the C++ personality routine, for exception unwinding


def undefined_symbols(object_path: Path) -> list[str]:
    """Demangled names of the symbols `object_path` needs from elsewhere, weak ones included (a weak
    reference to pthread_create is still a call to it when the process has it), sorted, unique."""
    symbols = set()
    for line in _nm(object_path, "--undefined-only").splitlines():
        kind, _, name = line.strip().partition(" ")
        if kind in ("U", "w", "v") and name:
            symbols.add(name.strip())
    return sorted(symbols)


def check_symbols(object_path: Path, allowlist: Allowlist = DEFAULT_ALLOWLIST, *, sanitized: bool = False) -> list[str]:
    """The undefined symbols of `object_path` that `allowlist` does not allow; empty means it passes.

    `sanitized=True` for objects built with -fsanitize=address,undefined: also allows __asan_*/__ubsan_*."""
    if sanitized:
        allowlist = allowlist.extended(*SANITIZER_PATTERNS)
    return [symbol for symbol in undefined_symbols(object_path) if not allowlist.allows(symbol)]


def writable_data_symbols(object_path: Path) -> list[str]:
    """Symbols `object_path` defines in writable sections (.data, .bss and their thread-local twins):
    static or global variables, which could carry results from one call to the next (exploit 11)."""
    found = []
    for line in _nm(object_path, "--defined-only", "--format=sysv").splitlines():
        fields = line.rsplit("|", 6)  # name|value|class|type|size|line|section; a demangled name may hold "|"
        if len(fields) != 7 or not _WRITABLE_SECTION.fullmatch(fields[6].strip()):
            continue
        name = fields[0].strip()
        if not name.startswith(_UNWINDER_DATA) and not _NVCC_DATA.fullmatch(name):
            found.append(name)
    return sorted(set(found))


def _nm(object_path: Path, *options: str) -> str:
    tool = shutil.which("nm") or shutil.which("llvm-nm")
    if tool is None:
        raise SymbolToolMissing("the symbol check needs nm (install binutils) or llvm-nm")
    result = subprocess.run([tool, "--demangle", *options, str(object_path)], capture_output=True, text=True)
    if result.returncode != 0:
        raise ValueError(f"{Path(tool).name} could not read {object_path}: {result.stderr.strip()}")
    return result.stdout
