"""Outside authors through `tsgen tasks` / `tsgen submit`: every attempt recorded (rejected ones included) in
the kernel's transcript, the author and attempts in MANIFEST.json and `tsgen ops`, only the named device
touched, and the body read back from the transcript by a replay."""

from __future__ import annotations

import json
from pathlib import Path

from tensorsmith_forge.generator.agent.transcript import accepted_body
from tensorsmith_forge.generator.submissions import Attempt, SubmissionLog, transcript

KNOWN_BAD = Path(__file__).resolve().parents[1] / "known_bad"
# A correct body for `negative`, a strided loop as an outside author might write it.
NEGATIVE = """for (int64_t i = 0; i < n; ++i) {
  const compute_t x = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::negative(x));
}
"""


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
    cuda_before = (generated / "cuda" / "negative.cu").read_bytes()
    cpu_before = (generated / "cpu" / "negative.cpp").read_bytes()
    # A cheap op to judge (argsort's translation unit takes the gate minutes to compile): the corpus's body that
    # loses the sign of zero, then the same loop without its mistake.
    good = checkout / "good.cpp"
    good.write_text(NEGATIVE, encoding="utf-8")

    queue = tsgen(checkout, "tasks")
    assert queue.returncode == 0 and "0 kernel(s) need an author" in queue.stdout, queue.stdout

    missing = tsgen(checkout, "submit", "negative", str(good))
    assert missing.returncode != 0 and "--author" in missing.stderr  # provenance is not optional

    bad = tsgen(checkout, "submit", "negative", str(KNOWN_BAD / "negative_as_zero_minus.cpp"), "--author", "A. Author", "--no-build")
    assert bad.returncode == 1 and "rejected: generated/ is unchanged (attempt 1 by A. Author recorded)" in bad.stdout, bad.stdout
    assert (generated / "cpu" / "negative.cpp").read_bytes() == cpu_before

    ok = tsgen(checkout, "submit", "negative", str(good), "--author", "A. Author", "--note", "second try", "--no-build")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "provenance: external, A. Author, 2 attempt(s)" in ok.stdout
    assert (generated / "cuda" / "negative.cu").read_bytes() == cuda_before  # only the named device

    record = json.loads((generated / "MANIFEST.json").read_text(encoding="utf-8"))["outputs"]["cpu/negative.cpp"]
    assert record["proposer"] == "external"
    assert record["author"] == "A. Author" and record["attempts"] == 2 and record["transcript"] == "transcripts/negative.cpu.jsonl"
    events = [json.loads(line) for line in (generated / "transcripts" / "negative.cpu.jsonl").read_text(encoding="utf-8").splitlines()]
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert [v["status"] for v in verdicts] == ["rejected", "accepted"]
    assert "differential" in verdicts[0]["message"]
    assert [e["note"] for e in events if e["event"] == "request"] == ["", "second try"]

    ops = {row["op"]: row for row in json.loads(tsgen(checkout, "ops", "--json").stdout)}
    assert ops["negative"]["provenance"]["cpu"]["author"] == "A. Author"
    assert ops["negative"]["provenance"]["cpu"]["attempts"] == 2

    replay = tsgen(checkout, "regen", "--proposer", "replay", "--ops", "negative", "--device", "cpu", "--no-build")
    assert replay.returncode == 0 and "accepted (external" in replay.stdout, replay.stdout + replay.stderr
    assert tsgen(checkout, "regen", "--check").returncode == 0
