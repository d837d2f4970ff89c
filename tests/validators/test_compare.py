"""validators.compare: what passes and what fails, against hand-made results."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tensorsmith_forge.catalog.model import Tolerance, load_catalog
from tensorsmith_forge.validators import compare, inputs
from tensorsmith_forge.validators.compare import Raised

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
SALT = b"compare-unit-test-salt"
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def case_of(name: str, *arrays, **kwargs) -> inputs.Case:
    return inputs.Case.from_arrays(CATALOG.op(name), [np.asarray(a) for a in arrays], kwargs)


def check(name: str, case: inputs.Case, actual, spec=None) -> compare.Mismatch | None:
    return compare.compare(spec or CATALOG.op(name), case, actual)


def numpy_result(name: str, case: inputs.Case, which: str = "a") -> np.ndarray:
    spec = CATALOG.op(name)
    with np.errstate(all="ignore"):
        return np.asarray(spec.reference_callable()(*case.arrays(which), **case.kwargs))


# ---- the reference passes its own cases -------------------------------------------------------------------


# numpy's own arithmetic where it is as precise as the spec asks: correctly rounded ops in any dtype, float64
# functions (libm's), the tolerance families. (Its float32 sin, 1.4 ulp off, is less precise than the catalog's.)
@pytest.mark.parametrize(("name", "dtype"), [("add", "float32"), ("sqrt", "float16"), ("sin", "float64"), ("sin", "int32"),
                                             ("exp", "float64"), ("sigmoid", "float64"), ("sum", "float32"),
                                             ("mean", "int64"), ("argmax", "float64"), ("softmax", "float32"),
                                             ("matmul", "int8"), ("where", "uint16"), ("divide", "int32"),
                                             ("_standardize", "float32"), ("_standardize_grad", "float64")])  # fmt: skip
def test_numpy_itself_passes_every_case(name: str, dtype: str) -> None:
    """numpy's own result in the inputs' dtypes is an honest kernel: it must pass (and its errors too)."""
    spec = CATALOG.op(name)
    for case in inputs.generate_cases(spec, dtype, salt=SALT, hidden=True):
        for which in ("a", "b"):
            try:
                actual = numpy_result(name, case, which)
            except ValueError as exc:
                actual = Raised.from_exception(exc)
            mismatch = compare.compare(spec, case, actual, which=which)
            assert mismatch is None, mismatch.summary()


# ---- values -------------------------------------------------------------------------------------------------


def test_wrong_value_is_caught_with_its_index() -> None:
    x1, x2 = np.arange(12.0).reshape(3, 4), np.ones(4)
    case = case_of("add", x1, x2)
    result = x1 + x2
    assert check("add", case, result) is None
    result[2, 1] += 1e-3
    m = check("add", case, result)
    assert m is not None and m.kind == "values" and m.index == (2, 1) and m.mismatched == 1 and m.total == 12
    assert m.expected == "10.0" and m.actual == "10.001"
    assert m.max_abs_error == pytest.approx(1e-3) and m.max_rel_error == pytest.approx(1e-4)
    assert "correctly rounded" in m.message


def test_correctly_rounded_ops_must_match_bit_for_bit() -> None:
    """add, sqrt, negative, ...: numpy's float64 arithmetic rounded once is the only right answer, in every
    float dtype (a float64 sqrt computed in float is 1e-8 off: inside any relative tolerance there was)."""
    x = np.array([2.0, 3.0, 1000.0])
    case = case_of("sqrt", x)
    assert check("sqrt", case, np.sqrt(x)) is None
    m = check("sqrt", case, np.sqrt(x.astype(np.float32)).astype(np.float64))
    assert m is not None and m.kind == "values" and "correctly rounded" in m.message
    assert check("sqrt", case, np.nextafter(np.sqrt(x), np.inf)) is not None
    for dtype in ("float32", "float16", ml_dtypes.bfloat16):
        a, b = np.array([1.0, 3.0, 7.0], dtype=dtype), np.array([1e-3, 2e-3, 3.3e-3], dtype=dtype)
        exact = (a.astype(np.float64) + b.astype(np.float64)).astype(dtype)
        assert check("add", case_of("add", a, b), exact) is None
        truncated = (a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)
        bits = truncated.view(np.uint32)
        if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):  # drop the low half instead of rounding it
            off = (bits >> 16).astype(np.uint16).view(ml_dtypes.bfloat16)
        else:
            off = np.nextafter(exact.astype(np.float32), np.float32(0)).astype(dtype)
        if not np.array_equal(off.view(np.uint8), exact.view(np.uint8)):
            assert check("add", case_of("add", a, b), off) is not None, dtype


def test_ulp_budgets_from_the_spec() -> None:
    """exp declares an ulp budget: results within it pass, beyond it fail, measured against float64 (for
    float64 results, long double); 16-bit results get half an ulp plus float32's budget, scaled."""
    spec = CATALOG.op("exp")
    budget = compare.ulp_budget(spec, "float32")
    assert budget == spec.accuracy.budget("float32") and compare.ulp_budget(spec, "float64") == spec.accuracy.budget("float64")
    assert 0.5 < compare.ulp_budget(spec, "float16") < 0.51 and compare.ulp_budget(CATALOG.op("add"), "float32") == 0.5
    x = np.linspace(-5, 5, 301, dtype=np.float32)
    case = case_of("exp", x)
    nearest = np.exp(x.astype(np.float64)).astype(np.float32)  # within half an ulp
    away = np.where(np.arange(x.size) % 2 == 0, np.float32(np.inf), np.float32(0))  # half up, half down: no bias

    def steps(k: int) -> np.ndarray:
        return functools.reduce(lambda y, _: np.nextafter(y, away), range(k), nearest)

    assert check("exp", case, steps(int(budget - 0.5))) is None  # at most the budget away
    m = check("exp", case, steps(int(np.ceil(budget + 0.5))))
    assert m is not None and f"within {budget:g} ulp" in m.message
    wide = np.linspace(-700, 700, 11)
    expected = compare.expected_result(spec, case_of("exp", wide))
    assert expected.precise_at(np.ones(11, dtype=bool)).dtype == np.longdouble  # float64 results: long double
    assert check("exp", case_of("exp", wide), np.exp(wide)) is None
    off = np.exp(wide)
    off[3] = np.nextafter(np.nextafter(np.nextafter(off[3], np.inf), np.inf), np.inf)
    assert check("exp", case_of("exp", wide), off).index == (3,)


