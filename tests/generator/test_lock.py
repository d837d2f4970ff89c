"""One writer of generated/ at a time (generator/lock.py): a second `tsgen regen` or `tsgen submit` while one
runs stops at once and leaves generated/ as it was; a check still runs; a holder that dies holds nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tensorsmith_forge.generator.lock import writing_generated

from tests.helpers import run_tsgen, tree_hashes, tsgen_env


def test_a_second_writer_stops_at_once_and_a_check_still_runs(checkout: Path, tmp_path: Path) -> None:
    before = tree_hashes(checkout / "generated")
    body = tmp_path / "body.cpp"
    body.write_text("return x1 + x2;\n")
    with writing_generated(checkout, "a test holding the lock"):
        regen = run_tsgen(checkout, "regen", "--no-build", "--force", "--ops", "add", timeout=120)
        submit = run_tsgen(checkout, "submit", "add", str(body), "--author", "a test", "--no-build", timeout=120)
        check = run_tsgen(checkout, "regen", "--check", timeout=300)
    for run, command in ((regen, "tsgen regen"), (submit, "tsgen submit add")):
        assert run.returncode == 2, run.stdout + run.stderr
        assert f"{command}: another run is writing generated/ in {checkout}" in run.stderr, run.stderr
    assert check.returncode == 0, check.stdout + check.stderr
    assert tree_hashes(checkout / "generated") == before


def test_a_killed_holder_holds_nothing(checkout: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from tensorsmith_forge.generator.lock import writing_generated
            with writing_generated(Path({str(checkout)!r}), "a run about to be killed"):
                print("held", flush=True)
                time.sleep(600)
        """)],
        stdout=subprocess.PIPE, text=True, env=tsgen_env(checkout),
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        blocked = run_tsgen(checkout, "regen", "--no-build", "--ops", "add", timeout=120)
        assert blocked.returncode == 2 and "another run is writing generated/" in blocked.stderr, blocked.stderr
    finally:
        holder.kill()
        holder.wait()
    after = run_tsgen(checkout, "regen", "--no-build", "--ops", "add", timeout=600)
    assert after.returncode == 0, after.stdout + after.stderr
