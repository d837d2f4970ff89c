"""One streamed Messages request: the only module that talks to the `anthropic` SDK.

Faults are sorted by when they happen. Before the stream starts (429, 5xx, a refused connection,
a timeout before the headers) the SDK sends the request again, up to `max_retries` more times;
after that the request has failed for good (ApiError). Once the stream has started nothing in the
SDK retries: an error event (e.g. overloaded_error), a dropped connection, a stall, a malformed
event, an empty stream or one that ends without a stop reason all leave as a StreamFault, which
the caller may send again (requester.py). Messages are one line and never hold the key.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import GeneratorError
from .config import Limits, Usage

KEY_ENV = "ANTHROPIC_API_KEY"
# Error events in a stream that a new request may not meet again.
TRANSIENT_STREAM_ERRORS = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}


@dataclass(frozen=True)
class Reply:
    content: list[dict[str, Any]]  # content blocks as JSON (text, thinking, tool_use, ...)
    stop_reason: str | None
    stop_details: dict[str, Any] | None
    usage: Usage
    http_requests: int = 1  # sent for this reply, the SDK's retries included


class ApiError(Exception):
    """A request that failed for good; the message is one line and safe to log."""


class StreamFault(Exception):
    """The stream broke after it started. `usage` is what it reported before it broke (the API may bill
    it); `http_requests` counts the requests sent, the SDK's retries before the stream included."""

    def __init__(self, reason: str, usage: Usage, http_requests: int) -> None:
        super().__init__(reason)
        self.usage, self.http_requests = usage, http_requests


class MessagesClient(Protocol):
    def send(self, request: dict[str, Any], max_retries: int) -> Reply:
        """One streamed request; the SDK may send it `max_retries` more times before a stream starts.
        Raises StreamFault or ApiError."""
        ...


class AnthropicClient:
    def __init__(self, limits: Limits) -> None:
        key = os.environ.get(KEY_ENV)
        if not key:
            raise GeneratorError(f"the claude proposer needs an Anthropic API key in ${KEY_ENV}; nothing was changed")
        try:
            import anthropic
        except ImportError:
            raise GeneratorError("the claude proposer needs the anthropic SDK: pip install 'tensorsmith[agent]'") from None
        self.anthropic = anthropic
        self._sent = threading.local()  # HTTP requests of the current send, per thread (--jobs)
        # base_url comes from ANTHROPIC_BASE_URL when set (a proxy, or the tests' local server). The middleware
        # runs once per HTTP attempt, inside the SDK's retry loop: it counts them.
        base = anthropic.Anthropic(api_key=key, timeout=limits.request_timeout_s, middleware=[self._count])
        self.clients = [base.with_options(max_retries=n) for n in range(limits.sdk_max_retries + 1)]

    def _count(self, request: Any, call_next: Any) -> Any:
        self._sent.count += 1
        return call_next(request)

    def send(self, request: dict[str, Any], max_retries: int) -> Reply:
        self._sent.count = 0
        client = self.clients[max(0, min(max_retries, len(self.clients) - 1))]
        try:
            return self._stream(client, request)
        except self.anthropic.APIStatusError as exc:  # before the stream: the SDK's retries are spent, or it may not retry
            raise ApiError(f"{_describe_status(exc)} ({self._sent.count} HTTP requests)") from None
        except self.anthropic.APIConnectionError as exc:  # includes APITimeoutError
            raise ApiError(f"{type(exc).__name__}: {exc} ({self._sent.count} HTTP requests)") from None

    def _stream(self, client: Any, request: dict[str, Any]) -> Reply:
        with client.messages.stream(**request) as stream:  # returns once the headers are in
            started = False
            try:
                for event in stream:
                    started = started or event.type == "message_start"
            except self.anthropic.APIStatusError as exc:  # an error event in the stream
                if exc.type not in TRANSIENT_STREAM_ERRORS:
                    raise ApiError(_describe_status(exc)) from None
                raise self._fault(_describe_status(exc), stream, started) from None
            except Exception as exc:  # noqa: BLE001 - only the SDK's reading and parsing of the stream runs here
                raise self._fault(_describe_break(exc), stream, started) from None
            if not started:
                raise self._fault("the stream ended without a message (an empty answer)", stream, started)
            message = stream.get_final_message()
        data = message.model_dump(mode="json", exclude_none=True)
        usage = Usage.from_api(data.get("usage", {}))
        if data.get("stop_reason") is None:
            raise StreamFault("the stream ended before the answer did (no stop reason)", usage, self._sent.count)
        return Reply(data.get("content", []), data["stop_reason"], data.get("stop_details"), usage, self._sent.count)

    def _fault(self, reason: str, stream: Any, started: bool) -> StreamFault:
        usage = stream.current_message_snapshot.usage.model_dump(mode="json") if started else {}
        return StreamFault(reason, Usage.from_api(usage), self._sent.count)


def _describe_status(exc: Any) -> str:
    where = "in the stream" if exc.status_code == 200 else f"HTTP {exc.status_code}"
    return f"{type(exc).__name__} ({where}): {exc.type or 'error'}: {exc.api_message or exc.message}"


def _describe_break(exc: Exception) -> str:
    name = type(exc).__name__
    if "Timeout" in name:
        return f"the stream stalled ({name}: {exc})"
    if isinstance(exc, ValueError):  # json.JSONDecodeError among them
        return f"a malformed event in the stream ({name}: {exc})"
    return f"the stream broke ({name}: {exc})"
