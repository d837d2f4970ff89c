"""One streamed Messages request, and the Message Batches endpoints: the only module that talks to the
`anthropic` SDK.

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
from collections.abc import Iterator
from contextlib import contextmanager
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
    batch_id: str | None = None  # the Message Batch that answered, when one did


def reply_from_message(data: dict[str, Any], http_requests: int = 1, batch_id: str | None = None) -> Reply:
    """A Reply from a Message as JSON (a stream's final message, or a batch's succeeded result)."""
    return Reply(data.get("content", []), data.get("stop_reason"), data.get("stop_details"), Usage.from_api(data.get("usage", {})),
                 http_requests, batch_id)  # fmt: skip


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


def _sdk() -> tuple[Any, str]:
    """The anthropic module and the key; GeneratorError, before anything runs, when either is missing."""
    key = os.environ.get(KEY_ENV)
    if not key:
        raise GeneratorError(f"the claude proposer needs an Anthropic API key in ${KEY_ENV}; nothing was changed")
    try:
        import anthropic
    except ImportError:
        raise GeneratorError("the claude proposer needs the anthropic SDK: pip install 'tensorsmith[agent]'") from None
    return anthropic, key


class AnthropicClient:
    def __init__(self, limits: Limits) -> None:
        anthropic, key = _sdk()
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
        reply = reply_from_message(message.model_dump(mode="json", exclude_none=True), self._sent.count)
        if reply.stop_reason is None:
            raise StreamFault("the stream ended before the answer did (no stop reason)", reply.usage, self._sent.count)
        return reply

    def _fault(self, reason: str, stream: Any, started: bool) -> StreamFault:
        usage = stream.current_message_snapshot.usage.model_dump(mode="json") if started else {}
        return StreamFault(reason, Usage.from_api(usage), self._sent.count)


@dataclass(frozen=True)
class BatchStatus:
    id: str
    processing_status: str  # in_progress, canceling or ended
    counts: dict[str, int]  # processing, succeeded, errored, canceled, expired


@dataclass(frozen=True)
class BatchResult:
    """One request's result in an ended batch: `reply` when it succeeded; else `kind` (errored, canceled or
    expired) and, for an errored one, the API's error type and message."""

    custom_id: str
    kind: str
    batch_id: str
    reply: Reply | None = None
    error_type: str | None = None
    message: str = ""


class BatchApi(Protocol):
    def create(self, requests: list[dict[str, Any]]) -> BatchStatus:
        """One batch of {custom_id, params} requests. Raises ApiError."""
        ...

    def retrieve(self, batch_id: str) -> BatchStatus | None:
        """The batch's status; None when the API no longer has it. Raises ApiError."""
        ...

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """An ended batch's results, as the API streams them. Raises ApiError."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Asks the API to stop processing the batch. Raises ApiError."""
        ...


class AnthropicBatches:
    """The Message Batches endpoints. Each call is a plain request the SDK retries itself (429, 5xx, refused
    connections) up to sdk_max_retries times."""

    def __init__(self, limits: Limits) -> None:
        anthropic, key = _sdk()
        self.anthropic = anthropic
        self.batches = anthropic.Anthropic(api_key=key, timeout=limits.request_timeout_s, max_retries=limits.sdk_max_retries).messages.batches

    def create(self, requests: list[dict[str, Any]]) -> BatchStatus:
        with self._errors("creating a batch"):
            return _status(self.batches.create(requests=requests))

    def retrieve(self, batch_id: str) -> BatchStatus | None:
        try:
            with self._errors(f"reading batch {batch_id}"):
                return _status(self.batches.retrieve(batch_id))
        except _Gone:
            return None

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        with self._errors(f"reading the results of batch {batch_id}"):
            for line in self.batches.results(batch_id):
                yield _result(line.model_dump(mode="json", exclude_none=True), batch_id)

    def cancel(self, batch_id: str) -> None:
        with self._errors(f"canceling batch {batch_id}"):
            self.batches.cancel(batch_id)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except self.anthropic.NotFoundError:
            raise _Gone(f"{what}: the API has no such batch") from None
        except self.anthropic.APIStatusError as exc:
            raise ApiError(f"{what}: {_describe_status(exc)}") from None
        except (self.anthropic.APIConnectionError, self.anthropic.APIResponseValidationError) as exc:
            raise ApiError(f"{what}: {type(exc).__name__}: {exc}") from None
        except ValueError as exc:  # a malformed line in the results stream
            raise ApiError(f"{what}: a malformed result ({type(exc).__name__}: {exc})") from None


class _Gone(ApiError):
    """The API has no such batch (HTTP 404)."""


def _status(batch: Any) -> BatchStatus:
    return BatchStatus(batch.id, batch.processing_status, batch.request_counts.model_dump(mode="json"))


def _result(data: dict[str, Any], batch_id: str) -> BatchResult:
    result = data.get("result", {})
    kind = result.get("type", "")
    if kind == "succeeded":
        return BatchResult(data["custom_id"], kind, batch_id, reply=reply_from_message(result.get("message", {}), batch_id=batch_id))
    error = result.get("error", {}).get("error", {}) if kind == "errored" else {}
    return BatchResult(data["custom_id"], kind, batch_id, error_type=error.get("type"), message=error.get("message", ""))


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
