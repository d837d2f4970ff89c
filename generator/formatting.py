"""Formatting of generated text: clang-format for C++, ruff for Python stubs.

Both tools come from pinned wheels in the environment that runs tsgen (the `gen`
extra), never from the machine's PATH, and neither reads configuration it finds
on disk: clang-format gets the checkout's .clang-format by path and ruff runs
isolated with its options given here. So the same inputs format to the same
bytes in any directory, and `tsgen regen --check` stays stable.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from .errors import GeneratorError
from .hashing import sha256_text

STYLE_FILE = ".clang-format"
RUFF_OPTIONS = ("--line-length", "120", "--target-version", "py310")
CPP_SUFFIXES = (".cpp", ".cu", ".h")
PYTHON_SUFFIXES = (".py", ".pyi")


class Formatter:
    def __init__(self, root: Path) -> None:
        self.style = root / STYLE_FILE
        if not self.style.is_file():
            raise GeneratorError(f"{self.style} is missing: generated C++ is formatted with it")

    def format(self, name: str, text: str) -> str:
        """`text` formatted as the file `name` (relative to generated/); other kinds are returned as they are."""
        suffix = Path(name).suffix
        if suffix in CPP_SUFFIXES:
            return self._run([_clang_format(), f"--style=file:{self.style}", f"--assume-filename={Path(name).name}"], text)
        if suffix in PYTHON_SUFFIXES:
            return self._run([_ruff(), "format", "--isolated", *RUFF_OPTIONS, "--stdin-filename", Path(name).name, "-"], text)
        return text

    def fingerprint(self) -> str:
        """What the formatted bytes depend on besides the text: the style file and both tools' versions."""
        versions = [_version((_clang_format(), "--version")), _version((_ruff(), "--version"))]
        return sha256_text("\n".join([self.style.read_text(encoding="utf-8"), *versions]))

    @staticmethod
    def _run(command: list[str], text: str) -> str:
        result = subprocess.run(command, input=text, capture_output=True, text=True, encoding="utf-8", check=False)
        if result.returncode != 0:
            raise GeneratorError(f"{Path(command[0]).name} failed ({result.returncode}): {result.stderr.strip()[:2000]}")
        return result.stdout


@functools.cache
def _clang_format() -> str:
    try:
        import clang_format  # the PyPI wheel; its binary lives inside the package
    except ImportError:
        raise GeneratorError("clang-format is not installed here: pip install -e '.[gen]'") from None
    binary = Path(clang_format.__file__).parent / "data" / "bin" / "clang-format"
    if not binary.is_file():
        raise GeneratorError(f"the clang-format wheel has no binary at {binary}")
    return str(binary)


@functools.cache
def _ruff() -> str:
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        raise GeneratorError("ruff is not installed here: pip install -e '.[gen]'") from None
    return str(find_ruff_bin())


@functools.cache
def _version(command: tuple[str, ...]) -> str:
    result = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise GeneratorError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return result.stdout.strip()

