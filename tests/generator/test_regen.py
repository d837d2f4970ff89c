"""`tsgen regen` end to end on throwaway copies of the checkout (always --no-build).

Each test gets a private copy of an up-to-date checkout (the `checkout` fixture copies the
session's pristine copy, generated/ and MANIFEST.json included), so only the kernels a test
touches are judged. The one test that re-judges every kernel is marked slow (fast once the gate
cache is warm, e.g. after `tsgen validate`); the from-scratch regenerations take one op of each family, and
the scheduled CI job regenerates the whole catalog from scratch.
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
from pathlib import Path

import pytest
from tensorsmith_forge.catalog.derivatives import helper_names
from tensorsmith_forge.catalog.model import OpSpec, load_catalog
from tensorsmith_forge.generator import api
from tensorsmith_forge.generator.loop import kernel_headers
from tensorsmith_forge.validators import cuda

from tests.helpers import clear_generated

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"registration.cpp", "bindings.cpp", "sources.cmake", "python/_C.pyi", "MANIFEST.json"}

TWICE = """\
func: twice(Tensor x, /) -> Tensor
family: pointwise
promotion: same
dtypes: [real]
expr: ts::ops::add(x, x)
reference: x + x
doc: Each element doubled, x + x.
tags: [core]
"""


def kernel_count(root: Path) -> int:
    return len(load_catalog(root).ops) * len(api.DEVICES)


def entries(check_stdout: str) -> list[tuple[str, str]]:
    """The files `regen --check` lists, relative to generated/, with the reason in parentheses ('' if none)."""
    found = []
    for line in check_stdout.splitlines():
        match = re.fullmatch(r"  generated/(\S+)(?:  \((.*)\))?", line)
        if match:
            found.append((match[1], match[2] or ""))
    return found


def listed(check_stdout: str) -> dict[str, str]:
    """entries() as a mapping; each file must be listed once."""
    found = entries(check_stdout)
    assert len({path for path, _ in found}) == len(found), f"a file is listed twice:\n{check_stdout}"
    return dict(found)


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def set_field(spec: Path, key: str, value: str) -> None:
    lines = spec.read_text(encoding="utf-8").splitlines()
    (i,) = [i for i, line in enumerate(lines) if line.startswith(f"{key}:")]
    lines[i] = f"{key}: {value}"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---- the committed tree ------------------------------------------------------------------------------


def test_staleness_covers_every_runtime_header_a_kernel_includes() -> None:
    # A kernel's verdict is only as current as the headers it was compiled with: each one the kernel APIs
    # include, directly or not, must be an input of every kernel (a missing half.h once let a change to the
    # float16 conversions through without judging a kernel again).
    include_dir = ROOT / "runtime" / "include"
    quoted = re.compile(r'^#include "(tensorsmith/[^"]+)"', re.MULTILINE)
    kernel_templates = [*(ROOT / "templates" / "cpu").glob("*.j2"), *(ROOT / "templates" / "cuda").glob("*.j2")]
    todo = [header for template in kernel_templates for header in quoted.findall(template.read_text())]
    assert "tensorsmith/kernel_api.h" in todo
    seen: set[str] = set()
    while todo:
        header = todo.pop()
        if header in seen:
            continue
        seen.add(header)
        todo += quoted.findall((include_dir / header).read_text())
    assert {p.relative_to(include_dir).as_posix() for p in kernel_headers(ROOT / "templates", include_dir)} == seen
    assert {"tensorsmith/half.h", "tensorsmith/cuda/scan.cuh"} <= seen  # reached only through other headers



def test_an_engine_change_makes_the_kernels_judged_in_it_stale(checkout: Path, tsgen) -> None:
    # The gate's identity of a kernel hashes the engines it runs in (runtime/src/core; for CUDA also
    # runtime/src/cuda): a regeneration must judge again what such a change touches, or MANIFEST.json keeps
    # identities that `tsgen validate --changed-since` cannot match. By meaning: a comment changes nothing.
    n = kernel_count(checkout)
    core = checkout / "runtime" / "src" / "core" / "reduce.cpp"
    cuda = checkout / "runtime" / "src" / "cuda" / "runtime.cpp"
    for source in (core, cuda):
        source.write_text(source.read_text(encoding="utf-8") + "\n// a note, no code\n", encoding="utf-8")
    ok(tsgen(checkout, "regen", "--check"))

    cuda.write_text(cuda.read_text(encoding="utf-8") + "namespace { [[maybe_unused]] int edited = 1; }\n", encoding="utf-8")
    check = tsgen(checkout, "regen", "--check")
    kernels = {path: why for path, why in listed(check.stdout).items() if path.startswith(("cpu/", "cuda/"))}
    assert len(kernels) == n // 2 and all(path.startswith("cuda/") for path in kernels), check.stdout
    assert set(kernels.values()) == {"changed: runtime_engine"}

    core.write_text(core.read_text(encoding="utf-8") + "namespace { [[maybe_unused]] int edited = 1; }\n", encoding="utf-8")
    kernels = {path: why for path, why in listed(tsgen(checkout, "regen", "--check").stdout).items() if path.startswith(("cpu/", "cuda/"))}
    assert len(kernels) == n and set(kernels.values()) == {"changed: runtime_engine"}


def test_a_header_only_the_engines_include_makes_every_kernel_stale(checkout: Path, tsgen) -> None:
    # engine_limits.h reaches no kernel's translation unit, but it sets the chunks and rows the engines hand a
    # kernel and the gate's threshold cases: a kernel judged under the old limits was never judged under these.
    limits = checkout / "runtime" / "include" / "tensorsmith" / "engine_limits.h"
    assert limits not in kernel_headers(checkout / "templates", checkout / "runtime" / "include")
    text = limits.read_text(encoding="utf-8")
    assert "constexpr int64_t kSplitMaxRows = 16;" in text
    limits.write_text(text.replace("kSplitMaxRows = 16;", "kSplitMaxRows = 8;"), encoding="utf-8")
    kernels = {path: why for path, why in listed(tsgen(checkout, "regen", "--check").stdout).items() if path.startswith(("cpu/", "cuda/"))}
    assert len(kernels) == kernel_count(checkout) and set(kernels.values()) == {"changed: runtime_engine"}


def test_check_passes_on_committed_tree(tsgen, hash_tree) -> None:
    before = hash_tree(ROOT / "generated")
    result = tsgen(ROOT, "regen", "--check")
    assert result.returncode == 0, "generated/ is out of date in the checkout:\n" + result.stdout + result.stderr
    assert result.stdout.strip() == "generated/ is up to date"
    assert hash_tree(ROOT / "generated") == before


def test_regen_on_an_up_to_date_tree_does_no_work(checkout: Path, tsgen, hash_tree) -> None:
    n = kernel_count(checkout)
    before = hash_tree(checkout)
    for _ in range(2):
        out = ok(tsgen(checkout, "regen", "--no-build"))
        assert f"0 of {n} kernels to regenerate ({n} up to date)" in out
        assert "generated/: no file changed" in out
        assert hash_tree(checkout) == before


# ---- editing a spec ----------------------------------------------------------------------------------------

# The doc appears in the kernel's comment, the binding's docstring and the stub; the expression only
# in the kernel. Every change to a spec also changes the manifest (it records each input's hash).
EDITS = {
    "doc": ("Numerical negative, edited.", {"cpu/negative.cpp", "cuda/negative.cu", "bindings.cpp", "python/_C.pyi", "MANIFEST.json"}),
    # (`T(0) - x` is rejected twice over: UBSan reports the signed overflow of 0 - INT_MIN, and 0 - (+0.0)
    # is +0.0 where numpy's negative gives -0.0; `-1 * x` makes complex parts NaN: -1 * (inf j) has 0 * inf)
    "expr": ("ts::ops::negative(ts::ops::negative(ts::ops::negative(x)))", {"cpu/negative.cpp", "cuda/negative.cu", "MANIFEST.json"}),
}


@pytest.mark.parametrize("key", EDITS)
def test_editing_a_spec_regenerates_only_that_op(key: str, checkout: Path, tsgen, hash_tree) -> None:
    value, expected = EDITS[key]
    n = kernel_count(checkout)
    set_field(checkout / "specs" / "negative.yaml", key, value)
    before = hash_tree(checkout / "generated")

    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert set(listed(check.stdout)) == expected
    assert listed(check.stdout)["cpu/negative.cpp"] == listed(check.stdout)["cuda/negative.cu"] == "changed: specs/negative.yaml"
    assert hash_tree(checkout / "generated") == before  # --check writes nothing

    out = ok(tsgen(checkout, "regen", "--no-build", "--ops", "negative"))
    assert f"2 of {n} kernels to regenerate ({n - 2} up to date)" in out  # the op on each device
    assert "[1/2] cpu/negative.cpp: accepted" in out and "[2/2] cuda/negative.cu: accepted" in out
    after = hash_tree(checkout / "generated")
    assert changed(before, after) == expected
    assert value in (checkout / "generated" / "cpu" / "negative.cpp").read_text(encoding="utf-8")

    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 0, check.stdout
    out = ok(tsgen(checkout, "regen", "--no-build"))  # and a second regen in a row does nothing
    assert f"0 of {n} kernels to regenerate" in out
    assert hash_tree(checkout / "generated") == after


def test_ops_glob_leaves_other_stale_ops_alone(checkout: Path, tsgen) -> None:
    set_field(checkout / "specs" / "negative.yaml", "doc", "Changed one.")
    set_field(checkout / "specs" / "sign.yaml", "doc", "Changed two.")
    out = ok(tsgen(checkout, "regen", "--no-build", "--ops", "neg*"))
    assert "2 of " in out and "cpu/negative.cpp: accepted" in out and "cuda/negative.cu: accepted" in out and "sign" not in out
    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout).get("cpu/sign.cpp") == "changed: specs/sign.yaml"
    assert "cpu/negative.cpp" not in listed(check.stdout)


def _tamper(generated: Path) -> None:
    with (generated / "cpu" / "abs.cpp").open("a", encoding="utf-8") as f:
        f.write("// a local tweak\n")
    (generated / "cpu" / "sign.cpp").unlink()


def test_hand_edited_and_missing_kernels_are_reported_and_restored(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    pristine = hash_tree(generated)
    _tamper(generated)

    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert ("cpu/abs.cpp", "edited by hand") in entries(check.stdout)
    assert ("cpu/sign.cpp", "file missing") in entries(check.stdout)

    out = ok(tsgen(checkout, "regen", "--no-build"))
    assert f"2 of {kernel_count(checkout)} kernels to regenerate" in out
    assert hash_tree(generated) == pristine


def test_check_lists_exactly_what_regen_rewrites_after_tampering(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    _tamper(generated)
    before = hash_tree(generated)
    check = tsgen(checkout, "regen", "--check")
    ok(tsgen(checkout, "regen", "--no-build"))
    assert set(listed(check.stdout)) == changed(before, hash_tree(generated)) == {"cpu/abs.cpp", "cpu/sign.cpp"}


def test_regen_of_one_op_keeps_other_hand_edited_kernels(checkout: Path, tsgen) -> None:
    generated = checkout / "generated"
    with (generated / "cpu" / "abs.cpp").open("a", encoding="utf-8") as f:
        f.write("// a local tweak\n")
    set_field(checkout / "specs" / "negative.yaml", "doc", "Changed.")
    ok(tsgen(checkout, "regen", "--no-build", "--ops", "negative"))
    assert (generated / "cpu" / "abs.cpp").exists()
    assert 'registry.define("abs"' in (generated / "registration.cpp").read_text(encoding="utf-8")


def test_removing_a_spec_removes_its_outputs(checkout: Path, tsgen) -> None:
    (checkout / "specs" / "signbit.yaml").unlink()
    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout)["cpu/signbit.cpp"] == "no longer produced"

    ok(tsgen(checkout, "regen", "--no-build"))
    generated = checkout / "generated"
    assert not (generated / "cpu" / "signbit.cpp").exists()
    for name in ("registration.cpp", "bindings.cpp", "sources.cmake", "python/_C.pyi", "python/_derivatives.py", "MANIFEST.json"):
        text = (generated / name).read_text(encoding="utf-8")
        assert not re.search(r'"signbit"|\bsignbit\.(?:cpp|cu|yaml)\b|register_signbit_|def signbit\(', text), name
    assert tsgen(checkout, "regen", "--check").returncode == 0


# ---- a new op ---------------------------------------------------------------------------------------------


def test_new_spec_adds_the_op_everywhere(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    n = kernel_count(checkout)
    before = hash_tree(generated)
    (checkout / "specs" / "twice.yaml").write_text(TWICE, encoding="utf-8")

    out = ok(tsgen(checkout, "regen", "--no-build"))
    assert f"2 of {n + 2} kernels to regenerate ({n} up to date)" in out
    assert "[1/2] cpu/twice.cpp: accepted" in out and "[2/2] cuda/twice.cu: accepted" in out
    assert changed(before, hash_tree(generated)) == {"cpu/twice.cpp", "cuda/twice.cu"} | SHARED

    kernel = (generated / "cpu" / "twice.cpp").read_text(encoding="utf-8")
    assert kernel.startswith("// @generated by tsgen from specs/twice.yaml, templates/cpu/pointwise.cpp.j2.")
    assert "static_cast<out_t>(ts::ops::add(x, x))" in kernel
    registered = re.findall(r'registry\.set_kernel\("twice", ts::DeviceType::CPU, (ts::DType::\w+),', kernel)
    numeric = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16",
               "bfloat16")
    assert registered == [api.DTYPE_ENUM[d] for d in numeric]  # promotion same: one kernel per accepted dtype

    registration = (generated / "registration.cpp").read_text(encoding="utf-8")
    flat = " ".join(registration.split())
    assert 'registry.define("twice", ts::Family::Pointwise, 1, ts::Promotion::Same, false, 0x1u)' in flat
    # its type table: numeric inputs keep their dtype
    assert "{ts::DType::Int8, ts::DType::Int8, ts::DType::Int8}" in flat.replace("{ ", "{").replace(" }", "}")
    assert "void register_twice_cpu(ts::Registry& registry);" in registration
    assert "  register_twice_cpu(registry);" in registration
    defined = re.findall(r'registry\.define\("(\w+)"', registration)
    assert defined == sorted(defined) == sorted(s.name for s in load_catalog(checkout).ops)
    bindings = (generated / "bindings.cpp").read_text(encoding="utf-8")
    assert 'registry.get("twice")' in bindings
    assert ('m.def("twice", twice, py::arg("x"), py::pos_only(), py::kw_only(), py::arg("out") = pybind11::none(), '
            '"Each element doubled, x + x.");') in " ".join(bindings.split())  # as clang-format wrapped it
    assert "  generated/cpu/twice.cpp\n" in (generated / "sources.cmake").read_text(encoding="utf-8")
    assert "  generated/cuda/twice.cu\n" in (generated / "sources.cmake").read_text(encoding="utf-8")
    assert "void register_twice_cuda(ts::Registry& registry);" in registration
    stub = (generated / "python" / "_C.pyi").read_text(encoding="utf-8")
    assert "def twice(x: Tensor | ArrayLike, /, *, out: Tensor | tuple[Tensor] | None = None) -> Tensor:" in stub
    manifest = json.loads((generated / "MANIFEST.json").read_text(encoding="utf-8"))
    record = manifest["outputs"]["cpu/twice.cpp"]
    assert (record["op"], record["device"], record["proposer"]) == ("twice", "cpu", "template")

    rows = {row["op"]: row for row in json.loads(ok(tsgen(checkout, "ops", "--json")))}
    assert rows["twice"]["accepted"] is True
    # Accepted on both devices; without a GPU the CUDA kernel's run stages are pending, and the row says so.
    gpu = cuda.gpu_count() > 0
    assert rows["twice"]["status"] == ("accepted" if gpu else "accepted (cuda: not yet run on a GPU)")
    assert "pending" not in rows["twice"]["gate"]["cpu"] and ("pending" in rows["twice"]["gate"]["cuda"]) != gpu
    assert rows["twice"]["devices"] == ["cpu", "cuda"] and rows["twice"]["family"] == "pointwise"
    assert rows["twice"]["dtypes"] == list(numeric)
    assert tsgen(checkout, "regen", "--check").returncode == 0


# ---- the gate ---------------------------------------------------------------------------------------------

BADOP = """\
func: badop(Tensor x, /) -> Tensor
family: pointwise
promotion: same
dtypes: [numeric]
expr: x +* 2
reference: x + 2
doc: Valid YAML, valid Python reference, invalid C++.
"""


def test_uncompilable_new_op_is_rejected_and_stays_out(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    before = hash_tree(generated)
    (checkout / "specs" / "badop.yaml").write_text(BADOP, encoding="utf-8")

    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "0 accepted, 2 rejected" in result.stdout
    assert re.search(r"^rejected badop\.cpu: \(template\) rejected at compile: .*error", result.stdout, re.MULTILINE)
    assert re.search(r"^rejected badop\.cuda: \(template\) rejected at compile: .*error", result.stdout, re.MULTILINE)
    assert hash_tree(generated) == before  # nothing written: no kernel, no registration, no manifest entry
    assert not (generated / "cpu" / "badop.cpp").exists()
    assert "badop" not in (generated / "registration.cpp").read_text(encoding="utf-8")

    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout)["cpu/badop.cpp"] == "new op"  # --check renders without judging
    ops = tsgen(checkout, "ops", "--json")
    assert ops.returncode == 1  # parity: an op without a kernel on a device fails the check
    rows = {row["op"]: row for row in json.loads(ops.stdout)}
    assert rows["badop"]["accepted"] is False and rows["badop"]["devices"] == []


def test_uncompilable_change_keeps_the_previous_kernel(checkout: Path, tsgen, hash_tree) -> None:
    generated = checkout / "generated"
    before = hash_tree(generated)
    set_field(checkout / "specs" / "negative.yaml", "expr", "x +* 2")

    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode == 1
    assert re.search(r"^rejected negative\.cpu: ", result.stdout, re.MULTILINE)
    after = hash_tree(generated)
    assert changed(before, after) <= {"MANIFEST.json"}  # the kernel and every file the op appears in are kept
    assert before["cpu/negative.cpp"] == after["cpu/negative.cpp"]
    # and the op stays due for regeneration: a rejection is never recorded as up to date
    check = tsgen(checkout, "regen", "--check")
    assert check.returncode == 1
    assert listed(check.stdout)["cpu/negative.cpp"] == "changed: specs/negative.yaml"


def test_rejected_interface_change_takes_the_op_out_of_the_runtime(checkout: Path, tsgen) -> None:
    """The kept kernels were built for promotion 'same'; the op table would now say 'float'. Rather than
    pair them, the op leaves the runtime until a kernel for the new spec is accepted."""
    registration = checkout / "generated" / "registration.cpp"
    assert '"negative"' in registration.read_text(encoding="utf-8")
    set_field(checkout / "specs" / "negative.yaml", "promotion", "float")
    set_field(checkout / "specs" / "negative.yaml", "expr", "x +* 2")
    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode == 1 and "rejected negative.cpu" in result.stdout
    assert '"negative"' not in registration.read_text(encoding="utf-8")
    assert not (checkout / "generated" / "cpu" / "negative.cpp").exists()


# ---- determinism ------------------------------------------------------------------------------------------

LEAKS = [re.compile(p) for p in (r"/tmp/", r"/root\b", r"/home/", r"/Users/", r"\b20\d\d-\d\d-\d\d", r"\b\d\d:\d\d:\d\d\b")]


def assert_no_machine_details(generated: Path, *paths: Path) -> None:
    needles = {str(p) for p in paths} | {str(ROOT), str(Path.home())}
    user = getpass.getuser()
    user_pattern = re.compile(rf"\b{re.escape(user)}\b") if len(user) >= 4 and user not in ("root", "user") else None
    for file in generated.rglob("*"):
        if file.is_file():
            text = file.read_text(encoding="utf-8")
            for needle in needles:
                assert needle not in text, (file, needle)
            for pattern in LEAKS:
                assert not pattern.search(text), (file, pattern.pattern)
            assert not (user_pattern and user_pattern.search(text)), (file, user)


def _without_derivatives(text: str) -> str:
    head, _, tail = text.partition("derivatives:")
    rest = tail.splitlines(keepends=True)[1:]
    while rest and rest[0][:1].isspace():
        rest.pop(0)
    return head + "".join(rest)


def one_op_per_family(pristine_checkout: Path, destination: Path, tsgen) -> Path:
    """A copy of the checkout whose catalog keeps the first op of each family (every composite, and the aliases
    of the ops kept), settled
    by a regeneration that only removes the others. Regenerating it from scratch renders and judges every
    kernel template and engine call in a minute where the whole catalog would judge every kernel; the
    scheduled CI job regenerates the whole catalog from scratch (.github/workflows/ci.yml)."""
    root = destination
    shutil.copytree(pristine_checkout, root)
    catalog = load_catalog(root)
    kept = {min((s for s in catalog.ops if s.family is spec.family), key=lambda s: s.name).name for spec in catalog.ops}
    for spec in catalog.ops:
        if spec.name not in kept:
            (root / spec.path).unlink()
    for alias in catalog.aliases:
        if alias.alias_of not in kept:
            (root / alias.path).unlink()
    remaining = kept | {c.name for c in catalog.composites} | {a.name for a in catalog.aliases if a.alias_of in kept}
    for spec in (*catalog.ops, *catalog.composites):  # formulas calling removed ops go with them (kernels keep their hash)
        calls = {c for d in (spec.derivatives.every_formula if spec.derivatives else ()) for c in d.calls} - set(helper_names(root))
        if spec.name in remaining and not calls <= remaining:
            (root / spec.path).write_text(spec.kernel_text if isinstance(spec, OpSpec) else _without_derivatives(spec.text), encoding="utf-8")
    out = ok(tsgen(root, "regen", "--no-build"))
    assert "0 accepted, 0 rejected" in out, out  # removing ops judges nothing
    assert {s.family.name for s in load_catalog(root).ops} == {s.family.name for s in catalog.ops}
    return root


def test_generation_from_scratch_reproduces_the_committed_tree(pristine_checkout: Path, tmp_path: Path, tsgen, hash_tree) -> None:
    """Regenerates every op of a one-op-per-family catalog into an empty generated/ with one job, in a
    directory with another name. The gate's verdicts come from the shared cache when this machine judged
    the same kernels before."""
    root = one_op_per_family(pristine_checkout, tmp_path / "some other name" / "checkout-b", tsgen)
    committed = hash_tree(root / "generated")
    clear_generated(root / "generated")  # authored bodies come back from their transcripts
    n = kernel_count(root)
    out = ok(tsgen(root, "regen", "--no-build", "--force", "--jobs", "1"))
    assert f"{n} of {n} kernels to regenerate (0 up to date)" in out
    assert f"{n} accepted, 0 rejected" in out
    assert hash_tree(root / "generated") == committed
    assert_no_machine_details(root / "generated", root, tmp_path)


@pytest.mark.slow
def test_forced_parallel_regen_with_the_compiler(pristine_checkout: Path, tmp_path: Path, tsgen, hash_tree) -> None:
    root = one_op_per_family(pristine_checkout, tmp_path / "alpha" / "repo", tsgen)
    committed = hash_tree(root / "generated")
    n = kernel_count(root)
    out = ok(tsgen(root, "regen", "--no-build", "--force", "--jobs", "2"))
    assert f"{n} of {n} kernels to regenerate (0 up to date)" in out
    assert f"{n} accepted, 0 rejected" in out
    assert "generated/: no file changed" in out  # byte-identical to the committed tree
    assert hash_tree(root / "generated") == committed
    assert_no_machine_details(root / "generated", root, tmp_path)
