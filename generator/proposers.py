"""Proposers write kernel bodies. The loop does not care which one did.

A proposer gets a Task (the op, the device, the previous verdict when there
was one) and returns a Proposal: the body text that goes between the kernel
body markers of the op's translation-unit template. The template proposer is
deterministic and offline; Claude and outside authors plug in here.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import api, dest
from .model import OpSpec
from .render import Renderer


@dataclass(frozen=True)
class Task:
    spec: OpSpec
    device: str
    feedback: str | None = None  # the last rejection's verdict, for proposers that learn from it


@dataclass(frozen=True)
class Proposal:
    body: str
    proposer: str  # "template", "claude", "external", ...
    details: dict[str, object] = field(default_factory=dict)  # e.g. model, tokens; recorded in the manifest


class Proposer(Protocol):
    name: str

    def propose(self, task: Task) -> Proposal: ...


class TemplateProposer:
    """Fills the body from the family's body template and the spec's C++ fields."""

    name = "template"

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer

    def body_template(self, spec: OpSpec, device: str) -> str:
        return api.body_template_path(spec, device)

    def propose(self, task: Task) -> Proposal:
        template = self.body_template(task.spec, task.device)
        body = self.renderer.render(template, **dest.body_context(task.spec, task.device))
        return Proposal(body=body, proposer=self.name)


_BODY = re.compile(
    r"^[ \t]*// --- kernel body \(proposer: (?P<proposer>[\w-]+)\) ---\n(?P<body>.*?)^[ \t]*// --- end kernel body ---$",
    re.M | re.S,
)


def extract_body(source: str) -> tuple[str, str] | None:
    """(body, proposer) of a rendered kernel translation unit, or None when the markers are missing."""
    match = _BODY.search(source)
    if match is None:
        return None
    return textwrap.dedent(match["body"]), match["proposer"]


class StoredProposer:
    """Proposes the body generated/ already holds. A body that Claude or an outside author wrote
    cannot be re-derived from the spec, so when its template, the generator or the validators
    change, the same body is rendered and judged again instead of being replaced."""

    name = "stored"

    def __init__(self, generated_dir: Path) -> None:
        self.generated_dir = generated_dir

    def propose(self, task: Task) -> Proposal:
        path = self.generated_dir / api.kernel_path(task.spec, task.device)
        found = extract_body(path.read_text(encoding="utf-8")) if path.exists() else None
        if found is None:
            raise ValueError(f"{path} holds no kernel body to re-validate")
        body, proposer = found
        return Proposal(body=body, proposer=proposer)


class FixedProposer:
    """A body given from outside (`tsgen submit`): recorded as `external`."""

    name = "external"

    def __init__(self, body: str) -> None:
        self.body = body

    def propose(self, task: Task) -> Proposal:
        return Proposal(body=self.body, proposer=self.name)
