"""The Claude proposer end to end, offline: `tsgen regen --proposer claude` in a subprocess, the real
`anthropic` SDK, real HTTP to a scripted Messages API on 127.0.0.1, and the real gate.

Each test asserts what the loop did, the feedback it sent, and the provenance it recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tensorsmith_forge.generator.agent.transcript import accepted_body
from tensorsmith_forge.generator.hashing import sha256_text
from tests.agent.conftest import FAKE_KEY, FIRST_ONLY, GOOD, NO_COMPILE, WRONG
from tests.agent.fake_api import Answer, HttpError, Stall, StreamError, Usage, cpp
from tests.helpers import run_tsgen, tree_hashes

PRICE = {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30}  # the test model table


def manifest(root: Path) -> dict:
    return json.loads((root / "generated" / "MANIFEST.json").read_text(encoding="utf-8"))["outputs"]


def last_user_message(request) -> dict:
    return request.body["messages"][-1]


def text_of(message: dict) -> str:
    parts = []
    for block in message["content"]:
        parts.append(block.get("text") or (block.get("content") if isinstance(block.get("content"), str) else ""))
    return "\n".join(parts)


def assert_no_secret(root: Path, *outputs: str) -> None:
    for path in [*(root / "generated").rglob("*"), *(root / "build").rglob("*")]:
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
    for text in outputs:
        assert FAKE_KEY not in text


def test_compile_error_then_wrong_result_then_accepted(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script(
        "twice",
        cpp(NO_COMPILE),
        Answer(text="Fixed the typo.", tool_input={"body": WRONG}),  # through the submit tool this time
        Answer(thinking="x + x, not x * x", text=f"```cpp\n{GOOD['twice']}```", usage=Usage(input=50, cache_read=1100, output=200)),
    )
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "twice.cpu: accepted (claude, attempt 3" in result.stdout

    requests = fake_api.requests_for("twice")
    assert len(requests) == 3
    first = requests[0].body
    assert first["model"] == "claude-test-1"
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}  # the stable prefix is cached
    assert "kernel body of `twice`" in first["system"][0]["text"] and "np.add(x, x)" in first["system"][0]["text"]
    assert first["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][0]["name"] == "submit_kernel"
    for forbidden in ("tool_choice", "temperature", "top_p", "top_k"):  # refused by current models
        assert forbidden not in first

    # Attempt 1 failed to compile: the feedback names the stage and the body's own line.
    feedback = text_of(last_user_message(requests[1]))
    assert "rejected at the `compile` stage" in feedback
    assert "body line 5:" in feedback and "was not declared" in feedback

    # Attempt 2 came through the tool: its feedback is a tool_result paired with the call, marked as an error,
    # and it names the differential stage; attempt 1's source is replaced by a summary.
    final = requests[2].body["messages"]
    result_block = final[-1]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["is_error"] is True
    assert final[-2]["content"][-1]["type"] == "tool_use" and result_block["tool_use_id"] == final[-2]["content"][-1]["id"]
    assert "rejected at the `differential` stage" in result_block["content"]
    assert "wrong values" in result_block["content"]
    assert len(final[1]["content"]) == 1 and "```" not in final[1]["content"][0]["text"]  # no source, a summary
    assert "Attempt 1: a 6-line body, rejected at `compile`" in final[1]["content"][0]["text"]

    # Provenance: proposer, model, attempts, tokens and the cost priced from the model table.
    record = manifest(agent_checkout)["cpu/twice.cpp"]
    tokens = {"input": 1200 + 1200 + 50, "cache_write": 0, "cache_read": 1100, "output": 300 + 300 + 200}
    cost = sum(tokens[k] * PRICE[k] for k in tokens) / 1e6
    assert record["proposer"] == "claude" and record["model"] == "claude-test-1" and record["attempts"] == 3
    assert record["tokens"] == tokens
    assert record["cost_usd"] == pytest.approx(cost, abs=1e-6)
    assert record["transcript"] == "transcripts/twice.cpu.jsonl"
    assert record["body_sha256"] == sha256_text(GOOD["twice"])
    kernel = (agent_checkout / "generated" / "cpu" / "twice.cpp").read_text(encoding="utf-8")
    assert "// --- kernel body (proposer: claude) ---" in kernel and "ts::ops::add(x, x)" in kernel

    # The transcript holds the whole story, and the accepted body can be read back from it byte for byte.
    transcript = (agent_checkout / "generated" / record["transcript"]).read_text(encoding="utf-8")
    events = [json.loads(line) for line in transcript.splitlines()]
    assert [e["event"] for e in events if e["event"] in ("verdict", "end")] == ["verdict", "verdict", "verdict", "end"]
    assert [e.get("stage") for e in events if e["event"] == "verdict"] == ["compile", "differential", "all"]
    body, totals = accepted_body(transcript)
    assert body == GOOD["twice"] and totals["attempts"] == 3 and totals["tokens"] == tokens
    assert all("signature" not in block for e in events if e["event"] == "reply" for block in e["content"])
    assert_no_secret(agent_checkout, result.stdout, result.stderr)

    # `tsgen ops` shows who wrote it, with model, attempts and cost.
    ops = run_tsgen(agent_checkout, "ops")
    line = next(line for line in ops.stdout.splitlines() if line.startswith("twice "))
    assert f"claude (claude-test-1, 3 attempts, ${cost:.4f})" in line

    # Nothing changed, so a second run asks nothing.
    again = claude("--ops", "twice")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_api.requests_for("twice")) == 3

    # Replay: the body is re-validated from the transcript with no network and no key; nothing changes.
    before = tree_hashes(agent_checkout / "generated")
    replay = run_tsgen(agent_checkout, "regen", "--proposer", "replay", "--no-build")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "cpu/twice.cpp: accepted (claude" in replay.stdout  # beside the outside authors' bodies it replays too
    assert tree_hashes(agent_checkout / "generated") == before


def test_a_cheating_kernel_is_rejected_and_the_same_failure_twice_stops(claude, fake_api, agent_checkout: Path) -> None:
    before = tree_hashes(agent_checkout / "generated")
    fake_api.script("twice", cpp(FIRST_ONLY), cpp(FIRST_ONLY), cpp(GOOD["twice"]))
    result = claude("--ops", "twice")
    assert result.returncode == 1
    assert "the same failure twice in a row (differential)" in result.stdout
    requests = fake_api.requests_for("twice")
    assert len(requests) == 2  # stopped before paying for a third answer
    feedback = text_of(last_user_message(requests[1]))
    assert "rejected at the `differential` stage" in feedback
    assert tree_hashes(agent_checkout / "generated") == before  # the op never had a kernel: nothing written
    log = agent_checkout / "build" / "agent" / "transcripts" / "twice.cpu.jsonl"
    end = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    assert end["event"] == "end" and end["status"] == "gave up" and end["attempts"] == 2


def test_rate_limits_overloads_and_a_stream_error_are_retried(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script("twice", HttpError(429, "rate_limit_error"), HttpError(529, "overloaded_error"), StreamError(),
                    cpp(GOOD["twice"]))  # fmt: skip
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    requests = fake_api.requests_for("twice")
    assert len(requests) == 4
    assert [r.headers.get("x-stainless-retry-count") for r in requests[:3]] == ["0", "1", "2"]  # the SDK's own retries
    assert requests[3].headers.get("x-stainless-retry-count") == "0"  # ours: the stream broke, a new request
    assert "overloaded_error" in result.stdout and "asking again in" in result.stdout
    record = manifest(agent_checkout)["cpu/twice.cpp"]
    assert record["attempts"] == 1  # a broken stream is not an answer
    # What the broken stream reported (its message_start: 1200 input, 1 output) is paid for, beside the answer.
    assert record["tokens"]["input"] == 1200 + 1200 and record["tokens"]["output"] == 1 + 300
    transcript = (agent_checkout / "generated" / record["transcript"]).read_text(encoding="utf-8")
    faults = [e for e in map(json.loads, transcript.splitlines()) if e["event"] == "stream_fault"]
    assert len(faults) == 1 and "overloaded_error" in faults[0]["error"] and faults[0]["usage"]["input"] == 1200


def test_a_request_that_times_out_gives_up_cleanly(claude, fake_api, agent_checkout: Path) -> None:
    before = tree_hashes(agent_checkout / "generated")
    fake_api.script("twice", *[Stall(3.0)] * 9)
    result = claude("--ops", "twice", timeout=0.5, sdk_retries=1)
    assert result.returncode == 1
    assert "API error: APITimeoutError" in result.stdout
    # Before the headers the SDK retries (once here); a failure it gave up on is not sent again by the loop.
    assert len(fake_api.requests_for("twice")) == 2
    assert tree_hashes(agent_checkout / "generated") == before
    assert "Traceback" not in result.stderr


def test_malformed_tool_input_gets_feedback(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script("twice", Answer(tool_input={"code": 42}), Answer(tool_input={"body": GOOD["twice"]}))
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    second = fake_api.requests_for("twice")[1]
    block = last_user_message(second)["content"][0]
    assert block["type"] == "tool_result" and block["is_error"] is True
    assert "malformed submit_kernel input" in block["content"] and "{'code': 42}" in block["content"]
    assert manifest(agent_checkout)["cpu/twice.cpp"]["attempts"] == 2


def test_a_refusal_stops_the_op(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script("twice", Answer(text="I can't help with that.", stop_reason="refusal"))
    result = claude("--ops", "twice")
    assert result.returncode == 1
    assert "the model refused" in result.stdout
    assert len(fake_api.requests_for("twice")) == 1
    assert "cpu/twice.cpp" not in manifest(agent_checkout)


def test_max_tokens_is_retried_once_with_a_larger_budget(claude, fake_api, agent_checkout: Path) -> None:
    fake_api.script("twice", Answer(text="```cpp\nchar* out = da", stop_reason="max_tokens"), cpp(GOOD["twice"]))
    result = claude("--ops", "twice")
    assert result.returncode == 0, result.stdout + result.stderr
    requests = fake_api.requests_for("twice")
    assert [r.body["max_tokens"] for r in requests] == [2000, 8000]
    assert requests[0].body["messages"] == requests[1].body["messages"]  # the same question, more room
    record = manifest(agent_checkout)["cpu/twice.cpp"]
    assert record["attempts"] == 1 and record["tokens"]["output"] == 600  # both answers are paid for


def test_without_a_key_it_fails_in_one_line_and_changes_nothing(agent_checkout: Path, tmp_path: Path) -> None:
    from tests.agent.conftest import agent_env

    before = tree_hashes(agent_checkout)
    result = run_tsgen(agent_checkout, "regen", "--proposer", "claude", "--no-build", env=agent_env(agent_checkout, None, tmp_path, key=None))
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "ANTHROPIC_API_KEY" in result.stderr
    assert tree_hashes(agent_checkout) == before
