"""One run against the real Anthropic API: skipped, with the reason printed, without a key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import run_tsgen, tsgen_env

pytestmark = pytest.mark.live


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY is not set: the live API test needs a key")
def test_claude_writes_an_accepted_kernel(agent_checkout: Path) -> None:
    env = tsgen_env(agent_checkout, ANTHROPIC_API_KEY=os.environ["ANTHROPIC_API_KEY"])
    result = run_tsgen(agent_checkout, "regen", "--proposer", "claude", "--device", "cpu", "--ops", "twice", "--max-attempts", "3",
                       "--budget-usd", "1", "--no-build", env=env)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads((agent_checkout / "generated" / "MANIFEST.json").read_text())["outputs"]["cpu/twice.cpp"]
    assert record["proposer"] == "claude" and 1 <= record["attempts"] <= 3
    assert record["tokens"]["output"] > 0 and record["cost_usd"] > 0
    assert os.environ["ANTHROPIC_API_KEY"] not in (agent_checkout / "generated" / record["transcript"]).read_text()
