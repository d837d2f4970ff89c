"""What a transcript keeps of an answer: all of it, except that a huge one is cut to its length, its hash,
a preview and the body the gate judged, which replay still reads back."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.conftest import GOOD
from tests.agent.fake_api import Answer
from tests.agent.test_agent_http import manifest
from tests.helpers import run_tsgen


def test_a_huge_answer_is_cut_in_the_transcript(claude, fake_api, agent_checkout: Path) -> None:
    prose = "Let me think about this at length. " * 150_000  # about 5 MB
    fake_api.script("twice", Answer(text=f"{prose}\n\n```cpp\n{GOOD['twice']}```\n"))
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    path = agent_checkout / "generated" / manifest(agent_checkout)["cpu/twice.cpp"]["transcript"]
    assert path.stat().st_size < 100_000
    (reply,) = [e for e in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if e["event"] == "reply"]
    assert "content" not in reply and reply["cut"]["chars"] > len(prose) and len(reply["cut"]["sha256"]) == 64
    assert reply["body"] == GOOD["twice"]
    # The accepted body is still read back from the transcript and judged again.
    replay = run_tsgen(agent_checkout, "regen", "--proposer", "replay", "--ops", "twice", "--device", "cpu", "--no-build")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "[1/1] cpu/twice.cpp: accepted (claude" in replay.stdout
