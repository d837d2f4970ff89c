"""`tsgen validate --changed-since REV`: only the kernels REV did not accept as they are now are judged.

On a throwaway git repository made from a copy of the checkout (as test_review does); the edits are
test_regen's, so the gate's verdicts come from the shared cache. What decides "changed" is the gate's
identity recomputed from the working tree against REV's manifest, so a forged working-tree manifest
changes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_regen import EDITS, ok, set_field
from test_review import git, repo  # noqa: F401 - `repo` is a fixture

from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.generator import api
from tensorsmith_forge.generator.loop import Regenerator
from tensorsmith_forge.generator.manifest import OutputRecord
from tensorsmith_forge.generator.project import Project
from tensorsmith_forge.generator.proposers import extract_body
from tensorsmith_forge.generator.selection import changed_since, in_shard
from tensorsmith_forge.validators.gate import Gate


def judged(stdout: str) -> dict[str, str]:
    """kernel label -> why, as the selection lists them before judging."""
    return dict(re.findall(r"^  (\w+\.(?:cpu|cuda)): (?!pass|FAIL)(.+)$", stdout, flags=re.MULTILINE))


def test_an_unchanged_tree_judges_nothing_and_says_so(repo: Path, tsgen) -> None:  # noqa: F811
    n = len(load_catalog(repo).ops)
    out = ok(tsgen(repo, "validate", "--changed-since", "main", "--device", "cpu"))
    assert judged(out) == {}
    assert f"{n} kernel(s) that main (" in out and "0 of 0 kernels pass the gate" in out


def test_a_changed_spec_judges_that_op_only(repo: Path, tsgen) -> None:  # noqa: F811
    set_field(repo / "specs" / "negative.yaml", "doc", EDITS["doc"][0])
    ok(tsgen(repo, "regen", "--no-build", "--ops", "negative"))
    out = ok(tsgen(repo, "validate", "--changed-since", "main", "--device", "cpu", "--json", str(repo / "report.json")))
    assert judged(out) == {"negative.cpu": "changed since the base (kernel, spec, op table, gate or runtime)"}
    assert "1 of 1 kernels pass the gate" in out
    assert list(json.loads((repo / "report.json").read_text(encoding="utf-8"))) == ["negative.cpu"]


def test_a_hand_edit_behind_a_forged_manifest_is_still_judged(repo: Path, tsgen) -> None:  # noqa: F811
    """The working tree's manifest is the author's to edit: it is never what decides."""
    kernel = repo / "generated" / "cpu" / "negative.cpp"
    marker = "    // --- end kernel body ---\n"
    kernel.write_text(kernel.read_text(encoding="utf-8").replace(marker, "    // a hand edit\n" + marker, 1), encoding="utf-8")
    assert "a hand edit" in extract_body(kernel.read_text(encoding="utf-8"))[0]
    out = tsgen(repo, "validate", "--changed-since", "main", "--device", "cpu", "--ops", "neg*")
    assert "negative.cpu" in judged(out.stdout), out.stdout + out.stderr


def test_kernels_only_the_runtime_changed_under_are_sampled_per_family(repo: Path, tsgen) -> None:  # noqa: F811
    """A base whose manifest records the kernels' own part as it is now but another whole identity: what a
    runtime or gate change since the base looks like. --shared-sample 1 judges one of the two pointwise
    kernels and says it left the other; without it both are judged."""
    manifest_path = repo / "generated" / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for name in ("cpu/negative.cpp", "cpu/positive.cpp"):
        assert manifest["outputs"][name]["kernel_sha256"]  # regen records the kernel's own part
        manifest["outputs"][name]["judged_sha256"] = "0" * 64  # accepted under another runtime
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "the base accepted them under another runtime")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "HEAD~1", "--", "generated/MANIFEST.json")  # the working tree as it was

    out = ok(tsgen(repo, "validate", "--changed-since", base, "--device", "cpu", "--ops", "*tive", "--shared-sample", "1"))
    chosen = judged(out)
    assert len(chosen) == 1 and set(chosen) <= {"negative.cpu", "positive.cpu"}, out
    assert list(chosen.values()) == ["the gate or the runtime changed, not the kernel: drawn for pointwise on cpu"]
    assert "1 kernel(s) that only the gate or the runtime changed under: not judged here (--shared-sample 1;" in out
    assert "1 of 1 kernels pass the gate" in out

    out = ok(tsgen(repo, "validate", "--changed-since", base, "--device", "cpu", "--ops", "*tive"))
    assert judged(out) == dict.fromkeys(["negative.cpu", "positive.cpu"], "the gate or the runtime changed, not the kernel")


def test_a_sample_of_the_unchanged_is_drawn(repo: Path, tsgen) -> None:  # noqa: F811
    out = ok(tsgen(repo, "validate", "--changed-since", "main", "--sample", "1", "--device", "cpu", "--ops", "neg*"))
    assert judged(out) == {"negative.cpu": "unchanged, drawn for a re-judgement under fresh hidden cases"}
    assert "1 of 1 kernels pass the gate" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--changed-since", "no-such-rev"), "tsgen: error: unknown revision 'no-such-rev'"),
    (("--sample", "3"), "tsgen: error: --sample draws from the kernels --changed-since leaves out; give --changed-since REV"),
    (("--shared-sample", "2"), "tsgen: error: --shared-sample draws from the kernels --changed-since leaves out; give --changed-since REV"),
    (("--shard", "0/2"), "tsgen: error: --shard takes K/N with 1 <= K <= N (3/4: the third of four shards), not '0/2'"),
    (("--shard", "3/2"), "tsgen: error: --shard takes K/N with 1 <= K <= N"),
    (("--shard", "half"), "tsgen: error: --shard takes K/N with 1 <= K <= N"),
])  # fmt: skip
def test_bad_selections_are_one_line_errors(repo: Path, tsgen, args: tuple[str, ...], message: str) -> None:  # noqa: F811
    result = tsgen(repo, "validate", "--device", "cpu", *args)
    assert result.returncode == 2 and result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_the_identity_covers_the_runtime_the_gate_and_the_kernel(checkout: Path) -> None:
    """Gate.identity changes with the meaning of the engine's sources and of the headers the kernel reaches, and
    with the kernel's text; not with comments or layout, nor with files the gate never compiles. (The gate's
    own Python is the installed package's, not the copy's: test_source_meaning covers Python's meaning.)"""
    project = Project.locate(checkout)
    gate = Gate(checkout, cache_dir=checkout / "build" / "gate-unused")
    spec = load_catalog(checkout).op("negative")
    text = (checkout / "generated" / api.kernel_path(spec, "cpu")).read_text(encoding="utf-8")
    body, proposer = extract_body(text)

    def identity(kernel_body: str = body) -> str:
        return gate.identity(Regenerator(project, gate).candidate(spec, "cpu", kernel_body, proposer))

    def kernel_identity(kernel_body: str = body) -> str:
        return Gate.kernel_identity(Regenerator(project, gate).candidate(spec, "cpu", kernel_body, proposer))

    first, own = identity(), kernel_identity()
    assert identity() == first  # deterministic: no salt, no machine
    assert identity(body + "\n// edited\n") != first  # the body's own text counts as it is (the static check reads it)
    assert kernel_identity(body + "\n// edited\n") != own

    def edited(path: Path, edit, changes: bool) -> None:
        original = path.read_text(encoding="utf-8")
        path.write_text(edit(original), encoding="utf-8")
        try:
            assert (identity() != first) is changes, (path.name, edit(original)[-200:])
            assert kernel_identity() == own  # the runtime is no part of the kernel's own identity
        finally:
            path.write_text(original, encoding="utf-8")

    engine = min((checkout / "runtime" / "src" / "core").glob("*.cpp"))
    include = checkout / "runtime" / "include" / "tensorsmith"
    cpp_comment = lambda t: "// touched\n" + t.replace("\n", "\n\n", 3) + "/* and here */\n"  # noqa: E731
    cpp_reformat = lambda t: t.replace(";\n", " ;\n\n").replace("{\n", "{\n    ")  # noqa: E731 - never inside a literal
    cpp_code = lambda t: t + "namespace ts { int touched_by_a_test = 1; }\n"  # noqa: E731
    for path in (engine, include / "scalar_ops.h"):
        edited(path, cpp_comment, False)
        edited(path, cpp_reformat, False)
        edited(path, cpp_code, True)
    # The bindings' python.h, which nothing the gate compiles includes, counts for nothing.
    edited(include / "python.h", cpp_code, False)
    assert identity() == first


