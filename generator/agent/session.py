"""One op's attempts with Claude: ask, hand the body to the loop's gate, feed the verdict back.

Stops on acceptance, the attempt limit, the wall-clock limit, the run's token or
dollar budget, a refusal, an API error that outlived every retry, or the same
failure twice in a row. A `max_tokens` stop is retried once with a larger
output budget. Only answers count as attempts: a stream that broke is sent
again (requester.py) under the same attempt number. Accepted bodies are cached
under build/agent/accepted/ by the hash of everything that determines them, so a
rerun (also after a killed run) never pays for an op twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tensorsmith_forge.catalog.files import write_atomic
from tensorsmith_forge.catalog.source_meaning import digest_files

from .. import api
from ..hashing import combine, sha256_text
from ..progress import Board
from ..proposers import (
    GaveUp,
    OneShotSession,
    Proposal,
    Session,
    StoredProposer,
    Task,
    ThenSession,
)
from ..render import Renderer
from .batches import BatchRequester, BatchRounds
from .budget import Budget, OverBudget
from .client import ApiError, MessagesClient, Reply
from .config import AgentConfig, Usage
from .conversation import Answer, Conversation, read_answer
from .requester import Requester
from .transcript import Transcript, stored_reply

if TYPE_CHECKING:
    from tensorsmith_forge.validators.gate import Verdict

NAME = "claude"


def prompt_version(templates_dir: Path) -> str:
    """The prompt templates and the code that turns them into requests."""
    here = Path(__file__).parent
    return combine({"templates": digest_files((templates_dir / "prompts").glob("*.j2"), templates_dir),
                    "code": digest_files([here / "conversation.py", here / "session.py"], here)})  # fmt: skip


class AcceptedCache:
    """Accepted proposals by key, one JSON file each, written atomically as soon as the gate accepts."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def load(self, key: str) -> Proposal | None:
        try:
            data = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
            return Proposal(data["body"], data["proposer"], data["details"], data["transcript"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: str, proposal: Proposal) -> None:
        data = {"body": proposal.body, "proposer": proposal.proposer, "details": proposal.details, "transcript": proposal.transcript}
        write_atomic(self.directory / f"{key}.json", json.dumps(data, sort_keys=True))


@dataclass(frozen=True)
class Settings:
    model: str
    max_attempts: int
    time_limit_s: float


class ClaudeProposer:
    name = NAME

    def __init__(self, *, client: MessagesClient, config: AgentConfig, settings: Settings, budget: Budget,
                 renderer: Renderer, task_text: Callable[[Task], str], stored: StoredProposer, work_dir: Path,
                 toolchain: str, board: Board, batch: BatchRounds | None = None, batch_followups: bool = True) -> None:  # fmt: skip
        self.config, self.settings, self.budget = config, settings, budget
        self.price = config.price(settings.model)
        self.requester = Requester(client, budget, self.price, config.limits)
        # --batch: first attempts (and follow-ups, unless --batch-followups=interactive) in batch rounds
        self.rounds = batch
        self.batch_followups = batch_followups
        self.batched = BatchRequester(batch, budget, config.price(settings.model, batch=True), config.limits) if batch else None
        self.renderer, self.task_text, self.stored = renderer, task_text, stored
        self.cache = AcceptedCache(work_dir / "accepted")
        self.log_dir = work_dir / "transcripts"
        self.board = board
        self.version = combine({"prompts": prompt_version(renderer.template_dir), "model": settings.model, "toolchain": toolchain})

    def key(self, task: Task) -> str:
        """Everything that determines an accepted body: the kernel's inputs (spec, templates, generator,
        runtime headers, validators), the prompt version, the model and the compiler."""
        return combine({"inputs": task.inputs_sha256, "device": task.device, "agent": self.version})

    def requester_for(self, attempt: int) -> Requester | BatchRequester:
        """Who asks the question of this attempt: a batch round, or the interactive API."""
        if self.batched is not None and (attempt == 1 or self.batch_followups):
            return self.batched
        return self.requester

    def start(self, task: Task) -> Session:
        cached = self.cache.load(self.key(task))
        if cached is not None:  # accepted before (maybe by a run that was killed later): no request
            self.board.update(f"{task.spec.name}.{task.device}", "cached body from an earlier run; re-judging it")
            return OneShotSession(lambda: cached)
        ask = lambda: ClaudeSession(self, task)  # noqa: E731
        if task.previous is not None and task.previous.proposer == NAME:
            return ThenSession(self.stored.start(task), ask)  # the body Claude wrote before may still pass
        return ask()


class ClaudeSession:
    def __init__(self, owner: ClaudeProposer, task: Task) -> None:
        self.owner, self.task = owner, task
        self.limits = owner.config.limits
        self.label = f"{task.spec.name}.{task.device}"
        self.transcript_path = api.transcript_path(task.spec, task.device)
        text = owner.task_text(task)
        self.conversation = Conversation(owner.renderer, owner.settings.model, task.spec.name, task.device, text)
        self.transcript = Transcript(owner.log_dir / f"{self.label}.jsonl")
        self.transcript.log("start", op=task.spec.name, device=task.device, model=owner.settings.model, agent_version=owner.version,
                            system=text, tools=self.conversation.tools, opening=self.conversation.opening)  # fmt: skip
        self.started = time.monotonic()
        self.batch_wait_s = 0.0  # waited for batch rounds: not part of the op's time limit
        self.attempt = 0
        self.usage = Usage()
        self.cost = 0.0
        self.pending: tuple[list, Answer] | None = None
        self.last_failure: tuple[str | None, str] | None = None

    # ---- the Session protocol

    def propose(self, rejection: Verdict | None) -> Proposal:
        if rejection is not None:
            assert self.pending is not None, "a rejection of a body this session did not propose"
            content, answer = self.pending
            self.transcript.log("verdict", attempt=self.attempt, accepted=False, stage=rejection.stage, message=rejection.message,
                                body_sha256=sha256_text(answer.body or ""))  # fmt: skip
            self._failed(content, answer, rejection.stage, rejection.message)
        while True:
            self._check_limits()
            reply = self._ask()
            self.attempt += 1
            answer = read_answer(reply.content)
            if answer.body is not None:
                self.pending = (reply.content, answer)
                return Proposal(answer.body, NAME, {"attempts": self.attempt})
            self.transcript.log("no_body", attempt=self.attempt, problem=answer.problem)
            self._failed(reply.content, answer, None, answer.problem or "")

    def accepted(self, proposal: Proposal, verdict: Verdict) -> Proposal:
        totals = self._totals()
        body_sha = sha256_text(proposal.body)
        self.transcript.log("verdict", attempt=self.attempt, accepted=True, stage=verdict.stage, message=verdict.message, body_sha256=body_sha)
        self.transcript.log("end", status="accepted", body_sha256=body_sha, **totals)
        self.transcript.close()
        final = replace(proposal, details={**totals, "transcript": self.transcript_path}, transcript=self.transcript.text())
        self.owner.cache.store(self.owner.key(self.task), final)
        return final

    # ---- steps

    def _failed(self, content: list, answer: Answer, stage: str | None, message: str) -> None:
        self.conversation.add(content, answer, self.attempt, stage, message)
        failure = (stage, message.strip())
        if failure == self.last_failure:
            self._give_up(f"the same failure twice in a row ({stage or 'no body'})")
        self.last_failure = failure

    def _check_limits(self) -> None:
        if self.attempt >= self.owner.settings.max_attempts:
            self._give_up(f"no accepted body in {self.attempt} attempts")
        elapsed = time.monotonic() - self.started - self.batch_wait_s
        if elapsed >= self.owner.settings.time_limit_s:
            self._give_up(f"the time limit of {self.owner.settings.time_limit_s:g} s is reached ({elapsed:.0f} s)")

    def _ask(self) -> Reply:
        """One answer; a `max_tokens` stop is asked again, once, with the larger output budget."""
        number = self.attempt + 1
        for max_tokens in (self.limits.max_tokens, self.limits.max_tokens_retry):
            request = self.conversation.request(max_tokens)
            requester = self.owner.requester_for(number)
            batched = requester is self.owner.batched
            self.transcript.log("request", attempt=number, max_tokens=max_tokens, message=request["messages"][-1],
                                **({"batched": True} if batched else {}))  # fmt: skip
            self.owner.board.update(self.label, f"attempt {number}: asking {self.owner.settings.model}" + (" in a batch round" if batched else ""))
            asked = time.monotonic()
            try:
                reply, cost = requester.ask(request, lambda error, usage, cost: self._fault(number, error, usage, cost))
            except ApiError as exc:
                self._give_up(f"API error: {exc}")
            except OverBudget as exc:
                self._give_up(str(exc))
            finally:
                if batched:
                    self.batch_wait_s += time.monotonic() - asked
            self._paid(reply.usage, cost)
            self.transcript.log("reply", attempt=number, **stored_reply(reply.content), stop_reason=reply.stop_reason,
                                stop_details=reply.stop_details, usage=reply.usage.as_dict(), cost_usd=round(cost, 6),
                                **({"batch": reply.batch_id} if reply.batch_id else {}))  # fmt: skip
            if reply.stop_reason not in ("refusal", "model_context_window_exceeded", "max_tokens"):
                return reply
            if reply.stop_reason != "max_tokens":
                self.attempt = number  # an answer came, even if it holds no body
                self._give_up("the model refused" + _details(reply.stop_details) if reply.stop_reason == "refusal"
                              else "the conversation outgrew the model's context window")  # fmt: skip
            self.transcript.log("max_tokens", attempt=number, max_tokens=max_tokens)
        self.attempt = number
        self._give_up(f"the answer did not fit in {self.limits.max_tokens_retry} output tokens")

    def _fault(self, number: int, error: str, usage: Usage, cost: float) -> None:
        """A stream that broke: paid for as far as it went, and not an attempt."""
        self._paid(usage, cost)
        self.transcript.log("stream_fault", attempt=number, error=error, usage=usage.as_dict(), cost_usd=round(cost, 6))
        self.owner.board.update(self.label, f"attempt {number}: {error}")

    def _paid(self, usage: Usage, cost: float) -> None:
        self.usage, self.cost = self.usage + usage, self.cost + cost
        self.owner.board.set_cost(self.owner.budget.usd)

    def _totals(self) -> dict[str, object]:
        return {"model": self.owner.settings.model, "attempts": self.attempt, "tokens": self.usage.as_dict(),
                "cost_usd": round(self.cost, 6), "wall_s": round(time.monotonic() - self.started, 1)}  # fmt: skip

    def _give_up(self, reason: str) -> None:
        self.transcript.log("end", status="gave up", reason=reason, **self._totals())
        self.transcript.close()
        raise GaveUp(f"(claude) gave up after {self.attempt} attempt(s), ${self.cost:.4f}: {reason}")


def _details(stop_details: dict | None) -> str:
    return f": {json.dumps(stop_details, sort_keys=True)}" if stop_details else ""
