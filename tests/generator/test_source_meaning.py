"""catalog/source_meaning.py: what decides whether a change of the runtime or the gate re-judges kernels.
Same meaning, same text; any change a compiler (or Python) would see, a different one."""

from __future__ import annotations

import gc
import re
import threading
import time
from pathlib import Path

import pytest

from tensorsmith_forge.catalog.source_meaning import cpp_meaning, digest_files, meaning, python_meaning

ROOT = Path(__file__).resolve().parents[2]

CPP = """// The header's comment.
#pragma once
#include <tensorsmith/errors.h>  // why
#define F(x) ((x) + 1)  /* a comment */
#define LONG(a) \\
    (a) + 1
namespace ts {
inline int f(int a, int b) { return a - -b + 1'000'000 + 'x'; }
inline const char* s = "quoted \\" // not a comment";
inline const char* raw = R"d(/* not a comment */ )" still raw)d";
}  // namespace ts
"""


@pytest.mark.parametrize("same", [
    CPP.replace("// The header's comment.\n", ""),
    CPP.replace("/* a comment */", "/* another\n comment */"),
    CPP.replace("int a, int b", "int a,int b").replace("{ return", "{\n  return"),
    re.sub(r"(?<!\\)\n", "\n\n", CPP),  # blank lines (not after a line continuation, which would end it)
    CPP.replace("#include", "  #include"),
    CPP.replace("\\\n    (a) + 1", " (a) + 1"),
])  # fmt: skip
def test_comments_and_layout_mean_nothing(same: str) -> None:
    assert cpp_meaning(same) == cpp_meaning(CPP)


@pytest.mark.parametrize("different", [
    CPP.replace("a - -b", "a--b"),  # maximal munch: a decrement, not two minuses
    CPP.replace("#define F(x)", "#define F (x)"),  # an object-like macro
    CPP.replace('"quoted \\" // not a comment"', '"quoted \\"  // not a comment"'),  # inside a string
    CPP.replace("/* not a comment */", "/*  not a comment */"),  # inside a raw string
    CPP.replace("'x'", "' x'"),
    CPP.replace("1'000'000", "1'000'001"),
    CPP.replace("#pragma once\n", ""),
    CPP.replace("(a) + 1", "(a) - 1"),
])  # fmt: skip
def test_any_change_of_code_means_something(different: str) -> None:
    assert cpp_meaning(different) != cpp_meaning(CPP)


def test_directives_stay_on_their_own_lines() -> None:
    assert cpp_meaning("int a;\n#if X\nint b;\n#endif\n") == "int a ;\n#if X\nint b ;\n#endif"
    assert cpp_meaning("/* c */ # define  X  1 // c\n") == "# define X 1"


PY = '''"""The module's docstring."""
import os


class A:
    """A class."""

    def f(self, x):
        """A method."""
        return x + 1  # a comment


def g():
    """Only a docstring."""
'''


def test_python_means_its_tree_without_docstrings() -> None:
    assert python_meaning(PY.replace("A method.", "Something else.").replace("# a comment", "")) == python_meaning(PY)
    assert python_meaning(PY.replace("x + 1", "(x +\n 1)")) == python_meaning(PY)
    assert python_meaning(PY.replace("x + 1", "x + 2")) != python_meaning(PY)
    assert python_meaning(PY.replace('"""Only a docstring."""', "pass")) == python_meaning(PY)
    assert python_meaning(PY.replace('x + 1  # a comment', '"x + 1"')) != python_meaning(PY)


def test_every_hashed_runtime_file_parses(tmp_path: Path) -> None:
    """The runtime's and the gate's own files: each has a meaning, and other files keep their bytes."""
    files = [*sorted((ROOT / "runtime").rglob("*.h")), *sorted((ROOT / "runtime" / "src" / "core").glob("*.cpp")),
             *sorted((ROOT / "validators").glob("*.py")), *sorted((ROOT / "catalog").rglob("*.py"))]  # fmt: skip
    assert files
    for path in files:
        assert meaning(path)
    other = tmp_path / "template.j2"
    other.write_text("{# a jinja comment #}\n", encoding="utf-8")
    assert meaning(other) == other.read_bytes()
    assert digest_files([other], tmp_path) != digest_files([other.rename(tmp_path / "renamed.j2")], tmp_path)


def test_python_meaning_from_many_threads_at_once() -> None:
    """The loop judges kernels in threads, each reading the gate's Python files: CPython 3.11's ast.parse keeps its
    recursion depth in interpreter-wide state, so two trees built at once broke each other (a clean-clone CI hit
    "AST constructor recursion depth mismatch"). A garbage-collector callback that gives the GIL away forces the
    interleaving on every collection."""
    text = (ROOT / "catalog" / "model.py").read_text(encoding="utf-8")
    expected = python_meaning(text)
    results: list[str] = []
    errors: list[BaseException] = []

    def parse_repeatedly() -> None:
        try:
            results.extend(python_meaning(text) for _ in range(10))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    def give_the_gil_away(phase: str, info: dict) -> None:
        time.sleep(0)

    threshold = gc.get_threshold()
    gc.callbacks.append(give_the_gil_away)
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=parse_repeatedly) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.callbacks.remove(give_the_gil_away)
        gc.set_threshold(*threshold)
    assert errors == []
    assert results == [expected] * 40