def test_results_that_lean_one_way_are_caught() -> None:
    """Always rounding up stays within an ulp budget of 1, but every sum of results drifts: a case's mean
    signed error over its distinct results may not pass a quarter of an ulp."""
    x = np.linspace(-10, 10, 4001, dtype=np.float32)
    case = case_of("exp", x)
    exact = np.exp(x.astype(np.float64))
    nearest = exact.astype(np.float32)
    up = np.where(nearest.astype(np.float64) < exact, np.nextafter(nearest, np.float32(np.inf)), nearest)
    assert check("exp", case, nearest) is None
    m = check("exp", case, up)
    assert m is not None and m.kind == "bias" and "above" in m.message
    down = np.where(nearest.astype(np.float64) > exact, np.nextafter(nearest, np.float32(0)), nearest)
    assert check("exp", case, down).kind == "bias"
    # One value broadcast over the case is one result, not thousands leaning the same way
    one = np.full(4001, 1.5, dtype=np.float32)
    assert check("exp", case_of("exp", one), np.full(4001, np.nextafter(np.exp(np.float32(1.5)), np.float32(np.inf)))) is None


def test_nan_in_the_wrong_place_is_caught() -> None:
    x = np.array([1.0, -1.0, np.nan, 4.0])
    case = case_of("sqrt", x)
    assert check("sqrt", case, np.sqrt(x)) is None
    m = check("sqrt", case, np.array([1.0, 0.0, np.nan, 2.0]))
    assert m.kind == "nan" and m.index == (1,)
    m = check("sqrt", case, np.array([np.nan, np.nan, np.nan, 2.0]))
    assert m.kind == "nan" and m.index == (0,)


def test_wrong_infinity_is_caught() -> None:
    x = np.array([0.0, -0.0, 2.0])
    case = case_of("log", x)
    expected = np.log(np.abs(x))  # -inf, -inf, log 2
    assert check("log", case, expected) is None
    m = check("log", case, np.array([np.inf, -np.inf, np.log(2.0)]))
    assert m.kind == "inf" and m.index == (0,)
    m = check("log", case, np.array([-1e308, -np.inf, np.log(2.0)]))
    assert m.kind == "inf" and m.index == (0,)


def test_a_result_at_the_edge_of_the_range_may_round_to_the_largest_value_or_to_infinity() -> None:
    """float32 g times gelu's tanh derivative with g near the largest float: where the exact result lies within
    the op's ulp budget of the largest finite value, that value and infinity both pass (infinity counting as
    the next power of two, one ulp past it); farther past it the largest value fails, farther below infinity
    does."""
    spec = CATALOG.op("_gelu_tanh_grad")
    budget = compare.ulp_budget(spec, "float32")
    largest = np.finfo(np.float32).max
    x = np.full(161, 2.0, dtype=np.float32)
    factor = float(spec.reference_callable()(np.array([1.0]), np.array([2.0]))[0])  # 1.086
    middle = np.float32(largest / factor)
    g = (np.array(middle).view(np.uint32) + np.arange(-80, 81).astype(np.uint32)).view(np.float32)  # its neighbours
    expected = compare.expected_result(spec, case_of("_gelu_tanh_grad", g, x))
    past = (expected.precise - float(largest)) / 2.0**104  # in ulps of the largest float's binade

    def first(low: float, high: float) -> int:
        return int(np.flatnonzero((past > low) & (past < high))[0])

    # past 2**128 an ulp is 2**105, the next binade's: the exact value lies past/2 of them from the largest float
    picked = [first(0.6, budget - 1), first(1 - budget, 0.4), first(2 * budget + 2, 2 * budget + 10), first(-budget - 10, -budget - 2)]
    case = case_of("_gelu_tanh_grad", g[picked], x[picked])
    rounded = expected.values[picked]  # inf, a finite value, inf, a finite value
    assert np.isinf(rounded[[0, 2]]).all() and np.isfinite(rounded[[1, 3]]).all()
    assert check("_gelu_tanh_grad", case, rounded) is None

    def swapped(i: int) -> np.ndarray:
        out = rounded.copy()
        out[i] = largest if np.isinf(out[i]) else np.inf
        return out

    assert check("_gelu_tanh_grad", case, swapped(0)) is None  # the largest float where the exact result rounds to inf
    assert check("_gelu_tanh_grad", case, swapped(1)) is None  # and inf where it rounds to the largest float
    for far in (2, 3):
        m = check("_gelu_tanh_grad", case, swapped(far))
        assert m is not None and m.index == (far,) and m.kind == "inf"
    negated = check("_gelu_tanh_grad", case_of("_gelu_tanh_grad", -g[picked], x[picked]), -swapped(0))
    assert negated is None  # the same at the negative end
    assert check("_gelu_tanh_grad", case, np.where(np.arange(4) == 0, -largest, rounded).astype(np.float32)).index == (0,)


