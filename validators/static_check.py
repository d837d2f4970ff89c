"""Static rules for an untrusted kernel body, checked before it is ever compiled.

A body is the code between `// --- kernel body` and `// --- end kernel body ---` in a kernel translation
unit: the inside of one function that gets pointers, strides and sizes from the engine and must compute
outputs from inputs, nothing else. It needs no preprocessor, no heap, no I/O, no threads, no clock and no
state that outlives a call, so all of those are rejected outright (see RULES). The rules are deliberately
coarse: a banned name is rejected wherever it appears (a variable called `time` or `free` too). A body
that trips a rule can be rewritten, while a body that slips past one might cheat (research note
kernel_agents.md §2.1: deferred work, memoisation, library fallback, timer games). Calls the rules miss
still have to survive validators/symbols.py, which inspects what the compiled object links to.

Comments and the contents of string and character literals are blanked first, mirroring the compiler's
lexer closely enough that nothing the compiler treats as code is hidden: digit separators (1'000) are
not character literals, raw strings are handled, and backslashes outside literals are banned (so no line
splice or \\u escape can glue a banned name together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_BODY_CHARS = 20_000
BODY_START = "// --- kernel body"
BODY_END = "// --- end kernel body ---"


@dataclass(frozen=True)
class Violation:
    line: int  # 1-based, within the body
    rule: str
    message: str
    text: str  # what matched

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} (found `{self.text}`)"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    message: str


def _words(*names: str) -> re.Pattern[str]:
    """Any of `names` as a whole identifier; a name ending in `*` is a prefix."""
    alternatives = [re.escape(n[:-1]) + r"\w*" if n.endswith("*") else re.escape(n) for n in names]
    return re.compile(r"(?<![\w])(?:" + "|".join(alternatives) + r")(?![\w])")


# Reserved identifiers a body may still use: optimisation hints with no side effects.
ALLOWED_RESERVED = ("__restrict", "__restrict__", "__builtin_expect", "__builtin_prefetch", "__builtin_assume_aligned")
ALLOWED_ATTRIBUTES = ("maybe_unused", "fallthrough", "likely", "unlikely", "nodiscard")

# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("preprocessor", re.compile(r"#|%:"),
         "no preprocessor directives (#include, #define, #pragma, ...): a body uses only what the template includes"),
    Rule("backslash", re.compile(r"\\"),
         "no backslash outside string literals (line splices and \\u escapes can hide names)"),
    Rule("non-ascii", re.compile(r"[^\x00-\x7f]"), "only ASCII outside comments and string literals"),
    Rule("braces", re.compile(r"<%|%>"), "no brace digraphs: a body stays inside its function"),
    Rule("reserved-identifier",
         re.compile(r"(?<![\w])(?!(?:" + "|".join(ALLOWED_RESERVED) + r")(?![\w]))(?:__\w*|_[A-Z]\w*)"),
         "no reserved identifiers (__asm__, __attribute__, __builtin_*, __sync_*, _Pragma, ...); allowed: "
         + ", ".join(ALLOWED_RESERVED)),
    Rule("attribute", re.compile(r"\[\s*\[(?!\s*(?:" + "|".join(ALLOWED_ATTRIBUTES) + r")\s*\]\s*\])"),
         "no attributes other than [[" + "]], [[".join(ALLOWED_ATTRIBUTES) + "]]"),
    Rule("asm", _words("asm"), "no inline assembly"),
    Rule("concurrency",
         _words("thread", "jthread", "this_thread", "async", "future", "promise", "packaged_task", "mutex",
                "recursive_mutex", "shared_mutex", "timed_mutex", "condition_variable", "atomic", "atomic_ref",
                "atomic_flag", "latch", "barrier", "counting_semaphore", "binary_semaphore", "pthread_*", "omp_*"),
         "no threads, atomics or OpenMP: the engine decides parallelism, and work must finish before return"),
    Rule("static-storage",
         re.compile(r"(?<![\w])(?:static(?!\s+constexpr\b)(?<!constexpr\sstatic)|thread_local|extern|mutable)(?![\w])"),
         "no static, thread_local, extern or mutable (static constexpr constants are fine): "
         "nothing may survive from one call to the next"),
    Rule("heap",
         _words("new", "delete", "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
                "memalign", "valloc", "alloca", "make_unique", "make_shared", "allocator", "vector", "string",
                "basic_string", "to_string", "to_wstring", "wstring", "stringstream", "ostringstream",
                "istringstream", "unique_ptr", "shared_ptr", "function", "any"),
         "no heap allocation: a kernel gets all its memory from the engine (use fixed-size stack arrays)"),
    Rule("io",
         _words("FILE", "fopen", "freopen", "fdopen", "fclose", "fread", "fwrite", "fprintf", "printf", "puts",
                "putchar", "fputs", "fflush", "perror", "scanf", "open", "openat", "creat", "close", "read", "write",
                "pread", "pwrite", "mmap", "munmap", "mprotect", "ioctl", "fcntl", "dup", "dup2", "pipe", "unlink",
                "remove", "rename", "mkdir", "rmdir", "chdir", "chmod", "ifstream", "ofstream", "fstream",
                "filebuf", "cout", "cerr", "clog", "cin"),
         "no file or console I/O"),
    Rule("network",
         _words("socket", "connect", "bind", "listen", "accept", "send", "sendto", "sendmsg", "recv", "recvfrom",
                "recvmsg", "getaddrinfo", "gethostbyname"),
         "no network access"),
    Rule("process",
         _words("system", "popen", "pclose", "fork", "vfork", "clone", "execl", "execlp", "execle", "execv",
                "execvp", "execvpe", "execve", "posix_spawn", "posix_spawnp", "wait", "waitpid", "kill", "raise",
                "signal", "sigaction", "exit", "_exit", "quick_exit", "at_quick_exit", "abort", "atexit",
                "terminate", "setjmp", "longjmp", "sigsetjmp", "siglongjmp", "syscall", "ptrace", "prctl"),
         "no process control, signals, exits or non-local jumps"),
    Rule("environment", _words("getenv", "secure_getenv", "setenv", "unsetenv", "putenv", "clearenv", "environ"),
         "no environment access"),
    Rule("dynamic-loading", _words("dlopen", "dlmopen", "dlsym", "dlvsym", "dlclose"), "no dynamic loading"),
    Rule("clock",
         _words("chrono", "clock", "time", "gettimeofday", "clock_gettime", "steady_clock", "system_clock",
                "high_resolution_clock", "sleep", "usleep", "nanosleep", "sleep_for", "sleep_until"),
         "no clocks or sleeping: a kernel must not tell timing runs from test runs"),
    Rule("volatile", _words("volatile"), "no volatile"),
    Rule("goto", _words("goto"), "no goto"),
    Rule("function-pointer", re.compile(r"\(\s*(?:\w+\s*::\s*)*[*&]\s*\w*\s*\)\s*\("),
         "no function pointers: a body calls only named functions the symbol check can see"),
    Rule("exceptions", _words("throw", "try", "catch"),
         "no exceptions: the engine validates arguments before the kernel runs"),
    Rule("dispatch", _words("Registry", "OpDef", "set_kernel", "Tensor"),
         "no access to the op table or tensors: a kernel computes on the buffers it is given"),
    Rule("isa", _words("isa"),
         "no instruction-set queries: the template compiles the body once per level, and it must compute alike at each"),
    Rule("digraphs", re.compile(r"<:|:>"),
         "no <: :> digraphs (they spell [ and ], and can hide an attribute)"),
    Rule("blas", _words("blas_*", "cblas_*"),
         "no BLAS calls: the template routes float32/float64 GEMM to BLAS; a body computes its own dtypes"),
)
# CUDA bodies run on the device: shared memory and barriers are how a tile is staged; everything that
# reaches outside the thread block (atomics, the CUDA runtime API, clocks, device-side launches) is not.
CUDA_ALLOWED_RESERVED = ("__shared__", "__syncthreads")
CUDA_RULES: tuple[Rule, ...] = (
    Rule("cuda-atomics", _words("atomic*", "__threadfence*"),
         "no atomics or fences: the template's machinery decides how partial results combine"),
    Rule("cuda-runtime", _words("cuda*", "cublas*", "cudnn*", "cooperative_groups", "grid_group"),
         "no CUDA runtime or library calls: a body computes; the template launches and the runtime allocates"),
    Rule("cuda-clock", _words("clock64", "globaltimer"), "no clocks: a kernel must not tell timing runs from test runs"),
)
# fmt: on


def extract_body(translation_unit: str) -> str:
    """The text between the body markers of a rendered kernel file (exactly one of each, start first)."""
    lines = translation_unit.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(BODY_START)]
    ends = [i for i, line in enumerate(lines) if line.strip() == BODY_END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"expected one {BODY_START!r} line followed by one {BODY_END!r} line")
    return "".join(lines[starts[0] + 1 : ends[0]])


def rules_for(device: str) -> tuple[Rule, ...]:
    """The rules a body for `device` is held to: CUDA bodies may also use shared memory and block barriers,
    and must keep off atomics, the CUDA API and device clocks."""
    if device != "cuda":
        return RULES
    allowed = "|".join(ALLOWED_RESERVED + CUDA_ALLOWED_RESERVED)
    reserved = Rule("reserved-identifier", re.compile(r"(?<![\w])(?!(?:" + allowed + r")(?![\w]))(?:__\w*|_[A-Z]\w*)"),
                    "no reserved identifiers (__asm__, __attribute__, __builtin_*, __sync_*, _Pragma, ...); allowed: "
                    + ", ".join(ALLOWED_RESERVED + CUDA_ALLOWED_RESERVED))  # fmt: skip
    return tuple(reserved if r.name == "reserved-identifier" else r for r in RULES) + CUDA_RULES


def check_body(body: str, device: str = "cpu") -> list[Violation]:
    """Every rule violation in `body`, in order of position; empty when the body passes."""
    if len(body) > MAX_BODY_CHARS:
        message = f"a body may have at most {MAX_BODY_CHARS} characters"
        return [Violation(1, "length", message, f"{len(body)} characters")]
    code, problem = blank_comments_and_literals(body)
    found = []
    if problem is not None:
        offset, message = problem
        found.append((offset, "unterminated", message, body[offset : offset + 20].split("\n")[0]))
    for rule in rules_for(device):
        for match in rule.pattern.finditer(code):
            found.append((match.start(), rule.name, rule.message, match.group()))
    found += _brace_depth_violations(code)
    violations = []
    for offset, rule, message, text in sorted(found):
        violation = Violation(code.count("\n", 0, offset) + 1, rule, message, text)
        if violation not in violations:
            violations.append(violation)
    return violations


def _brace_depth_violations(code: str) -> list[tuple[int, str, str, str]]:
    """A body must not close the function it lives in (and then define things at namespace scope)."""
    depth = 0
    for match in re.finditer(r"[{}]", code):
        depth += 1 if match.group() == "{" else -1
        if depth < 0:
            return [(match.start(), "braces", "unbalanced braces: a body stays inside its function", "}")]
    if depth:
        return [(len(code.rstrip()), "braces", "unbalanced braces: a body stays inside its function", "{")]
    return []


_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^ ()\\\t\n]{0,16})\(')
_LITERAL_PREFIX = re.compile(r"(?:u8|u|U|L)?(?=[\"'])")
_PP_NUMBER = re.compile(r"\.?\d(?:[eEpP][+-]|'?[\w.])*")  # 1'000, 0x1p-3, 1.5e+3f, ...


def blank_comments_and_literals(source: str) -> tuple[str, tuple[int, str] | None]:
    """`source` with comments and literal contents replaced by spaces (newlines kept, so offsets and line
    numbers stay valid), and the first unterminated comment or literal as (offset, message), if any."""
    out = list(source)
    i, n = 0, len(source)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                blank(i, n)
                return "".join(out), (i, "unterminated /* comment")
            blank(i, end + 2)
            i = end + 2
        elif (raw := _RAW_STRING.match(source, i)) and (i == 0 or not _is_word(source[i - 1])):
            close = ")" + raw.group(1) + '"'
            end = source.find(close, raw.end())
            if end < 0:
                return "".join(out), (i, "unterminated raw string literal")
            blank(raw.end(), end)
            i = end + len(close)
        elif c.isdigit() or (c == "." and i + 1 < n and source[i + 1].isdigit()):
            if i > 0 and _is_word(source[i - 1]):  # a digit inside an identifier
                i += 1
            else:
                i = _PP_NUMBER.match(source, i).end()
        elif (prefix := _LITERAL_PREFIX.match(source, i)) and (i == 0 or not _is_word(source[i - 1])):
            quote_at = prefix.end()
            quote = source[quote_at]
            end = quote_at + 1
            while end < n and source[end] not in (quote, "\n"):
                end += 2 if source[end] == "\\" else 1
            if end >= n or source[end] != quote:
                return "".join(out), (i, "unterminated string or character literal")
            blank(quote_at + 1, end)
            i = end + 1
        elif _is_word(c):
            while i < n and _is_word(source[i]):
                i += 1
        else:
            i += 1
    return "".join(out), None


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"
