"""Shared test configuration: the repository root, and copies of the checkout for CLI tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import ml_dtypes  # noqa: F401 - tests name ml_dtypes' types to numpy by string ("bfloat16"), which needs them registered; tensorsmith imports it only on first use
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the generator and validators packages, when tests run from a checkout
    sys.path.insert(0, str(ROOT))

from tests.helpers import copy_checkout, run_tsgen, tree_hashes  # noqa: E402 - needs ROOT on sys.path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: compiles every kernel (tens of seconds); not skipped by default")
    config.addinivalue_line("markers", "live: calls the real Anthropic API; skipped (with the reason) without ANTHROPIC_API_KEY")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


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
    copy_check = run_tsgen(root, "regen", "--check")
    if copy_check.returncode != 0:
        # A copy of an up-to-date checkout that is not up to date lacks a part the generator hashes (CHECKOUT_PARTS):
        # say so now rather than re-judge the whole catalog in every test run.
        assert run_tsgen(ROOT, "regen", "--check").returncode != 0, (
            "the checkout is up to date but its copy is not: tests/helpers.py CHECKOUT_PARTS misses a part the "
            "generator hashes\n" + copy_check.stdout[-2000:])
        result = run_tsgen(root, "regen", "--no-build", timeout=3600)  # the whole catalog on a cold gate cache
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
