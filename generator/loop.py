"""The regeneration loop: plan -> propose -> render -> compile -> check -> accept.

Planning hashes everything that determines an op's kernel file; an op whose
hash matches the manifest (and whose file is untouched) is skipped. Every
other op goes to the proposer, its body is rendered into the family's
translation-unit template, and the gate judges the candidate. Only accepted
candidates reach generated/; an op whose candidate is rejected keeps its
previous accepted file, or stays out of the runtime if it never had one.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from tensorsmith_forge.catalog.model import Catalog, OpSpec, load_catalog
from tensorsmith_forge.catalog.source_meaning import digest_files
from tensorsmith_forge.validators.gate import (
    Candidate,
    Gate,
    Verdict,
    engine_sources,
    included_headers,
)

from . import api, dest, writer
from .agent.replay import ReplayProposer
from .errors import GeneratorError
from .formatting import Formatter
from .hashing import combine, sha256_text
from .manifest import MANIFEST_NAME, Manifest, OutputRecord
from .progress import Board
from .project import Project
from .proposers import (
    GaveUp,
    Proposal,
    Proposer,
    Rounds,
    StoredProposer,
    Task,
    TemplateProposer,
    extract_body,
    rounds_of,
    stored_transcript,
)
from .render import Renderer

SHARED_TEMPLATES = {
    "registration.cpp": "registration.cpp.j2",
    "bindings.cpp": "bindings.cpp.j2",
    "sources.cmake": "sources.cmake.j2",
    "python/_C.pyi": "python/_C.pyi.j2",
    "python/_derivatives.py": "python/_derivatives.py.j2",
}
SHARED_CONTEXTS = {
    "registration.cpp": dest.registration_context,
    "bindings.cpp": dest.bindings_context,
    "sources.cmake": dest.sources_context,
    "python/_C.pyi": dest.stub_context,
    "python/_derivatives.py": dest.derivatives_context,
}
# Generator modules whose code determines generated text (the CLI, build and I/O helpers do not).
OUTPUT_MODULES = ("api.py", "dest.py", "formatting.py", "loop.py", "manifest.py", "proposers.py", "render.py")


def catalog_files(root: Path) -> list[Path]:
    """The spec model and the families: what specs mean, for the generator and the gate alike."""
    return sorted((root / "catalog").rglob("*.py"))


def validator_files(root: Path) -> list[Path]:
    """The gate's version: its code, the C++ of its harness module, and the catalog it reads specs with."""
    return sorted([*(root / "validators").glob("*.py"), *(root / "validators" / "csrc").glob("*"), *catalog_files(root)])


# The runtime headers a kernel translation unit sees (what the kernel templates include, and what those include;
# tests/generator/test_regen.py checks the list against the #include lines).
# The kernel templates (and bodies) of both devices: the runtime headers they include, transitively, are
# what a generated translation unit depends on (a new family's machinery header is found, never listed).
KERNEL_TEMPLATE_GLOBS = ("cpu/*.j2", "cuda/*.j2", "cpu/bodies/*.j2", "cuda/bodies/*.j2")


def kernel_headers(templates_dir: Path, include_dir: Path) -> list[Path]:
    """The runtime headers a generated kernel translation unit includes, directly or not."""
    templates = [path.read_bytes() for pattern in KERNEL_TEMPLATE_GLOBS for path in sorted(templates_dir.glob(pattern))]
    return included_headers(templates, include_dir)
COMMENT = {".cpp": "//", ".cu": "//", ".cmake": "#", ".pyi": "#", ".py": "#"}


@dataclass(frozen=True)
class KernelPlan:
    spec: OpSpec
    device: str
    path: str  # relative to generated/
    inputs: dict[str, str]
    inputs_sha256: str
    previous: OutputRecord | None
    on_disk: str | None  # current file contents
    reason: str | None  # why it must be regenerated; None when up to date

    @property
    def label(self) -> str:
        return f"{self.spec.name}.{self.device}"


