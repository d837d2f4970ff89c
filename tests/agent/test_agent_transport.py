"""How one question to the model survives a broken stream: the real `anthropic` SDK over real HTTP to the
scripted Messages API on 127.0.0.1 (tests/agent/fake_api.py), through the proposer's client and requester.

Every fault after the stream started is asked again a bounded number of times, then fails with its
reason; a fault before it is the SDK's to retry, and is never multiplied by ours."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tensorsmith_forge.generator.agent.budget import Budget
from tensorsmith_forge.generator.agent.client import AnthropicClient, ApiError
from tensorsmith_forge.generator.agent.config import Limits, Price, Usage
from tensorsmith_forge.generator.agent.requester import Requester, max_http_requests
from tests.agent.conftest import FAKE_KEY
from tests.agent.fake_api import (
    Drop,
    Empty,
    FakeMessagesAPI,
    HttpError,
    Malformed,
    NoStopReason,
    StallInStream,
    StreamError,
    cpp,
)
from tests.agent.fake_api import Usage as Billed

LIMITS = Limits(max_attempts=4, max_tokens=100, max_tokens_retry=200, time_limit_s=60, request_timeout_s=0.5,
                sdk_max_retries=2, stream_retries=2, stream_backoff_s=0.0)  # fmt: skip
PRICE = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
REQUEST = {"model": "claude-test-1", "max_tokens": 100,
           "messages": [{"role": "user", "content": [{"type": "text", "text": "Write the kernel body of `probe`."}]}]}  # fmt: skip
BODY = "char* out = data[0];\n(void)out;\n"

# Each way a stream breaks after it started, and how the reason names it.
BROKEN = [
    # httpx's own error, or the SDK's wrapper of it (anthropic 2.17 wraps errors raised while a stream is read)
    pytest.param(Drop(), r"the stream broke \((RemoteProtocolError|APIConnectionError): .*peer closed connection", id="dropped"),
    pytest.param(StallInStream(5.0), r"the stream stalled \((ReadTimeout|APITimeoutError)", id="stalled"),
    pytest.param(Malformed(), re.escape("a malformed event in the stream (JSONDecodeError"), id="malformed"),
    pytest.param(Empty(), re.escape("the stream ended without a message"), id="empty"),
    pytest.param(NoStopReason(cpp(BODY)), re.escape("the stream ended before the answer did (no stop reason)"), id="no-stop-reason"),
    pytest.param(StreamError(), re.escape("APIStatusError (in the stream): overloaded_error"), id="overloaded"),
]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CUSTOM_HEADERS"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def requester(budget: Budget | None = None) -> Requester:
    return Requester(AnthropicClient(LIMITS), budget or Budget(), PRICE, LIMITS, sleep=lambda _s: None)


class Faults(list):
    def __call__(self, error: str, usage: Usage, cost: float) -> None:
        self.append((error, usage, cost))


@pytest.mark.parametrize(("fault", "reason"), BROKEN)
def test_a_stream_that_breaks_is_asked_again(api: FakeMessagesAPI, fault: object, reason: str) -> None:
    api.script("probe", fault, cpp(BODY))
    faults = Faults()
    reply, _cost = requester().ask(REQUEST, faults)
    assert reply.stop_reason == "end_turn" and BODY in reply.content[0]["text"]
    assert len(api.requests_for("probe")) == 2
    assert len(faults) == 1 and re.search(reason, faults[0][0]) and "asking again" in faults[0][0]


@pytest.mark.parametrize(("fault", "reason"), BROKEN)
def test_a_stream_that_keeps_breaking_gives_up_with_the_reason(api: FakeMessagesAPI, fault: object, reason: str) -> None:
    api.script("probe", *[fault] * 9)
    faults = Faults()
    with pytest.raises(ApiError, match="gave up after 3 HTTP requests") as raised:
        requester().ask(REQUEST, faults)
    assert re.search(reason, str(raised.value)) and "\n" not in str(raised.value)
    assert len(api.requests_for("probe")) == 1 + LIMITS.stream_retries
    assert len(faults) == 1 + LIMITS.stream_retries
    assert all(FAKE_KEY not in error for error, _usage, _cost in faults) and FAKE_KEY not in str(raised.value)


def test_a_persistent_overload_is_retried_by_the_sdk_alone(api: FakeMessagesAPI) -> None:
    api.script("probe", *[HttpError(529, "overloaded_error")] * 20)
    with pytest.raises(ApiError, match=r"OverloadedError \(HTTP 529\): overloaded_error"):
        requester().ask(REQUEST, Faults())
    requests = api.requests_for("probe")
    assert len(requests) == 1 + LIMITS.sdk_max_retries  # not multiplied by the retries of broken streams
    assert [r.headers["x-stainless-retry-count"] for r in requests] == ["0", "1", "2"]


@pytest.mark.parametrize(
    "script",
    [
        pytest.param([HttpError(529, "overloaded_error"), HttpError(529, "overloaded_error"), Drop()] * 4, id="529-529-drop"),
        pytest.param([HttpError(529, "overloaded_error"), StreamError()] * 6, id="529-overload"),
        pytest.param([StreamError(), HttpError(429, "rate_limit_error"), HttpError(500, "api_error")] * 4, id="overload-429-500"),
    ],
)
def test_a_question_sends_at_most_the_documented_number_of_requests(api: FakeMessagesAPI, script: list) -> None:
    api.script("probe", *script)
    with pytest.raises(ApiError):
        requester().ask(REQUEST, Faults())
    # models.toml: "A question sends at most 1 + sdk_max_retries + stream_retries HTTP requests"; every script
    # here has faults enough to use them all.
    assert len(api.requests_for("probe")) == 1 + LIMITS.sdk_max_retries + LIMITS.stream_retries == max_http_requests(LIMITS)


def test_a_broken_stream_is_paid_for_as_far_as_it_went(api: FakeMessagesAPI) -> None:
    # The dropped stream had sent its message_start (1200 input tokens, 1 output); the empty one nothing.
    api.script("probe", Drop(events=2), Empty(), cpp(BODY))
    budget = Budget(usd=10.0)
    faults = Faults()
    reply, cost = requester(budget).ask(REQUEST, faults)
    assert [usage for _e, usage, _c in faults] == [Usage(input=1200, output=1), Usage()]
    assert reply.usage == Usage(input=Billed().input, output=Billed().output)
    answer, broken = reply.usage.cost(PRICE), Usage(input=1200, output=1).cost(PRICE)
    assert cost == pytest.approx(answer)
    assert budget.usd == pytest.approx(answer + broken) and budget.tokens == reply.usage.total + 1201
