"""Proposers write kernel bodies. The loop does not care which one did.

A proposer gets a Task (the op, the device, the previous verdict when there
was one) and returns a Proposal: the body text that goes between the kernel
body markers of the op's translation-unit template. The template proposer is
deterministic and offline; Claude and outside authors plug in here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