@dataclass(frozen=True)
class KernelResult:
    plan: KernelPlan
    status: str  # "up to date", "accepted", "rejected", "not selected"
    message: str
    record: OutputRecord | None  # the record of the file that ends up in generated/, if any
    content: str | None
    transcript: str | None = None  # how a model wrote the body (generated/transcripts/), if one did


@dataclass(frozen=True)
class RegenReport:
    results: list[KernelResult]
    diff: writer.Diff
    checked_only: bool

    @property
    def rejected(self) -> list[KernelResult]:
        return [r for r in self.results if r.status == "rejected"]


Progress = Callable[[str], None]
# What the board shows while the gate runs a stage.
STAGE_STATES = {"static": "compiling", "compile": "compiling", "symbols": "compiling", "differential": "testing",
                "sanitizers": "testing under sanitizers"}  # fmt: skip


class Regenerator:
    def __init__(self, project: Project, gate: Gate, proposer: Proposer | None = None,
                 progress: Progress = lambda _line: None, board: Board | None = None) -> None:  # fmt: skip
        self.project = project
        self.renderer = Renderer(project.templates_dir)
        self.template_proposer = TemplateProposer(self.renderer)
        self.stored_proposer = StoredProposer(project.generated_dir)
        self.replay_proposer = ReplayProposer(project.generated_dir)
        self.proposer = proposer or self.template_proposer
        self.gate = gate
        self.progress = progress
        self.board = board  # per-op states (attempts, compiling, testing); else one progress line per op
        self.formatter = Formatter(project.root)
        self._judging = threading.BoundedSemaphore(1)  # judgements at once: --jobs, set by run()

    # ---- planning

    def _generator_sha(self) -> str:
        """The generator's version: a hash of the modules that shape generated text."""
        modules = [self.project.generator_dir / name for name in OUTPUT_MODULES]
        return digest_files([*modules, *catalog_files(self.project.root)], self.project.root)

    def plan(self, catalog: Catalog, manifest: Manifest, force: bool) -> list[KernelPlan]:
        generator_sha = self._generator_sha()
        # By meaning (catalog/source_meaning.py): a comment or a reformatting makes no kernel stale.
        headers_sha = digest_files(kernel_headers(self.project.templates_dir, self.project.include_dir), self.project.root)
        validators_sha = digest_files(validator_files(self.project.root), self.project.root)
        engine_sha = {device: digest_files(engine_sources(self.project.root, device), self.project.root) for device in api.DEVICES}
        formatting_sha = self.formatter.fingerprint()
        records = manifest.kernel_records()
        plans = []
        for spec in catalog.ops:
            for device in api.DEVICES:
                template = api.template_path(spec, device)
                inputs = {
                    spec.path: sha256_text(spec.kernel_text),  # derivatives change no kernel
                    f"templates/{template}": sha256_text(self.renderer.source(template)),
                    "generator": generator_sha,
                    "runtime_headers": headers_sha,
                    "runtime_engine": engine_sha[device],
                    "validators": validators_sha,  # a new gate re-judges every kernel
                    "formatting": formatting_sha,
                }
                if self.template_proposer.has_template(spec, device):  # a family may have no body template
                    body_template = self.template_proposer.body_template(spec, device)
                    inputs[f"templates/{body_template}"] = sha256_text(self.renderer.source(body_template))
                path = api.kernel_path(spec, device)
                previous = records.get((spec.name, device))
                on_disk = writer.read_text(self.project.generated_dir / path)
                key = combine(inputs)
                reason = _stale_reason(previous, on_disk, inputs, key, force)
                plans.append(KernelPlan(spec, device, path, inputs, key, previous, on_disk, reason))
        return plans

    # ---- the loop

    def run(self, ops_glob: str | None = None, force: bool = False, jobs: int = 1, check: bool = False,
            device: str | None = None) -> RegenReport:  # fmt: skip
        catalog = load_catalog(self.project.root)
        if ops_glob is not None:
            matching_ops(catalog, ops_glob)  # a selection of nothing is a mistake, not an empty run
        manifest = Manifest.load(self.project.generated_dir)
        plans = self.plan(catalog, manifest, force)
        routed = [self._routed(p) for p in plans if self._selected(p, ops_glob, device)]
        todo = [p for p in routed if p.reason is not None]
        results = {p.label: self._keep(p, "up to date" if p.reason is None else "not selected") for p in plans}
        if check:  # what a regeneration would write, rendered but not compiled or judged
            for p in routed:
                result = self._render_only(p)
                if result is not None:
                    results[p.label] = result
            ordered = [results[p.label] for p in plans]
            return RegenReport(ordered, writer.diff(self.project.generated_dir, self._outputs(catalog, ordered)), checked_only=True)
        self.progress(f"{len(todo)} of {len(plans)} kernels to regenerate ({len(plans) - len(todo)} up to date)")
        self._judging = threading.BoundedSemaphore(jobs)
        try:
            for done, result in enumerate(self._work(todo, jobs), start=1):
                results[result.plan.label] = result
                self.progress(f"[{done}/{len(todo)}] {result.plan.path}: {result.status} {result.message}".rstrip())
        except BaseException:  # an op's error, or ^C: what the other ops had accepted is written first
            self._write(catalog, [results[p.label] for p in plans])
            raise
        ordered = [results[p.label] for p in plans]
        return RegenReport(ordered, self._write(catalog, ordered), checked_only=False)

    def _write(self, catalog: Catalog, ordered: list[KernelResult]) -> writer.Diff:
        return writer.write(self.project.generated_dir, self._outputs(catalog, ordered))

    # ---- routing: which ops this run's proposer takes

    def _selected(self, plan: KernelPlan, ops_glob: str | None, device: str | None) -> bool:
        """--ops names ops explicitly; without it, Claude takes the ops whose spec asks for it (or whose
        family has no body template) and replay takes the ops that have a transcript."""
        if device is not None and plan.device != device:
            return False
        if ops_glob is not None:
            return fnmatch.fnmatchcase(plan.spec.name, ops_glob)
        if self.proposer.name == "claude":  # template-less kernels only where no accepted body is current
            authored_elsewhere = plan.previous is not None and plan.reason is None
            return plan.spec.proposer == "claude" or (not self.template_proposer.has_template(plan.spec, plan.device)
                                                      and not authored_elsewhere)  # fmt: skip
        if self.proposer.name == "replay":
            return (self.project.generated_dir / api.transcript_path(plan.spec, plan.device)).is_file()
        return True

    def _routed(self, plan: KernelPlan) -> KernelPlan:
        """The plan with this run's reason: an up-to-date body by someone else still goes to Claude when
        Claude is asked for it, and a replay always judges again."""
        if self.proposer.name == "replay":
            return replace(plan, reason="replayed from its transcript")
        if self.proposer.name == "claude" and (plan.previous is None or plan.previous.proposer != "claude"):
            return replace(plan, reason=plan.reason or f"{plan.previous.proposer if plan.previous else 'no'} body; Claude asked for one")
        return plan

    def _keep(self, plan: KernelPlan, status: str) -> KernelResult:
        """The op keeps the file generated/ has now, as it is: a hand edit stays visible to
        --check instead of being silently dropped by a run that was not asked to fix it."""
        if plan.previous is None or plan.on_disk is None:
            return KernelResult(plan, status, "no accepted kernel yet", None, None)
        text = stored_transcript(self.project.generated_dir, plan.previous.details)
        return KernelResult(plan, status, "", plan.previous, plan.on_disk, text)

    def _work(self, todo: list[KernelPlan], jobs: int) -> Iterator[KernelResult]:
        """Each op's result, in plan order (so output is deterministic). When an op raises, no further op
        starts; the ops already running finish and their results come first, then the error."""
        rounds = rounds_of(self.proposer)
        if rounds is None:
            yield from self._each(todo, jobs, self._regenerate)
            return
        # Sessions that wait for rounds (Message Batches): every op runs at once, so that a round holds the
        # question of every op still asking; the gate still judges at most `jobs` at a time.
        rounds.open(len(todo))
        try:
            yield from self._each(todo, len(todo), lambda plan: self._regenerate_in_rounds(plan, rounds))
        finally:
            rounds.close()

    def _regenerate_in_rounds(self, plan: KernelPlan, rounds: Rounds) -> KernelResult:
        try:
            return self._regenerate(plan)
        finally:
            rounds.leave()  # the next round no longer waits for this op

    def _each(self, todo: list[KernelPlan], workers: int, regenerate: Callable[[KernelPlan], KernelResult]) -> Iterator[KernelResult]:
        if workers <= 1:
            yield from map(regenerate, todo)
            return
        pool = ThreadPoolExecutor(max_workers=workers)
        error: Exception | None = None
        try:
            futures = [pool.submit(regenerate, p) for p in todo]
            for future in futures:
                if future.cancelled():
                    continue
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - raised again below, once the others are in
                    error = error or exc
                    for waiting in futures:
                        waiting.cancel()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if error is not None:
            raise error

    def _task(self, plan: KernelPlan) -> Task:
        return Task(plan.spec, plan.device, plan.inputs_sha256, plan.previous)

    def _render_only(self, plan: KernelPlan) -> KernelResult | None:
        """What a regeneration would write for the op, rendered but not judged; None when generated/ holds
        exactly that. An up-to-date file must also be what its inputs produce: the manifest alone can be
        edited to match."""
        if plan.reason is None and plan.on_disk is None:
            return None
        try:
            proposal = self._proposer_for(plan).start(self._task(plan)).propose(None)
        except GaveUp as stop:
            return KernelResult(plan, "stale", f"{plan.reason or 'cannot be rendered again'}; {stop}", None, None)
        source = self.render_kernel(plan.spec, plan.device, proposal.body, proposal.proposer)
        reason = plan.reason or (None if source == plan.on_disk else "edited by hand")
        if reason is None:
            return None
        # the same file as the one accepted is the same judged kernel; anything else was not judged
        same = plan.previous is not None and plan.previous.sha256 == sha256_text(source)
        judged = (plan.previous.judged_sha256, plan.previous.kernel_sha256) if same else (None, None)
        return KernelResult(plan, "stale", reason, self._record(plan, proposal, source, None, *judged), source, proposal.transcript)

    def _regenerate(self, plan: KernelPlan) -> KernelResult:
        """The evaluator-optimizer loop for one op: propose, judge, hand the rejection back, until the
        gate accepts a body or the session gives up."""
        started = time.monotonic()
        proposer = self._proposer_for(plan)
        if plan.reason == "edited by hand" and _body_edited(plan) and (proposer is self.stored_proposer or proposer.name == "claude"):
            # The stored body is the only copy of a body no template can re-derive: never launder a hand edit into it.
            return replace(self._keep(plan, "rejected"), message=f"edited by hand: generated/{plan.path}: its kernel body no longer "
                           "matches MANIFEST.json; restore it (git checkout) or submit the body with `tsgen submit`")
        session = proposer.start(self._task(plan))
        rejection = None
        try:
            while True:
                proposal = session.propose(rejection)
                attempt = proposal.attempt  # the proposer's count, which the manifest records
                candidate = self.candidate(plan.spec, plan.device, proposal.body, proposal.proposer)
                with self._judging:
                    verdict = self.gate.judge(candidate, on_stage=lambda stage, n=attempt: self._show(plan, f"attempt {n}: {STAGE_STATES[stage]}"))
                self.gate.save_report(candidate, verdict)
                if verdict.accepted:
                    proposal = session.accepted(proposal, verdict)
                    break
                self._show(plan, f"attempt {attempt}: rejected at {verdict.stage}")
                rejection = verdict
        except GaveUp as stop:
            self._show(plan, f"gave up: {stop}")
            return replace(self._keep(plan, "rejected"), message=str(stop))
        source = candidate.source
        elapsed = time.monotonic() - started
        self._show(plan, f"accepted ({proposal.proposer}, attempt {proposal.attempt}, {elapsed:.1f} s)")
        message = f"({proposal.proposer}, {elapsed:.1f} s)"
        record = self._record(plan, proposal, source, verdict, self.gate.identity(candidate), self.gate.kernel_identity(candidate))
        return KernelResult(plan, "accepted", message, record, source, proposal.transcript)

    def _show(self, plan: KernelPlan, state: str) -> None:
        if self.board is not None:
            self.board.update(plan.label, state)

    def _proposer_for(self, plan: KernelPlan) -> Proposer:
        """The template proposer re-derives its own bodies; bodies anyone else wrote are re-judged as they are,
        read from generated/, or, where the kernel file is gone, from the transcript that recorded them (the
        only source of a body in a family without a template)."""
        if self.proposer is not self.template_proposer:
            return self.proposer
        written_by_others = plan.previous is not None and plan.previous.proposer != self.template_proposer.name
        if written_by_others and plan.on_disk is not None:
            return self.stored_proposer
        task = self._task(plan)
        if not self.template_proposer.has_template(plan.spec, plan.device) and self.replay_proposer.has_transcript(task):
            return self.replay_proposer
        return self.proposer

    def _record(self, plan: KernelPlan, proposal: Proposal, source: str, verdict: Verdict | None = None,
                judged_sha256: str | None = None, kernel_sha256: str | None = None) -> OutputRecord:  # fmt: skip
        details = dict(proposal.details)
        if proposal.transcript is None:
            details.pop("transcript", None)  # a record never points at a file generated/ will not hold
        return OutputRecord(
            sha256=sha256_text(source),
            inputs=plan.inputs,
            inputs_sha256=plan.inputs_sha256,
            op=plan.spec.name,
            device=plan.device,
            proposer=proposal.proposer,
            body_sha256=sha256_text(stored_body(source)),
            interface_sha256=sha256_text(api.interface(plan.spec)),
            verdict=self._verdict_text(plan.device, verdict),
            judged_sha256=judged_sha256,
            kernel_sha256=kernel_sha256,
            details=details,
        )

    def _verdict_text(self, device: str, verdict: Verdict | None = None) -> str:
        """What the manifest says the gate did; stages this machine could not run (a CUDA kernel's, without a
        GPU) are named as pending, for `tsgen validate --device cuda` on a GPU machine to finish, and so is a
        stage that could not judge this candidate (compute-sanitizer's own trouble), which the verdict names."""
        pending = self.gate.pending_stages(device)
        late = [stage for stage in (verdict.report.get("pending", []) if verdict else []) if stage not in pending]
        ran = ", ".join(stage for stage in self.gate.stages if stage not in pending and stage not in late)
        text = f"accepted by {ran}" + (f"; pending ({self.gate.pending_reason(device)}): {', '.join(pending)}" if pending else "")
        return text + (f"; pending (not judged here: {verdict.report['pending_why'][late[0]]}): {', '.join(late)}" if late else "")

    def candidate(self, spec: OpSpec, device: str, body: str, proposer: str) -> Candidate:
        """What the gate judges: the body, its translation unit, and the op table for this op alone."""
        companion = self._cpu_twin(spec) if device != "cpu" and not self.gate.pending_stages(device) else None
        devices = (device,) if companion is None else ("cpu", device)
        header = self.renderer.header([spec.path, "templates/registration.cpp.j2"])
        registration = self.renderer.render("registration.cpp.j2", **dest.registration_context(Catalog((spec,), (), ()), header, devices))
        return Candidate(spec, device, body, self.render_kernel(spec, device, body, proposer), registration, proposer, companion)

    def _cpu_twin(self, spec: OpSpec) -> str | None:
        """The op's committed CPU kernel, which a CUDA candidate runs beside where a GPU runs it (the devices
        must agree); None when there is none built for the spec's current interface."""
        record = Manifest.load(self.project.generated_dir).kernel_records().get((spec.name, "cpu"))
        if record is None or record.interface_sha256 != sha256_text(api.interface(spec)):
            return None
        return writer.read_text(self.project.generated_dir / api.kernel_path(spec, "cpu"))

    def render_kernel(self, spec: OpSpec, device: str, body: str, proposer: str) -> str:
        template = api.template_path(spec, device)
        header = self.renderer.header([spec.path, f"templates/{template}"])
        text = self.renderer.render(template, **dest.kernel_context(spec, device, body, proposer, header))
        return self.formatter.format(api.kernel_path(spec, device), text)

    # ---- outputs

    def _outputs(self, catalog: Catalog, results: list[KernelResult]) -> dict[str, str]:
        """Every file generated/ must hold: accepted kernels, the shared files (op table, bindings, sources)
        for the ops that have a kernel on every device, and the manifest. An op's accepted kernel stays even
        while its other device's is missing (nothing accepted is lost); the op joins the runtime once both exist.
        A kernel built for an older interface of its op is dropped with the op (see _usable)."""
        complete = {r.plan.spec.name for r in results}
        for r in results:
            if not _usable(r):
                complete.discard(r.plan.spec.name)
        runtime_catalog = Catalog(
            tuple(s for s in catalog.ops if s.name in complete),
            tuple(a for a in catalog.aliases if a.alias_of in complete),
            catalog.composites,  # no kernels: always in the runtime
        )
        outputs: dict[str, str] = {}
        manifest = Manifest()
        for r in results:
            if _usable(r):
                outputs[r.plan.path] = r.content
                manifest.outputs[r.plan.path] = r.record
                transcript = r.record.details.get("transcript")
                if transcript and r.transcript is not None:
                    outputs[str(transcript)] = r.transcript
        generator_sha = self._generator_sha()
        catalog_sha = combine({s.path: sha256_text(s.text) for s in (*runtime_catalog.ops, *runtime_catalog.aliases, *runtime_catalog.composites)})
        for name, template in SHARED_TEMPLATES.items():
            header = self.renderer.header(["specs/*.yaml", f"templates/{template}"], COMMENT[Path(name).suffix])
            text = self.formatter.format(name, self.renderer.render(template, **SHARED_CONTEXTS[name](runtime_catalog, header)))
            inputs = {"specs": catalog_sha, f"templates/{template}": sha256_text(self.renderer.source(template)), "generator": generator_sha,
                      "formatting": self.formatter.fingerprint()}
            outputs[name] = text
            manifest.outputs[name] = OutputRecord(sha256_text(text), inputs, combine(inputs))
        outputs[MANIFEST_NAME] = manifest.dumps()
        return outputs


