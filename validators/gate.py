"""One place where a candidate is judged.

A Candidate is a fully rendered translation unit for one op on one device.
Gate.judge runs the checks in order and returns the first failure, or an
acceptance. Today the checks are the compile check; the differential,
anti-cheat and sanitizer stages of the full gate are added to `checks`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Candidate:
    op: str
    device: str
    source: str  # the whole translation unit
    proposer: str


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    stage: str  # the check that decided ("compile", ...)
    message: str  # a few lines a proposer or a person can act on

    def summary(self) -> str:
        state = "accepted" if self.accepted else "rejected"
        return f"{state} at {self.stage}: {self.message}" if self.message else f"{state} ({self.stage})"


Check = Callable[[Candidate], Verdict]


class Gate:
    def __init__(self, checks: Sequence[tuple[str, Check]]) -> None:
        self.checks = list(checks)

    @property
    def stages(self) -> list[str]:
        return [name for name, _ in self.checks]

    def judge(self, candidate: Candidate) -> Verdict:
        last = Verdict(False, "none", "the gate has no checks")
        for _name, check in self.checks:
            last = check(candidate)
            if not last.accepted:
                return last
        return last


class CompileCheck:
    """Compiles the translation unit as the build would (all templates instantiated), in a scratch dir."""

    def __init__(self, include_dir: Path, compiler: str | None = None, timeout_s: float = 180.0) -> None:
        self.include_dir = include_dir
        self.compiler = compiler or os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        self.timeout_s = timeout_s

    def __call__(self, candidate: Candidate) -> Verdict:
        if not self.compiler:
            return Verdict(False, "compile", "no C++ compiler found (set CXX or install g++)")
        with tempfile.TemporaryDirectory(prefix="tsgen-compile-") as scratch:
            source = Path(scratch) / f"{candidate.op}_{candidate.device}.cpp"
            source.write_text(candidate.source, encoding="utf-8")
            command = [self.compiler, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror=return-type",
                       f"-I{self.include_dir}", str(source)]  # fmt: skip
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout_s, cwd=scratch,
                                        env=_clean_env())  # fmt: skip
            except subprocess.TimeoutExpired:
                return Verdict(False, "compile", f"the compiler did not finish within {self.timeout_s:.0f} s")
        if result.returncode != 0:
            return Verdict(False, "compile", _first_errors(result.stderr, str(source)))
        return Verdict(True, "compile", "")


def _clean_env() -> dict[str, str]:
    """The compiler needs PATH and little else; never pass secrets such as API keys along."""
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "CPATH", "LIBRARY_PATH")
    return {k: v for k, v in os.environ.items() if k in keep}


def _first_errors(stderr: str, filename: str, limit: int = 12) -> str:
    lines = [line.replace(filename, "<candidate>") for line in stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if re.search(r"\berror\b", line)]
    start = errors[0] if errors else 0
    return "\n".join(lines[start : start + limit])