def record(judged_sha256: str | None, kernel_sha256: str | None = None) -> OutputRecord:
    return OutputRecord(sha256="", inputs={}, inputs_sha256="", judged_sha256=judged_sha256, kernel_sha256=kernel_sha256)


def test_the_selection_rules() -> None:
    kernels = [("a", "cpu"), ("b", "cpu"), ("c", "cpu"), ("d", "cpu"), ("e", "cpu")]
    base = {("a", "cpu"): record("A"), ("b", "cpu"): record("old"), ("c", "cpu"): record(None), ("e", "cpu"): record("E")}
    identities = {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"}
    chosen = changed_since(kernels, key=lambda k: k, identity=lambda k: identities[k[0]], base=base, sample=0, salt=b"s")
    assert [(k[0], why.split(" ")[0]) for k, why in chosen.judged] == [("b", "changed"), ("c", "the"), ("d", "new")]
    assert chosen.unchanged == 2
    drawn = {s: changed_since(kernels, key=lambda k: k, identity=lambda k: identities[k[0]], base=base, sample=1, salt=s)
             for s in (bytes([i]) for i in range(16))}  # fmt: skip
    for selection in drawn.values():
        extra = [k[0] for k, why in selection.judged if why.startswith("unchanged")]
        assert len(extra) == 1 and extra[0] in {"a", "e"} and selection.unchanged == 1
    assert len({tuple(k for k, _ in s.judged) for s in drawn.values()}) == 2, "the salt chooses which unchanged kernel is drawn"


def test_shards_judge_each_selected_kernel_once_between_them(repo: Path, tsgen) -> None:  # noqa: F811
    names = {f"{spec.name}.cpu" for spec in load_catalog(repo).ops if spec.name.startswith("neg")}
    seen: list[str] = []
    for k in (1, 2, 3):
        out = ok(tsgen(repo, "validate", "--changed-since", "main", "--sample", "5", "--device", "cpu", "--ops", "neg*",
                       "--shard", f"{k}/3"))  # fmt: skip
        assert f"of shard {k}/3 (" in out
        seen += list(judged(out))
    assert sorted(seen) == sorted(names)


def test_shards_partition_any_set_of_kernels() -> None:
    keys = [(f"op{i}", device) for i in range(300) for device in ("cpu", "cuda")]
    for n in (1, 2, 5):
        owners = [[k for k in range(1, n + 1) if in_shard(key, (k, n))] for key in keys]
        assert all(len(o) == 1 for o in owners)
        sizes = [sum(o == [k] for o in owners) for k in range(1, n + 1)]
        assert min(sizes) > len(keys) / n / 2  # spread, not all in one


def test_the_selection_rules_for_shared_changes() -> None:
    """Kernels whose own part the base recorded as it is now changed only through the gate or the runtime: all
    judged by default; with shared_sample K, K per group, drawn by the salt, the rest counted as left (and
    open to --sample). A kernel whose own part changed too is judged whatever K."""
    kernels = [(f"p{i}", "cpu") for i in range(6)] + [("r0", "cpu"), ("r1", "cpu"), ("own", "cpu"), ("same", "cpu")]
    base = {k: record("old", f"own-{k[0]}") for k in kernels} | {("own", "cpu"): record("old", "before"),
                                                                  ("same", "cpu"): record("S", "own-same")}  # fmt: skip

    def select(**kwargs):
        return changed_since(kernels, key=lambda k: k, identity=lambda k: "S" if k[0] == "same" else "new", base=base,
                             kernel_identity=lambda k: f"own-{k[0]}", group=lambda k: k[0][0], **kwargs)  # fmt: skip

    every = select(sample=0, salt=b"s")
    assert [k[0] for k, _ in every.judged] == ["p0", "p1", "p2", "p3", "p4", "p5", "r0", "r1", "own"]
    assert {k[0]: why for k, why in every.judged}["own"].startswith("changed since the base")
    assert every.unchanged == 1 and every.shared_left == 0

    for salt in (bytes([i]) for i in range(8)):
        some = select(sample=0, salt=salt, shared_sample=2)
        names = [k[0] for k, _ in some.judged]
        assert "own" in names and "same" not in names
        assert sum(n.startswith("p") for n in names) == 2 and {"r0", "r1"} <= set(names)
        assert some.shared_left == 4 and some.unchanged == 1
        assert all(why.endswith(f"drawn for {k[0][0]}") for k, why in some.judged if k[0] != "own")
        more = select(sample=3, salt=salt, shared_sample=2)
        assert len(more.judged) == len(some.judged) + 3 and more.shared_left + more.unchanged == 2
    draws = {tuple(k for k, _ in select(sample=0, salt=bytes([i]), shared_sample=1).judged) for i in range(16)}
    assert len(draws) > 1, "the salt chooses which kernels of a group are drawn"

    unrecorded = {k: record("old") for k in kernels}  # a base from before kernel_sha256: every change is the kernel's
    chosen = changed_since(kernels, key=lambda k: k, identity=lambda k: "new", base=unrecorded, sample=0, salt=b"s",
                           kernel_identity=lambda k: f"own-{k[0]}", group=lambda k: k[0][0], shared_sample=1)  # fmt: skip
    assert len(chosen.judged) == len(kernels) and chosen.shared_left == 0
