"""tsgen: regenerate, check, build and list the catalog.

Errors are one line on stderr and a non-zero exit; never a traceback for a
problem in the user's specs or environment.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tensorsmith_forge.catalog.derivatives import RESULT
from tensorsmith_forge.catalog.dtypes import DTYPE_CLASSES
from tensorsmith_forge.catalog.errors import SpecError
from tensorsmith_forge.catalog.files import write_atomic
from tensorsmith_forge.catalog.model import Catalog, CompositeSpec, OpSpec, load_catalog
from tensorsmith_forge.validators import static_check
from tensorsmith_forge.validators.derivatives.check import check_catalog
from tensorsmith_forge.validators.gate import Candidate, Gate, Verdict

from . import api, dest, review, selection
from .agent.replay import ReplayProposer
from .build import build
from .errors import GeneratorError
from .git import Git
from .hashing import sha256_text
from .lock import writing_generated
from .loop import Regenerator, RegenReport, matching_ops
from .manifest import MANIFEST_NAME, Manifest
from .progress import Board
from .project import Project
from .proposers import Proposer, StoredProposer, extract_body
from .submissions import SubmissionLog, SubmittedProposer
from .render import Renderer
from .staleness import stale_files

PROPOSER_CHOICES = ("template", "claude", "replay")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        project = Project.locate()
        return int(args.handler(project, args) or 0)
    except (SpecError, GeneratorError) as exc:
        print(f"tsgen: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `tsgen task add | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tsgen: interrupted; generated/ holds only complete files", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsgen", description="Forge the tensorsmith runtime from op specs.")
    commands = parser.add_subparsers(dest="command", required=True)

    regen = commands.add_parser("regen", help="regenerate kernels whose inputs changed, then build")
    regen.add_argument("--ops", metavar="GLOB", help="only ops whose name matches (e.g. 'log*')")
    regen.add_argument("--force", action="store_true", help="regenerate even up-to-date ops")
    regen.add_argument("--jobs", type=_positive, help="ops processed in parallel (default: this machine's CPUs; with --executor ray, the cluster's)")
    regen.add_argument("--check", action="store_true", help="write nothing; exit 1 if generated/ is out of date")
    regen.add_argument("--no-build", action="store_true", help="skip the incremental build afterwards")
    regen.add_argument("--proposer", choices=PROPOSER_CHOICES, default="template",
                       help="who writes bodies: template (offline), claude (needs ANTHROPIC_API_KEY), replay (from transcripts)")
    regen.add_argument("--device", choices=api.DEVICES, help="only kernels for this device")
    agent = regen.add_argument_group("claude proposer (limits default to generator/agent/models.toml)")
    agent.add_argument("--model", help="model id from the model table (default: its default_model)")
    agent.add_argument("--max-attempts", type=int, metavar="N", help="proposals per op before it gives up")
    agent.add_argument("--budget-usd", type=float, metavar="X", help="stop asking once the run has spent X dollars")
    agent.add_argument("--budget-tokens", type=int, metavar="N", help="stop asking once the run has used N tokens")
    agent.add_argument("--time-limit", type=float, metavar="S", help="wall-clock seconds per op (time waiting for batches not counted)")
    agent.add_argument("--batch", action="store_true",
                       help="send each round of questions (the first attempt of every op, then the follow-ups) as one Message "
                            "Batch: half the price, answered within 24 h; a killed run takes its batches up again")  # fmt: skip
    agent.add_argument("--batch-followups", choices=("batch", "interactive"), default="batch",
                       help="with --batch: ask follow-ups after a rejection in further batch rounds (default) or interactively")
    _add_executor_arguments(regen)
    regen.set_defaults(handler=_regen)

    build_cmd = commands.add_parser("build", help="build the extension in place (incremental)")
    build_cmd.set_defaults(handler=lambda project, _args: build(project))

    validate = commands.add_parser("validate", help="run the acceptance gate over the kernels in generated/")
    validate.add_argument("--ops", metavar="GLOB", help="only ops whose name matches")
    validate.add_argument("--device", choices=api.DEVICES, help="only kernels for this device (default: every device)")
    validate.add_argument("--jobs", type=_positive, help="kernels judged in parallel (default: this machine's CPUs; with --executor ray, the cluster's)")
    validate.add_argument("--json", metavar="FILE", type=Path, help="write every full report to FILE")
    validate.add_argument("--changed-since", metavar="REV", help="only kernels REV did not accept exactly as they are now "
                          "(kernel, spec, op table, gate or runtime changed; REV's MANIFEST.json is trusted)")
    validate.add_argument("--sample", type=int, default=0, metavar="N",
                          help="with --changed-since: also N unchanged kernels, drawn with the gate's secret salt")
    validate.add_argument("--shared-sample", type=_positive, metavar="K",
                          help="with --changed-since: of the kernels only the gate or the runtime changed under (their own "
                          "translation unit, spec and op table as REV accepted them), judge K per family and device, drawn "
                          "with the salt, not all (CI's bound; the nightly run judges the whole catalog)")
    validate.add_argument("--shard", metavar="K/N", help="only the kernels of shard K of N (by a hash of their names): "
                          "N machines judge the selection once between them")
    _add_executor_arguments(validate)
    validate.set_defaults(handler=_validate)

    task = commands.add_parser("task", help="print what an outside author needs to write a kernel body")
    task.add_argument("op")
    task.add_argument("--device", choices=api.DEVICES, default="cpu")
    task.set_defaults(handler=_task)

    tasks = commands.add_parser("tasks", help="list the kernels that need an outside author (the work queue)")
    tasks.add_argument("--ops", metavar="GLOB", help="only ops whose name matches")
    tasks.add_argument("--device", choices=api.DEVICES, help="only kernels for this device")
    tasks.add_argument("--dir", type=Path, help="also write each kernel's task into DIR/OP.DEVICE.md")
    tasks.set_defaults(handler=_tasks)

    submit = commands.add_parser("submit", help="judge a kernel body; write it into generated/ if accepted")
    submit.add_argument("op")
    submit.add_argument("file", type=Path, help="the body (the statements between the kernel body markers)")
    submit.add_argument("--device", choices=api.DEVICES, default="cpu")
    submit.add_argument("--author", required=True, help="who wrote the body (a person, or the agent and its model)")
    submit.add_argument("--note", default="", help="a line on how it was written, kept in the transcript")
    submit.add_argument("--no-build", action="store_true", help="skip the incremental build afterwards")
    submit.set_defaults(handler=_submit)

    ops = commands.add_parser("ops", help="list the catalog")
    ops.add_argument("--json", action="store_true", help="machine-readable output")
    ops.set_defaults(handler=_ops)

    review = commands.add_parser("review", help="Markdown report of how generated/ changed against a revision, and why")
    review.add_argument("--base", metavar="REV", help="compare with REV (default: the merge base with main)")
    review.add_argument("--json", action="store_true", help="the same data as JSON")
    review.set_defaults(handler=_review)
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where judgements run")
    group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="this machine (default), or the nodes of a Ray cluster (generator/ray_executor.py says how to start one)")
    group.add_argument("--ray-address", metavar="HOST:PORT",
                       help="with --executor ray: the cluster's head (default: RAY_ADDRESS, else a Ray instance started here)")


def make_gate(project: Project, args: argparse.Namespace | None = None, devices: tuple[str, ...] = api.DEVICES) -> Gate:
    """The gate of this machine, or with `--executor ray` one that judges on a cluster's nodes fit for `devices`."""
    if args is None or args.executor == "local":
        if args is not None and args.ray_address:
            raise GeneratorError("--ray-address names a Ray cluster: add --executor ray")
        return Gate(project.root)
    try:
        from .ray_executor import RayGate  # Ray is imported only where it is used
    except ImportError as exc:
        raise GeneratorError(f"--executor ray needs Ray ({exc}): pip install 'tensorsmith[cluster]'") from None
    gate = RayGate(project.root, address=args.ray_address, log=lambda line: print(line, flush=True))
    gate.require(devices)
    return gate


