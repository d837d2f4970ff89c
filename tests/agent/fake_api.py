"""A local Messages API on 127.0.0.1 for offline tests of the Claude proposer.

The real `anthropic` SDK talks to it over real HTTP through ANTHROPIC_BASE_URL, so the
tests cover the SDK's transport, retries and stream parsing as well as our loop. Each
op has a script: a queue of steps (an answer streamed as server-sent events, an HTTP
error with retry-after, and the ways a stream breaks: an error event, a dropped
connection, a stall before or after the headers, a malformed event, an empty body, an
end without a stop reason). Every request is recorded with its JSON body and headers
for assertions.
"""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OP = re.compile(r"kernel body of `(?P<op>\w+)`")
BATCH_PATH = re.compile(r"/v1/messages/batches/(?P<id>[\w-]+)(?P<what>|/results|/cancel)")


@dataclass(frozen=True)
class Usage:
    input: int = 1200
    cache_write: int = 0
    cache_read: int = 0
    output: int = 300


@dataclass(frozen=True)
class Answer:
    """A streamed answer: text (usually one ```cpp block) and/or a tool call."""

    text: str | None = None
    tool_input: Any = None  # a submit_kernel call with this input, when not None
    tool_name: str = "submit_kernel"
    stop_reason: str = "end_turn"
    stop_details: dict | None = None
    usage: Usage = field(default_factory=Usage)
    thinking: str | None = None


@dataclass(frozen=True)
class HttpError:
    status: int
    type: str
    retry_after_ms: int | None = 10


@dataclass(frozen=True)
class StreamError:
    """The stream starts, then an `error` event arrives (the SDK raises; it does not retry)."""

    type: str = "overloaded_error"


@dataclass(frozen=True)
class Stall:
    """Answers only after `seconds` (longer than the client's timeout: a timeout)."""

    seconds: float
    then: Answer | None = None


@dataclass(frozen=True)
class Drop:
    """The stream starts (headers promise the whole body), then the connection closes after `events` events."""

    events: int = 3


@dataclass(frozen=True)
class StallInStream:
    """The headers and the first event arrive, then nothing for `seconds` (a read timeout in the client)."""

    seconds: float


@dataclass(frozen=True)
class Malformed:
    """A stream whose second event's data is not JSON."""


@dataclass(frozen=True)
class Empty:
    """200, text/event-stream, and no event at all."""


@dataclass(frozen=True)
class NoStopReason:
    """A well-formed stream of an answer that ends (message_stop) without the message_delta that
    carries the stop reason."""

    answer: Answer


@dataclass(frozen=True)
class BatchErrored:
    """In a batch: this request's result is `errored` with this error type."""

    type: str = "overloaded_error"


@dataclass(frozen=True)
class Expired:
    """In a batch: this request's result is `expired` (the batch reached its 24 hours first)."""


def cpp(body: str, prose: str = "Here is the body.") -> Answer:
    return Answer(text=f"{prose}\n\n```cpp\n{body}```\n")


@dataclass
class Recorded:
    op: str | None
    body: dict[str, Any]
    headers: dict[str, str]
    batched: bool = False  # a request inside a Message Batch (its params)


@dataclass
class FakeBatch:
    id: str
    custom_ids: list[str]
    results: list[dict]  # one JSONL line each, decided when the batch is created (from the ops' scripts)
    retrieves: int = 0
    canceled: bool = False
    ended: bool = False


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (a timeout test) resets its connection; that is expected


