"""The JSONL record of one Claude session, and reading the accepted body back out of it.

One JSON object per line, keys sorted: `start` (op, model, prompt version, the system prompt and
tools), then per attempt `request` (the new user message), `retry` (a retried API error),
`reply` (the answer, its stop reason, usage and cost), `verdict` or `no_body`, and finally `end`
(accepted or gave up, with the totals the manifest records). Thinking-block signatures are left
out (opaque and long); nothing else is, and no header or key is ever part of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from ..hashing import sha256_text
from .conversation import read_answer

# Totals an `end` event carries; the manifest records the same values, so a replay reproduces them.
TOTALS = ("model", "attempts", "tokens", "cost_usd", "wall_s")


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


class TranscriptError(ValueError):
    pass


def accepted_body(text: str) -> tuple[str, dict[str, Any]]:
    """The accepted body of a transcript, read from the answer itself exactly as the session read it,
    and the totals of its `end` event. Raises TranscriptError when the record is incomplete or its
    answer does not hash to the body that was accepted."""
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
    answer = read_answer(replies[-1].get("content", []))
    if answer.body is None or sha256_text(answer.body) != end.get("body_sha256"):
        raise TranscriptError(f"the answer of attempt {attempt} does not hash to the accepted body")
    return answer.body, {k: end[k] for k in TOTALS if k in end}
