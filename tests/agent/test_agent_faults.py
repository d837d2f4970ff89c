"""`tsgen regen --proposer claude` survives a broken stream: the op gives up with the reason, no traceback,
and what the other ops accepted in the same run is written to generated/. A stream that broke is not an
attempt, and the board and the manifest count attempts alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.agent.conftest import GOOD
from tests.agent.fake_api import (
    Answer,
    Drop,
    Empty,
    Malformed,
    NoStopReason,
    StallInStream,
    cpp,
)
from tests.agent.test_agent_http import assert_no_secret, manifest


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        # httpx's own error, or the SDK's wrapper of it (anthropic 2.17 wraps errors raised while a stream is read)
        pytest.param(Drop(), r"the stream broke \((RemoteProtocolError|APIConnectionError)", id="dropped"),
        pytest.param(StallInStream(30.0), r"the stream stalled \((ReadTimeout|APITimeoutError)", id="stalled"),
        pytest.param(Malformed(), r"a malformed event in the stream \(JSONDecodeError", id="malformed"),
        pytest.param(Empty(), re.escape("the stream ended without a message"), id="empty"),
    ],
)
def test_a_broken_stream_costs_one_op_and_nothing_else(claude, fake_api, agent_checkout: Path, fault: object, reason: str) -> None:
    fake_api.script("twice", *[fault] * 9)
    fake_api.script("thrice", cpp(GOOD["thrice"]))
    result = claude("--jobs", "2", timeout=1.0)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr == ""
    gave_up = next(line for line in result.stdout.splitlines() if line.startswith("rejected twice.cpu:"))
    assert "(claude) gave up after 0 attempt(s)" in gave_up and re.search(f"API error: {reason}", gave_up)
    assert len(fake_api.requests_for("twice")) == 3  # conftest: stream_retries = 2
    outputs = manifest(agent_checkout)
    assert "cpu/thrice.cpp" in outputs and "cpu/twice.cpp" not in outputs
    assert (agent_checkout / "generated" / "cpu" / "thrice.cpp").is_file()
    assert_no_secret(agent_checkout, result.stdout, result.stderr)


def test_a_stream_without_a_stop_reason_is_asked_again_not_counted(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script("twice", NoStopReason(cpp(GOOD["twice"])), cpp(GOOD["twice"]))
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(fake_api.requests_for("twice")) == 2
    assert manifest(agent_checkout)["cpu/twice.cpp"]["attempts"] == 1


def test_the_board_and_the_manifest_count_attempts_alike(claude, fake_api, agent_checkout: Path) -> None:
    # The first answer holds no body: it is attempt 1 though the gate never sees it.
    fake_api.script("twice", Answer(text="I would write a loop."), cpp(GOOD["twice"]))
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    assert manifest(agent_checkout)["cpu/twice.cpp"]["attempts"] == 2
    board = result.stdout[result.stdout.index("twice.cpu: attempt 2: asking") :]
    assert "attempt 1" not in board  # the gate's stages (when not cached) and the verdict say attempt 2 too
    assert "twice.cpu: accepted (claude, attempt 2," in board