class FakeMessagesAPI:
    def __init__(self) -> None:
        self.scripts: dict[str, deque] = defaultdict(deque)
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # ends the stalls when the server shuts down
        # Message Batches: every call as (method, path); a batch ends at its `polls_to_end`-th retrieve,
        # never while `hold_batches` is set.
        self.batches: dict[str, FakeBatch] = {}
        self.batch_calls: list[tuple[str, str]] = []
        self.hold_batches = False
        self.polls_to_end = 2
        self.server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, op: str, *steps: object) -> None:
        with self.lock:
            self.scripts[op].extend(steps)

    def requests_for(self, op: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.op == op]

    def batch_calls_of(self, method: str, suffix: str = "") -> list[str]:
        with self.lock:
            return [path for m, path in self.batch_calls if m == method and path.endswith(suffix)]

    def __enter__(self) -> FakeMessagesAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    # ---- serving

    def _next(self, body: dict[str, Any]) -> tuple[str | None, object]:
        opening = body["messages"][0]["content"][0]["text"]
        match = OP.search(opening)
        op = match["op"] if match else None
        with self.lock:
            queue = self.scripts.get(op or "")
            step = queue.popleft() if queue else HttpError(500, "api_error", None)
            return op, step

    # ---- Message Batches

    def _create_batch(self, body: dict[str, Any], headers: dict[str, str]) -> FakeBatch:
        results = []
        for item in body["requests"]:
            op, step = self._next(item["params"])
            with self.lock:
                self.requests.append(Recorded(op, item["params"], headers, batched=True))
            results.append({"custom_id": item["custom_id"], "result": _batch_result(item["params"]["model"], step)})
        with self.lock:
            batch = FakeBatch(f"msgbatch_fake{len(self.batches) + 1:04d}", [r["custom_id"] for r in results], results)
            self.batches[batch.id] = batch
        return batch

    def _batch_json(self, batch: FakeBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.ended:
            for line in batch.results:
                counts[line["result"]["type"]] += 1
        else:
            counts["processing"] = len(batch.results)
        return {"id": batch.id, "type": "message_batch", "processing_status": "ended" if batch.ended else
                ("canceling" if batch.canceled else "in_progress"), "request_counts": counts,
                "created_at": "2026-12-01T00:00:00Z", "expires_at": "2026-12-02T00:00:00Z",
                "ended_at": "2026-12-01T01:00:00Z" if batch.ended else None,
                "cancel_initiated_at": "2026-12-01T00:30:00Z" if batch.canceled else None, "archived_at": None,
                "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results" if batch.ended else None}  # fmt: skip

    def _retrieve(self, batch: FakeBatch) -> None:
        with self.lock:
            batch.retrieves += 1
            if not batch.ended and (batch.canceled or (not self.hold_batches and batch.retrieves >= self.polls_to_end)):
                batch.ended = True
                if batch.canceled:  # nothing was processed before the cancel
                    for line in batch.results:
                        line["result"] = {"type": "canceled"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                with api.lock:
                    api.batch_calls.append(("GET", self.path))
                match = BATCH_PATH.fullmatch(self.path)
                batch = api.batches.get(match["id"]) if match else None
                if batch is None:
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                if match["what"] == "/results":
                    if not batch.ended:
                        return self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "not ended"}})
                    data = "".join(json.dumps(line) + "\n" for line in batch.results).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/binary")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                api._retrieve(batch)
                return self._json(200, api._batch_json(batch))

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")  # a cancel sends no body
                headers = {k.lower(): v for k, v in self.headers.items()}
                if self.path.startswith("/v1/messages/batches"):
                    with api.lock:
                        api.batch_calls.append(("POST", self.path))
                    if self.path.rstrip("/") == "/v1/messages/batches":
                        return self._json(200, api._batch_json(api._create_batch(body, headers)))
                    match = BATCH_PATH.fullmatch(self.path)
                    batch = api.batches.get(match["id"]) if match and match["what"] == "/cancel" else None
                    if batch is None:
                        return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                    with api.lock:
                        batch.canceled = True
                    return self._json(200, api._batch_json(batch))
                op, step = api._next(body)
                with api.lock:
                    api.requests.append(Recorded(op, body, headers))
                if self.path.rstrip("/") != "/v1/messages":
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                if isinstance(step, Stall):
                    api.stopping.wait(step.seconds)
                    step = step.then or HttpError(500, "api_error", None)
                if isinstance(step, HttpError):
                    headers = {"retry-after-ms": str(step.retry_after_ms)} if step.retry_after_ms is not None else {}
                    return self._json(step.status, {"type": "error", "error": {"type": step.type, "message": f"scripted {step.type}"}}, headers)
                if isinstance(step, StreamError):
                    return self._stream(_events_until_error(body["model"], step.type))
                if isinstance(step, Drop):
                    return self._stream(_events(body["model"], cpp("x;\n")), send_only=step.events)
                if isinstance(step, StallInStream):
                    return self._stream(_events(body["model"], cpp("x;\n")), send_only=1, then_wait=step.seconds)
                if isinstance(step, Malformed):
                    return self._stream(_events(body["model"], cpp("x;\n")), corrupt=1)
                if isinstance(step, Empty):
                    return self._stream([])
                if isinstance(step, NoStopReason):
                    return self._stream([e for e in _events(body["model"], step.answer) if e[0] != "message_delta"])
                assert isinstance(step, Answer), step
                return self._stream(_events(body["model"], step))

            def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-should-retry", "true" if status in (429, 529, 500) else "false")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[tuple[str, dict]], send_only: int | None = None, then_wait: float = 0.0,
                        corrupt: int | None = None) -> None:  # fmt: skip
                chunks = [f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode() for name, payload in events]
                if corrupt is not None:
                    chunks[corrupt] = f"event: {events[corrupt][0]}\ndata: {{not json\n\n".encode()
                data = b"".join(chunks)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))  # the whole body, even when less is sent
                self.end_headers()
                if send_only is None:
                    self.wfile.write(data)
                    return
                self.wfile.write(b"".join(chunks[:send_only]))
                self.wfile.flush()
                api.stopping.wait(then_wait)
                self.close_connection = True  # the rest never comes

        return Handler


