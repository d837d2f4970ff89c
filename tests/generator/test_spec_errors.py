"""Malformed specs: one line `tsgen: error: specs/<file>.yaml:<line>: <field>: <message>`, exit 2.

Every case is checked twice: in process (parse_spec / load_catalog raise SpecError with the
location and field) and through the CLI (`python -m generator ops` on a copy of the checkout into
which the bad spec was written). Line numbers are written out by hand below; `line_text` says
what that line of the spec holds, and test_case_data_is_consistent checks that, so a miscounted
line in this file cannot pass unnoticed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tensorsmith_forge.catalog.derivatives import HELPERS_MODULE
from tensorsmith_forge.catalog.errors import SpecError
from tensorsmith_forge.catalog.model import load_catalog, parse_spec
from tests.helpers import once_per_session

ROOT = Path(__file__).resolve().parents[2]
ERROR_LINE = re.compile(r"tsgen: error: (?P<path>specs/[\w.-]+\.yaml):(?P<line>\d+): (?:(?P<field>[a-z_]+): )?(?P<message>\S.*)")

UNARY = """\
func: zz(Tensor x, /) -> Tensor
family: pointwise
promotion: same
dtypes: [numeric]
expr: ts::ops::negative(x)
reference: np.negative(x)
doc: A test op.
"""

COMPOSITE = """\
func: zz(Tensor x, /, int[] shape) -> Tensor
implementation: ts::python::reshape
reference: np.reshape(x, shape)
doc: A test composite.
examples:
  - {x: [2, 3], shape: [6]}
"""


UPDATE = """\
func: zz(Tensor param, Tensor buffer, Tensor grad, /, *, float lr) -> Tensor
family: update
promotion: float
dtypes: [floating]
update:
  buffer: buffer + grad
  param: param - lr * buffer
reference: |
  def zz(param, buffer, grad, lr):
      return param - lr * (buffer + grad), buffer + grad
