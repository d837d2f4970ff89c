"""`tsgen regen --proposer claude --batch` against a local fake of the Message Batches endpoints, reached by
the real SDK over HTTP: rounds of batches, the batch price, results that errored or expired inside a batch, a
batch canceled after the wait limit, and a run killed mid-poll that resumes without paying again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tensorsmith_forge.generator.agent.config import Price, Usage, load_config
from tests.agent.conftest import GOOD, TEST_SPECS, WRONG, agent_env
from tests.agent.fake_api import BatchErrored, Expired, FakeMessagesAPI, Usage as FakeUsage, cpp
from tests.agent.test_agent_resume import wait_for
from tests.helpers import run_tsgen

BATCHES = "/v1/messages/batches"


def transcript(checkout: Path, op: str) -> list[dict]:
    path = checkout / "generated" / "transcripts" / f"{op}.cpu.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def manifest(checkout: Path) -> dict:
    return json.loads((checkout / "generated" / "MANIFEST.json").read_text(encoding="utf-8"))["outputs"]


def created(api: FakeMessagesAPI) -> list[list[str]]:
    """The ops of each batch the fake created, in order."""
    with api.lock:
        batched = [r for r in api.requests if r.batched]
    sizes = [len(b.custom_ids) for b in api.batches.values()]
    ops, start = [], 0
    for size in sizes:
        ops.append(sorted(r.op for r in batched[start:start + size]))
        start += size
    return ops


def batch_price(checkout_env: dict[str, str]) -> Price:
    config = load_config(Path(checkout_env["TSGEN_AGENT_CONFIG"]))
    return config.price(config.default_model, batch=True)


def test_first_attempts_go_in_one_batch_and_follow_ups_in_the_next(claude, agent_checkout: Path, fake_api, tmp_path: Path) -> None:
    fake_api.script("twice", cpp(GOOD["twice"]))
    fake_api.script("thrice", cpp(WRONG), cpp(GOOD["thrice"]))
    result = claude("--batch", "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr

    assert created(fake_api) == [["thrice", "twice"], ["thrice"]]
    assert all(r.batched for r in fake_api.requests), "every question went through a batch"
    assert fake_api.batch_calls_of("POST", "/cancel") == []

    records = manifest(agent_checkout)
    env = agent_env(agent_checkout, fake_api, tmp_path)
    per_answer = Usage.from_api({"input_tokens": FakeUsage().input, "output_tokens": FakeUsage().output}).cost(batch_price(env))
    assert records["cpu/twice.cpp"]["proposer"] == "claude"
    assert records["cpu/twice.cpp"]["cost_usd"] == pytest.approx(per_answer, abs=1e-6)
    assert records["cpu/thrice.cpp"]["attempts"] == 2
    assert records["cpu/thrice.cpp"]["cost_usd"] == pytest.approx(2 * per_answer, abs=1e-6)
    replies = [e for e in transcript(agent_checkout, "thrice") if e["event"] == "reply"]
    assert [e["batch"] for e in replies] == list(fake_api.batches)  # each answer names the batch that gave it
    assert "msgbatch_fake0001" in result.stdout and "ended: 2 succeeded" in result.stdout


def test_follow_ups_can_be_asked_interactively(claude, agent_checkout: Path, fake_api) -> None:
    fake_api.script("twice", cpp(GOOD["twice"]))
    fake_api.script("thrice", cpp(WRONG), cpp(GOOD["thrice"]))
    result = claude("--batch", "--batch-followups", "interactive", "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert created(fake_api) == [["thrice", "twice"]]
    asked = fake_api.requests_for("thrice")
    assert [r.batched for r in asked] == [True, False]


def test_errored_and_expired_requests_are_asked_again_in_the_next_round(claude, agent_checkout: Path, fake_api) -> None:
    fake_api.script("twice", BatchErrored("overloaded_error"), cpp(GOOD["twice"]))
    fake_api.script("thrice", Expired(), cpp(GOOD["thrice"]))
    result = claude("--batch", "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert created(fake_api) == [["thrice", "twice"], ["thrice", "twice"]]
    faults = {op: [e["error"] for e in transcript(agent_checkout, op) if e["event"] == "stream_fault"] for op in ("twice", "thrice")}
    assert "errored in batch msgbatch_fake0001: overloaded_error" in faults["twice"][0]
    assert "expired in batch msgbatch_fake0001" in faults["thrice"][0]
    assert manifest(agent_checkout)["cpu/twice.cpp"]["attempts"] == 1  # a request that failed is no attempt


def test_a_request_the_api_refuses_in_a_batch_ends_that_op_only(claude, agent_checkout: Path, fake_api) -> None:
    fake_api.script("twice", cpp(GOOD["twice"]))
    fake_api.script("thrice", BatchErrored("invalid_request_error"))
    result = claude("--batch", "--jobs", "2")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "thrice.cpu: gave up" in result.stdout and "invalid_request_error" in result.stdout
    records = manifest(agent_checkout)
    assert "cpu/twice.cpp" in records and "cpu/thrice.cpp" not in records
    assert len(fake_api.requests_for("thrice")) == 1


def test_a_batch_still_in_progress_after_the_wait_limit_is_canceled(claude, agent_checkout: Path, fake_api) -> None:
    fake_api.hold_batches = True  # never ends by itself
    fake_api.script("twice", cpp(GOOD["twice"]))
    fake_api.script("thrice", cpp(GOOD["thrice"]))
    result = claude("--batch", "--jobs", "2", batch_wait=0.5)
    assert result.returncode == 1, result.stdout + result.stderr
    assert fake_api.batch_calls_of("POST", "/cancel") == [f"{BATCHES}/msgbatch_fake0001/cancel"], result.stdout
    for op in ("twice", "thrice"):
        assert f"{op}.cpu: gave up" in result.stdout
    assert "API error: batch msgbatch_fake0001 was canceled before the request was processed" in result.stdout
    assert not {"cpu/twice.cpp", "cpu/thrice.cpp"} & manifest(agent_checkout).keys()


def test_the_budget_refuses_a_round_it_cannot_cover_without_waiting(claude, agent_checkout: Path, fake_api) -> None:
    result = claude("--batch", "--jobs", "2", "--budget-usd", "0.0001")
    assert result.returncode == 1, result.stdout + result.stderr
    for op in ("twice", "thrice"):
        assert f"{op}.cpu: gave up" in result.stdout
    assert "cannot cover another request" in result.stdout
    assert fake_api.batch_calls == []


def test_batch_needs_the_claude_proposer(agent_checkout: Path, fake_api, tmp_path: Path) -> None:
    env = agent_env(agent_checkout, fake_api, tmp_path)
    result = run_tsgen(agent_checkout, "regen", "--batch", "--no-build", env=env)
    assert result.returncode != 0
    assert "--batch sends the claude proposer's questions as Message Batches: add --proposer claude" in result.stderr


DOZEN = [f"twice_{i:02d}" for i in range(10)] + ["twice", "thrice"]


def test_a_dozen_ops_killed_mid_poll_resume_pay_once_and_land_the_interactive_tree(agent_checkout: Path, fake_api, tmp_path: Path) -> None:
    for name in DOZEN[:10]:
        (agent_checkout / "specs" / f"{name}.yaml").write_text(TEST_SPECS["twice"].replace("twice(", f"{name}("), encoding="utf-8")
    interactive_checkout = tmp_path / "interactive"
    shutil.copytree(agent_checkout, interactive_checkout)
    bodies = {name: GOOD["thrice"] if name == "thrice" else GOOD["twice"] for name in DOZEN}

    def script(api: FakeMessagesAPI) -> None:
        for name in DOZEN:
            api.script(name, *((cpp(WRONG),) if name == "twice_03" else ()), cpp(bodies[name]))

    script(fake_api)
    fake_api.hold_batches = True
    env = agent_env(agent_checkout, fake_api, tmp_path)
    command = [sys.executable, "-m", "tensorsmith_forge.generator", "regen", "--proposer", "claude", "--batch", "--device", "cpu",
               "--no-build", "--jobs", "2"]  # fmt: skip
    run = subprocess.Popen(command, cwd=agent_checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: fake_api.batch_calls_of("GET", "msgbatch_fake0001"), 120, "the run to poll its first batch")
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    assert [len(b.custom_ids) for b in fake_api.batches.values()] == [12]

    fake_api.hold_batches = False
    rerun = run_tsgen(agent_checkout, "regen", "--proposer", "claude", "--batch", "--device", "cpu", "--no-build", "--jobs", "2", env=env)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "taken up again from an earlier run (12 of this round's questions)" in rerun.stdout
    # Paid once: the first round's batch is the killed run's, and only the rejected op asked again.
    assert created(fake_api) == [sorted(DOZEN), ["twice_03"]]
    assert {op: len(fake_api.requests_for(op)) for op in DOZEN} == {op: 2 if op == "twice_03" else 1 for op in DOZEN}

    with FakeMessagesAPI() as interactive_api:
        script(interactive_api)
        (tmp_path / "i").mkdir()
        interactive_env = agent_env(interactive_checkout, interactive_api, tmp_path / "i")
        result = run_tsgen(interactive_checkout, "regen", "--proposer", "claude", "--device", "cpu", "--no-build", "--jobs", "2",
                           env=interactive_env)  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert interactive_api.batch_calls == []

    def tree(root: Path) -> dict[str, bytes]:
        """generated/ without what depends on how the answers came: costs, times, transcripts."""
        generated = root / "generated"
        return {str(p.relative_to(generated)): p.read_bytes() for p in sorted(generated.rglob("*"))
                if p.is_file() and p.name != "MANIFEST.json" and "transcripts" not in p.parts}  # fmt: skip

    assert tree(agent_checkout) == tree(interactive_checkout)
    batch_records, interactive_records = manifest(agent_checkout), manifest(interactive_checkout)
    assert batch_records.keys() == interactive_records.keys()
    for name, record in batch_records.items():
        other = interactive_records[name]
        assert (record["sha256"], record.get("proposer"), record.get("attempts")) == (
            other["sha256"], other.get("proposer"), other.get("attempts")), name
