"""Outside authors' submissions (`tsgen submit`): every attempt at a kernel body, rejected ones included,
with its author, note, the hash of the task it answered and the gate's verdict.

Rejected attempts wait in build/agent/submissions/OP.DEVICE.jsonl (generated/ changes only when a body is
accepted); the accepted attempt writes them all, itself last, as the kernel's transcript
(generated/transcripts/OP.DEVICE.jsonl), in the event format of Claude's transcripts: `start`, per attempt
`request` (task hash, note), `reply` (the body) and `verdict`, then `end` with the totals the manifest
records (author, attempts, wall_s). `tsgen regen --proposer replay` reads the accepted body back from it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorsmith_forge.catalog.files import write_atomic

from . import api
from .hashing import sha256_text
from .proposers import GaveUp, Proposal, Task

if TYPE_CHECKING:
    from tensorsmith_forge.validators.gate import Verdict

@dataclass(frozen=True)
class Attempt:
    author: str
    note: str
    task_sha256: str  # the `tsgen task` text the author answered
    body: str
    status: str  # "accepted" or "rejected"
    message: str  # the gate's verdict in one line (its stage and first failure)
    wall_s: float  # judging time


class SubmissionLog:
    """The rejected attempts at one kernel since its last accepted submission."""

    def __init__(self, build_dir: Path, op: str, device: str) -> None:
        self.path = build_dir / "agent" / "submissions" / f"{op}.{device}.jsonl"

    def pending(self) -> list[Attempt]:
        if not self.path.is_file():
            return []
        return [Attempt(**json.loads(line)) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def add(self, attempt: Attempt) -> None:
        lines = [json.dumps(asdict(a), sort_keys=True, ensure_ascii=False) for a in [*self.pending(), attempt]]
        write_atomic(self.path, "".join(line + "\n" for line in lines))

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def transcript(op: str, device: str, attempts: list[Attempt]) -> str:
    """The JSONL transcript of the attempts, the last one accepted."""
    events: list[dict[str, Any]] = [{"event": "start", "proposer": "external", "op": op, "device": device}]
    for number, a in enumerate(attempts, start=1):
        events.append({"event": "request", "attempt": number, "author": a.author, "note": a.note, "task_sha256": a.task_sha256})
        events.append({"event": "reply", "attempt": number, "body": a.body})
        events.append({"event": "verdict", "attempt": number, "status": a.status, "message": a.message, "wall_s": a.wall_s})
    last = attempts[-1]
    events.append({"event": "end", "status": "accepted", "proposer": "external", "author": last.author, "attempts": len(attempts),
                   "wall_s": round(sum(a.wall_s for a in attempts), 1), "body_sha256": sha256_text(last.body)})  # fmt: skip
    return "".join(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n" for e in events)


class SubmittedProposer:
    """A body an outside author gives: recorded as `external`, with the author, every attempt that led to it
    (the log's rejected ones first) and their judging time."""

    name = "external"

    def __init__(self, body: str, author: str, note: str, task_sha256: str, log: SubmissionLog) -> None:
        self.body, self.author, self.note, self.task_sha256, self.log = body, author, note, task_sha256, log
        self.started: float | None = None

    def start(self, task: Task) -> SubmittedSession:
        return SubmittedSession(self, task)

    def attempt(self, status: str, message: str) -> Attempt:
        wall = time.monotonic() - self.started if self.started is not None else 0.0
        return Attempt(self.author, self.note, self.task_sha256, self.body, status, message, round(wall, 1))


class SubmittedSession:
    def __init__(self, proposer: SubmittedProposer, task: Task) -> None:
        self.proposer, self.task = proposer, task
        self.proposed = False

    def propose(self, rejection: Verdict | None) -> Proposal:
        if self.proposed:
            raise GaveUp(f"(external) {rejection.summary() if rejection else 'no further proposal'}")
        self.proposed = True
        self.proposer.started = time.monotonic()
        return Proposal(body=self.proposer.body, proposer="external", details={"author": self.proposer.author})

    def accepted(self, proposal: Proposal, verdict: Verdict) -> Proposal:
        attempts = [*self.proposer.log.pending(), self.proposer.attempt("accepted", verdict.summary())]
        text = transcript(self.task.spec.name, self.task.device, attempts)
        details = {"author": self.proposer.author, "attempts": len(attempts),
                   "wall_s": round(sum(a.wall_s for a in attempts), 1), "transcript": api.transcript_path(self.task.spec, self.task.device)}  # fmt: skip
        return Proposal(body=proposal.body, proposer="external", details=details, transcript=text)
