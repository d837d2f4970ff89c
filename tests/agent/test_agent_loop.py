"""The Claude proposer's logic with a fake client: reading answers, the conversation it sends,
stop conditions, the budget and the cache. No HTTP, no gate."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tensorsmith_forge.generator.agent.budget import Budget, worst_case
from tensorsmith_forge.generator.agent.client import ApiError, Reply
from tensorsmith_forge.generator.agent.config import Price, Usage, load_config
from tensorsmith_forge.generator.agent.conversation import Conversation, read_answer
from tensorsmith_forge.generator.agent.session import ClaudeProposer, Settings
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.generator.progress import Board
from tensorsmith_forge.generator.proposers import GaveUp, StoredProposer, Task
from tensorsmith_forge.generator.render import Renderer
from tensorsmith_forge.validators.gate import Verdict

ROOT = Path(__file__).resolve().parents[2]
BODY = "char* out = data[0];\n(void)out;\n"


def text(body: str) -> dict:
    return {"type": "text", "text": f"Here you go:\n```cpp\n{body}```\nDone."}


DEFAULT_USAGE = Usage(input=1000, output=100)


def reply(*content: dict, stop: str = "end_turn", usage: Usage = DEFAULT_USAGE) -> Reply:
    return Reply(list(content), stop, None, usage)


class FakeClient:
    def __init__(self, *replies: Reply | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[dict] = []

    def send(self, request: dict, max_retries: int) -> Reply:
        self.requests.append(request)
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def rejected(stage: str = "differential", message: str = "add[float32] case c01: wrong values") -> Verdict:
    return Verdict(False, stage, message)


@pytest.fixture
def make_proposer(tmp_path: Path):
    config = load_config()

    def make(client: FakeClient, max_attempts: int = 4, budget: Budget | None = None) -> ClaudeProposer:
        return ClaudeProposer(
            client=client, config=config, settings=Settings(config.default_model, max_attempts, 600.0),
            budget=budget or Budget(), renderer=Renderer(ROOT / "templates"), task_text=lambda task: f"TASK {task.spec.name}",
            stored=StoredProposer(tmp_path / "generated"), work_dir=tmp_path / "agent", toolchain="g++ test",
            board=Board(io.StringIO(), live=False),
        )  # fmt: skip

    return make


@pytest.fixture(scope="module")
def task() -> Task:
    return Task(load_catalog(ROOT).op("add"), "cpu", inputs_sha256="inputs-v1")


# ---- reading answers


def test_one_fenced_block_is_the_body() -> None:
    answer = read_answer([text("  int a = 1;  \n  int b = a;\n")])
    assert answer.body == "int a = 1;\nint b = a;\n" and answer.problem is None


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ([{"type": "text", "text": "no code here"}], "no fenced code block"),
        ([text("a;\n"), text("b;\n")], "2 fenced code blocks"),
        ([{"type": "tool_use", "id": "t1", "name": "submit_kernel", "input": {"source": "x"}}], "malformed submit_kernel input"),
        ([{"type": "tool_use", "id": "t1", "name": "run_shell", "input": {}}], "unknown tool run_shell"),
    ],
)
def test_answers_without_a_usable_body_say_why(content: list, problem: str) -> None:
    answer = read_answer(content)
    assert answer.body is None and problem in (answer.problem or "")


def test_a_submit_call_wins_over_prose_code() -> None:
    answer = read_answer([text("draft;\n"), {"type": "tool_use", "id": "t9", "name": "submit_kernel", "input": {"body": "final;\n"}}])
    assert answer.body == "final;\n" and answer.tool_use_ids == ("t9",)


# ---- the conversation sent


def test_older_answers_become_summaries_and_tool_calls_get_results() -> None:
    conversation = Conversation(Renderer(ROOT / "templates"), "m", "add", "cpu", "TASK")
    first = [text("int broken = ;\n")]
    conversation.add(first, read_answer(first), 1, "compile", "body line 1:14: error: expected expression")
    second = [{"type": "thinking", "thinking": "hmm", "signature": "s1"},
              {"type": "tool_use", "id": "t2", "name": "submit_kernel", "input": {"body": "x;\n"}, "caller": "direct"}]  # fmt: skip
    conversation.add(second, read_answer(second), 2, "differential", "wrong values")
    messages = conversation.request(100)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "int broken" not in str(messages[1]) and "Attempt 1: a 1-line body, rejected at `compile`" in messages[1]["content"][0]["text"]
    assert "expected expression" in messages[2]["content"][0]["text"]  # the old feedback stays
    assert messages[3]["content"][0] == {"type": "thinking", "thinking": "hmm", "signature": "s1"}  # echoed unmodified
    assert messages[3]["content"][1] == {"type": "tool_use", "id": "t2", "name": "submit_kernel", "input": {"body": "x;\n"}}
    assert messages[4]["content"][0]["type"] == "tool_result" and messages[4]["content"][0]["tool_use_id"] == "t2"


# ---- stop conditions


def test_accepted_on_the_second_attempt_records_totals(make_proposer, task: Task) -> None:
    client = FakeClient(reply(text("bad;\n")), reply(text(BODY), usage=Usage(input=10, cache_read=990, output=50)))
    proposer = make_proposer(client)
    session = proposer.start(task)
    first = session.propose(None)
    assert first.body == "bad;\n"
    second = session.propose(rejected())
    final = session.accepted(second, Verdict(True, "all", ""))
    price = proposer.price
    expected = Usage(1010, 0, 990, 150)
    assert final.details["attempts"] == 2 and final.details["tokens"] == expected.as_dict()
    assert final.details["cost_usd"] == pytest.approx(expected.cost(price), abs=1e-6)
    assert "wrong values" in client.requests[1]["messages"][-1]["content"][0]["text"]


def test_the_same_failure_twice_stops(make_proposer, task: Task) -> None:
    client = FakeClient(reply(text("a;\n")), reply(text("b;\n")), reply(text(BODY)))
    session = make_proposer(client).start(task)
    session.propose(None)
    session.propose(rejected())
    with pytest.raises(GaveUp, match="the same failure twice in a row"):
        session.propose(rejected())
    assert len(client.requests) == 2


def test_the_attempt_limit_stops(make_proposer, task: Task) -> None:
    client = FakeClient(reply(text("a;\n")), reply(text("b;\n")))
    session = make_proposer(client, max_attempts=2).start(task)
    session.propose(None)
    session.propose(rejected(message="first"))
    with pytest.raises(GaveUp, match="no accepted body in 2 attempts"):
        session.propose(rejected(message="second"))


def test_answers_without_a_body_count_as_attempts_and_get_feedback(make_proposer, task: Task) -> None:
    client = FakeClient(reply({"type": "text", "text": "I would write a loop."}), reply(text(BODY)))
    proposal = make_proposer(client).start(task).propose(None)
    assert proposal.body == BODY
    assert "no kernel body was found" in client.requests[1]["messages"][-1]["content"][0]["text"]


def test_api_errors_and_refusals_give_up_with_the_reason(make_proposer, task: Task) -> None:
    with pytest.raises(GaveUp, match="API error: AuthenticationError"):
        make_proposer(FakeClient(ApiError("AuthenticationError (HTTP 401): authentication_error: invalid x-api-key"))).start(task).propose(None)
    with pytest.raises(GaveUp, match="the model refused"):
        make_proposer(FakeClient(reply(text(BODY), stop="refusal"))).start(task).propose(None)


def test_a_second_max_tokens_stop_gives_up(make_proposer, task: Task) -> None:
    client = FakeClient(reply(text("a"), stop="max_tokens"), reply(text("a"), stop="max_tokens"))
    with pytest.raises(GaveUp, match="did not fit in"):
        make_proposer(client).start(task).propose(None)
    assert [r["max_tokens"] for r in client.requests] == [16000, 64000]


def test_the_budget_is_shared_by_every_op_of_the_run(make_proposer, task: Task) -> None:
    # Room for one request's worst case and a little more: after the first op's request settles at what it
    # used, the second op's worst case no longer fits, and it is refused before anything is sent.
    config = load_config()
    first_request = Conversation(Renderer(ROOT / "templates"), config.default_model, "add", "cpu", "TASK add").request(config.limits.max_tokens)
    room = worst_case(first_request, config.price(config.default_model)).tokens + 100
    budget = Budget(tokens=room)
    make_proposer(FakeClient(reply(text(BODY), usage=Usage(input=1400, output=200))), budget=budget).start(task).propose(None)
    assert budget.tokens == 1600
    idle = FakeClient(reply(text(BODY)))
    with pytest.raises(GaveUp, match=f"budget of {room} tokens cannot cover another request"):
        make_proposer(idle, budget=budget).start(task).propose(None)
    assert idle.requests == []


def test_an_accepted_body_is_cached_by_its_inputs(make_proposer, task: Task) -> None:
    session = make_proposer(FakeClient(reply(text(BODY)))).start(task)
    proposal = session.propose(None)
    session.accepted(proposal, Verdict(True, "all", ""))
    silent = FakeClient()
    cached = make_proposer(silent).start(task).propose(None)
    assert cached.body == BODY and cached.details["attempts"] == 1 and silent.requests == []
    changed = Task(task.spec, task.device, inputs_sha256="inputs-v2")  # e.g. the spec changed
    with pytest.raises(IndexError):  # not cached: the client is asked (and has nothing scripted)
        make_proposer(FakeClient()).start(changed).propose(None)


def test_usage_is_priced_per_kind_of_token() -> None:
    price = Price(input=4.0, output=20.0, cache_write=5.0, cache_read=0.2)
    usage = Usage(input=1_000_000, cache_write=1_000_000, cache_read=1_000_000, output=1_000_000)
    assert usage.cost(price) == pytest.approx(29.2)
