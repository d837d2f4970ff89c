"""An error in one op ends `tsgen regen`, but never loses what the other ops had accepted: those are
written to generated/ before the error leaves the loop (with --jobs 1, and with ops in flight beside it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tensorsmith_forge.generator.loop import Regenerator
from tensorsmith_forge.generator.manifest import Manifest
from tensorsmith_forge.generator.project import Project
from tensorsmith_forge.generator.proposers import Task, TemplateProposer
from tensorsmith_forge.generator.render import Renderer
from tensorsmith_forge.validators.gate import Gate

ROOT = Path(__file__).resolve().parents[2]


class FailingFor(TemplateProposer):
    """The template proposer, except that starting `op` raises `error` (a bug, a ^C)."""

    def __init__(self, renderer: Renderer, op: str, error: BaseException) -> None:
        super().__init__(renderer)
        self.op, self.error = op, error

    def start(self, task: Task):
        if task.spec.name == self.op:
            raise self.error
        return super().start(task)


@pytest.mark.parametrize(
    ("jobs", "error"),
    [(1, RuntimeError("a bug in one op")), (2, RuntimeError("a bug in one op")), (1, KeyboardInterrupt())],
    ids=["jobs1", "jobs2", "interrupt"],
)
def test_an_error_in_one_op_keeps_what_the_others_accepted(checkout: Path, jobs: int, error: BaseException) -> None:
    # ceil comes before cos in plan order; both lose their CPU kernel file, so both must be regenerated.
    for op in ("ceil", "cos"):
        (checkout / "generated" / "cpu" / f"{op}.cpp").unlink()
    project = Project(checkout)
    gate = Gate(checkout, cache_dir=Path(os.environ.get("TSGEN_GATE_CACHE", ROOT / "build" / "gate")))
    proposer = FailingFor(Renderer(project.templates_dir), "cos", error)
    with pytest.raises(type(error)):
        Regenerator(project, gate, proposer=proposer).run(ops_glob="c[eo]*", device="cpu", jobs=jobs)
    assert (checkout / "generated" / "cpu" / "ceil.cpp").is_file()
    assert not (checkout / "generated" / "cpu" / "cos.cpp").exists()
    assert ("ceil", "cpu") in Manifest.load(checkout / "generated").kernel_records()
    assert not (checkout / "generated.new").exists() and not (checkout / "generated.old").exists()
