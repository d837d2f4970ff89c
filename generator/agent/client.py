"""One Messages request, streamed, with retries: the only module that talks to the `anthropic` SDK.

The SDK retries 429, 5xx and connection errors before a stream starts; an error in
the middle of a stream (e.g. `overloaded_error` after the first events) reaches us
as an APIStatusError and is retried here around the whole request. Errors leave as
ApiError with a one-line message that never contains the key.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import GeneratorError
from .config import Limits, Usage

KEY_ENV = "ANTHROPIC_API_KEY"
RETRYABLE_STATUS = {408, 409, 429}
RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}


@dataclass(frozen=True)
class Reply:
    content: list[dict[str, Any]]  # content blocks as JSON (text, thinking, tool_use, ...)
    stop_reason: str | None
    stop_details: dict[str, Any] | None
    usage: Usage


class ApiError(Exception):
    """A request that failed for good (after every retry); the message is one line and safe to log."""


class MessagesClient(Protocol):
    def send(self, request: dict[str, Any], on_retry: Callable[[str], None]) -> Reply: ...


class AnthropicClient:
    """The official SDK, streaming (long answers must stream), with an outer retry."""

    def __init__(self, limits: Limits, sleep: Callable[[float], None] = time.sleep) -> None:
        key = os.environ.get(KEY_ENV)
        if not key:
            raise GeneratorError(f"the claude proposer needs an Anthropic API key in ${KEY_ENV}; nothing was changed")
        try:
            import anthropic
        except ImportError:
            raise GeneratorError("the claude proposer needs the anthropic SDK: pip install 'tensorsmith[agent]'") from None
        self.anthropic = anthropic
        # base_url comes from ANTHROPIC_BASE_URL when set (a proxy, or the tests' local server).
        self.client = anthropic.Anthropic(api_key=key, max_retries=limits.sdk_max_retries, timeout=limits.request_timeout_s)
        self.limits = limits
        self.sleep = sleep

    def send(self, request: dict[str, Any], on_retry: Callable[[str], None]) -> Reply:
        for attempt in range(self.limits.outer_retries + 1):
            try:
                with self.client.messages.stream(**request) as stream:
                    message = stream.get_final_message()
                data = message.model_dump(mode="json", exclude_none=True)
                return Reply(data.get("content", []), data.get("stop_reason"), data.get("stop_details"), Usage.from_api(data.get("usage", {})))
            except self.anthropic.APIStatusError as exc:
                error, retryable = _describe_status(exc), _retryable(exc)
            except self.anthropic.APIConnectionError as exc:  # includes APITimeoutError
                error, retryable = f"{type(exc).__name__}: {exc}", True
            if not retryable or attempt == self.limits.outer_retries:
                raise ApiError(error)
            delay = min(self.limits.outer_backoff_s * 2**attempt, 30.0)
            on_retry(f"{error}; retrying in {delay:g} s")
            self.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises


def _retryable(exc: Any) -> bool:
    return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500 or exc.type in RETRYABLE_TYPES


def _describe_status(exc: Any) -> str:
    where = "in the stream" if exc.status_code == 200 else f"HTTP {exc.status_code}"
    return f"{type(exc).__name__} ({where}): {exc.type or 'error'}: {exc.api_message or exc.message}"