def test_wrong_dtype_and_shape_are_caught() -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    case = case_of("abs", x)
    m = check("abs", case, np.abs(x).astype(np.int64))
    assert m.kind == "dtype" and (m.expected_dtype, m.actual_dtype) == ("int32", "int64")
    m = check("abs", case, np.abs(x).reshape(3, 2))
    assert m.kind == "shape" and (m.expected_shape, m.actual_shape) == ((2, 3), (3, 2))
    m = check("sum", case_of("sum", x, axis=0, keepdims=False), np.zeros((1, 3), dtype=np.int64))
    assert m.kind == "shape"


def test_integers_are_exact_even_when_huge() -> None:
    x = np.array([2**62 + 1, -(2**63)], dtype=np.int64)
    case = case_of("abs", x)
    assert check("abs", case, np.abs(x)) is None
    m = check("abs", case, np.array([2**62, -(2**63)], dtype=np.int64))
    assert m.kind == "values" and m.expected == str(2**62 + 1) and m.actual == str(2**62) and m.max_abs_error == 1.0
    # The error of a result at the other end of the range: 2**64 - 1, computed without overflow (rounded once).
    for dtype in (np.int64, np.uint64):
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
        y = np.array([high, 3], dtype=dtype)
        m = check("positive", case_of("positive", y), np.array([low, 3], dtype=dtype))
        assert m.kind == "values" and m.max_abs_error == float(2**64 - 1), dtype
    flags = np.array([True, False])
    m = check("logical_not", case_of("logical_not", flags), np.array([True, True]))
    assert m is not None and m.kind == "values"


def test_integer_wraparound_follows_numpy() -> None:
    x = np.array([127, -128, 100], dtype=np.int8)
    case = case_of("add", x, x)
    assert check("add", case, (x + x)) is None  # wraps to -2, 0, -56 in int8
    assert check("add", case, (x.astype(np.int16) * 2).astype(np.int8)) is None
    assert check("add", case, np.array([127, -128, 127], dtype=np.int8)) is not None


def test_zero_signs_are_compared_for_every_float_op() -> None:
    x = np.array([0.0, -0.0, 1.0])
    m = check("negative", case_of("negative", x), np.array([0.0, 0.0, -1.0]))  # -(+0) is -0
    assert m is not None and m.kind == "signed_zero" and m.index == (0,)
    assert check("negative", case_of("negative", x), -x) is None
    a, b = np.array([-0.0, 0.0]), np.array([0.0, -0.0])
    assert check("maximum", case_of("maximum", a, b), np.maximum(a, b)) is None  # numpy: the second of equals
    assert check("maximum", case_of("maximum", a, b), np.array([-0.0, 0.0])).kind == "signed_zero"
    zeros = np.array([-0.0, -0.0])
    assert check("sum", case_of("sum", zeros, axis=None, keepdims=False), np.float64(0.0)) is None
    assert check("sum", case_of("sum", zeros, axis=None, keepdims=False), np.float64(-0.0)).kind == "signed_zero"


def test_zero_signs_numpy_leaves_to_evaluation_order_are_not_compared() -> None:
    """max over a row holding +0 and -0: numpy's sign depends on its SIMD lanes; a row of one sign of zero
    has one answer. A tolerance family's result that is zero only after rounding may have either sign."""
    rows = np.array([[0.0, -0.0, -1.0], [-0.0, -0.0, -1.0]])
    case = case_of("max", rows, axis=1, keepdims=False)
    assert check("max", case, np.array([-0.0, -0.0])) is None
    assert check("max", case, np.array([0.0, -0.0])) is None
    assert check("max", case, np.array([0.0, 0.0])).kind == "signed_zero"
    tiny = np.array([[-1e-30, 1e-20]], dtype=np.float32)
    product = case_of("prod", tiny, axis=None, keepdims=False)
    expected = compare.expected_result(CATALOG.op("prod"), product)
    assert expected.values == 0.0 and np.signbit(expected.values) and expected.precise == pytest.approx(-1e-50)
    assert check("prod", product, np.float32(0.0)) is None


