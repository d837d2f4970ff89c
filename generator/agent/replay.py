"""`tsgen regen --proposer replay`: the bodies Claude or outside authors wrote, read back from their transcripts
under generated/transcripts/ and judged again, with no network."""

from __future__ import annotations

from pathlib import Path

from .. import api
from ..proposers import GaveUp, OneShotProposer, Proposal, Task
from .transcript import TranscriptError, accepted_body


class ReplayProposer(OneShotProposer):
    name = "replay"

    def __init__(self, generated_dir: Path) -> None:
        self.generated_dir = generated_dir

    def has_transcript(self, task: Task) -> bool:
        return (self.generated_dir / api.transcript_path(task.spec, task.device)).is_file()

    def propose(self, task: Task) -> Proposal:
        relative = api.transcript_path(task.spec, task.device)
        try:
            text = (self.generated_dir / relative).read_text(encoding="utf-8")
            body, totals = accepted_body(text)
        except (OSError, TranscriptError) as exc:
            raise GaveUp(f"(replay) generated/{relative}: {exc}") from None
        # The author stays the one the transcript names (Claude, or an outside author's `tsgen submit`): a
        # replay re-validates, it writes nothing new.
        proposer = str(totals.pop("proposer", "claude"))
        return Proposal(body, proposer, {**totals, "transcript": relative}, text)
