"""Two regenerations from the same inputs write the same bytes: with parallel jobs, from another working
directory, in checkouts at other paths; and generated/ holds no timestamps, paths or user names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_regen import assert_no_machine_details, kernel_count, ok, one_op_per_family

from tests.helpers import clear_generated

ROOT = Path(__file__).resolve().parents[2]


def regen_elsewhere(root: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tsgen regen` on `root`, started from the unrelated directory `cwd`."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TSGEN_ROOT=str(root), PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(root),
               TSGEN_GATE_CACHE=os.environ.get("TSGEN_GATE_CACHE", str(ROOT / "build" / "gate")))  # fmt: skip
    return subprocess.run([sys.executable, "-m", "tensorsmith_forge.generator", "regen", "--no-build", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


def test_a_parallel_regeneration_elsewhere_reproduces_the_committed_tree(pristine_checkout: Path, tmp_path: Path, tsgen,
                                                                         hash_tree) -> None:  # fmt: skip
    """The committed tree came from one regeneration; this is another, from scratch, with three jobs, in a
    checkout at another path and started from an unrelated working directory, of one op per family.
    (test_regen's from-scratch test does the same with one job.)"""
    root = one_op_per_family(pristine_checkout, tmp_path / "another checkout" / "repo", tsgen)
    committed = hash_tree(root / "generated")
    clear_generated(root / "generated")  # authored bodies come back from their transcripts
    n = kernel_count(root)
    out = ok(regen_elsewhere(root, tmp_path / "elsewhere", "--force", "--jobs", "3"))
    assert f"{n} of {n} kernels to regenerate (0 up to date)" in out and f"{n} accepted, 0 rejected" in out
    assert hash_tree(root / "generated") == committed
    assert_no_machine_details(root / "generated", root, tmp_path)
