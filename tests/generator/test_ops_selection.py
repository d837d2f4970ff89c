"""`--ops GLOB` that matches no op is an error in every command that takes it, with the same one-line
message and a non-zero exit, and nothing is changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_tsgen, tree_hashes, tsgen_env

COMMANDS = [
    pytest.param(("regen", "--no-build"), id="regen"),
    pytest.param(("regen", "--check"), id="regen-check"),
    pytest.param(("regen", "--proposer", "replay", "--no-build"), id="regen-replay"),
    pytest.param(("regen", "--proposer", "claude", "--no-build"), id="regen-claude"),
    pytest.param(("validate",), id="validate"),
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_selection_of_nothing_is_an_error(checkout: Path, command: tuple[str, ...]) -> None:
    before = tree_hashes(checkout)
    # A key, so the claude proposer gets as far as the selection; there is no API to reach.
    env = tsgen_env(checkout, ANTHROPIC_API_KEY="sk-ant-test-unused", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    result = run_tsgen(checkout, *command, "--ops", "nosuchop*", env=env)
    assert result.returncode == 2
    assert result.stderr == "tsgen: error: no op matches 'nosuchop*' (see `tsgen ops`)\n"
    assert result.stdout == ""
    assert tree_hashes(checkout) == before


def test_a_selection_that_matches_runs(checkout: Path) -> None:
    result = run_tsgen(checkout, "regen", "--no-build", "--ops", "ce*")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 of" in result.stdout and "generated/: no file changed" in result.stdout


def test_validate_writes_its_json_report(checkout: Path, tmp_path: Path) -> None:
    """Each verdict's report, written as the run goes (a device check cut short keeps what was judged)."""
    report = tmp_path / "gate.json"
    result = run_tsgen(checkout, "validate", "--ops", "ceil", "--device", "cpu", "--json", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert list(data) == ["ceil.cpu"] and data["ceil.cpu"]["verdict"]["accepted"] is True
    assert data["ceil.cpu"]["op"] == "ceil" and "release" in data["ceil.cpu"]
