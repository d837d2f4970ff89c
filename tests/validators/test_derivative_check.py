"""The gate's derivative check (validators/derivatives): every formula in specs/ agrees with finite differences
of its reference, each known-bad formula under tests/known_bad/derivatives/ is rejected naming its spec line, and
malformed derivatives are spec errors with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorsmith_forge.catalog.errors import SpecError
from tensorsmith_forge.catalog.model import load_catalog, parse_spec
from tensorsmith_forge.validators.derivatives.check import check_catalog, check_spec, checked_dtypes

ROOT = Path(__file__).resolve().parents[2]
KNOWN_BAD = sorted((ROOT / "tests" / "known_bad" / "derivatives").glob("*.yaml"))
# Right in float64, wrong in complex128: their header says so.
COMPLEX_ONLY = [p for p in KNOWN_BAD if "Complex only" in p.read_text(encoding="utf-8").splitlines()[0]]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT)


def test_every_formula_in_the_catalog_agrees_with_finite_differences(catalog) -> None:
    with_formulas = [s for s in (*catalog.ops, *catalog.composites) if s.derivatives and s.derivatives.differentiable]
    assert len(with_formulas) >= 50
    assert [str(f) for f in check_catalog(catalog)] == []


@pytest.mark.parametrize("path", KNOWN_BAD, ids=lambda p: p.stem)
def test_known_bad_formula_is_rejected(catalog, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    op = text.split("func: ", 1)[1].split("(", 1)[0]
    spec = parse_spec(text, f"specs/{op}.yaml")
    failures = check_spec(spec, catalog)
    assert failures, f"{path.name}: the derivative check accepted a wrong formula"
    failing_lines = {f.line for f in failures}
    formula_lines = {d.line for d in spec.derivatives.every_formula}
    assert failing_lines <= formula_lines  # each failure names the formula's own line
    assert str(failures[0]).startswith(f"specs/{op}.yaml:")


def test_the_corpus_holds_formulas_wrong_only_for_complex_inputs() -> None:
    """The test below is parametrized by them: an empty list would leave it running nothing."""
    assert len(COMPLEX_ONLY) >= 4


@pytest.mark.parametrize("path", COMPLEX_ONLY, ids=lambda p: p.stem)
def test_a_formula_right_only_for_real_inputs_is_rejected_in_complex128(catalog, path: Path) -> None:
    """A holomorphic op's formula without its conjugate agrees with float64 finite differences: only the
    complex128 check tells, and it names the complex case."""
    text = path.read_text(encoding="utf-8")
    op = text.split("func: ", 1)[1].split("(", 1)[0]
    spec = parse_spec(text, f"specs/{op}.yaml")
    assert checked_dtypes(spec) == ("float64", "complex128")
    assert check_spec(spec, catalog, dtypes=("float64",)) == []
    failures = check_spec(spec, catalog)
    assert failures and str(failures[0]).endswith("complex128)")


def test_a_composite_is_checked_in_complex128_only_where_its_dtypes_hold_it(catalog) -> None:
    """clip orders values, so it declares no complex dtype: its formulas (whose where() compares) are checked in
    float64 alone; a composite that declares nothing takes every dtype."""
    composites = {s.name: s for s in catalog.composites}
    clip = composites["clip"]
    assert checked_dtypes(clip) == ("float64",)
    assert checked_dtypes(composites["vecdot"]) == ("float64", "complex128")
    with pytest.raises(SpecError, match=r"specs/clip.yaml:\d+: dtypes: unknown dtype or dtype class 'complex256'"):
        parse_spec(clip.text.replace("dtypes: [bool, real]", "dtypes: [complex256]"), clip.path)


def _spec_with(derivatives: str) -> str:
    return ("func: tanh(Tensor x, /) -> Tensor\nfamily: pointwise\npromotion: float\ndtypes: [all]\n"
            "expr: ts::ops::tanh(x)\nreference: np.tanh(x)\ndoc: d.\n" + derivatives)  # fmt: skip


@pytest.mark.parametrize(
    ("derivatives", "line", "message"),
    [
        ("derivatives:\n  x: grad * (1 - y)\n", 9, "unknown name 'y'"),
        ("derivatives:\n  y: grad\n", 9, "not a tensor argument"),
        ("derivatives:\n  x: result * 2\n", 9, "must use grad"),
        ("derivatives:\n  x: grad.real\n", 9, "attribute 'real' is not allowed"),
        ("derivatives:\n  x: (grad\n", 9, "not a Python expression"),
        ("derivatives:\n  x: not_differentiable\n", 8, "write 'derivatives: none'"),
        ("derivatives: [grad]\n", 8, "expected 'none' or a mapping"),
        ("derivatives:\n  x: grad * x(grad)\n", 9, "'x' is an argument here"),
        ("derivatives:\n  x: grad * output\n", 9, "'output' (which result grad is of) is a name only for ops with several results"),
        ("derivatives:\n  x: grad\n  result: grad * x_t\n", 10, "unknown name 'grad'"),
        ("derivatives:\n  x: grad\n  result: x * 2\n", 10, "a forward formula must use a tangent (x_t)"),
        ("derivatives:\n  x: grad\n  result: y_t\n", 10, "unknown name 'y_t'"),
        ("derivatives:\n  x: grad\n  result: ''\n", 10, "expected a forward formula"),
    ],
)
def test_malformed_derivatives_are_spec_errors_naming_the_line(derivatives: str, line: int, message: str) -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(_spec_with(derivatives), "specs/tanh.yaml")
    assert error.value.location.line == line
    assert message in str(error.value)


def test_a_formula_calling_an_unknown_op_is_a_catalog_error(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tanh.yaml").write_text(_spec_with("derivatives:\n  x: grad * sech2(x)\n"), encoding="utf-8")
    with pytest.raises(SpecError) as error:
        load_catalog(tmp_path)
    assert str(error.value).startswith("specs/tanh.yaml:9: derivatives: x: 'sech2' is neither an op of the catalog nor a helper")


def test_derivatives_change_no_kernel_hash(catalog) -> None:
    """A formula edit re-judges no kernel: the text kernels are keyed on leaves the derivatives out."""
    tanh = catalog.op("tanh")
    assert "derivatives" in tanh.text and "derivatives" not in tanh.kernel_text
    edited = parse_spec(tanh.text.replace("grad * conjugate(1 - result * result)", "grad * conjugate(1 - result ** 2)"), tanh.path)
    assert edited.derivatives != tanh.derivatives
    assert edited.kernel_text == tanh.kernel_text


def test_forward_formulas_name_only_the_tangents_of_differentiable_inputs(catalog) -> None:
    """where's condition takes no gradient, so its tangent is no name; an op with several results gives every
    result's tangent in one formula, so its forward formula reads no `output` (its backward formulas do)."""
    where = catalog.op("where")
    with pytest.raises(SpecError, match=r"specs/where.yaml:\d+: derivatives: result: unknown name 'condition_t'"):
        parse_spec(where.text.replace('result: "where(condition, x1_t, x2_t)"', 'result: "where(condition_t, x1_t, x2_t)"'), where.path)
    unstack = next(s for s in catalog.composites if s.name == "unstack")
    assert unstack.derivatives.forward.formula == "unstack(x_t, axis=axis)"
    with pytest.raises(SpecError, match=r"specs/unstack.yaml:\d+: derivatives: result: a forward formula gives every result's tangent"):
        parse_spec(unstack.text.replace('"unstack(x_t, axis=axis)"', '"unstack(x_t, axis=axis)[output]"'), unstack.path)