def test_standardization_is_held_to_its_terms_and_signs_zeros_only_where_they_are_zero() -> None:
    """_standardize_grad(g, x) is rstd (g - mean(g) - n mean(g n)): with g constant along a row the float64 result
    cancels to exactly 0, yet an honest kernel's mean(g n) is only near 0, so either zero passes there and a value
    within the tolerance of the terms' magnitude too; a zero gradient makes every term zero, and there the
    result's +0 is numpy's in any order."""
    spec = CATALOG.op("_standardize_grad")
    x = np.array([[1.0, 2.0, 3.0, 6.0], [-2.0, -1.0, 0.0, 3.0]])  # variance 3.5: with eps 0.5, rstd is 1/2 exactly
    g = np.array([[0.5] * 4, [-1.5] * 4])
    case = case_of("_standardize_grad", g, x, eps=0.5)
    expected = compare.expected_result(spec, case)
    assert np.all(expected.precise == 0) and np.all(expected.scale > 0)
    for honest in (np.zeros(4), -np.zeros(4), np.full(4, 1e-17)):
        assert check("_standardize_grad", case, np.stack([honest, -honest])) is None
    m = check("_standardize_grad", case, np.full((2, 4), 1e-6))
    assert m is not None and m.kind == "values"
    zero_grad = case_of("_standardize_grad", np.zeros((2, 4)), x, eps=0.5)
    assert check("_standardize_grad", zero_grad, np.zeros((2, 4))) is None
    assert check("_standardize_grad", zero_grad, -np.zeros((2, 4))).kind == "signed_zero"


# ---- low precision --------------------------------------------------------------------------------------------


def test_sums_are_held_to_the_magnitude_of_their_terms() -> None:
    """sum([1e8, 1, -1e8]) is 1 in float64 but 0 in float32 (numpy's own float32 answer): a float32 sum's
    rounding error grows with its terms (2e8 here), not with its cancelled result, so 0, 1 and 2.5 all
    pass; an error beyond the tolerance of the terms' magnitude fails."""
    x = np.array([1e8, 1.0, -1e8], dtype=np.float32)
    case = case_of("sum", x, axis=None, keepdims=False)
    assert np.sum(x) == 0.0 and np.sum(x.astype(np.float64)) == 1.0
    expected = compare.expected_result(CATALOG.op("sum"), case)
    assert expected.scale == 2e8 + 1
    for honest in (0.0, 1.0, 2.5):
        assert check("sum", case, np.float32(honest)) is None
    m = check("sum", case, np.float32(1.0 + 2e8 * 2e-6))
    assert m is not None and m.kind == "values"
    terms = case_of("sum", np.array([3e6, -1e6], dtype=np.float32), axis=None, keepdims=False)
    assert check("sum", terms, np.float32(2e6 + 4)) is None and check("sum", terms, np.float32(2e6 + 16)) is not None


def test_float32_precise_reference_comes_from_float64() -> None:
    x = np.array([1e8, 1.0, -1e8], dtype=np.float32)
    expected = compare.expected_result(CATALOG.op("sum"), case_of("sum", x, axis=None, keepdims=False))
    assert expected.dtype == "float32" and expected.values == np.float32(1.0) and expected.honest == np.float32(0.0)
    expected = compare.expected_result(CATALOG.op("sin"), case_of("sin", np.array([3, 1000], dtype=np.int16)))
    assert expected.dtype == "float32" and expected.precise.dtype == np.float64
    np.testing.assert_array_equal(expected.precise, np.sin(np.array([3.0, 1000.0])))


def test_a_float32_result_computed_in_float16_fails() -> None:
    x = np.linspace(0.1, 3.0, 50, dtype=np.float32)
    case = case_of("exp", x)
    assert check("exp", case, np.exp(x.astype(np.float64)).astype(np.float32)) is None
    assert check("exp", case, np.exp(x.astype(np.float16)).astype(np.float32)) is not None


def test_spec_tolerance_overrides_the_default() -> None:
    spec = CATALOG.op("softmax")
    x = np.array([0.5, 1.0])
    close_enough = compare.expected_result(spec, case_of("softmax", x, axis=-1)).values * (1 + 1e-4)
    assert compare.compare(spec, case_of("softmax", x, axis=-1), close_enough) is not None
    loose = dataclasses.replace(spec, tolerances=(Tolerance("float64", 1e-3, 0.0, "test"),))
    assert compare.compare(loose, case_of("softmax", x, axis=-1), close_enough) is None
    assert compare.tolerance(loose, "float64", "float64").source == "test"
    assert compare.tolerance(spec, "int16", "float32") == compare.Tolerance(*spec.family.tolerance_for("float32"), "default")
    assert compare.tolerance(CATALOG.op("sum"), "float64", "float64") == compare.Tolerance(1e-11, 1e-300, "default")
    assert compare.tolerance(CATALOG.op("sum"), "float16", "float16") == compare.Tolerance(1e-3, 1e-5, "default")
    assert compare.tolerance(spec, "int8", "int8") == compare.Tolerance(0.0, 0.0, "default")


# ---- errors ---------------------------------------------------------------------------------------------------------


def test_numpy_errors_must_be_raised_too() -> None:
    case = case_of("max", np.zeros((2, 0)), axis=1, keepdims=False)
    expected = compare.expected_result(CATALOG.op("max"), case)
    assert expected.error is not None and expected.error.type == "ValueError"
    assert check("max", case, Raised("ValueError", "zero-size")) is None
    assert check("max", case, np.zeros(2)).kind == "no_error"
    m = check("max", case, Raised("TypeError", "nope", ("Exception",)))
    assert m.kind == "wrong_error" and "TypeError" in m.message


