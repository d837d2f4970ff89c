"""Fixtures for the generator tests: throwaway copies of the checkout and a CLI runner.

The CLI always runs as ``python -m generator`` in a subprocess with its working
directory and TSGEN_ROOT set to the copy, so it imports the copy's generator and
works on the copy's specs/, templates/ and generated/. Nothing here builds the
extension (every regen passes --no-build) and nothing writes to the real checkout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What the generator reads and writes; the rest of the checkout (runtime sources, CMake,
# the built extension) plays no part in regeneration.
CHECKOUT_PARTS = ("specs", "templates", "generator", "validators", "runtime/include", "runtime/src", "generated", ".clang-format")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: compiles every kernel (tens of seconds); not skipped by default")


def copy_checkout(source: Path, destination: Path) -> Path:
    for part in CHECKOUT_PARTS:
        if (source / part).is_file():  # the formatting style generation reads
            (destination / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / part, destination / part)
            continue
        shutil.copytree(source / part, destination / part, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    return destination


def run_tsgen(root: Path, *args: str, cxx: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # The copies share the real checkout's gate cache: verdicts are keyed by content, so an unchanged
    # kernel is judged once per machine, not once per copy.
    env = dict(os.environ, TSGEN_ROOT=str(root), PYTHONDONTWRITEBYTECODE="1",
               TSGEN_GATE_CACHE=os.environ.get("TSGEN_GATE_CACHE", str(ROOT / "build" / "gate")))
    if cxx is not None:
        env["CXX"] = cxx
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
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


@pytest.fixture(scope="session")
def tsgen() -> Callable[..., subprocess.CompletedProcess[str]]:
    """run_tsgen(root, *args, cxx=None): the CLI in a subprocess on the checkout at `root`."""
    return run_tsgen


@pytest.fixture(scope="session")
def hash_tree() -> Callable[[Path], dict[str, str]]:
    return tree_hashes


@pytest.fixture(scope="session")
def copy_repo() -> Callable[[Path, Path], Path]:
    """copy_checkout(source, destination): copies the parts of a checkout the generator uses."""
    return copy_checkout


@pytest.fixture(scope="session")
def pristine_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout whose generated/ is up to date. Shared: never modify it, copy it
    (see `checkout`). When the real checkout is itself out of date (someone changed a runtime
    header or a spec without regenerating), the copy is regenerated once so that the tests that
    derive from it start from a clean state; test_check_passes_on_committed_tree reports the
    real checkout's state."""
    root = copy_checkout(ROOT, tmp_path_factory.mktemp("pristine") / "repo")
    if run_tsgen(root, "regen", "--check").returncode != 0:
        result = run_tsgen(root, "regen", "--no-build")
        assert result.returncode == 0, result.stdout + result.stderr
    check = run_tsgen(root, "regen", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    return root


@pytest.fixture
def checkout(pristine_checkout: Path, tmp_path: Path) -> Path:
    """A private, up-to-date copy of the checkout that a test may change at will."""
    destination = tmp_path / "repo"
    shutil.copytree(pristine_checkout, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination
