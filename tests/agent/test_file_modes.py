"""Files tsgen writes get the mode the umask gives, as any other program's would (mkstemp's 0600 made every
rewritten file in generated/ and build/ private)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.conftest import GOOD, agent_env
from tests.agent.fake_api import cpp


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_files_get_the_mode_the_umask_gives(agent_checkout: Path, fake_api, tmp_path: Path, umask: int, mode: int) -> None:
    fake_api.script("twice", cpp(GOOD["twice"]))
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "regen", "--proposer", "claude", "--device", "cpu", "--no-build", "--ops", "twice"]
    result = subprocess.run(command, cwd=agent_checkout, env=agent_env(agent_checkout, fake_api, tmp_path), capture_output=True,
                            text=True, timeout=600, check=False, preexec_fn=lambda: os.umask(umask))  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    written = [agent_checkout / "generated" / name for name in ("cpu/twice.cpp", "MANIFEST.json", "transcripts/twice.cpu.jsonl")]
    written += list((agent_checkout / "build" / "agent").rglob("*.json*"))  # the accepted cache and the live transcript
    assert len(written) == 5
    assert {str(p.relative_to(agent_checkout)): oct(p.stat().st_mode & 0o777) for p in written} == {
        str(p.relative_to(agent_checkout)): oct(mode) for p in written
    }