def _jobs(args: argparse.Namespace, gate: Gate) -> int:
    """--jobs, or as many judgements at once as the judging machines have CPUs."""
    if args.jobs is not None:
        return args.jobs
    return getattr(gate, "capacity", os.cpu_count() or 1)


def _regen(project: Project, args: argparse.Namespace) -> int:
    if args.check and args.executor != "local":
        raise GeneratorError("--check judges nothing: it takes no --executor")
    if args.check and args.proposer != "template":
        raise GeneratorError("--check compares generated/ with what is stored; it takes no --proposer")
    if args.batch and args.proposer != "claude":
        raise GeneratorError("--batch sends the claude proposer's questions as Message Batches: add --proposer claude")
    if args.check:  # reads generated/ only
        return _regen_locked(project, args)
    with writing_generated(project.root, "tsgen regen"):
        return _regen_locked(project, args)


def _regen_locked(project: Project, args: argparse.Namespace) -> int:
    _check_derivatives(load_catalog(project.root), args.ops)  # the regeneration reads the catalog itself
    gate = make_gate(project, args, (args.device,) if args.device else api.DEVICES)
    board = Board() if args.proposer == "claude" else None
    progress = (lambda line: None) if args.check or board else (lambda line: print(line, flush=True))
    proposer = _proposer(project, args, gate, board)
    regenerator = Regenerator(project, gate, proposer=proposer, progress=progress, board=board)
    try:
        report = regenerator.run(ops_glob=args.ops, force=args.force, jobs=_jobs(args, gate), check=args.check, device=args.device)
    finally:
        if board is not None:
            board.close()
    if args.check:
        return _report_check(stale_files(report, project.generated_dir))
    _report_regen(report)
    if board is not None and board.cost_usd is not None:
        print(f"API cost of this run: ${board.cost_usd:.4f}")
    if report.diff.changed or report.diff.stale:
        if not args.no_build:
            build(project)
    elif not args.no_build:
        print("generated/ unchanged; nothing to build")
    return 1 if report.rejected else 0


