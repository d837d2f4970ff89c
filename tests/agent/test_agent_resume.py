"""A regen killed with SIGKILL in the middle of a multi-op Claude run resumes: accepted ops are not
asked for again, none is lost, and generated/ never holds a half-written file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.agent.conftest import GOOD, agent_env
from tests.agent.fake_api import Stall, cpp
from tests.helpers import run_tsgen, tree_hashes


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_kill_9_in_the_middle_then_resume(agent_checkout: Path, fake_api, tmp_path: Path) -> None:
    generated = agent_checkout / "generated"
    before = tree_hashes(generated)
    fake_api.script("twice", cpp(GOOD["twice"]))
    fake_api.script("thrice", Stall(300))  # in flight when the run is killed
    env = agent_env(agent_checkout, fake_api, tmp_path, timeout=600)
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "regen", "--proposer", "claude", "--device", "cpu", "--no-build", "--jobs", "2"]
    run = subprocess.Popen(command, cwd=agent_checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)  # fmt: skip
    try:
        accepted = agent_checkout / "build" / "agent" / "accepted"
        wait_for(lambda: accepted.is_dir() and any(accepted.glob("*.json")), 300, "twice to be accepted")
        wait_for(lambda: fake_api.requests_for("thrice"), 60, "the request for thrice")
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()

    # The kill left the old tree, whole: no staging tree, no temporary file, nothing changed.
    assert tree_hashes(generated) == before
    assert not (agent_checkout / "generated.new").exists() and not (agent_checkout / "generated.old").exists()

    fake_api.script("thrice", cpp(GOOD["thrice"]))
    rerun = run_tsgen(agent_checkout, "regen", "--proposer", "claude", "--device", "cpu", "--no-build", "--jobs", "2", env=env)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "twice.cpu: cached body from an earlier run" in rerun.stdout
    assert len(fake_api.requests_for("twice")) == 1  # not asked again
    assert len(fake_api.requests_for("thrice")) == 2
    manifest = (generated / "MANIFEST.json").read_text(encoding="utf-8")
    for op in ("twice", "thrice"):
        assert f'"cpu/{op}.cpp"' in manifest
        assert (generated / "transcripts" / f"{op}.cpu.jsonl").is_file()
    assert not any(p.name.startswith(".") for p in generated.rglob("*"))
