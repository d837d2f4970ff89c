"""tsgen: regenerate, check, build and list the catalog.

Errors are one line on stderr and a non-zero exit; never a traceback for a
problem in the user's specs or environment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from validators.gate import CompileCheck, Gate

from . import api
from .build import build
from .errors import GeneratorError, SpecError
from .loop import Regenerator, RegenReport
from .manifest import Manifest
from .model import load_catalog
from .project import Project


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        project = Project.locate()
        return int(args.handler(project, args) or 0)
    except (SpecError, GeneratorError) as exc:
        print(f"tsgen: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tsgen: interrupted; generated/ holds only complete files", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsgen", description="Forge the tensorsmith runtime from op specs.")
    commands = parser.add_subparsers(dest="command", required=True)

    regen = commands.add_parser("regen", help="regenerate kernels whose inputs changed, then build")
    regen.add_argument("--ops", metavar="GLOB", help="only ops whose name matches (e.g. 'log*')")
    regen.add_argument("--force", action="store_true", help="regenerate even up-to-date ops")
    regen.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="ops processed in parallel")
    regen.add_argument("--check", action="store_true", help="write nothing; exit 1 if generated/ is out of date")
    regen.add_argument("--no-build", action="store_true", help="skip the incremental build afterwards")
    regen.set_defaults(handler=_regen)

    build_cmd = commands.add_parser("build", help="build the extension in place (incremental)")
    build_cmd.set_defaults(handler=lambda project, _args: build(project))

    ops = commands.add_parser("ops", help="list the catalog")
    ops.add_argument("--json", action="store_true", help="machine-readable output")
    ops.set_defaults(handler=_ops)
    return parser


def make_gate(project: Project) -> Gate:
    return Gate([("compile", CompileCheck(project.include_dir))])


def _regen(project: Project, args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise GeneratorError("--jobs must be at least 1")
    progress = (lambda line: None) if args.check else (lambda line: print(line, flush=True))
    regenerator = Regenerator(project, make_gate(project), progress=progress)
    report = regenerator.run(ops_glob=args.ops, force=args.force, jobs=args.jobs, check=args.check)
    if args.check:
        return _report_check(report)
    _report_regen(report)
    if report.diff.changed or report.diff.stale:
        if not args.no_build:
            build(project)
    elif not args.no_build:
        print("generated/ unchanged; nothing to build")
    return 1 if report.rejected else 0


def _report_check(report: RegenReport) -> int:
    reasons = {r.plan.path: r.message for r in report.results if r.status == "stale"}
    changed = sorted(set(report.diff.changed) | set(reasons))  # a re-judged body can render to the same bytes
    if not changed and not report.diff.stale:
        print("generated/ is up to date")
        return 0
    print("generated/ is out of date; run `tsgen regen`:")
    for path in changed:
        print(f"  generated/{path}" + (f"  ({reasons[path]})" if path in reasons else ""))
    for path in report.diff.stale:
        print(f"  generated/{path}  (no longer produced)")
    return 1


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


def _ops(project: Project, args: argparse.Namespace) -> int:
    catalog = load_catalog(project.root)
    regenerator = Regenerator(project, make_gate(project))
    plans = regenerator.plan(catalog, Manifest.load(project.generated_dir), force=False)
    rows = []
    for spec in catalog.ops:
        mine = [p for p in plans if p.spec.name == spec.name]
        rows.append({
            "op": spec.name,
            "family": spec.family.value,
            "dtypes": list(spec.dtypes),
            "devices": [p.device for p in mine if p.previous is not None],
            "proposer": sorted({p.previous.proposer for p in mine if p.previous and p.previous.proposer}),
            "accepted": all(p.reason is None for p in mine),
            "status": "accepted" if all(p.reason is None for p in mine) else "; ".join(f"{p.device}: {p.reason}" for p in mine if p.reason),
        })  # fmt: skip
    for alias in catalog.aliases:
        target = next(r for r in rows if r["op"] == alias.alias_of)
        rows.append({**target, "op": alias.name, "family": f"alias of {alias.alias_of}"})
    rows.sort(key=lambda r: r["op"])
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    _print_table(rows)
    accepted = sum(r["accepted"] for r in rows)
    print(f"\n{len(rows)} ops, {accepted} accepted; devices built: {', '.join(api.DEVICES)}")
    return 0


def _print_table(rows: list[dict]) -> None:
    header = ("op", "family", "dtypes", "devices", "proposer", "status")
    table = [header] + [
        (r["op"], r["family"], _dtype_summary(r["dtypes"]), ",".join(r["devices"]) or "-", ",".join(r["proposer"]) or "-", r["status"])
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _dtype_summary(dtypes: list[str]) -> str:
    from .model import DTYPE_CLASSES

    for name in ("all", "numeric", "floating", "integer"):
        if tuple(dtypes) == DTYPE_CLASSES[name]:
            return name
    return ",".join(d.replace("float", "f").replace("uint", "u").replace("int", "i") for d in dtypes)


if __name__ == "__main__":
    sys.exit(main())