def _check_derivatives(catalog: Catalog, ops_glob: str | None) -> None:
    """The gate's derivative check (validators/derivatives): every formula of the selected specs against finite
    differences of its reference; a wrong one stops the run before anything is written."""
    failures = check_catalog(catalog, lambda name: ops_glob is None or fnmatch.fnmatchcase(name, ops_glob))
    for failure in failures:
        print(f"rejected derivative: {failure}", flush=True)
    if failures:
        raise GeneratorError(f"{len(failures)} derivative formula(s) disagree with finite differences of their references")


def _proposer(project: Project, args: argparse.Namespace, gate: Gate, board: Board | None) -> Proposer | None:
    """The proposer --proposer names; the claude one fails here, before anything runs, without a key."""
    if args.proposer == "replay":
        return ReplayProposer(project.generated_dir)
    if args.proposer != "claude":
        return None
    assert board is not None
    from .agent.batches import BatchRounds
    from .agent.budget import Budget
    from .agent.client import AnthropicBatches, AnthropicClient
    from .agent.config import load_config
    from .agent.session import ClaudeProposer, Settings

    config = load_config()
    settings = Settings(
        model=args.model or config.default_model,
        max_attempts=args.max_attempts or config.limits.max_attempts,
        time_limit_s=args.time_limit or config.limits.time_limit_s,
    )
    config.price(settings.model)  # an unknown model fails now, not after the first answer
    if settings.max_attempts < 1:
        raise GeneratorError("--max-attempts must be at least 1")
    renderer = Renderer(project.templates_dir)
    work_dir = project.root / "build" / "agent"
    rounds = BatchRounds(AnthropicBatches(config.limits), work_dir / "batches", config.limits, board) if args.batch else None
    return ClaudeProposer(
        client=AnthropicClient(config.limits), config=config, settings=settings,
        budget=Budget(usd=args.budget_usd, tokens=args.budget_tokens), renderer=renderer,
        task_text=lambda task: task_text(project, task.spec.name, task.device), stored=StoredProposer(project.generated_dir),
        work_dir=work_dir, toolchain=gate.builder.toolchain.version(), board=board,
        batch=rounds, batch_followups=args.batch_followups == "batch",
    )  # fmt: skip


def _report_check(stale: dict[str, str]) -> int:
    if not stale:
        print("generated/ is up to date")
        return 0
    print("generated/ is out of date; run `tsgen regen`:")
    for path, why in stale.items():
        print(f"  generated/{path}" + (f"  ({why})" if why else ""))
    return 1


def _review(project: Project, args: argparse.Namespace) -> int:
    report = Regenerator(project, make_gate(project)).run(check=True)
    result = review.collect(project, args.base, stale_files(report, project.generated_dir))
    print(result.to_json() if args.json else review.markdown(result), end="")
    return 0