def test_axis_errors_accept_valueerror_or_indexerror() -> None:
    case = case_of("sum", np.zeros((2, 3)), axis=5, keepdims=False)
    assert compare.expected_result(CATALOG.op("sum"), case).error.type == "AxisError"
    assert check("sum", case, Raised("ValueError")) is None
    assert check("sum", case, Raised("IndexError")) is None
    assert check("sum", case, Raised("AxisError", bases=("ValueError", "IndexError", "LookupError", "Exception"))) is None
    assert check("sum", case, Raised("RuntimeError", bases=("Exception",))).kind == "wrong_error"


def test_raising_where_numpy_does_not_fails() -> None:
    case = case_of("add", np.ones(3), np.ones(3))
    m = check("add", case, Raised.from_exception(RuntimeError("kernel exploded")))
    assert m.kind == "raised" and "kernel exploded" in m.message


def test_reference_failures_other_than_valueerror_are_harness_errors() -> None:
    case = case_of("add", np.ones(3), np.ones(4))  # broadcasting error: ValueError, fine
    assert compare.expected_result(CATALOG.op("add"), case).error is not None
    bad = inputs.Case.from_arrays(CATALOG.op("sum"), [np.ones(3)], {"axis": "zero", "keepdims": False})
    with pytest.raises(compare.HarnessError):
        compare.expected_result(CATALOG.op("sum"), bad)


# ---- repeatability and inputs ------------------------------------------------------------------------------------


def test_repeat_runs_bitwise_for_pointwise_and_integers() -> None:
    case = case_of("exp", np.array([0.5, 1.5]))
    first = np.exp(np.array([0.5, 1.5]))
    assert compare.compare_runs(CATALOG.op("exp"), case, first, first.copy()) is None
    second = first.copy()
    second[1] = np.nextafter(second[1], 10)
    m = compare.compare_runs(CATALOG.op("exp"), case, first, second)
    assert m.kind == "not_repeatable" and m.index == (1,)
    ints = case_of("sum", np.arange(4), axis=None, keepdims=False)
    assert compare.compare_runs(CATALOG.op("sum"), ints, np.int64(6), np.int64(7)).kind == "not_repeatable"
    zeros = case_of("negative", np.zeros(2))
    assert compare.compare_runs(CATALOG.op("negative"), zeros, np.array([-0.0, 0.0]), np.array([0.0, 0.0])) is not None
    # A complex run that differs in an imaginary part: its error is the modulus of the difference, imaginary part
    # included (a cast to float64 dropped it, with numpy's ComplexWarning).
    values = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    twin = values.copy()
    twin[1] = 3 + 3j
    m = compare.compare_runs(CATALOG.op("negative"), case_of("negative", values), values, twin)
    assert m.kind == "not_repeatable" and m.index == (1,) and m.max_abs_error == 4.0


def test_repeat_runs_of_float_reductions_may_reassociate() -> None:
    case = case_of("sum", np.ones(3), axis=None, keepdims=False)
    one = np.float64(0.1 + 0.2 + 0.3)
    other = np.float64(0.1 + (0.2 + 0.3))
    assert one != other
    assert compare.compare_runs(CATALOG.op("sum"), case, one, other) is None
    assert compare.compare_runs(CATALOG.op("sum"), case, one, one + 1e-3).kind == "not_repeatable"
    assert compare.reassociation_allowed(CATALOG.op("matmul"), "float32")
    assert not compare.reassociation_allowed(CATALOG.op("matmul"), "int32")
    assert not compare.reassociation_allowed(CATALOG.op("add"), "float64")
    assert compare.reassociation_allowed(CATALOG.op("softmax"), "float64")


def test_changed_inputs_are_caught_even_in_the_gaps() -> None:
    """The runner sends back a buffer it saw change; the gate counts what changed against the value set."""
    case = next(c for c in inputs.generate_cases(CATALOG.op("add"), "float32", salt=SALT) if c.operands[0].layout == "strided")
    assert compare.inputs_unchanged(case, [None, None]) is None
    changed = case.operands[0].buffer.copy()
    gap = int(np.flatnonzero(~case.operands[0].addressed())[0])
    changed[gap] = 1.0
    m = compare.inputs_unchanged(case, [changed, None])
    assert m.kind == "input_changed" and "x1" in m.message and "(1 buffer elements)" in m.message
    assert compare.inputs_unchanged(case, [None, changed[:3]]).kind == "input_changed"


# ---- reports ----------------------------------------------------------------------------------------------------------


def test_summary_and_json_describe_the_case_without_the_salt() -> None:
    salt = b"SECRET-SALT-0123456789"
    spec = CATALOG.op("multiply")
    for case in (c for c in inputs.generate_cases(spec, "float64", salt=salt, hidden=True) if c.hidden):
        m = compare.compare(spec, case, np.asarray(numpy_result("multiply", case)) + 1.0)
        if m is not None:
            break
    assert m is not None
    text, blob = m.summary(), m.to_json()
    for o in case.operands:
        assert str(o.shape) in text and str(o.strides) in text
    assert case.id in text and "hidden" in text and "float64" in text and "first wrong element" in text
    short = m.summary(detail=False)
    assert "strides" not in short and case.id in short
    data = json.loads(blob)
    assert data["case_id"] == case.id and data["kind"] == m.kind and data["operands"][0]["strides"] == list(case.operands[0].strides)
    for secret in (salt.decode(), "SECRET", "seed"):
        assert secret not in text and secret not in blob