def matching_ops(catalog: Catalog, ops_glob: str) -> list[OpSpec]:
    """The ops --ops GLOB selects; none is an error (a typo must not pass as a run with nothing to do)."""
    specs = [s for s in catalog.ops if fnmatch.fnmatchcase(s.name, ops_glob)]
    if not specs:
        raise GeneratorError(f"no op matches {ops_glob!r} (see `tsgen ops`)")
    return specs


def stored_body(source: str) -> str:
    """The kernel body as generated/ holds it (formatted, dedented): what MANIFEST.json's body_sha256 covers, so a
    stored body read back from generated/ hashes the same as when it was accepted."""
    found = extract_body(source)
    if found is None:
        raise GeneratorError("a rendered kernel lost its kernel body markers (formatting must keep them on their own lines)")
    return found[0]


def _body_edited(plan: KernelPlan) -> bool:
    found = extract_body(plan.on_disk) if plan.on_disk is not None else None
    return found is None or plan.previous is None or sha256_text(found[0]) != plan.previous.body_sha256


def _usable(result: KernelResult) -> bool:
    """A kernel file can go into the runtime only if the shared files (op table, bindings), which are
    rendered from the current spec, agree with it: its spec's interface must be the current one."""
    if result.content is None or result.record is None:
        return False
    return result.record.interface_sha256 == sha256_text(api.interface(result.plan.spec))


def _stale_reason(previous: OutputRecord | None, on_disk: str | None, inputs: dict[str, str], key: str,
                  force: bool) -> str | None:  # fmt: skip
    if previous is None:
        return "new op"
    if on_disk is None:
        return "file missing"
    if sha256_text(on_disk) != previous.sha256:
        return "edited by hand"
    if previous.inputs_sha256 != key:
        changed = sorted(name for name in inputs.keys() | previous.inputs.keys() if inputs.get(name) != previous.inputs.get(name))
        return "changed: " + ", ".join(changed)
    if force:
        return "forced"
    return None