def _report_regen(report: RegenReport) -> None:
    accepted = [r for r in report.results if r.status == "accepted"]
    total_ops = {r.plan.spec.name for r in report.results}
    have = {r.plan.spec.name for r in report.results if r.content is not None}
    print(f"{len(accepted)} accepted, {len(report.rejected)} rejected, "
          f"{sum(r.status == 'up to date' for r in report.results)} up to date; "
          f"{len(have)}/{len(total_ops)} ops in the runtime")  # fmt: skip
    for r in report.rejected:
        print(f"rejected {r.plan.label}: {r.message}")
    written = len(report.diff.changed) + len(report.diff.stale)
    print(f"generated/: {written} file(s) written or removed" if written else "generated/: no file changed")


def _validate(project: Project, args: argparse.Namespace) -> int:
    try:
        shard = selection.parse_shard(args.shard) if args.shard is not None else None
    except ValueError as exc:
        raise GeneratorError(str(exc)) from None
    catalog = load_catalog(project.root)
    _check_derivatives(catalog, args.ops)
    specs = list(catalog.ops) if args.ops is None else matching_ops(catalog, args.ops)
    devices = [args.device] if args.device else list(api.DEVICES)
    gate = make_gate(project, args, tuple(devices))
    regenerator = Regenerator(project, gate)
    kernels = [(spec, device) for device in devices for spec in specs]
    started = time.monotonic()

    def committed(kernel: tuple[OpSpec, str]) -> tuple[Candidate | None, str]:
        """The gate's candidate for the kernel generated/ holds, and who wrote it; None when there is none."""
        spec, device = kernel
        path = project.generated_dir / api.kernel_path(spec, device)
        found = extract_body(path.read_text(encoding="utf-8")) if path.exists() else None
        if found is None:
            return None, "no kernel in generated/"
        body, proposer = found
        return regenerator.candidate(spec, device, body, proposer), proposer

    def in_shard(kernel: tuple[OpSpec, str]) -> bool:
        return shard is None or selection.in_shard((kernel[0].name, kernel[1]), shard)

    def shard_note(kept: int, selected: int) -> str:
        return "" if shard is None else f" of shard {shard[0]}/{shard[1]} ({kept} of the {selected} selected)"

    candidates = {(spec.name, device): committed((spec, device)) for spec, device in kernels}
    if args.changed_since is not None:
        git = Git(project.root)
        base_commit = git.resolve(args.changed_since)
        base = Manifest.parse(git.file(base_commit, f"generated/{MANIFEST_NAME}") or "").kernel_records()
        def identity_by(of: Callable[[Candidate], str]) -> Callable[[tuple[OpSpec, str]], str]:
            """A kernel's identity by `of`; "" where generated/ holds no kernel (never a base's record)."""
            return lambda k: of(c) if (c := candidates[(k[0].name, k[1])][0]) is not None else ""

        chosen = selection.changed_since(
            kernels, key=lambda k: (k[0].name, k[1]), base=base, sample=args.sample, salt=gate.salt,
            identity=identity_by(gate.identity), kernel_identity=identity_by(gate.kernel_identity),
            group=lambda k: f"{k[0].family.name} on {k[1]}", shared_sample=args.shared_sample)  # fmt: skip
        listed = [(kernel, why) for kernel, why in chosen.judged if in_shard(kernel)]
        kernels = [kernel for kernel, _why in listed]
        print(f"{chosen.unchanged} kernel(s) that {args.changed_since} ({base_commit[:12]}) accepted as they are now: "
              f"not judged again; judging the others{shard_note(len(listed), len(chosen.judged))}:")  # fmt: skip
        if chosen.shared_left:
            print(f"{chosen.shared_left} kernel(s) that only the gate or the runtime changed under: not judged here "
                  f"(--shared-sample {args.shared_sample}; `tsgen validate` judges every kernel)")
        for (spec, device), why in listed:
            print(f"  {spec.name}.{device}: {why}")
    elif args.sample or args.shared_sample is not None:
        flag = "--sample" if args.sample else "--shared-sample"
        raise GeneratorError(f"{flag} draws from the kernels --changed-since leaves out; give --changed-since REV")
    note = ""  # what the shard kept, where no listing said it
    if args.changed_since is None:
        selected = len(kernels)
        kernels = [k for k in kernels if in_shard(k)]
        note = shard_note(len(kernels), selected)
    print(f"judging {len(kernels)} kernels ({', '.join(devices)}){note} from generated/ ...", flush=True)

    def judge(kernel: tuple[OpSpec, str]) -> tuple[OpSpec, str, Verdict | None, str]:
        spec, device = kernel
        candidate, proposer = candidates[(spec.name, device)]
        return spec, device, None if candidate is None else gate.judge(candidate), proposer

    rows, reports, failed = [], {}, 0
    with ThreadPoolExecutor(max_workers=_jobs(args, gate)) as pool:
        for spec, device, verdict, proposer in pool.map(judge, kernels):
            ok = verdict is not None and verdict.accepted
            failed += not ok
            cases = (verdict.report.get("release", verdict.report.get("cuda", {})).get("cases", 0) if verdict else 0)
            seconds = sum(stage["seconds"] for stage in verdict.report.get("stages", {}).values()) if verdict else 0.0
            pending = verdict.report.get("pending", []) if verdict else []
            result = ("pass" + (f" ({'+'.join(pending)} pending: {verdict.report.get('pending_why', {}).get(pending[0], '')})" if pending else "") if ok
                      else f"FAIL at {verdict.stage}" if verdict else f"FAIL: {proposer}")  # fmt: skip
            label = f"{spec.name}.{device}"
            rows.append((label, proposer if verdict else "-", str(cases), result, f"{seconds:.1f}"))
            print(f"  {label}: {result}" + ("" if ok or verdict is None else "\n    " + verdict.message.replace("\n", "\n    ")), flush=True)
            if verdict is not None:
                reports[label] = verdict.report
            if args.json:  # as it goes: a run cut short (a device check's time limit) keeps what it judged
                write_atomic(args.json, json.dumps(reports, indent=2, default=str) + "\n")
    print()
    _print_rows(("kernel", "proposer", "cases", "result", "seconds"), rows)
    print(f"\n{len(kernels) - failed} of {len(kernels)} kernels pass the gate ({time.monotonic() - started:.0f} s)")
    for device in devices:
        if gate.pending_stages(device):
            print(f"{device} kernels were not fully judged here ({', '.join(gate.pending_stages(device))} pending): "
                  f"{gate.pending_why(device)}; run `tsgen validate --device {device}` on a machine with "
                  "nvcc and a GPU (scripts/device_check.sh)")
    return 1 if failed else 0


