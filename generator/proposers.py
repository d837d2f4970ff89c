"""Proposers write kernel bodies. The loop does not care which one did.

A proposer gets a Task (the op, the device, what generated/ holds for it now)
and starts a Session. The loop asks the session for a Proposal (the body text
that goes between the kernel body markers of the op's translation-unit
template), has the gate judge it, and hands a rejection back; the session
proposes again or gives up (GaveUp). Most proposers have one body to offer
(OneShotProposer); the Claude proposer (generator/agent/) learns from each
rejection.
"""

from __future__ import annotations

import re
import textwrap
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tensorsmith_forge.catalog.model import OpSpec

from . import api, dest
from .manifest import OutputRecord
from .render import Renderer
from .writer import read_text

if TYPE_CHECKING:
    from tensorsmith_forge.validators.gate import Verdict


@dataclass(frozen=True)
class Task:
    spec: OpSpec
    device: str
    inputs_sha256: str = ""  # everything that determines the kernel file (the plan's key)
    previous: OutputRecord | None = None  # what generated/ holds for this op now


@dataclass(frozen=True)
class Proposal:
    body: str
    proposer: str  # "template", "claude", "external", ...
    details: dict[str, object] = field(default_factory=dict)  # e.g. model, attempts, cost; recorded in the manifest
    transcript: str | None = None  # JSONL: how the body came to be (Claude); stored under generated/transcripts/

    @property
    def attempt(self) -> int:
        """Which of its proposer's attempts the body is (a model's answer number; 1 where details count
        none): the number the progress board shows and, once accepted, the manifest's `attempts`."""
        return int(self.details.get("attempts", 1))  # type: ignore[call-overload]


class GaveUp(Exception):
    """A session has no further body to propose; the message says why, in one line."""


class Session(Protocol):
    def propose(self, rejection: Verdict | None) -> Proposal:
        """The next body; `rejection` is the gate's verdict on the previous one (None at first). Raises GaveUp."""
        ...

    def accepted(self, proposal: Proposal, verdict: Verdict) -> Proposal:
        """The accepted proposal as it is recorded (final attempt count, cost, transcript)."""
        ...


class Proposer(Protocol):
    name: str

    def start(self, task: Task) -> Session: ...


class Rounds(Protocol):
    """What a proposer's sessions wait for when their questions are answered in rounds for the whole run
    (Claude with --batch): the loop opens the run's ops, says when each one ends, and closes the rounds."""

    def open(self, ops: int) -> None: ...

    def leave(self) -> None: ...

    def close(self) -> None: ...


def rounds_of(proposer: Proposer) -> Rounds | None:
    """The rounds a proposer's sessions wait for (its `rounds` attribute), or None: a session asks alone."""
    return getattr(proposer, "rounds", None)


class OneShotProposer(ABC):
    """A proposer with exactly one body per task: a rejection ends its session."""

    name: str

    @abstractmethod
    def propose(self, task: Task) -> Proposal: ...

    def start(self, task: Task) -> Session:
        return OneShotSession(lambda: self.propose(task))


class OneShotSession:
    def __init__(self, make: Callable[[], Proposal]) -> None:
        self.make = make
        self.proposal: Proposal | None = None

    def propose(self, rejection: Verdict | None) -> Proposal:
        if self.proposal is not None:
            raise GaveUp(f"({self.proposal.proposer}) {rejection.summary() if rejection else 'no further proposal'}")
        self.proposal = self.make()
        return self.proposal

    def accepted(self, proposal: Proposal, verdict: Verdict) -> Proposal:
        return proposal


class ThenSession:
    """Tries the first session's bodies, and starts the second only when the first gives up: e.g. a
    stored Claude body is re-judged before Claude is asked (and paid) for a new one."""

    def __init__(self, first: Session, then: Callable[[], Session]) -> None:
        self.current, self.then, self.switched = first, then, False

    def propose(self, rejection: Verdict | None) -> Proposal:
        try:
            return self.current.propose(rejection)
        except GaveUp:
            if self.switched:
                raise
            self.current, self.switched = self.then(), True
            return self.current.propose(None)

    def accepted(self, proposal: Proposal, verdict: Verdict) -> Proposal:
        return self.current.accepted(proposal, verdict)


class TemplateProposer(OneShotProposer):
    """Fills the body from the family's body template and the spec's C++ fields."""

    name = "template"

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer

    def body_template(self, spec: OpSpec, device: str) -> str:
        return api.body_template_path(spec, device)

    def has_template(self, spec: OpSpec, device: str) -> bool:
        return (self.renderer.template_dir / self.body_template(spec, device)).is_file()

    def propose(self, task: Task) -> Proposal:
        if task.spec.proposer != self.name:
            raise GaveUp(f"{task.spec.path} asks for the {task.spec.proposer} proposer: run `tsgen regen --proposer {task.spec.proposer}`")
        if not self.has_template(task.spec, task.device):
            raise GaveUp(f"no body template for the {task.spec.family.name} family on {task.device}: run `tsgen regen --proposer claude`")
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


class StoredProposer(OneShotProposer):
    """Proposes the body generated/ already holds. A body that Claude or an outside author wrote
    cannot be re-derived from the spec, so when its template, the generator or the validators
    change, the same body is rendered and judged again instead of being replaced. Its provenance
    (model, attempts, cost, transcript) stays with it."""

    name = "stored"

    def __init__(self, generated_dir: Path) -> None:
        self.generated_dir = generated_dir

    def propose(self, task: Task) -> Proposal:
        path = self.generated_dir / api.kernel_path(task.spec, task.device)
        found = extract_body(path.read_text(encoding="utf-8")) if path.exists() else None
        if found is None:
            raise ValueError(f"{path} holds no kernel body to re-validate")
        body, proposer = found
        previous = task.previous
        details = dict(previous.details) if previous is not None and previous.proposer == proposer else {}
        return Proposal(body=body, proposer=proposer, details=details, transcript=stored_transcript(self.generated_dir, details))


def stored_transcript(generated_dir: Path, details: dict[str, object]) -> str | None:
    """The transcript a kernel's record points at, as generated/ holds it (None without one)."""
    transcript = details.get("transcript")
    return read_text(generated_dir / str(transcript)) if transcript else None


