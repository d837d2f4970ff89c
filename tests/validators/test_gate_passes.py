"""The gate's passes and their inputs: engine limits read from the runtime's header, runs per case, fresh fill
seeds per run, and the salt from the environment. (What the passes catch is tests/known_bad/'s business.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.validators import gate, inputs, passes
from tensorsmith_forge.validators.build import Toolchain
from tensorsmith_forge.validators.engine_limits import HEADER, read_limits

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)


def test_engine_limits_follow_the_header(tmp_path: Path) -> None:
    """Change a constant in (a copy of) tensorsmith/engine_limits.h and the gate's limits change with it."""
    compiler = Toolchain.find().compiler
    limits = read_limits(ROOT, compiler, tmp_path / "cache")
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "runtime" / "include", copy / "runtime" / "include")
    header = copy / HEADER
    text = header.read_text(encoding="utf-8")
    assert "kSplitChunk = int64_t{1} << 15" in text
    header.write_text(text.replace("kSplitChunk = int64_t{1} << 15", "kSplitChunk = int64_t{1} << 13"), encoding="utf-8")
    changed = read_limits(copy, compiler, tmp_path / "cache")
    assert changed.split_chunk == 1 << 13 and limits.split_chunk != changed.split_chunk
    assert changed.split_max_rows == limits.split_max_rows
    whole, split, *_ = inputs.threshold_cases(CATALOG.op("sum"), "int32", salt=b"s", limits=changed)
    assert split.operands[0].shape[1] > 3 * (1 << 13) and split.operands[0].shape[1] < 3 * (1 << 16)


def test_release_runs_every_check_but_on_threshold_cases() -> None:
    cases = inputs.generate_cases(CATALOG.op("add"), "float32", salt=b"s", hidden=True)
    large = inputs.threshold_cases(CATALOG.op("add"), "float32", salt=b"s", limits=_limits())
    assert passes.RELEASE.runs(large[0]) == ("a", "raw")
    several = next(c for c in cases if c.size > 100)
    assert set(passes.RELEASE.runs(several)) == {"a", "b", "c", "a2", "raw"}
    scalar = next(c for c in cases if c.size == 2)  # two 0-d operands: value set c would be a or b
    assert "c" not in passes.RELEASE.runs(scalar)
    assert passes.RELEASE_SERIAL.runs(several) == ("g",) and passes.RELEASE_SERIAL.takes(large[0])
    assert not passes.SANITIZE.takes(large[0]) and passes.SANITIZE.takes(several)
    hidden = [c for c in cases if c.hidden and c.size <= passes.SANITIZER_CASE_LIMIT]
    assert hidden and all(passes.SANITIZE.takes(c) for c in hidden)


def test_every_run_gets_fresh_fill_bytes_but_raw() -> None:
    first, second = passes.RELEASE.plan("cpu", False), passes.RELEASE.plan("cpu", False)
    assert first["fills"]["raw"] is None
    seeds = [first["fills"][run] for run in ("a", "b", "c", "a2", "g")]
    assert len(set(seeds)) == len(seeds) and all(isinstance(s, int) for s in seeds)
    assert first["fills"]["a"] != second["fills"]["a"] and first["scrub"] != second["scrub"]
    env = passes.RELEASE_SERIAL.env(_limits())
    assert env["TS_NUM_THREADS"] == "1" and int(env["TS_STREAM_MIN_BYTES"]) > 1 << 40 and env["TS_ISA"]
    assert int(passes.RELEASE.env(_limits())["TS_NUM_THREADS"]) > 1


def test_salt_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = "ab" * 32
    monkeypatch.setenv("TSGEN_GATE_SALT", secret)
    assert gate.Gate(ROOT, cache_dir=tmp_path).salt == bytes.fromhex(secret)
    assert not (tmp_path / "salt").exists()  # nothing written where a reader could find it
    monkeypatch.setenv("TSGEN_GATE_SALT", "not-hex-SECRETVALUE")
    with pytest.raises(ValueError, match="32 hexadecimal digits") as raised:
        _ = gate.Gate(ROOT, cache_dir=tmp_path).salt
    assert "SECRETVALUE" not in str(raised.value)
    monkeypatch.delenv("TSGEN_GATE_SALT")
    drawn = gate.Gate(ROOT, cache_dir=tmp_path).salt
    assert len(drawn) == 32 and bytes.fromhex((tmp_path / "salt").read_text()) == drawn
    assert gate.Gate(ROOT, cache_dir=tmp_path).salt == drawn  # one per machine


def _limits():
    return read_limits(ROOT, Toolchain.find().compiler, ROOT / "build" / "gate")


def test_a_stage_that_raises_rejects_the_candidate_and_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug of the gate's own (cases it cannot make for a new family's op) rejects that candidate with the reason,
    # and a regeneration goes on to the next op instead of ending in a traceback; the verdict is not cached.
    judge = gate.Gate(ROOT, cache_dir=tmp_path, stages=("static",))
    spec = CATALOG.op("negative")

    def broken(*_args: object) -> None:
        raise KeyError("no such case table")

    monkeypatch.setattr(gate.Gate, "_static", broken)
    candidate = gate.Candidate(spec, "cpu", "return x;", "", "", "test")
    verdict = judge.judge(candidate)
    assert not verdict.accepted and verdict.stage == "static"
    assert "the gate could not judge it (KeyError: 'no such case table'); treated as a rejection" in verdict.message
    assert verdict.report["harness_error"] and not list((tmp_path / "verdicts").glob("*.json"))