def test_json_survives_infinities() -> None:
    x = np.array([1.0, np.inf])
    m = check("negative", case_of("negative", x), np.array([-1.0, np.nan]))
    data = json.loads(m.to_json())
    assert data["kind"] == "nan" and data["expected"] == "-inf"


# ---- the cases and the comparison together catch the classic kernel bugs -----------------------------------


def _run_fake(name: str, dtype: str, kernel) -> set[str]:
    """Runs a fake kernel over every case the way the gate does (value set a, then b in the same memory);
    returns the kinds of mismatch found."""
    spec = CATALOG.op(name)
    kinds = set()
    for case in inputs.generate_cases(spec, dtype, salt=SALT, hidden=True):
        buffers = [o.buffer.copy() for o in case.operands]
        for which in ("a", "b"):
            if which == "b":
                for buffer, o in zip(buffers, case.operands):
                    buffer[...] = o.buffer_b
            views = [o.view(b) for o, b in zip(case.operands, buffers)]
            try:
                with np.errstate(all="ignore"):
                    actual = kernel(case, views, buffers)
            except ValueError as exc:
                actual = Raised.from_exception(exc)
            m = compare.compare(spec, case, actual, which=which)
            if m is not None:
                kinds.add(m.kind)
    return kinds


def test_a_kernel_that_ignores_strides_is_caught() -> None:
    def kernel(case, views, buffers):  # reads each operand as if contiguous from its offset
        dense = [np.resize(b[o.offset :], v.shape) if v.size else v for o, v, b in zip(case.operands, views, buffers)]
        return np.add(*dense)

    assert _run_fake("add", "float32", kernel)


def test_a_kernel_that_caches_its_result_is_caught_by_the_second_value_set() -> None:
    cache: dict[tuple, np.ndarray] = {}

    def kernel(case, views, buffers):  # keyed on pointer and shape, like exploit #11
        key = tuple((b.ctypes.data, v.shape) for b, v in zip(buffers, views))
        if key not in cache:
            cache[key] = np.sum(views[0], **case.kwargs)
        return cache[key]

    assert "values" in _run_fake("sum", "int32", kernel) or "nan" in _run_fake("sum", "float64", kernel)


def test_a_kernel_that_reads_the_first_row_only_is_caught() -> None:
    def kernel(case, views, buffers):
        x1, x2 = views
        out = np.multiply(x1, x2)
        if out.ndim >= 2 and out.shape[0] > 1:
            out[1:] = 0
        return out

    assert "values" in _run_fake("multiply", "int16", kernel)