def _start(model: str, usage: Usage) -> tuple[str, dict]:
    return ("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage.input, "output_tokens": 1, "cache_creation_input_tokens": usage.cache_write,
                  "cache_read_input_tokens": usage.cache_read}}})  # fmt: skip


def _events(model: str, answer: Answer) -> list[tuple[str, dict]]:
    events = [_start(model, answer.usage)]
    index = 0
    if answer.thinking is not None:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": answer.thinking}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "sig-fake"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
        index += 1
    if answer.text is not None:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": answer.text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
        index += 1
    if answer.tool_input is not None:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {"type": "tool_use", "id": f"toolu_fake{index}", "name": answer.tool_name, "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": {"type": "input_json_delta", "partial_json": json.dumps(answer.tool_input)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None,
                                                               "stop_details": answer.stop_details},
                           "usage": {"output_tokens": answer.usage.output}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def _events_until_error(model: str, error_type: str) -> list[tuple[str, dict]]:
    return [
        _start(model, Usage()),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Here is"}}),
        ("error", {"type": "error", "error": {"type": error_type, "message": "scripted overload in the stream"}}),
    ]  # fmt: skip


def _message(model: str, answer: Answer) -> dict[str, Any]:
    """The Message a batch's succeeded result holds (what the stream of `answer` adds up to)."""
    content: list[dict[str, Any]] = []
    if answer.thinking is not None:
        content.append({"type": "thinking", "thinking": answer.thinking, "signature": "sig-fake"})
    if answer.text is not None:
        content.append({"type": "text", "text": answer.text})
    if answer.tool_input is not None:
        content.append({"type": "tool_use", "id": f"toolu_fake{len(content)}", "name": answer.tool_name, "input": answer.tool_input})
    usage = answer.usage
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": answer.stop_reason, "stop_sequence": None, "stop_details": answer.stop_details,
            "usage": {"input_tokens": usage.input, "output_tokens": usage.output, "cache_creation_input_tokens": usage.cache_write,
                      "cache_read_input_tokens": usage.cache_read}}  # fmt: skip


def _batch_result(model: str, step: object) -> dict[str, Any]:
    if isinstance(step, Answer):
        return {"type": "succeeded", "message": _message(model, step)}
    if isinstance(step, Expired):
        return {"type": "expired"}
    error_type = step.type if isinstance(step, (BatchErrored, HttpError)) else "api_error"
    return {"type": "errored", "error": {"type": "error", "error": {"type": error_type, "message": f"scripted {error_type}"}}}