def _task(project: Project, args: argparse.Namespace) -> int:
    print(task_text(project, args.op, args.device))
    return 0


def _tasks(project: Project, args: argparse.Namespace) -> int:
    """The kernels no proposer of this machine can write: their family has no body template, and generated/
    holds no body for them or one whose inputs changed (regen judges it again; if it fails, an author must
    write a new one). Several authors can take from the list at once: each `tsgen submit` judges against the
    tree it lands on."""
    catalog = load_catalog(project.root)
    regenerator = Regenerator(project, make_gate(project))
    plans = regenerator.plan(catalog, Manifest.load(project.generated_dir), force=False)
    wanted = [p for p in plans if not regenerator.template_proposer.has_template(p.spec, p.device)
              and (p.previous is None or p.reason is not None)
              and (args.ops is None or fnmatch.fnmatchcase(p.spec.name, args.ops))
              and (args.device is None or p.device == args.device)]  # fmt: skip
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    for plan in wanted:
        why = "no body yet" if plan.previous is None else f"its body must be judged again ({plan.reason})"
        print(f"{plan.spec.name}\t{plan.device}\t{plan.spec.family.name}\t{why}")
        if args.dir is not None:
            write_atomic(args.dir / f"{plan.spec.name}.{plan.device}.md", task_text(project, plan.spec.name, plan.device) + "\n")
    print(f"{len(wanted)} kernel(s) need an author" + (f"; tasks written to {args.dir}" if args.dir is not None and wanted else ""))
    return 0


def task_text(project: Project, op: str, device: str) -> str:
    """The task an outside author (or the Claude proposer) gets: the same text for both."""
    catalog = load_catalog(project.root)
    spec = _find_op(catalog, op)
    renderer = Renderer(project.templates_dir)
    regenerator = Regenerator(project, make_gate(project))
    translation_unit = regenerator.render_kernel(spec, device, dest.BODY_PLACEHOLDER, "you")
    example = _accepted_example(project, catalog, spec, device)
    constraints = [rule.message for rule in static_check.RULES] + [
        "the object may call only the math library, mem* functions and the runtime's registry (checked with nm)",
        "no static or global variables: nothing may carry state from one call to the next",
    ]
    context = dest.task_context(spec, device, translation_unit, example, constraints)
    return renderer.render("prompts/task.md.j2", **context)


