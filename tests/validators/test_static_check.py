"""Every static rule rejects an example, mentions in comments and literals do not count, and every body our
templates generate passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorsmith_forge.validators.static_check import MAX_BODY_CHARS, RULES, blank_comments_and_literals, check_body, extract_body

ROOT = Path(__file__).resolve().parents[2]
GENERATED = sorted((ROOT / "generated" / "cpu").glob("*.cpp"))

# rule -> bodies that must trip it (and may trip others too).
FAILING = {
    "length": ["int x = 0;\n" * (MAX_BODY_CHARS // 10)],
    "preprocessor": ["#include <thread>", "  # define N 4", "#pragma omp parallel for", "%:define X 1"],
    "backslash": ["std::thr\\\nead t;", "int s\\u0079stem = 0;"],
    "non-ascii": ["int caf\u00e9 = 0;"],
    "braces": ["}} int leaked; void f() {{", "<% %>", "{", "}"],
    "reserved-identifier": [
        '__asm__("nop");',
        "__attribute__((constructor)) int f;",
        '_Pragma("omp")',
        "__builtin_trap();",
        "__sync_fetch_and_add(p, 1);",
        "__thread int t;",
    ],
    "attribute": ["[[gnu::constructor]] int f;", '[ [ gnu::section(".data") ] ] int g;'],
    "asm": ['asm("nop");', 'asm volatile("" ::: "memory");'],
    "concurrency": [
        "std::thread t([]{});",
        "std::async(f);",
        "std::jthread t;",
        "pthread_create(&t, 0, f, 0);",
        "std::atomic<int> a;",
        "omp_get_thread_num();",
        "std::mutex m;",
    ],
    "static-storage": [
        "static int calls = 0;",
        "static const float cache[4] = {};",
        "thread_local int t;",
        "extern int g;",
        "static constexpr struct { mutable int x; } s{};",
    ],
    "heap": [
        "float* p = new float[n];",
        "delete p;",
        "void* p = malloc(64);",
        "free(p);",
        "realloc(p, 8);",
        "calloc(1, 8);",
        "std::vector<float> v(n);",
        "auto u = std::make_unique<float[]>(n);",
    ],
    "io": [
        'FILE* f = fopen("x", "w");',
        'int fd = open("/etc/passwd", 0);',
        'std::ofstream out("x");',
        'std::ifstream in("x");',
        'printf("%d", 1);',
        "std::cout << 1;",
        "write(1, p, 1);",
    ],
    "network": ["int s = socket(2, 1, 0);", "connect(s, addr, len);", "send(s, p, 1, 0);"],
    "process": [
        'system("ls");',
        'popen("ls", "r");',
        "fork();",
        'execve("/bin/sh", a, e);',
        "kill(1, 9);",
        "signal(11, h);",
        "raise(11);",
        "exit(0);",
        "std::abort();",
        "atexit(f);",
        "longjmp(b, 1);",
        "syscall(39);",
        "std::terminate();",
    ],
    "environment": ['getenv("HOME");', 'std::getenv("KEY");', 'setenv("A", "b", 1);', "char** e = environ;"],
    "dynamic-loading": ['dlopen("libm.so", 1);', 'dlsym(h, "exp");'],
    "clock": [
        "auto t = std::chrono::steady_clock::now();",
        "clock();",
        "time(nullptr);",
        "usleep(10);",
        "std::this_thread::sleep_for(d);",
    ],
    "volatile": ["volatile int sink = 0;"],
    "goto": ["goto done;"],
    "function-pointer": [
        "using fn = void (*)(int);",
        "auto g = reinterpret_cast<void (*)()>(p);",
        "(*fp)(1);",
        "void (&ref)(int) = f;",
        "int (C::*m)(int);",
    ],
    "exceptions": ["throw 1;", "try { f(); } catch (...) {}"],
    "dispatch": ['ts::Registry::global().get("add");', "ts::OpDef* d = nullptr;"],
    "blas": ["ts::blas_dgemm(args);", "cblas_sgemm(a, b);"],
    "isa": ["if (ts::isa::allowed() == ts::isa::Level::AVX2) return;", "using namespace ts::isa;"],
    "digraphs": ["<:<:gnu::cold:>:> int x = 0;", "int a<:4:> = {};"],
    "unterminated": ['const char* s = "no end;', "/* no end", 'auto r = R"x(no end)";'],
}


def test_every_rule_has_a_failing_example():
    assert set(FAILING) == {rule.name for rule in RULES} | {"length", "braces", "unterminated"}


@pytest.mark.parametrize("rule,body", [(rule, body) for rule, bodies in FAILING.items() for body in bodies])
def test_rule_rejects(rule, body):
    assert rule in {violation.rule for violation in check_body(body)}


@pytest.mark.parametrize("path", GENERATED, ids=[path.stem for path in GENERATED])
def test_template_bodies_pass(path):
    body = extract_body(path.read_text())
    assert body.strip(), "no body between the markers"
    assert check_body(body) == []


def test_there_are_generated_kernels_to_check():
    assert len(GENERATED) >= 40


@pytest.mark.parametrize(
    "body",
    [
        "// std::thread would be wrong here; so would fork() and #include\nint a = 0;",
        "/* static int cache; malloc(); goto x; */ int b = 1;",
        'const char* note = "std::thread, system(), #define";',
        "char quote = '\"'; char hash = '#'; char slash = '\\\\';",
        'auto raw = R"delim(fork(); "quoted" )" still inside)delim";',
        "int64_t big = 1'000'000; double d = 0x1.8p+3; float f = 1.5e-3f;",
        "static constexpr int64_t kBlock = 64; constexpr static float kHalf = 0.5f;",
        "[[maybe_unused]] const float* __restrict__ p = nullptr; if (__builtin_expect(n > 0, 1)) { n = 0; }",
        'const float t = static_cast<float>(x); static_assert(sizeof(float) == 4, "float");',
    ],
    ids=["line-comment", "block-comment", "string", "chars", "raw-string", "numbers", "constants", "hints", "casts"],
)
def test_mentions_outside_code_and_allowed_forms_pass(body):
    assert check_body(body) == []


def test_digit_separators_do_not_hide_code():
    # If 1'0 ... 2'0 were lexed as a character literal, the call between them would vanish.
    violations = check_body("int a = 1'0; system(\"x\"); int b = 2'0;")
    assert [v.rule for v in violations] == ["process"]


def test_violation_reports_line_within_body_and_what_matched():
    (violation,) = check_body("int ok = 0;\n// fine\nstd::thread t;\n")
    assert (violation.line, violation.rule, violation.text) == (3, "concurrency", "thread")
    assert str(violation).startswith("line 3: no threads")


def test_blanking_keeps_offsets_and_lines():
    source = 'a = "x\\"y"; // c\n/* d\n e */ b'
    blanked, problem = blank_comments_and_literals(source)
    assert problem is None
    assert len(blanked) == len(source) and blanked.count("\n") == source.count("\n")
    assert blanked.replace(" ", "") == 'a="";\n\nb'


def test_extract_body_requires_exactly_one_marker_pair():
    source = "x\n    // --- kernel body (proposer: llm) ---\nint a;\n    // --- end kernel body ---\ny\n"
    assert extract_body(source) == "int a;\n"
    smuggled = source.replace("int a;\n", "int a;\n    // --- end kernel body ---\nstatic int s;\n")
    with pytest.raises(ValueError):
        extract_body(smuggled)
    with pytest.raises(ValueError):
        extract_body("no markers here")