def test_a_reduction_that_drops_the_tail_is_caught() -> None:
    def kernel(case, views, buffers):
        x = views[0]
        if x.ndim == 1 and x.shape[0] > 16:
            x = x[: x.shape[0] // 16 * 16]
        return np.max(x, **case.kwargs)

    assert "values" in _run_fake("max", "float32", kernel)


# ---- device parity (a CUDA kernel against its CPU twin) ------------------------------------------------------


def test_device_parity_allows_last_bit_differences_but_not_wrong_or_missing_values() -> None:
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    case = case_of("exp", x)
    cpu = np.exp(x)
    close = np.nextafter(cpu, np.float32(np.inf))  # one ulp up: math libraries differ this much
    assert compare.device_parity(CATALOG.op("exp"), case, cpu, close) is None
    wrong = cpu.copy()
    wrong[7] *= 1.01
    mismatch = compare.device_parity(CATALOG.op("exp"), case, cpu, wrong)
    assert mismatch is not None and mismatch.kind == "device_parity" and "(7,)" in mismatch.message
    nan = cpu.copy()
    nan[3] = np.nan
    assert compare.device_parity(CATALOG.op("exp"), case, cpu, nan).kind == "device_parity"
    assert "float64" in compare.device_parity(CATALOG.op("exp"), case, cpu, cpu.astype(np.float64)).message


def test_a_device_is_held_to_its_own_budget_where_the_spec_gives_one() -> None:
    """cos declares CUDA's libraries' budget beside the CPU's (2.5 ulp against 1): a result 2 ulp from the
    exact value fails on the CPU and passes on CUDA; 3 ulp fails on both; an op without a CUDA budget holds
    CUDA to the CPU's."""
    spec = CATALOG.op("cos")
    assert compare.ulp_budget(spec, "float32") == 1.0 and compare.ulp_budget(spec, "float32", device="cuda") == 2.5
    assert compare.ulp_budget(CATALOG.op("exp"), "float64", device="cuda") == compare.ulp_budget(CATALOG.op("exp"), "float64")
    x = np.linspace(0.1, 1.4, 257, dtype=np.float32)  # cos falls across [0.17, 1]: one ulp is 2**-24 or 2**-25
    case = case_of("cos", x)
    exact = np.cos(x.astype(np.float64))
    ulp = np.ldexp(1.0, np.frexp(exact)[1] - 24)
    signs = np.where(np.arange(x.size) % 2 == 0, 1.0, -1.0)  # both ways: no lean for the bias check to see
    two_off, three_off = ((exact + signs * k * ulp).astype(np.float32) for k in (2, 3))
    assert compare.compare(spec, case, two_off).kind == "values"
    assert compare.compare(spec, case, two_off, device="cuda") is None
    assert compare.compare(spec, case, three_off, device="cuda").kind == "values"


def test_a_wider_device_budget_widens_the_lean_it_may_have_in_proportion() -> None:
    """atan's CUDA budget is 2.5 ulp against the CPU's 2: a lean of 0.28 ulp (CUDA's atan over large
    integers, measured) fails the CPU's 0.25 and passes CUDA's 0.3125; 0.4 fails both."""
    spec = CATALOG.op("atan")
    x = np.linspace(1.0, 50.0, 4001)
    case = case_of("atan", x)
    exact = np.arctan(np.asarray(x, dtype=np.longdouble))
    ulp = np.ldexp(1.0, np.frexp(exact.astype(np.float64))[1] - 53)

    def leaning(lean: float) -> np.ndarray:  # rounded as exact + lean: mean error `lean` ulp from correct rounding
        return (exact + np.longdouble(lean) * ulp).astype(np.float64)

    assert compare.compare(spec, case, leaning(0.28)).kind == "bias"
    assert compare.compare(spec, case, leaning(0.28), device="cuda") is None
    assert compare.compare(spec, case, leaning(0.4), device="cuda").kind == "bias"


def test_device_parity_allows_the_sum_of_both_budgets_and_a_sums_own_magnitude() -> None:
    """Each device within its budget of the exact value can be that far apart: cos on CPU and CUDA 3.5 ulp
    (1 + 2.5), not 4. A cumulative sum that cancels is judged against the magnitude of its terms, as the
    reference judges it, and within twice the tolerance (both within it of the reference)."""
    x = np.linspace(0.1, 1.4, 64, dtype=np.float32)
    case = case_of("cos", x)
    cpu = np.cos(x.astype(np.float64)).astype(np.float32)

    def steps_up(k: int) -> np.ndarray:  # k floats above the CPU's result: k ulp where no binade is crossed
        out = cpu.copy()
        for _ in range(k):
            out = np.nextafter(out, np.float32(np.inf))
        return out

    assert compare.device_parity(CATALOG.op("cos"), case, cpu, steps_up(3), on="cuda") is None
    assert compare.device_parity(CATALOG.op("cos"), case, cpu, steps_up(3), on="cpu").kind == "device_parity"  # 1 + 1 ulp
    assert compare.device_parity(CATALOG.op("cos"), case, cpu, steps_up(4), on="cuda").kind == "device_parity"
    terms = np.array([1e6, 0.0625, -1e6, 1e-3] * 8)
    spec, case = CATALOG.op("cumulative_sum"), case_of("cumulative_sum", terms, axis=0)
    expected = compare.expected_result(spec, case)
    cpu = np.cumsum(terms)
    device = cpu + np.where(np.abs(cpu) < 1, 1e-10, 0.0)  # the cancelled partial sums off by 1e-10: 1e-16 of the terms
    assert compare.device_parity(spec, case, cpu, device) is not None  # relative to 0.0625 alone, far off
    assert compare.device_parity(spec, case, cpu, device, expected=expected) is None
    assert compare.device_parity(spec, case, cpu, cpu + 1e-3, expected=expected).kind == "device_parity"


def test_an_op_measured_against_its_operands_may_err_by_their_ulps_where_its_result_cancels() -> None:
    """logaddexp declares its accuracy relative to its operands: near a zero of the result (the larger
    operand plus log1p(exp(-d)) cancelling) numpy's own formula errs by ulps of the operands, and a second
    math library an ulp away in log1p moves the result by thousands of the result's ulps (CUDA's, measured).
    That passes, on the reference and beside the CPU's numpy bits; in the result's ulps it would fail; 8 ulps
    of the operands fail either way."""
    spec = CATALOG.op("logaddexp")
    assert spec.accuracy.relative_to == "operands"
    x1 = np.linspace(-3.0, -0.2, 512)
    x2 = np.log1p(-np.exp(x1)) * (1 + 1e-9)  # e^x1 + e^x2 just off 1: results of about 1e-9
    case = case_of("logaddexp", x1, x2)
    cpu = numpy_result("logaddexp", case)
    larger = np.maximum(x1, x2)
    term = np.log1p(np.exp(-np.abs(x1 - x2)))
    direction = np.where(np.arange(x1.size) % 2 == 0, np.inf, -np.inf)  # both ways: no lean
    device = larger + np.nextafter(term, direction)
    result_ulps = np.abs(device - cpu) / np.spacing(np.abs(cpu))
    assert result_ulps.max() > 1000  # thousands of the result's ulps apart
    expected = compare.expected_result(spec, case)
    assert compare.compare(spec, case, device, expected=expected) is None
    assert compare.device_parity(spec, case, cpu, device, on="cuda", expected=expected) is None
    by_result = dataclasses.replace(spec, accuracy=dataclasses.replace(spec.accuracy, relative_to="result"))
    assert compare.compare(by_result, case, device).kind == "values"
    assert compare.device_parity(by_result, case, cpu, device, on="cuda", expected=compare.expected_result(by_result, case)).kind == "device_parity"
    far = larger + term + direction.clip(-1, 1) * 8 * np.spacing(np.abs(larger))
    assert compare.compare(spec, case, far, expected=expected).kind == "values"
    assert compare.device_parity(spec, case, cpu, far, on="cuda", expected=expected).kind == "device_parity"


def test_device_parity_is_exact_for_integers() -> None:
    a = np.arange(10, dtype=np.int32)
    case = case_of("add", a, a)
    assert compare.device_parity(CATALOG.op("add"), case, a + a, a + a) is None
    off = a + a
    off[9] += 1
    assert compare.device_parity(CATALOG.op("add"), case, a + a, off).kind == "device_parity"


# ---- normalization: relative errors ------------------------------------------------------------------------------


def test_every_probability_is_judged_relative_to_itself() -> None:
    """A softmax probability of 1e-20 flushed to zero is 100% wrong, however small in absolute terms; float64
    is held to double precision (exp computed in float is about 6e-8 off)."""
    spec = CATALOG.op("softmax")
    x = np.array([[0.0, -46.0, -20.0, -1.0]])
    case = case_of("softmax", x, axis=-1)
    expected = compare.expected_result(spec, case).values
    assert expected[0, 1] < 1e-19 and check("softmax", case, expected) is None
    flushed = expected.copy()
    flushed[0, 1] = 0.0
    assert check("softmax", case, flushed).kind == "values"
    in_float = np.exp(x.astype(np.float32) - 0).astype(np.float64)
    assert check("softmax", case, in_float / in_float.sum()) is not None
    assert check("softmax", case, expected * (1 + 1e-14)) is None


def test_device_parity_of_bfloat16_allows_the_devices_own_rounding() -> None:
    """cuBLAS and the CPU tiles, or an online softmax, round a few bfloat16 elements differently: parity is
    the dtype's tolerance there (bfloat16's numpy kind is 'V', which once made it bit for bit)."""
    a = (np.arange(12, dtype=np.float32).reshape(3, 4) / 7).astype(ml_dtypes.bfloat16)
    b = (np.ones((4, 2), dtype=np.float32) / 3).astype(ml_dtypes.bfloat16)
    case = case_of("matmul", a, b)
    cpu = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    one_off = cpu.copy()
    one_off[1, 1] = np.nextafter(cpu[1, 1].astype(np.float32), np.float32(np.inf)).astype(ml_dtypes.bfloat16)
    if one_off[1, 1] == cpu[1, 1]:  # bfloat16 rounded it back: step by a bfloat16 ulp instead
        one_off[1, 1] = (cpu[1, 1].astype(np.float32) * np.float32(1 + 2**-7)).astype(ml_dtypes.bfloat16)
    assert compare.device_parity(CATALOG.op("matmul"), case, cpu, one_off) is None
    far = cpu.copy()
    far[0, 0] = (cpu[0, 0].astype(np.float32) * 2 + 1).astype(ml_dtypes.bfloat16)
    assert compare.device_parity(CATALOG.op("matmul"), case, cpu, far).kind == "device_parity"


def test_complex_sums_need_only_be_non_finite_where_the_reference_is() -> None:
    """x1 @ x2 with an infinite part: numpy's loop gives -inf where a BLAS order gives NaN; either passes, a
    finite result does not, and a non-finite one where the reference is finite does not."""
    x1 = np.array([complex(-np.inf, 1.0), 1 + 2j, 3 - 1j], dtype=np.complex64)
    x2 = np.array([[1 + 0j], [2 - 1j], [0.5 + 0.5j]], dtype=np.complex64)
    case = case_of("matmul", x1, x2)
    want = numpy_result("matmul", case)
    assert not np.isfinite(want).all()
    nan_instead = want.copy()
    nan_instead[~np.isfinite(want)] = complex(np.nan, np.nan)
    assert check("matmul", case, nan_instead) is None
    finite_instead = np.nan_to_num(want)
    assert check("matmul", case, finite_instead) is not None
    finite_case = case_of("matmul", np.array([1 + 1j, 2 + 0j], dtype=np.complex64), np.array([[1j], [1 + 0j]], dtype=np.complex64))
    wrong = numpy_result("matmul", finite_case).copy()
    wrong[0] = complex(np.nan, 0.0)
    assert check("matmul", finite_case, wrong) is not None
    # so may the two devices differ: one device's order against the other's
    assert compare.device_parity(CATALOG.op("matmul"), case, want, nan_instead, on="cuda") is None
    assert compare.device_parity(CATALOG.op("matmul"), case, want, finite_instead, on="cuda").kind == "device_parity"
    # pointwise complex results keep numpy's exact special values, on each device and between them
    mul = case_of("multiply", np.array([complex(np.inf, 0.0)], dtype=np.complex64), np.array([1 + 1j], dtype=np.complex64))
    product = numpy_result("multiply", mul).copy()
    nan_product = product.copy()
    nan_product[~np.isfinite(product)] = np.nan
    assert check("multiply", mul, nan_product) is not None
    assert compare.device_parity(CATALOG.op("multiply"), mul, product, nan_product, on="cuda").kind == "device_parity"