def _accepted_example(project: Project, catalog, spec: OpSpec, device: str) -> tuple[str, str] | None:
    """(op, body) of an accepted kernel of the same family in generated/, another op's when there is one."""
    family = sorted((s for s in catalog.ops if s.family is spec.family), key=lambda s: (s.name == spec.name, s.name))
    for other in family:
        path = project.generated_dir / api.kernel_path(other, device)
        found = extract_body(path.read_text(encoding="utf-8")) if path.exists() else None
        if found is not None:
            return other.name, found[0]
    return None


def _submit(project: Project, args: argparse.Namespace) -> int:
    catalog = load_catalog(project.root)
    spec = _find_op(catalog, args.op)
    try:
        body = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GeneratorError(f"cannot read {args.file}: {exc}") from None
    author = args.author.strip()
    if not author:
        raise GeneratorError("--author names who wrote the body; it may not be empty")
    progress = lambda line: print(line, flush=True)  # noqa: E731
    # Every attempt is recorded against the task it answered; rejected ones wait in build/ for the accepted one.
    task_sha256 = sha256_text(task_text(project, spec.name, args.device))
    log = SubmissionLog(project.root / "build", spec.name, args.device)
    proposer = SubmittedProposer(body, author, args.note, task_sha256, log)
    regenerator = Regenerator(project, make_gate(project), proposer=proposer, progress=progress)
    with writing_generated(project.root, f"tsgen submit {spec.name}"):
        report = regenerator.run(ops_glob=spec.name, force=True, device=args.device)  # the other device's body stays
    result = next(r for r in report.results if r.plan.spec.name == spec.name and r.plan.device == args.device)
    if result.status != "accepted":
        log.add(proposer.attempt("rejected", result.message.splitlines()[0] if result.message else result.status))
        print(f"rejected: generated/ is unchanged (attempt {len(log.pending())} by {author} recorded).\n{result.message}")
        return 1
    log.clear()
    attempts = result.record.details.get("attempts") if result.record else 1
    print(f"accepted: generated/{result.plan.path} now holds your body (provenance: external, {author}, {attempts} attempt(s))")
    if not args.no_build:
        build(project)
    return 0


def _find_op(catalog, name: str) -> OpSpec:
    try:
        return catalog.op(name)
    except KeyError:
        raise GeneratorError(f"unknown op {name!r} (see `tsgen ops`)") from None


