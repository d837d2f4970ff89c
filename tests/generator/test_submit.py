"""Outside authors through `tsgen tasks` / `tsgen submit`: every attempt recorded (rejected ones included) in
the kernel's transcript, the author and attempts in MANIFEST.json and `tsgen ops`, only the named device
touched, and the body read back from the transcript by a replay."""

from __future__ import annotations

import json
from pathlib import Path

from tensorsmith_forge.generator.agent.transcript import accepted_body
from tensorsmith_forge.generator.submissions import Attempt, SubmissionLog, transcript

KNOWN_BAD = Path(__file__).resolve().parents[1] / "known_bad"


def _attempt(body: str, status: str) -> Attempt:
    return Attempt("an author", "a note", "0" * 64, body, status, status, 1.5)


def test_transcript_records_every_attempt_and_reads_back_the_accepted_body() -> None:
    attempts = [_attempt("return a <= b;\n", "rejected"), _attempt("return a < b;\n", "accepted")]
    text = transcript("argsort", "cpu", attempts)
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["event"] for e in events] == ["start"] + ["request", "reply", "verdict"] * 2 + ["end"]
    assert [e["body"] for e in events if e["event"] == "reply"] == ["return a <= b;\n", "return a < b;\n"]
    body, totals = accepted_body(text)
    assert body == "return a < b;\n"
    assert totals == {"attempts": 2, "wall_s": 3.0, "author": "an author", "proposer": "external"}


def test_the_log_keeps_rejected_attempts_until_one_is_accepted(tmp_path: Path) -> None:
    log = SubmissionLog(tmp_path, "sort", "cuda")
    assert log.pending() == []
    log.add(_attempt("one", "rejected"))
    log.add(_attempt("two", "rejected"))
    assert [a.body for a in SubmissionLog(tmp_path, "sort", "cuda").pending()] == ["one", "two"]
    assert SubmissionLog(tmp_path, "sort", "cpu").pending() == []  # per kernel
    log.clear()
    assert log.pending() == []


def test_submit_records_a_rejected_then_an_accepted_attempt(checkout: Path, tsgen) -> None:
    generated = checkout / "generated"
    cuda_before = (generated / "cuda" / "argsort.cu").read_bytes()
    cpu_before = (generated / "cpu" / "argsort.cpp").read_bytes()
    good = checkout / "good.cpp"
    # a good body: the one the catalog's own argsort kernel was accepted with (its transcript's)
    good.write_text(accepted_body((generated / "transcripts" / "argsort.cpu.jsonl").read_text(encoding="utf-8"))[0], encoding="utf-8")

    queue = tsgen(checkout, "tasks")
    assert queue.returncode == 0 and "0 kernel(s) need an author" in queue.stdout, queue.stdout

    missing = tsgen(checkout, "submit", "argsort", str(good))
    assert missing.returncode != 0 and "--author" in missing.stderr  # provenance is not optional

    bad = tsgen(checkout, "submit", "argsort", str(KNOWN_BAD / "argsort_less_or_equal.cpp"), "--author", "A. Author", "--no-build")
    assert bad.returncode == 1 and "rejected: generated/ is unchanged (attempt 1 by A. Author recorded)" in bad.stdout, bad.stdout
    assert (generated / "cpu" / "argsort.cpp").read_bytes() == cpu_before

    ok = tsgen(checkout, "submit", "argsort", str(good), "--author", "A. Author", "--note", "second try", "--no-build")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "provenance: external, A. Author, 2 attempt(s)" in ok.stdout
    assert (generated / "cuda" / "argsort.cu").read_bytes() == cuda_before  # only the named device

    record = json.loads((generated / "MANIFEST.json").read_text(encoding="utf-8"))["outputs"]["cpu/argsort.cpp"]
    assert record["proposer"] == "external"
    assert record["author"] == "A. Author" and record["attempts"] == 2 and record["transcript"] == "transcripts/argsort.cpu.jsonl"
    events = [json.loads(line) for line in (generated / "transcripts" / "argsort.cpu.jsonl").read_text(encoding="utf-8").splitlines()]
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert [v["status"] for v in verdicts] == ["rejected", "accepted"]
    assert "differential" in verdicts[0]["message"]
    assert [e["note"] for e in events if e["event"] == "request"] == ["", "second try"]

    ops = {row["op"]: row for row in json.loads(tsgen(checkout, "ops", "--json").stdout)}
    assert ops["argsort"]["provenance"]["cpu"]["author"] == "A. Author"
    assert ops["argsort"]["provenance"]["cpu"]["attempts"] == 2

    replay = tsgen(checkout, "regen", "--proposer", "replay", "--ops", "argsort", "--device", "cpu", "--no-build")
    assert replay.returncode == 0 and "accepted (external" in replay.stdout, replay.stdout + replay.stderr
    assert tsgen(checkout, "regen", "--check").returncode == 0
