"""`tsgen review` and the tamper checks, on a throwaway git repository made from a copy of the checkout.

The branch changes one spec the way test_regen does (same edit, so the gate's verdict comes from the
shared cache); everything else is read from the copy's own files, nothing is hard-coded.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from test_regen import EDITS, listed, ok, set_field

from tensorsmith_forge.generator import review as review_module
from tensorsmith_forge.generator.proposers import extract_body

DOC = EDITS["doc"][0]


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=root,
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def repo(checkout: Path) -> Path:
    """The checkout copy as a git repository on branch `feature`, forked from `main`."""
    git(checkout, "init", "-q", "-b", "main")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "base")
    git(checkout, "checkout", "-q", "-b", "feature")
    return checkout


def review(tsgen, root: Path, *args: str) -> dict:
    return json.loads(ok(tsgen(root, "review", "--json", *args)))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_review_of_a_branch_that_changes_one_spec(repo: Path, tsgen) -> None:
    set_field(repo / "specs" / "negative.yaml", "doc", DOC)
    ok(tsgen(repo, "regen", "--no-build", "--ops", "negative"))
    git(repo, "commit", "-q", "-am", "negative: new doc")

    data = review(tsgen, repo)  # default base: the merge base with main
    assert data["base_commit"] == git(repo, "rev-parse", "main").strip()
    assert data["up_to_date"] is True and data["stale"] == {}
    assert [(op["op"], op["change"]) for op in data["ops"]] == [("negative", "changed")]
    (op,) = data["ops"]
    assert op["causes"] == ["spec changed: specs/negative.yaml"]
    assert op["provenance"]["cpu"]["proposer"] == "template"
    assert op["verdict"]["cpu"].startswith("accepted by ")
    assert [(f["path"], f["status"], f["hand_edited"]) for f in op["files"]] == [("cpu/negative.cpp", "modified", False),
                                                                               ("cuda/negative.cu", "modified", False)]
    assert f"+doc: {DOC}" in op["spec_diff"]
    new_lines = [line for line in (repo / "generated" / "cpu" / "negative.cpp").read_text(encoding="utf-8").splitlines() if DOC in line]
    assert new_lines and all(f"+{line}\n" in op["files"][0]["diff"] for line in new_lines)
    assert {f["path"] for f in data["shared"]} == {"bindings.cpp", "python/_C.pyi"}  # where the doc also appears

    report = ok(tsgen(repo, "review"))
    assert "**generated/ is up to date**" in report
    assert "| `negative` | changed | spec changed: specs/negative.yaml | cpu: template; cuda: template |" in report
    assert "<details><summary><code>negative</code> (changed)" in report
    assert f"+{new_lines[0]}" in report and "Ops: 0 added, 1 changed, 0 removed" in report


def test_review_of_an_added_op_and_against_an_explicit_base(repo: Path, tsgen) -> None:
    (repo / "specs" / "signbit.yaml").unlink()
    ok(tsgen(repo, "regen", "--no-build"))
    data = review(tsgen, repo, "--base", "main")
    assert [(op["op"], op["change"], op["causes"]) for op in data["ops"]] == [("signbit", "removed", ["spec removed: specs/signbit.yaml"])]
    assert data["ops"][0]["files"][0]["status"] == "removed"
    git(repo, "commit", "-q", "-am", "no signbit")
    back = review(tsgen, repo, "--base", "feature~0")
    assert back["ops"] == [] and back["shared"] == []
    git(repo, "checkout", "-q", "main", "--", "specs/signbit.yaml")
    # signbit's kernel comes back from the gate cache: reported as added against the branch without it
    ok(tsgen(repo, "regen", "--no-build"))
    again = review(tsgen, repo, "--base", "HEAD")
    assert [(op["op"], op["change"], op["causes"]) for op in again["ops"]] == [("signbit", "added", ["new spec: specs/signbit.yaml"])]


def test_hand_edits_are_caught_by_check_and_named_by_review(repo: Path, tsgen) -> None:
    generated = repo / "generated"
    with (generated / "cpu" / "abs.cpp").open("a", encoding="utf-8") as f:
        f.write("// a local tweak\n")
    with (generated / "bindings.cpp").open("a", encoding="utf-8") as f:
        f.write("// another\n")
    check = tsgen(repo, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout) == {"cpu/abs.cpp": "edited by hand", "bindings.cpp": "edited by hand"}

    data = review(tsgen, repo)
    assert data["up_to_date"] is False
    assert [(op["op"], op["causes"]) for op in data["ops"]] == [("abs", ["edited by hand: generated/cpu/abs.cpp"])]
    assert [(f["path"], f["hand_edited"]) for f in data["shared"]] == [("bindings.cpp", True)]
    report = ok(tsgen(repo, "review"))
    assert "**Edited by hand** (the bytes do not match what tsgen wrote): `generated/cpu/abs.cpp`, `generated/bindings.cpp`" in report
    assert "+// a local tweak" in report


def test_a_hand_edit_with_a_forged_manifest_is_still_caught(checkout: Path, tsgen) -> None:
    generated = checkout / "generated"
    kernel = generated / "cpu" / "abs.cpp"
    kernel.write_text(kernel.read_text(encoding="utf-8") + "// a local tweak\n", encoding="utf-8")
    manifest = json.loads((generated / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["outputs"]["cpu/abs.cpp"]["sha256"] = sha256(kernel)
    (generated / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout)["cpu/abs.cpp"] == "edited by hand"


def _make_external(generated: Path, op: str) -> Path:
    """Turns the op's template kernel into one an outside author wrote (same body), as `tsgen submit` records it."""
    kernel = generated / "cpu" / f"{op}.cpp"
    text = kernel.read_text(encoding="utf-8").replace("(proposer: template)", "(proposer: external)")
    kernel.write_text(text, encoding="utf-8")
    manifest = json.loads((generated / "MANIFEST.json").read_text(encoding="utf-8"))
    record = manifest["outputs"][f"cpu/{op}.cpp"]
    record.update(proposer="external", sha256=sha256(kernel))
    assert record["body_sha256"] == hashlib.sha256(extract_body(text)[0].encode()).hexdigest()
    (generated / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return kernel


def test_a_hand_edited_external_body_is_not_laundered(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    kernel = _make_external(generated, "negative")
    # The stored body renders back to exactly the same bytes: formatting keeps the round trip exact.
    assert tsgen(checkout, "regen", "--check").returncode == 0

    text = kernel.read_text(encoding="utf-8")
    marker = "// --- kernel body (proposer: external) ---\n"
    kernel.write_text(text.replace(marker, marker + "    (void)n;\n"), encoding="utf-8")
    before = hash_tree(generated)
    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rejected negative.cpu: edited by hand: generated/cpu/negative.cpp" in result.stdout
    assert hash_tree(generated) == before  # neither re-rendered nor recorded as accepted
    assert listed(tsgen(checkout, "regen", "--check").stdout)["cpu/negative.cpp"] == "edited by hand"


# ---- the report's parts, without a repository -----------------------------------------------------------


def test_provenance_shows_whatever_the_manifest_records() -> None:
    entry = {"sha256": "a" * 64, "inputs": {}, "inputs_sha256": "b" * 64, "op": "add", "device": "cpu", "proposer": "claude",
             "model": "some-model", "attempts": 3, "tokens": {"input": 1200, "output": 340}, "cost_usd": 0.0123456,
             "transcript": "transcripts/add.cpu.jsonl", "verdict": "accepted by static"}  # fmt: skip
    provenance = review_module._provenance(entry)
    assert provenance == {"proposer": "claude", "attempts": 3, "cost_usd": 0.0123456, "model": "some-model",
                          "tokens": {"input": 1200, "output": 340}, "transcript": "transcripts/add.cpu.jsonl"}  # fmt: skip
    text = review_module._provenance_text(provenance)
    assert text.startswith("claude (") and "model some-model" in text and "attempts 3" in text and "cost_usd 0.01235" in text
    assert "tokens {input: 1200, output: 340}" in text


def test_a_large_diff_is_summarised_not_silently_cut() -> None:
    old = "".join(f"line {i}\n" for i in range(1000))
    new = "".join(f"line {i} changed\n" for i in range(1000))
    change = review_module._file_change("cpu/big.cpp", old, new, hand_edited=False)
    assert (change.added, change.removed) == (1000, 1000)
    block = review_module._file_block(change, "c" * 40)
    total = len(change.diff.splitlines())
    assert f"Large diff: {total} lines, {len(change.diff)} characters; the first {review_module.MAX_DIFF_LINES} lines are shown" in block
    assert f"git diff {'c' * 12} -- generated/cpu/big.cpp" in block
    assert "line 999 changed" not in block and "line 999 changed" in change.diff  # the JSON keeps all of it


def test_a_diff_of_few_long_lines_is_summarised_too() -> None:
    change = review_module._file_change("transcripts/add.cpu.jsonl", None, "x" * 30_000 + "\n" + "y" * 30_000 + "\n", hand_edited=False)
    block = review_module._file_block(change, "e" * 40)
    assert "Large diff: 5 lines" in block and "x" * 30_000 in block and "y" * 100 not in block
    assert len(block) < review_module.MAX_DIFF_CHARS + 1000


def test_a_diff_containing_a_fence_stays_fenced() -> None:
    change = review_module._file_change("python/_C.pyi", "x = 1\n", "x = '```'\n", hand_edited=False)
    block = review_module._file_block(change, "d" * 40)
    assert "````diff\n" in block and block.rstrip().endswith("````")