def _print_rows(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _ops(project: Project, args: argparse.Namespace) -> int:
    catalog = load_catalog(project.root)
    regenerator = Regenerator(project, make_gate(project))
    plans = regenerator.plan(catalog, Manifest.load(project.generated_dir), force=False)
    rows = []
    for spec in catalog.ops:
        mine = [p for p in plans if p.spec.name == spec.name]
        rows.append({
            "op": spec.name,
            "family": spec.family.name,
            "dtypes": list(spec.dtypes),
            "devices": [p.device for p in mine if p.previous is not None],
            "proposer": sorted({p.previous.proposer for p in mine if p.previous and p.previous.proposer}),
            "provenance": {p.device: _provenance(p.previous) for p in mine if p.previous is not None},
            "accepted": all(p.reason is None for p in mine),
            "status": _status(mine),
            "gate": {p.device: p.previous.verdict for p in mine if p.previous is not None},
            "derivatives": _derivatives_row(spec),
        })  # fmt: skip
    for alias in catalog.aliases:
        target = next(r for r in rows if r["op"] == alias.alias_of)
        rows.append({**target, "op": alias.name, "family": f"alias of {alias.alias_of}"})
    for composite in catalog.composites:  # no kernel: the core's own function, on every device
        provenance = {d: {"proposer": f"hand-written ({composite.implementation})"} for d in api.DEVICES}
        rows.append({"op": composite.name, "family": "composite", "dtypes": list(DTYPE_CLASSES["all"]), "devices": list(api.DEVICES),
                     "proposer": ["hand-written"], "provenance": provenance, "accepted": True, "status": "core function",
                     "gate": {}, "derivatives": _derivatives_row(composite)})  # fmt: skip
    rows.sort(key=lambda r: r["op"])
    missing = {d: [r["op"] for r in rows if d not in r["devices"]] for d in api.DEVICES}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 1 if any(missing.values()) else 0
    _print_table(rows)
    _print_derivatives(rows)
    accepted = sum(r["accepted"] for r in rows)
    print(f"\n{len(rows)} ops, {accepted} accepted; devices: {', '.join(api.DEVICES)}")
    for device, ops in missing.items():
        if ops:
            print(f"parity: {len(ops)} op(s) have no {device} kernel: {', '.join(ops)}")
    return 1 if any(missing.values()) else 0


def _derivatives_row(spec: OpSpec | CompositeSpec) -> dict[str, str | None] | str:
    """An op's derivatives for `tsgen ops`: input -> formula (None: not differentiable), and `result` -> its
    forward formula where it has one; 'none' for an op whose results are not differentiable, 'missing' where the
    spec has none yet."""
    if spec.derivatives is None:
        return "missing"
    if not spec.derivatives.differentiable:
        return "none"
    forward = spec.derivatives.forward
    return {d.input: d.formula for d in spec.derivatives.formulas} | ({RESULT: forward.formula} if forward else {})


def _print_derivatives(rows: list[dict]) -> None:
    with_formulas = [r for r in rows if isinstance(r["derivatives"], dict)]
    print(f"\nderivatives: {len(with_formulas)} ops with formulas, "
          f"{sum(r['derivatives'] == 'none' for r in rows)} not differentiable, "
          f"{sum(r['derivatives'] == 'missing' for r in rows)} without derivatives yet")  # fmt: skip
    forward = sum(RESULT in r["derivatives"] for r in with_formulas)
    print(f"forward formulas (Jacobian-vector products, from the inputs' tangents): {forward} ops")
    for row in with_formulas:
        for name, formula in row["derivatives"].items():
            print(f"  {row['op']}: " + (f"J u = {formula}" if name == RESULT else f"d/d{name} = {formula or 'not differentiable'}"))


def _status(plans) -> str:
    """accepted, or why not per device; a kernel the gate could not run here (CUDA without a GPU) says so."""
    stale = [f"{p.device}: {p.reason}" for p in plans if p.reason]
    if stale:
        return "; ".join(stale)
    pending = [p.device for p in plans if p.previous is not None and "pending" in (p.previous.verdict or "")]
    return "accepted" + (f" ({', '.join(pending)}: not yet run on a GPU)" if pending else "")


def _provenance(record) -> dict[str, object]:
    """Who wrote an op's kernel body; for a model, also which, in how many attempts and at what cost."""
    keys = ("model", "author", "attempts", "cost_usd", "tokens", "wall_s", "transcript")
    return {"proposer": record.proposer, **{k: record.details[k] for k in keys if k in record.details}}


def _proposer_summary(row: dict) -> str:
    parts = []
    for device, p in sorted(row["provenance"].items()):
        text = str(p["proposer"])
        if "model" in p:
            text += f" ({p['model']}, {p.get('attempts', '?')} attempts, ${float(p.get('cost_usd', 0)):.4f})"
        elif "author" in p:
            text += f" ({p['author']}, {p.get('attempts', '?')} attempts)"
        parts.append((device, text))
    if len({text for _, text in parts}) == 1:  # the same on every device (a composite's core function)
        return parts[0][1]
    return "; ".join(f"{device}: {text}" for device, text in parts) or "-"


def _print_table(rows: list[dict]) -> None:
    _print_rows(
        ("op", "family", "dtypes", "devices", "proposer", "status"),
        [(r["op"], r["family"], _dtype_summary(r["dtypes"]), ",".join(r["devices"]) or "-", _proposer_summary(r), r["status"])
         for r in rows],
    )  # fmt: skip


def _dtype_summary(dtypes: list[str]) -> str:
    for name in ("all", "numeric", "real", "floating", "integer"):
        if tuple(dtypes) == DTYPE_CLASSES[name]:
            return name
    return ",".join(d.replace("float", "f").replace("uint", "u").replace("int", "i") for d in dtypes)


if __name__ == "__main__":
    sys.exit(main())
