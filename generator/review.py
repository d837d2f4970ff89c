"""`tsgen review`: what changed in generated/ between a git revision and the working tree, and why.

The data comes from three places: the two trees' files (the diff), the two MANIFEST.json files (per
kernel: the hashes of its inputs, who wrote its body and the gate's verdict) and a fresh
`regen --check` of the working tree (is generated/ what its inputs produce; which files were edited
by hand). Manifest entries are read as plain JSON, so provenance keys a proposer adds (model,
attempts, tokens, cost, transcript, ...) are reported without this module knowing them.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import GeneratorError
from .git import Git
from .hashing import sha256_text
from .manifest import MANIFEST_NAME
from .project import Project
from .staleness import HAND_EDITED

# Keys of a manifest entry that are bookkeeping, not provenance.
BOOKKEEPING = {"sha256", "inputs", "inputs_sha256", "op", "device", "body_sha256", "interface_sha256", "verdict", "proposer",
               "judged_sha256", "kernel_sha256"}  # fmt: skip
# Per file in the Markdown report (a job summary holds at most 1 MiB); longer diffs are cut with a note that says so
# and names the command that shows the rest. JSON always has whole diffs.
MAX_DIFF_LINES = 400
MAX_DIFF_CHARS = 40_000


@dataclass
class FileChange:
    path: str  # relative to generated/
    status: str  # added, removed, modified, unchanged
    added: int = 0
    removed: int = 0
    diff: str = ""
    hand_edited: bool = False  # its bytes do not match the working tree's manifest


@dataclass
class OpChange:
    op: str
    change: str  # added, changed, removed
    causes: list[str]
    provenance: dict[str, dict[str, object]]  # device -> proposer and whatever else the manifest records
    verdict: dict[str, str]  # device -> the gate's verdict, or why there is none
    files: list[FileChange]
    spec_diff: str = ""


@dataclass
class Review:
    base: str  # the revision as given (or the merge base's description)
    base_commit: str
    up_to_date: bool  # `tsgen regen --check` passes on the working tree
    stale: dict[str, str]  # path -> why, for files `regen --check` would rewrite
    ops: list[OpChange] = field(default_factory=list)
    shared: list[FileChange] = field(default_factory=list)  # registration, bindings, stubs, ... (manifest aside)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


# ---- collecting -----------------------------------------------------------------------------------------


def _working_tree(generated: Path) -> dict[str, str]:
    return {
        p.relative_to(generated).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(generated.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _entries(manifest_text: str | None) -> dict[str, dict]:
    if not manifest_text:
        return {}
    try:
        return dict(json.loads(manifest_text)["outputs"])
    except (ValueError, KeyError, TypeError) as exc:
        raise GeneratorError(f"unreadable {MANIFEST_NAME}: {exc}") from None


def _file_change(path: str, old: str | None, new: str | None, hand_edited: bool) -> FileChange:
    if old == new:
        return FileChange(path, "unchanged", hand_edited=hand_edited)
    status = "added" if old is None else "removed" if new is None else "modified"
    lines = list(difflib.unified_diff((old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
                                      f"a/generated/{path}", f"b/generated/{path}"))  # fmt: skip
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return FileChange(path, status, added, removed, text, hand_edited)


def _causes(old: dict | None, new: dict | None, spec_path: str, spec_exists: bool, hand_edited: list[str]) -> list[str]:
    causes = [f"{HAND_EDITED}: generated/{path}" for path in hand_edited]
    if old is None:
        return [*causes, f"new spec: {spec_path}"]
    if new is None:
        return [*causes, f"spec removed: {spec_path}" if not spec_exists else "no accepted kernel any more (see `tsgen ops`)"]
    changed = sorted(k for k in old.get("inputs", {}).keys() | new.get("inputs", {}).keys()
                     if old.get("inputs", {}).get(k) != new.get("inputs", {}).get(k))  # fmt: skip
    causes += [_input_label(name) for name in changed]
    if old.get("proposer") != new.get("proposer"):
        causes.append(f"proposer: {old.get('proposer')} -> {new.get('proposer')}")
    elif old.get("body_sha256") != new.get("body_sha256") and not changed:
        causes.append(f"new kernel body from the {new.get('proposer')} proposer")
    return causes


def _input_label(name: str) -> str:
    if name.startswith("specs/"):
        return f"spec changed: {name}"
    if name.startswith("templates/prompts/") or "prompt" in name:
        return f"prompt changed: {name}"
    if name.startswith("templates/"):
        return f"template changed: {name}"
    return {
        "generator": "generator changed (generator/ modules that shape generated text)",
        "validators": "gate changed (validators/): re-judged",
        "runtime_headers": "kernel headers changed (runtime/include): re-judged",
        "runtime_engine": "engines changed (runtime/src/core; for CUDA kernels also runtime/src/cuda): re-judged",
        "formatting": "formatting changed (.clang-format or the formatter versions)",
    }.get(name, f"input changed: {name}")


def _provenance(entry: dict) -> dict[str, object]:
    found: dict[str, object] = {"proposer": entry.get("proposer", "unknown")}
    for key, value in sorted(entry.items()):
        if key == "details" and isinstance(value, dict):
            found.update(sorted(value.items()))
        elif key not in BOOKKEEPING:
            found[key] = value
    return found


def collect(project: Project, base: str | None, check: dict[str, str]) -> Review:
    """The review of generated/ against `base` (default: the merge base with main). `check` is what
    `regen --check` reports for the working tree: path -> why it would be rewritten."""
    git = Git(project.root)
    label, commit = (base, git.resolve(base)) if base else git.merge_base()
    old_files = git.tree(commit, "generated")
    new_files = _working_tree(project.generated_dir)
    old_entries = _entries(old_files.get(MANIFEST_NAME))
    new_entries = _entries(new_files.get(MANIFEST_NAME))
    # A file whose bytes differ from what the working tree's manifest recorded was not written by tsgen.
    hand_edited = {path for path, entry in new_entries.items() if path in new_files and sha256_text(new_files[path]) != entry.get("sha256")}
    hand_edited |= {path for path, why in check.items() if why == HAND_EDITED}
    review = Review(label, commit, up_to_date=not check, stale=dict(sorted(check.items())))

    kernels: dict[str, dict[str, str]] = {}  # op -> device -> path
    transcripts: dict[str, set[str]] = {}  # op -> what its proposer's conversations left under generated/
    for entries in (old_entries, new_entries):
        for path, entry in entries.items():
            if entry.get("op") and entry.get("device"):
                kernels.setdefault(entry["op"], {})[entry["device"]] = path
                if isinstance(entry.get("transcript"), str):
                    transcripts.setdefault(entry["op"], set()).add(entry["transcript"])
    owned = {path for paths in kernels.values() for path in paths.values()} | {p for paths in transcripts.values() for p in paths}
    for op in sorted(kernels):
        files, causes, provenance, verdict = [], [], {}, {}
        old_any = new_any = False
        for device, path in sorted(kernels[op].items()):
            old, new = old_entries.get(path), new_entries.get(path)
            old_any, new_any = old_any or old is not None, new_any or new is not None
            change = _file_change(path, old_files.get(path), new_files.get(path), path in hand_edited)
            if change.status == "unchanged" and old == new and not change.hand_edited:
                continue
            files.append(change)
            spec_path = (new or old or {}).get("inputs", {})
            spec_path = next((k for k in spec_path if k.startswith("specs/")), f"specs/{op}.yaml")
            causes += [c for c in _causes(old, new, spec_path, (project.root / spec_path).exists(), [path] if change.hand_edited else [])
                       if c not in causes]  # fmt: skip
            if new is not None:
                provenance[device] = _provenance(new)
                verdict[device] = new.get("verdict", "no verdict recorded")
            else:
                verdict[device] = "no kernel in the working tree"
            if path in check and check[path] != HAND_EDITED:
                verdict[device] += f"; stale: {check[path]} (run `tsgen regen`)"
        if not files:
            continue
        for path in sorted(transcripts.get(op, ())):
            change = _file_change(path, old_files.get(path), new_files.get(path), hand_edited=False)
            if change.status != "unchanged":
                files.append(change)
        spec_path = next((c.split(": ", 1)[1] for c in causes if c.startswith(("spec changed", "new spec", "spec removed"))), None)
        spec_diff = ""
        if spec_path is not None:
            now = project.root / spec_path
            spec = _file_change(spec_path, git.file(commit, spec_path), now.read_text(encoding="utf-8") if now.exists() else None, False)
            spec_diff = spec.diff.replace("a/generated/", "a/").replace("b/generated/", "b/")
        change_kind = "added" if not old_any else "removed" if not new_any else "changed"
        review.ops.append(OpChange(op, change_kind, causes, provenance, verdict, files, spec_diff))
    for path in sorted((old_files.keys() | new_files.keys()) - owned - {MANIFEST_NAME}):
        change = _file_change(path, old_files.get(path), new_files.get(path), path in hand_edited)
        if change.status != "unchanged" or change.hand_edited:
            review.shared.append(change)
    return review


# ---- Markdown -------------------------------------------------------------------------------------------


def markdown(review: Review) -> str:
    out = [f"# Generated code review\n\nBase: `{review.base}` (`{review.base_commit[:12]}`) → working tree.\n"]
    if review.up_to_date:
        out.append("`tsgen regen --check`: **generated/ is up to date** with specs/, templates/ and the generator.\n")
    else:
        out.append(f"`tsgen regen --check`: **generated/ is out of date** — run `tsgen regen` ({len(review.stale)} file(s)):\n")
        long = len(review.stale) > 10  # a regeneration of everything lists every file: keep the page readable
        out += ["<details><summary>The files and why</summary>\n"] if long else []
        out += [f"- `generated/{path}`: {why or 'differs from what its inputs produce'}" for path, why in review.stale.items()]
        out += ["\n</details>"] if long else []
        out.append("")
    edited = [f.path for op in review.ops for f in op.files if f.hand_edited] + [f.path for f in review.shared if f.hand_edited]
    if edited:
        out.append("**Edited by hand** (the bytes do not match what tsgen wrote): " + ", ".join(f"`generated/{p}`" for p in edited) + "\n")
    counts = {kind: sum(op.change == kind for op in review.ops) for kind in ("added", "changed", "removed")}
    out.append(f"Ops: {counts['added']} added, {counts['changed']} changed, {counts['removed']} removed; "
               f"{len(review.shared)} shared file(s) changed.\n")  # fmt: skip
    if review.ops:
        out.append("| op | change | cause | provenance | gate |\n|---|---|---|---|---|")
        for op in review.ops:
            provenance = "; ".join(f"{d}: {_provenance_text(p)}" for d, p in op.provenance.items()) or "-"
            verdict = "; ".join(f"{d}: {v}" for d, v in op.verdict.items())
            out.append(f"| `{op.op}` | {op.change} | {_cell('; '.join(op.causes) or '-')} | {_cell(provenance)} | {_cell(verdict)} |")
        out.append("")
    for op in review.ops:
        out.append(f"<details><summary><code>{op.op}</code> ({op.change}): {_summary(op.files)}</summary>\n")
        if op.spec_diff:
            out.append("Spec change:\n")
            out.append(_fenced(op.spec_diff))
        for f in op.files:
            out.append(_file_block(f, review.base_commit))
        out.append("</details>\n")
    if review.shared:
        out.append(f"<details><summary>Shared files: {_summary(review.shared)}</summary>\n")
        for f in review.shared:
            out.append(_file_block(f, review.base_commit))
        out.append("</details>\n")
    return "\n".join(out)


def _provenance_text(p: dict[str, object]) -> str:
    rest = ", ".join(f"{k} {_short(v)}" for k, v in p.items() if k != "proposer")
    return f"{p['proposer']}" + (f" ({rest})" if rest else "")


def _short(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _summary(files: list[FileChange]) -> str:
    return ", ".join(f"`{f.path}` {f.status} (+{f.added} −{f.removed}){' — edited by hand' if f.hand_edited else ''}" for f in files)


def _file_block(f: FileChange, base_commit: str) -> str:
    title = f"`generated/{f.path}` — {f.status}, +{f.added} −{f.removed}" + (", **edited by hand**" if f.hand_edited else "")
    if not f.diff:
        return f"{title}: no textual change.\n"
    lines = f.diff.splitlines(keepends=True)
    if len(lines) <= MAX_DIFF_LINES and len(f.diff) <= MAX_DIFF_CHARS:
        return f"{title}\n\n{_fenced(f.diff)}"
    kept: list[str] = []
    for line in lines[:MAX_DIFF_LINES]:
        if sum(map(len, kept)) + len(line) > MAX_DIFF_CHARS:
            break
        kept.append(line)
    note = (f"Large diff: {len(lines)} lines, {len(f.diff)} characters; the first {len(kept)} lines are shown. The whole "
            f"diff: `git diff {base_commit[:12]} -- generated/{f.path}`, or `tsgen review --json`.")  # fmt: skip
    return f"{title}\n\n{note}\n\n{_fenced(''.join(kept))}\n{note}\n"


def _fenced(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}diff\n{text if text.endswith(chr(10)) else text + chr(10)}{fence}\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