doc: A test update.
"""


def unary(**changes: str | None) -> str:
    """UNARY with some fields replaced (None removes the field), appended when new; order kept."""
    lines = UNARY.splitlines()
    keys = [line.split(":", 1)[0] for line in lines]
    for key, value in changes.items():
        if key in keys:
            i = keys.index(key)
            lines[i] = "" if value is None else f"{key}: {value}"
        elif value is not None:
            lines.append(f"{key}: {value}")
    return "\n".join(line for line in lines if line) + "\n"


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str | bytes]  # written under specs/
    file: str  # the file the error must name
    line: int
    field: str | None  # None: the error has no field (no key to point at)
    message: str  # a substring of the message
    line_text: str  # a substring of that line of `file` (checks the hand-written line numbers)
    needs: tuple[str, ...] = field(default=())  # real catalog specs the in-process check needs next to the files
    catalog: bool = False  # a cross-spec error: only load_catalog can see it
    cli: bool = True  # also run through the CLI (each run is a fresh interpreter, ~1 s; variants stay in process)


CASES = [
    Case("unknown_key", {"aa_bad.yaml": "# a spec with a misspelt field\n" + unary(tgas="[core]")},
         "aa_bad.yaml", 9, "tgas", "unknown field for this family (allowed: func, family,", "tgas: [core]"),
    Case("wrong_type_dtypes", {"aa_bad.yaml": unary(dtypes="5")},
         "aa_bad.yaml", 4, "dtypes", "expected a list of strings, got int 5", "dtypes: 5"),
    Case("wrong_type_doc", {"aa_bad.yaml": unary(doc="[a, b]")},
         "aa_bad.yaml", 7, "doc", "expected a non-empty string, got list ['a', 'b']", "doc:", cli=False),
    Case("bad_signature", {"aa_bad.yaml": "# one\n# two\n" + unary(func="zz(Tensor x, /) Tensor")},
         "aa_bad.yaml", 3, "func", "bad signature: expected 'name(Type arg, ...) -> Type'", "func:"),
    Case("non_canonical_signature", {"aa_bad.yaml": unary(func="zz(Tensor x,/) -> Tensor")},
         "aa_bad.yaml", 1, "func", "bad signature: not in canonical form: write it as 'zz(Tensor x, /) -> Tensor'", "func:", cli=False),
    Case("signature_not_fitting_family",
         {"aa_bad.yaml": "func: zz(Tensor x, /) -> Tensor\nfamily: reduction\npromotion: reduce_sum\ndtypes: [all]\n"
                     "combine: acc + x\nreference: np.sum(x)\ndoc: d\n"},
         "aa_bad.yaml", 1, "func",
         "family reduction expects the arguments after the tensors to be '/, *, int[]? axis=None, "
         "[ScalarType? dtype=None], bool keepdims=False' (bracketed ones may be left out)", "func:",
         cli=False),
    Case("optional_family_argument_out_of_place",
         {"aa_bad.yaml": "func: zz(Tensor x, /, *, int[]? axis=None, bool keepdims=False, ScalarType? dtype=None) -> Tensor\n"
                         "family: reduction\npromotion: reduce_sum\ndtypes: [all]\ncombine: acc + x\nreference: np.sum(x)\ndoc: d\n"},
         "aa_bad.yaml", 1, "func", "family reduction expects the arguments after the tensors to be", "func:", cli=False),
    Case("returns_not_tensor", {"aa_bad.yaml": unary(func="zz(Tensor x, /) -> int")},
         "aa_bad.yaml", 1, "func", "ops return 'Tensor', not 'int'", "func:", cli=False),
    Case("unknown_dtype", {"aa_bad.yaml": unary(dtypes="[numeric, float8]")},
         "aa_bad.yaml", 4, "dtypes", "unknown dtype or dtype class 'float8'", "float8"),
    Case("unknown_family", {"aa_bad.yaml": unary(family="pointwize", expr=None)},
         "aa_bad.yaml", 2, "family", "unknown family 'pointwize' (known: pointwise, reduction,", "family: pointwize"),
    Case("unknown_family_with_its_fields", {"aa_bad.yaml": unary(family="pointwize")},
         "aa_bad.yaml", 2, "family", "unknown family 'pointwize'", "family: pointwize"),
    Case("missing_family_with_its_fields", {"aa_bad.yaml": "# comment\n" + unary(family=None)},
         "aa_bad.yaml", 2, None, "missing required field 'family'", "func:", cli=False),
    Case("unknown_promotion", {"aa_bad.yaml": unary(promotion="promote")},
         "aa_bad.yaml", 3, "promotion", "unknown value 'promote' (known: same, real_valued, float,", "promotion: promote"),
    Case("promotion_not_for_family",
         {"aa_bad.yaml": "func: zz(Tensor x, /, *, int[]? axis=None, bool keepdims=False) -> Tensor\nfamily: reduction\n"
                     "promotion: binary\ndtypes: [all]\ncombine: acc + x\nreference: np.sum(x, axis=axis, keepdims=keepdims)\ndoc: d\n"},
         "aa_bad.yaml", 3, "promotion", "'binary' is not valid for family reduction (reduce_same, reduce_sum, reduce_mean, reduce_bool)",
         "promotion: binary"),
    Case("promotion_not_for_arity", {"aa_bad.yaml": unary(promotion="where")},
         "aa_bad.yaml", 3, "promotion", "'where' does not fit 1 inputs", "promotion: where", cli=False),
    Case("unparsable_reference", {"aa_bad.yaml": unary(reference="np.negative(x,")},
         "aa_bad.yaml", 6, "reference", "not a Python expression", "reference:"),
    Case("reference_import",
         {"aa_bad.yaml": unary(reference="|\n  def zz(x):\n      y = -x\n      import os\n      return y")},
         "aa_bad.yaml", 9, "reference", "'Import' statements are not allowed in a reference", "import os"),
    Case("reference_dunder", {"aa_bad.yaml": unary(reference="x.__class__")},
         "aa_bad.yaml", 6, "reference", "private attribute '__class__' is not allowed", "__class__"),
    Case("reference_dunder_in_function",
         {"aa_bad.yaml": unary(reference="|\n  def zz(x):\n      return x.__dict__")},
         "aa_bad.yaml", 8, "reference", "private attribute '__dict__' is not allowed", "__dict__", cli=False),
    Case("reference_unknown_name", {"aa_bad.yaml": unary(reference="np.add(x, y)")},
         "aa_bad.yaml", 6, "reference", "unknown name 'y' (only the op's arguments, np, erf and locals)", "np.add(x, y)"),
    Case("reference_one_line_block", {"aa_bad.yaml": unary(reference="|\n  np.add(x, y)")},
         "aa_bad.yaml", 7, "reference", "unknown name 'y'", "np.add(x, y)", cli=False),
    Case("tolerance_without_reason", {"aa_bad.yaml": unary(tolerances="\n  float32:\n    rtol: 1.0e-5\n    atol: 0")},
         "aa_bad.yaml", 8, "tolerances", "float32: an override must carry a 'reason'", "tolerances:"),
    Case("tolerance_bool", {"aa_bad.yaml": unary(tolerances="\n  float32: {rtol: true, atol: 0, reason: noisy}")},
         "aa_bad.yaml", 8, "tolerances", "float32: rtol and atol must be non-negative numbers", "tolerances:", cli=False),
    Case("missing_required_field", {"aa_bad.yaml": "# leading comment\n" + unary(doc=None)},
         "aa_bad.yaml", 2, None, "missing required field 'doc'", "func:"),
    Case("invalid_yaml", {"aa_bad.yaml": unary().replace("promotion: same\ndtypes", "promotion: same\n\tdtypes")},
         "aa_bad.yaml", 4, None, "invalid YAML: found character '\\t' that cannot start any token", "\tdtypes"),
    Case("field_given_twice", {"aa_bad.yaml": unary() + "doc: Again.\n"},
         "aa_bad.yaml", 8, "doc", "field given twice", "doc: Again.", cli=False),
    Case("not_a_mapping", {"aa_bad.yaml": "# comment\n- func: zz(Tensor x, /) -> Tensor\n"},
         "aa_bad.yaml", 2, None, "a spec must be a YAML mapping of fields", "- func", cli=False),
    Case("not_utf8", {"aa_bad.yaml": unary(doc="caf\xe9").encode("latin-1")},
         "aa_bad.yaml", unary().splitlines().index(next(l for l in unary().splitlines() if l.startswith("doc:"))) + 1,
         None, "UTF-8", "doc:"),
    Case("duplicate_op_names", {"zz_first.yaml": unary(), "zz_second.yaml": unary(doc="The same name again.")},
         "zz_second.yaml", 1, "func", "duplicate op name 'zz' (first in specs/zz_first.yaml)", "func: zz("),
    Case("duplicate_of_a_catalog_op", {"abs_again.yaml": unary(func="abs(Tensor x, /) -> Tensor")},
         "abs_again.yaml", 1, "func", "duplicate op name 'abs' (first in specs/abs.yaml)", "func: abs(", needs=("abs.yaml",)),
    Case("duplicate_op_name_func_not_first", {"zz_first.yaml": unary(), "zz_second.yaml": "family: pointwise\n" + unary(family=None)},
         "zz_second.yaml", 2, "func", "duplicate op name 'zz'", "func: zz(", cli=False),
    # tensorsmith/_derivatives.py defines tanh_backward and calls ops and helpers by name in one module
    Case("name_of_a_backward_function", {"aa_bad.yaml": unary(func="tanh_backward(Tensor x, /) -> Tensor")},
         "aa_bad.yaml", 1, "func", "'tanh_backward' is the name of tanh's backward function in tensorsmith/_derivatives.py",
         "func: tanh_backward(", needs=("tanh.yaml",), catalog=True),
    Case("name_of_a_derivative_helper", {"aa_bad.yaml": unary(func="sum_to(Tensor x, /) -> Tensor")},
         "aa_bad.yaml", 1, "func", "'sum_to' is the name of a derivative helper", "func: sum_to(", catalog=True),
    Case("alias_to_nothing", {"aa_bad.yaml": "func: zz(Tensor x, /) -> Tensor\nalias_of: nothing\ndoc: An alias.\n"},
         "aa_bad.yaml", 2, "alias_of", "alias to an unknown op 'nothing'", "alias_of: nothing", catalog=True),
    Case("alias_to_nothing_key_first", {"aa_bad.yaml": "alias_of: nothing\nfunc: zz(Tensor x, /) -> Tensor\ndoc: An alias.\n"},
         "aa_bad.yaml", 1, "alias_of", "alias to an unknown op 'nothing'", "alias_of: nothing", catalog=True),
    Case("alias_signature_differs", {"aa_bad.yaml": "func: zz(Tensor x, /) -> Tensor\nalias_of: pow\ndoc: An alias.\n"},
         "aa_bad.yaml", 1, "func", "an alias must have its target's signature: 'zz(Tensor x1, Tensor x2, /) -> Tensor'", "func:",
         needs=("pow.yaml",), cli=False),
    Case("alias_with_op_fields", {"aa_bad.yaml": "func: zz(Tensor x, /) -> Tensor\nalias_of: abs\nexpr: x\ndoc: An alias.\n"},
         "aa_bad.yaml", 3, "expr", "unknown field for an alias (allowed: func, alias_of, doc)", "expr: x", cli=False),
    Case("expr_semicolon", {"aa_bad.yaml": unary(expr="x; return 0")},
         "aa_bad.yaml", 5, "expr", "must be a single C++ expression (no ';', braces, comments or '#')", "expr:"),
    Case("expr_comment", {"aa_bad.yaml": unary(expr="x /* sneaky */")},
         "aa_bad.yaml", 5, "expr", "must be a single C++ expression", "expr:", cli=False),
    Case("fast_when_without_fast_expr", {"aa_bad.yaml": unary(fast_when="ts::ops::trig_near_ok(x)")},
         "aa_bad.yaml", 8, "fast_when", "goes with 'fast_expr': give both or neither", "fast_when:"),
    Case("fast_expr_without_fast_when", {"aa_bad.yaml": unary(fast_expr="ts::ops::sin_near(x)")},
         "aa_bad.yaml", 8, "fast_expr", "goes with 'fast_when': give both or neither", "fast_expr:", cli=False),
    Case("fast_expr_statement", {"aa_bad.yaml": unary(fast_when="ts::ops::trig_near_ok(x)", fast_expr="x; return 0")},
         "aa_bad.yaml", 9, "fast_expr", "must be a single C++ expression", "fast_expr:", cli=False),
    Case("unknown_tag", {"aa_bad.yaml": unary(tags="[core, fancy]")},
         "aa_bad.yaml", 8, "tags", "unknown tag 'fancy' (known: activation, comparison, core,", "tags:"),
    Case("unary_operator_on_binary_op",
         {"aa_bad.yaml": unary(func="zz(Tensor x1, Tensor x2, /) -> Tensor", promotion="binary", expr="x1 - x2",
                           reference="np.subtract(x1, x2)", operators="[__sub__, __neg__]")},
         "aa_bad.yaml", 8, "operators", "__neg__ does not fit an op with 2 tensor inputs", "operators:"),
    Case("binary_operator_on_unary_op", {"aa_bad.yaml": unary(operators="[__add__]")},
         "aa_bad.yaml", 8, "operators", "__add__ does not fit an op with 1 tensor inputs", "operators:", cli=False),
    Case("unknown_operator", {"aa_bad.yaml": unary(operators="[__divmod__]")},
         "aa_bad.yaml", 8, "operators", "unknown operator '__divmod__'", "operators:", cli=False),
    Case("tolerance_on_pointwise", {"aa_bad.yaml": unary(tolerances="\n  float32: {rtol: 1.0e-5, atol: 0, reason: noisy}")},
         "aa_bad.yaml", 8, "tolerances", "pointwise results are judged in ulps: declare a budget in 'accuracy' instead",
         "tolerances:", cli=False),
    Case("accuracy_without_reason", {"aa_bad.yaml": unary(accuracy="{ulp: 2}")},
         "aa_bad.yaml", 8, "accuracy", "expected {ulp: N or {float32: N, float64: N}, reason:", "accuracy:"),
    Case("accuracy_below_correct_rounding", {"aa_bad.yaml": unary(accuracy="{ulp: 0.25, reason: optimistic}")},
         "aa_bad.yaml", 8, "accuracy", "float32: an ulp budget is a number from 0.5 (correctly rounded) up", "accuracy:",
         cli=False),
    Case("accuracy_for_a_half_dtype", {"aa_bad.yaml": unary(accuracy="{ulp: {float16: 2}, reason: half}")},
         "aa_bad.yaml", 8, "accuracy", "ulp budgets are per result dtype or complex input dtype (float32, float64, complex64, complex128), not 'float16'", "accuracy:",
         cli=False),
    Case("accuracy_for_an_unknown_device", {"aa_bad.yaml": unary(accuracy="{ulp: 1, reason: libm, rocm: {ulp: 2, reason: hip}}")},
         "aa_bad.yaml", 8, "accuracy", "and optionally relative_to: operands, cuda: {ulp: N or {float32: N, float64: N}, reason:",
         "accuracy:", cli=False),
    Case("accuracy_relative_to_an_unknown_scale", {"aa_bad.yaml": unary(accuracy="{ulp: 1, reason: libm, relative_to: inputs}")},
         "aa_bad.yaml", 8, "accuracy", "relative_to: one of result, operands, not 'inputs'", "accuracy:", cli=False),
    Case("device_accuracy_without_reason", {"aa_bad.yaml": unary(accuracy="{ulp: 1, reason: libm, cuda: {ulp: 2}}")},
         "aa_bad.yaml", 8, "accuracy", "cuda: expected {ulp: N or {float32: N, float64: N}, reason:", "accuracy:", cli=False),
    Case("device_accuracy_below_correct_rounding", {"aa_bad.yaml": unary(accuracy="{ulp: 1, reason: libm, cuda: {ulp: {float64: 0.1}, reason: hopeful}}")},
         "aa_bad.yaml", 8, "accuracy", "cuda: float64: an ulp budget is a number from 0.5 (correctly rounded) up", "accuracy:",
         cli=False),
    Case("domain_as_a_bare_range", {"aa_bad.yaml": unary(domain="{x: [0, null]}")},
         "aa_bad.yaml", 8, "domain", "x: expected {bounds: [low, high], dtypes: [...], error: ...}", "domain:", cli=False),
    Case("domain_unknown_dtype_class",
         {"aa_bad.yaml": unary(domain="{x: {bounds: [0, null], dtypes: [integers], error: no negatives}}")},
         "aa_bad.yaml", 8, "domain", "unknown dtype or dtype class 'integers'", "domain:", cli=False),
    Case("domain_not_an_argument", {"aa_bad.yaml": unary(domain="{y: [0, null]}")},
         "aa_bad.yaml", 8, "domain", "'y' is not a tensor argument of this op (x)", "domain:", cli=False),
    Case("unknown_variant", {"aa_bad.yaml": unary(variants="[function, operator]")},
         "aa_bad.yaml", 8, "variants", "unknown value 'operator' (known: function, method)", "variants:", cli=False),
    Case("inplace_operator_of_a_unary_op",
         {"aa_bad.yaml": unary(operators="[__iadd__]")},
         "aa_bad.yaml", 8, "operators", "__iadd__ does not fit an op with 1 tensor inputs", "operators:", cli=False),
    # the update family: the op's own float arguments, one assignment per state tensor
    Case("update_without_own_floats", {"aa_bad.yaml": UPDATE.replace(", /, *, float lr)", ", /)")},
         "aa_bad.yaml", 1, "func", "family update takes '/, *' after its tensors, then 1 to 8 float keyword arguments", "func:",
         cli=False),
    Case("update_with_an_int_argument", {"aa_bad.yaml": UPDATE.replace("float lr", "int lr")},
         "aa_bad.yaml", 1, "func", "family update takes '/, *' after its tensors", "func:", cli=False),
    Case("update_missing_a_state", {"aa_bad.yaml": UPDATE.replace("  buffer: buffer + grad\n", "")},
         "aa_bad.yaml", 5, "update", "expected a mapping from each state tensor (param, buffer) to the C++ expression", "update:",
         cli=False),
    Case("update_assigns_the_gradient", {"aa_bad.yaml": UPDATE.replace("  buffer: buffer + grad", "  grad: buffer + grad")},
         "aa_bad.yaml", 5, "update", "expected a mapping from each state tensor (param, buffer)", "update:", cli=False),
    Case("update_statement_not_an_expression", {"aa_bad.yaml": UPDATE.replace("buffer + grad\n", "buffer + grad; grad = 0\n", 1)},
         "aa_bad.yaml", 5, "update", "must be a single C++ expression", "update:", cli=False),
    Case("update_with_one_tensor", {"aa_bad.yaml": UPDATE.replace("Tensor param, Tensor buffer, Tensor grad", "Tensor param")
                                                          .replace("  buffer: buffer + grad\n", "")},
         "aa_bad.yaml", 1, "func", "family update takes 2 to 4 leading tensor arguments", "func:", cli=False),
    # composite ops (an `implementation:` in the core instead of a kernel)
    Case("composite_without_examples", {"aa_bad.yaml": COMPOSITE.replace("examples:\n  - {x: [2, 3], shape: [6]}\n", "")},
         "aa_bad.yaml", 1, None, "missing required field 'examples'", "func:", cli=False),
    Case("composite_example_unknown_argument", {"aa_bad.yaml": COMPOSITE.replace("shape: [6]}", "shape: [6], shpe: [6]}")},
         "aa_bad.yaml", 5, "examples", "call 1: 'shpe' is not an argument (x, shape)", "examples:", cli=False),
    Case("composite_example_tensor_not_a_shape", {"aa_bad.yaml": COMPOSITE.replace("{x: [2, 3]", "{x: 4")},
         "aa_bad.yaml", 5, "examples", "call 1: tensor 'x' takes its shape, a list of extents, not int 4", "examples:", cli=False),
    Case("composite_example_missing_required", {"aa_bad.yaml": COMPOSITE.replace("{x: [2, 3], shape: [6]}", "{x: [2, 3]}")},
         "aa_bad.yaml", 5, "examples", "call 1: no value for required argument 'shape'", "examples:", cli=False),
    Case("composite_bad_implementation", {"aa_bad.yaml": COMPOSITE.replace("ts::python::reshape", "reshape()")},
         "aa_bad.yaml", 2, "implementation", "expected a qualified C++ function name in namespace ts", "implementation:"),
    Case("composite_unknown_dtype_constraint", {"aa_bad.yaml": COMPOSITE.replace("Tensor x,", "Tensor(intger) x,")},
         "aa_bad.yaml", 1, "func", "argument 'x': unknown dtype or dtype class 'intger'", "func:", cli=False),
    Case("composite_example_tensor_list_not_shapes",
         {"aa_bad.yaml": COMPOSITE.replace("Tensor x,", "Tensor[] x,").replace("{x: [2, 3]", "{x: [2, 3]")},
         "aa_bad.yaml", 5, "examples", "call 1: tensor list 'x' takes a non-empty list of shapes, not list [2, 3]", "examples:", cli=False),
    Case("composite_with_family_field", {"aa_bad.yaml": COMPOSITE + "family: pointwise\n"},
         "aa_bad.yaml", 7, "family", "unknown field for a composite op (one with 'implementation')", "family:", cli=False),
]
BY_ID = {case.id: case for case in CASES}
assert len(BY_ID) == len(CASES)


CLI_CASES = [case for case in CASES if case.cli]


def _params(cases: list[Case] = CASES):
    return [pytest.param(case, id=case.id) for case in cases]


def _write(specs: Path, case: Case) -> None:
    for name, content in case.files.items():
        if isinstance(content, bytes):
            (specs / name).write_bytes(content)
        else:
            (specs / name).write_text(content, encoding="utf-8")


@pytest.mark.parametrize("case", _params())
def test_case_data_is_consistent(case: Case) -> None:
    content = case.files[case.file]
    text = content.decode("latin-1") if isinstance(content, bytes) else content
    lines = text.splitlines()
    assert case.line_text in lines[case.line - 1], (case.id, lines)
    assert all((ROOT / "specs" / name).is_file() for name in case.needs)


# ---- in process ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _params())
def test_parse_raises_spec_error(case: Case, tmp_path: Path) -> None:
    single = len(case.files) == 1 and not (case.needs or case.catalog) and not isinstance(case.files[case.file], bytes)
    with pytest.raises(SpecError) as info:
        if single:
            parse_spec(case.files[case.file], f"specs/{case.file}")
        else:
            specs = tmp_path / "specs"
            specs.mkdir()
            for name in case.needs:
                shutil.copy(ROOT / "specs" / name, specs / name)
            helpers = tmp_path / HELPERS_MODULE  # the helper names formulas may call, and no op may take
            helpers.parent.mkdir(parents=True)
            shutil.copy(ROOT / HELPERS_MODULE, helpers)
            _write(specs, case)
            load_catalog(tmp_path)
    error = info.value
    assert error.location.path == f"specs/{case.file}"
    assert (error.location.line, error.field) == (case.line, case.field)
    assert case.message in error.message
    assert "\n" not in str(error)


# ---- through the CLI ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_results(pristine_checkout: Path, tmp_path_factory: pytest.TempPathFactory, tsgen) -> dict:
    """`tsgen ops` on one copy of the checkout per case, run concurrently (each is a fresh interpreter), once
    per test session."""

    def run_all(base: Path) -> dict:
        def run(case: Case) -> dict:
            root = base / case.id
            shutil.copytree(pristine_checkout, root)
            _write(root / "specs", case)
            result = tsgen(root, "ops", timeout=120)
            return {"args": result.args, "returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(zip([case.id for case in CLI_CASES], pool.map(run, CLI_CASES), strict=True))

    return {case_id: subprocess.CompletedProcess(**result)
            for case_id, result in once_per_session(tmp_path_factory, "spec_errors", run_all).items()}


def test_cli_lists_the_catalog_when_specs_are_fine(pristine_checkout: Path, tsgen) -> None:
    result = tsgen(pristine_checkout, "ops")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert re.search(r"^abs\s+pointwise\s", result.stdout, re.M)


def test_cli_covers_the_required_kinds_of_mistake() -> None:
    assert len(CLI_CASES) >= 20
    assert {c.field for c in CLI_CASES} >= {"func", "family", "dtypes", "promotion", "reference", "tolerances", "expr",
                                            "tags", "operators", "alias_of", None}  # fmt: skip


@pytest.mark.parametrize("case", _params(CLI_CASES))
def test_cli_error_is_one_line_and_exit_2(case: Case, cli_results: dict) -> None:
    result = cli_results[case.id]
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    match = ERROR_LINE.fullmatch(lines[0])
    assert match, lines[0]
    assert match["path"] == f"specs/{case.file}"


@pytest.mark.parametrize("case", _params(CLI_CASES))
def test_cli_error_names_line_field_and_problem(case: Case, cli_results: dict) -> None:
    stderr = cli_results[case.id].stderr
    field_part = f"{case.field}: " if case.field else ""
    prefix = f"tsgen: error: specs/{case.file}:{case.line}: {field_part}"
    assert stderr.startswith(prefix), stderr
    assert case.message in stderr[len(prefix) :]
    if case.field is None:  # no field to name: the message follows the location directly
        assert not re.match(r"[a-z_]+: ", stderr[len(prefix) :])
