"""The JSONL record of one Claude session, and reading the accepted body back out of it.

One JSON object per line, keys sorted: `start` (op, model, prompt version, the system prompt and
tools), then per attempt `request` (the new user message), `stream_fault` (a stream that broke,
with what it used), `reply` (the answer, its stop reason, usage and cost), `verdict` or `no_body`,
and finally `end` (accepted or gave up, with the totals the manifest records). Thinking-block
signatures are left out (opaque and long), and an answer longer than REPLY_LIMIT_CHARS is cut
(see stored_reply); no header or key is ever part of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from tensorsmith_forge.validators.static_check import MAX_BODY_CHARS

from ..hashing import sha256_text
from .conversation import read_answer

# Totals an `end` event carries; the manifest records the same values, so a replay reproduces them.
TOTALS = ("model", "attempts", "tokens", "cost_usd", "wall_s")
# An answer is stored whole up to this many characters (its content blocks as JSON): room for the
# longest body the gate judges, with prose and thinking around it.
REPLY_LIMIT_CHARS = 3 * MAX_BODY_CHARS
PREVIEW_CHARS = 2000


class Transcript:
    def __init__(self, live_path: Path | None = None) -> None:
        self.lines: list[str] = []
        self.live: TextIO | None = None
        if live_path is not None:  # followed while the session runs; kept after a crash or a kill
            live_path.parent.mkdir(parents=True, exist_ok=True)
            self.live = live_path.open("w", encoding="utf-8")

    def log(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, sort_keys=True, ensure_ascii=False, default=str)
        self.lines.append(line)
        if self.live is not None:
            self.live.write(line + "\n")
            self.live.flush()

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def without_signatures(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in block.items() if k != "signature"} for block in content]


def stored_reply(content: list[dict[str, Any]]) -> dict[str, Any]:
    """What a transcript keeps of an answer: `content`, or, for an answer over REPLY_LIMIT_CHARS, `cut`
    (its length, sha256 and first PREVIEW_CHARS characters, as JSON) and `body`, the body read from it,
    when it is one the gate judges (at most MAX_BODY_CHARS)."""
    kept = without_signatures(content)
    text = json.dumps(kept, sort_keys=True, ensure_ascii=False)
    if len(text) <= REPLY_LIMIT_CHARS:
        return {"content": kept}
    stored: dict[str, Any] = {"cut": {"chars": len(text), "sha256": sha256_text(text), "preview": text[:PREVIEW_CHARS]}}
    body = read_answer(content).body
    if body is not None and len(body) <= MAX_BODY_CHARS:
        stored["body"] = body
    return stored


class TranscriptError(ValueError):
    pass


def accepted_body(text: str) -> tuple[str, dict[str, Any]]:
    """The accepted body of a transcript, read from the answer itself exactly as the session read it (from
    an answer that was cut: the body stored beside it), and the totals of its `end` event. Raises
    TranscriptError when the record is incomplete or its answer does not hash to the body that was accepted."""
    try:
        events = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise TranscriptError(f"not JSON lines: {exc}") from None
    end = next((e for e in reversed(events) if e.get("event") == "end"), None)
    if end is None or end.get("status") != "accepted":
        raise TranscriptError("the transcript records no accepted body")
    attempt = end.get("attempts")
    replies = [e for e in events if e.get("event") == "reply" and e.get("attempt") == attempt]
    if not replies:
        raise TranscriptError(f"no answer for the accepted attempt {attempt}")
    reply = replies[-1]
    # A model's answer is read as the session read it; an outside author's reply (and a cut answer) holds the body.
    body = reply.get("body") if "content" not in reply else read_answer(reply["content"]).body
    if body is None or sha256_text(body) != end.get("body_sha256"):
        raise TranscriptError(f"the answer of attempt {attempt} does not hash to the accepted body")
    return body, {k: end[k] for k in (*TOTALS, "author", "proposer") if k in end}
