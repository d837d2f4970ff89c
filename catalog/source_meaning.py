"""Source files as what they mean, for the hashes that decide what must be judged again: a comment, a
docstring, blank lines or a reformatting change none of them; any change of code does.

C, C++ and CUDA: the token sequence after comments are removed, one space between tokens; a preprocessor
directive stays on a line of its own with its own spacing (`#define F(x)` and `#define F (x)` differ).
Tokens are cut by maximal munch, as the compiler cuts them, so `a - -b` and `a--b` stay different.
Python: the syntax tree without docstrings. Anything else: its bytes.

Two texts with the same meaning here compile to the same program, except where a macro stringifies its
argument's spacing or __LINE__ counts lines; the runtime's headers do neither.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

CPP_SUFFIXES = {".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu", ".inl"}

# C++ punctuators of two and three characters (longest first, so that maximal munch picks them).
_PUNCTUATORS = sorted(["<<=", ">>=", "...", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                       "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##"], key=len, reverse=True)  # fmt: skip
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
# A pp-number: digits, letters, '.', digit separators between digits, and signs after an exponent letter.
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'(?=[A-Za-z0-9_])|[A-Za-z0-9_.])*")
_LITERAL_PREFIXES = {"u8", "u", "U", "L"}


# CPython 3.11's ast.parse keeps its recursion depth in interpreter-wide state: two threads parsing at once
# fail with "AST constructor recursion depth mismatch" (the loop judges --jobs kernels in threads).
_PARSE_LOCK = threading.Lock()


def parse_python(text: str, mode: str = "exec") -> ast.AST:
    """ast.parse, safe to call from any thread: every syntax tree the catalog reads is parsed here."""
    with _PARSE_LOCK:
        return ast.parse(text, mode=mode)


def meaning(path: Path) -> bytes:
    """What `path` means, by its suffix (see the module's docstring)."""
    return _meaning_of(path.suffix, path.read_bytes())


@functools.lru_cache(maxsize=1024)
def _meaning_of(suffix: str, data: bytes) -> bytes:
    # Cached by content: every candidate's identity reads the same gate and runtime files again.
    if suffix in CPP_SUFFIXES:
        return cpp_meaning(data.decode("utf-8")).encode("utf-8")
    if suffix == ".py":
        return python_meaning(data.decode("utf-8")).encode("utf-8")
    return data


def digest_files(paths: Iterable[Path], root: Path) -> str:
    """One sha256 over the meaning of several files, their root-relative names included (a rename counts)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + meaning(path) + b"\0")
    return digest.hexdigest()


def python_meaning(text: str) -> str:
    """The module's syntax tree without docstrings (comments and layout are not in the tree)."""
    tree = parse_python(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def cpp_meaning(text: str) -> str:
    """Directives on lines of their own, every other token joined by one space."""
    lines: list[str] = []
    code: list[str] = []
    directive: list[str] | None = None
    for token, spaced, line_start in _cpp_tokens(text.replace("\\\r\n", "").replace("\\\n", "")):
        if token == "\n":
            if directive is not None:
                lines.append("".join(directive))
                directive = None
            continue
        if directive is not None:
            directive.append((" " if spaced else "") + token)
        elif token == "#" and line_start:
            if code:
                lines.append(" ".join(code))
                code = []
            directive = ["#"]
        else:
            code.append(token)
    if directive is not None:
        lines.append("".join(directive))
    if code:
        lines.append(" ".join(code))
    return "\n".join(lines)


def _cpp_tokens(text: str) -> Iterator[tuple[str, bool, bool]]:
    """(token, whitespace or a comment before it, first token of its line); a newline is the token "\\n"."""
    i, n = 0, len(text)
    spaced, line_start = False, True
    while i < n:
        c = text[i]
        if c == "\n":
            yield "\n", False, False
            i, spaced, line_start = i + 1, False, True
            continue
        if c in " \t\r\f\v":
            i, spaced = i + 1, True
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i, spaced = (n if end < 0 else end), True
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i, spaced = (n if end < 0 else end + 2), True
            continue
        end = _token_end(text, i)
        yield text[i:end], spaced, line_start
        i, spaced, line_start = end, False, False


def _token_end(text: str, i: int) -> int:
    c = text[i]
    if match := _IDENTIFIER.match(text, i):
        end = match.end()
        prefix = text[i:end]
        if end < len(text) and text[end] in "\"'":
            if text[end] == '"' and prefix.endswith("R") and prefix[:-1] in _LITERAL_PREFIXES | {""}:
                return _raw_string_end(text, end)
            if prefix in _LITERAL_PREFIXES:
                return _quoted_end(text, end)
        return end
    if match := _NUMBER.match(text, i):
        return match.end()
    if c in "\"'":
        return _quoted_end(text, i)
    for punctuator in _PUNCTUATORS:
        if text.startswith(punctuator, i):
            return i + len(punctuator)
    return i + 1


def _quoted_end(text: str, i: int) -> int:
    """The end of the string or character literal opened at text[i] (at the line's end if unclosed)."""
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


def _raw_string_end(text: str, i: int) -> int:
    """The end of the raw string literal whose quote is at text[i]: R"delim( ... )delim"."""
    open_paren = text.find("(", i)
    if open_paren < 0:
        return len(text)
    terminator = ")" + text[i + 1 : open_paren] + '"'
    close = text.find(terminator, open_paren)
    return len(text) if close < 0 else close + len(terminator)
