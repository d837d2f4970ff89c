"""Helpers for tests that work on throwaway copies of the checkout through the CLI.

The CLI always runs as ``python -m generator`` in a subprocess with its working
directory and TSGEN_ROOT set to the copy, so it works on the copy's specs/,
templates/ and generated/. Nothing here builds the extension (every regen passes
--no-build) and nothing writes to the real checkout.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# What the generator reads and writes; the rest of the checkout (runtime sources, CMake,
# the built extension) plays no part in regeneration.
CHECKOUT_PARTS = ("specs", "catalog", "templates", "generator", "validators", "runtime/include", "runtime/src", "generated", ".clang-format",
                  "runtime/python/tensorsmith/_derivative_helpers.py")  # the helpers derivative formulas may call


def op_function(name: str):
    """The runtime's function for the catalog op `name`: tensorsmith's own (every public op is in the namespace),
    or for a private op (_gelu_tanh, which ts.gelu calls) tensorsmith._C's."""
    import tensorsmith as ts

    return getattr(ts._C if name.startswith("_") else ts, name)


def copy_checkout(source: Path, destination: Path) -> Path:
    for part in CHECKOUT_PARTS:
        if (source / part).is_file():  # the formatting style generation reads
            (destination / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / part, destination / part)
            continue
        shutil.copytree(source / part, destination / part, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    return destination


def tsgen_env(root: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment for the copy at `root`, without any Anthropic credentials of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    # The copies share the real checkout's gate cache: verdicts are keyed by content, so an unchanged
    # kernel is judged once per machine, not once per copy.
    env |= {"TSGEN_ROOT": str(root), "PYTHONDONTWRITEBYTECODE": "1",
            "TSGEN_GATE_CACHE": os.environ.get("TSGEN_GATE_CACHE", str(ROOT / "build" / "gate"))}  # fmt: skip
    return env | extra


def run_tsgen(root: Path, *args: str, cxx: str | None = None, timeout: float = 600,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = env or tsgen_env(root)
    if cxx is not None:
        env["CXX"] = cxx
    return subprocess.run(
        [sys.executable, "-m", "tensorsmith_forge.generator", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tree_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file under `directory` (bytecode caches aside), by relative path."""
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def clear_generated(generated: Path) -> None:
    """Removes everything generated/ holds but the transcripts: they are the only source of the bodies that an
    author wrote (a family without a template, Claude's), as specs/ and templates/ are of the rest."""
    for entry in generated.iterdir():
        if entry.name != "transcripts":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def drawn(paths: list[Path], count: int, seed: str) -> list[Path]:
    """`count` of `paths` drawn with `seed`, in order: the same in every xdist worker of a run (CI passes one fresh
    seed to all of them), another draw for another seed."""
    return sorted(sorted(paths, key=lambda p: hashlib.sha256(f"{seed}:{p.name}".encode()).hexdigest())[:count])


def once_per_session(tmp_path_factory: Any, name: str, compute: Callable[[Path], Any]) -> Any:
    """compute(directory)'s JSON-able result, computed once per test session: under pytest-xdist the first
    worker to ask computes it in the session's shared temporary directory while the others wait on a lock,
    then all read it (worksteal spreads a module's tests over the workers, so a module fixture would run on
    each). Without xdist, computed here and now."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return compute(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # this session's, shared by its workers
    result = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when compute raises
        if not result.exists():
            directory = shared / name
            directory.mkdir()
            result.write_text(json.dumps(compute(directory)))
    return json.loads(result.read_text())
