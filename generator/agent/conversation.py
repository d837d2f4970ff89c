"""The conversation with the model: the prompt, reading a body out of an answer, and feedback.

The system prompt is the task text (`tsgen task` prints the same) and is marked for
prompt caching; the model answers with one fenced ```cpp block or calls the optional
`submit_kernel` tool (forced tool_choice is refused by current models, so nothing
depends on it). Only the latest answer is sent back in full: older failed answers
become one-line summaries, so the context stays small however many attempts run.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

from ..render import Renderer

SUBMIT_TOOL = "submit_kernel"
_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:cpp|c\+\+|cxx|cc|c|cuda)?[ \t]*\n(?P<code>.*?)^[ \t]*```[ \t]*$", re.M | re.S)
# What of each content block the API accepts back in an assistant turn.
_SENDABLE = {"text": ("text",), "thinking": ("thinking", "signature"), "redacted_thinking": ("data",),
             "tool_use": ("id", "name", "input")}  # fmt: skip


@dataclass(frozen=True)
class Answer:
    body: str | None  # the proposed body, normalised; None when the answer holds none
    problem: str | None  # why there is no body, for the feedback
    tool_use_ids: tuple[str, ...]  # every tool call in the answer: each needs a tool_result


def read_answer(content: list[dict[str, Any]]) -> Answer:
    """The body in an answer: a submit_kernel call if there is one, else the single fenced block."""
    calls = [b for b in content if b.get("type") == "tool_use"]
    ids = tuple(str(b.get("id")) for b in calls)
    submits = [b for b in calls if b.get("name") == SUBMIT_TOOL]
    if len(submits) > 1:
        return Answer(None, f"{len(submits)} {SUBMIT_TOOL} calls in one answer; submit one body at a time", ids)
    if submits:
        arguments = submits[0].get("input")
        body = arguments.get("body") if isinstance(arguments, dict) else None
        if not isinstance(body, str) or not body.strip():
            return Answer(None, f"malformed {SUBMIT_TOOL} input: expected {{\"body\": \"<C++ statements>\"}}, got {_short(arguments)}", ids)
        return Answer(normalise_body(body), None, ids)
    if calls:
        names = ", ".join(sorted({str(b.get("name")) for b in calls}))
        return Answer(None, f"unknown tool {names}; the only tool is {SUBMIT_TOOL}", ids)
    text = "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    blocks = [m["code"] for m in _FENCE.finditer(text)]
    if len(blocks) != 1:
        found = "no fenced code block" if not blocks else f"{len(blocks)} fenced code blocks"
        return Answer(None, f"the answer has {found}; it must hold exactly one ```cpp block with the body", ids)
    if not blocks[0].strip():
        return Answer(None, "the fenced code block is empty", ids)
    return Answer(normalise_body(blocks[0]), None, ids)


def normalise_body(text: str) -> str:
    """Dedented, no trailing spaces, no blank lines around it, one final newline."""
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Turn:
    """One answer and the feedback on it."""

    content: list[dict[str, Any]]  # the answer as the API returned it
    answer: Answer
    feedback: str
    summary: str  # stands for the answer once a newer one exists


class Conversation:
    def __init__(self, renderer: Renderer, model: str, op: str, device: str, task_text: str) -> None:
        self.renderer = renderer
        self.model = model
        self.system = [{"type": "text", "text": task_text, "cache_control": {"type": "ephemeral"}}]
        self.tools = [{
            "name": SUBMIT_TOOL,
            "description": renderer.render("prompts/submit_tool.md.j2").strip(),
            "input_schema": {"type": "object", "additionalProperties": False, "required": ["body"],
                             "properties": {"body": {"type": "string", "description": "the kernel body: C++ statements"}}},
        }]  # fmt: skip
        self.opening = renderer.render("prompts/start.md.j2", op=op, device=device, tool=SUBMIT_TOOL).strip()
        self.turns: list[Turn] = []

    def request(self, max_tokens: int) -> dict[str, Any]:
        """The next request. The system prompt carries an explicit cache breakpoint; the top-level
        cache_control lets the API cache the growing conversation too."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": self.opening}]}]
        for index, turn in enumerate(self.turns):
            if index < len(self.turns) - 1:
                messages.append({"role": "assistant", "content": [{"type": "text", "text": turn.summary}]})
                messages.append({"role": "user", "content": [{"type": "text", "text": turn.feedback}]})
            else:
                messages.append({"role": "assistant", "content": sendable(turn.content)})
                messages.append({"role": "user", "content": feedback_blocks(turn)})
        return {"model": self.model, "max_tokens": max_tokens, "system": self.system, "tools": self.tools,
                "messages": messages, "cache_control": {"type": "ephemeral"}}  # fmt: skip

    def add(self, content: list[dict[str, Any]], answer: Answer, attempt: int, stage: str | None, message: str) -> str:
        """Records an answer and what was wrong with it; returns the feedback text."""
        feedback = self.renderer.render("prompts/feedback.md.j2", attempt=attempt, stage=stage, message=message, tool=SUBMIT_TOOL)
        lines = answer.body.count("\n") if answer.body else 0
        summary = self.renderer.render("prompts/summary.md.j2", attempt=attempt, lines=lines, stage=stage).strip()
        self.turns.append(Turn(content, answer, feedback.strip(), summary))
        return feedback.strip()


def sendable(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An answer's blocks as they may be sent back: thinking blocks unmodified (signatures included),
    server-only fields dropped, unknown block types left out."""
    blocks = []
    for block in content:
        keys = _SENDABLE.get(str(block.get("type")))
        if keys is not None:
            blocks.append({"type": block["type"], **{k: block[k] for k in keys if k in block}})
    return blocks or [{"type": "text", "text": "(empty answer)"}]


def feedback_blocks(turn: Turn) -> list[dict[str, Any]]:
    """Every tool call of the answer gets its tool_result first (the API requires the pairing)."""
    if not turn.answer.tool_use_ids:
        return [{"type": "text", "text": turn.feedback}]
    return [{"type": "tool_result", "tool_use_id": tool_id, "content": turn.feedback, "is_error": True}
            for tool_id in turn.answer.tool_use_ids]  # fmt: skip