def test_forward_formulas_of_ops_with_several_results_give_each_result_its_tangent(catalog) -> None:
    """unstack, meshgrid and broadcast_arrays state their forward formulas, checked result by result (a tensor
    list's tangents passed on with `*`, as the op takes them); a formula with a tangent per result too many is named."""
    several = [s for s in catalog.composites if s.signature.returns_several and s.derivatives and s.derivatives.differentiable]
    assert {s.name for s in several} >= {"unstack", "meshgrid", "broadcast_arrays"}
    for spec in several:
        assert spec.derivatives.forward is not None, spec.name
        assert check_spec(spec, catalog) == [], spec.name
    broadcast = next(s for s in several if s.name == "broadcast_arrays")
    doubled = parse_spec(broadcast.text.replace('"broadcast_arrays(*arrays_t)"', '"broadcast_arrays(*arrays_t, *arrays_t)"'), broadcast.path)
    failures = check_spec(doubled, catalog)
    assert failures and "the forward formula gives 4 tangents for 2 results" in failures[0].message
    assert failures[0].line == doubled.derivatives.forward.line
    unstack = next(s for s in several if s.name == "unstack")  # one array where the list is due
    bare = parse_spec(unstack.text.replace('"unstack(x_t, axis=axis)"', '"x_t"'), unstack.path)
    failures = check_spec(bare, catalog)
    assert failures and "not the list of its" in failures[0].message


def test_the_catalog_states_forward_formulas_and_the_gate_checks_them(catalog) -> None:
    """Forward formulas are in the specs (the test above checks every formula, these among them), and a right
    one is accepted in float64 and complex128."""
    with_forward = [s for s in (*catalog.ops, *catalog.composites) if s.derivatives and s.derivatives.forward]
    assert len(with_forward) >= 70
    multiply = catalog.op("multiply")
    assert multiply.derivatives.forward.formula == "x1_t * x2 + x1 * x2_t"
    assert checked_dtypes(multiply) == ("float64", "complex128") and check_spec(multiply, catalog) == []


def test_forward_and_backward_formulas_that_are_not_adjoint_are_rejected(catalog, monkeypatch) -> None:
    """The adjoint check alone (the backward formulas' own finite-difference comparison switched off): a backward
    formula off by a factor disagrees with the forward formula's <v, J u>, named at the forward formula's line."""
    import tensorsmith_forge.validators.derivatives.check as check

    monkeypatch.setattr(check, "_compare", lambda *args: (None, 1))
    tanh = catalog.op("tanh")
    wrong = parse_spec(tanh.text.replace("grad * conjugate(1 - result * result)", "2 * grad * conjugate(1 - result * result)"), tanh.path)
    failures = check.check_spec(wrong, catalog)
    assert failures and failures[0].line == wrong.derivatives.forward.line
    assert "they are not each other's adjoint" in str(failures[0])
