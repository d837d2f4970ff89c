"""validators.compare: what passes and what fails, against hand-made results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from generator.model import Tolerance, load_catalog
from validators import compare, inputs
from validators.compare import Raised

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
        return np.asarray(compare.reference_function(spec)(*case.arrays(which), **case.kwargs))


# ---- the reference passes its own cases -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype"), [("add", "float32"), ("sin", "float32"), ("sin", "int16"), ("sum", "float32"),
                                             ("mean", "int64"), ("argmax", "float64"), ("softmax", "float32"),
                                             ("matmul", "int8"), ("where", "uint16"), ("divide", "int32")])  # fmt: skip
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
    assert (m.rtol, m.atol) == (1e-7, 1e-7)


def test_float64_tolerance_is_torch_default() -> None:
    x = np.array([1.0, 1000.0])
    case = case_of("negative", x)
    assert check("negative", case, -x * (1 + 0.9e-7)) is None
    assert check("negative", case, -x * (1 + 3e-7)) is not None


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
    flags = np.array([True, False])
    m = check("logical_not", case_of("logical_not", flags), np.array([True, True]))
    assert m is not None and m.kind == "values"


def test_integer_wraparound_follows_numpy() -> None:
    x = np.array([127, -128, 100], dtype=np.int8)
    case = case_of("add", x, x)
    assert check("add", case, (x + x)) is None  # wraps to -2, 0, -56 in int8
    assert check("add", case, (x.astype(np.int16) * 2).astype(np.int8)) is None
    assert check("add", case, np.array([127, -128, 127], dtype=np.int8)) is not None


def test_signed_zero_only_where_the_spec_asks() -> None:
    assert "signed_zero" not in CATALOG.op("negative").tags
    x = np.array([0.0, -0.0, 1.0])
    wrong = np.array([0.0, 0.0, -1.0])  # -(+0) is -0
    assert check("negative", case_of("negative", x), wrong) is None
    tagged = dataclasses.replace(CATALOG.op("negative"), tags=("core", "signed_zero"))
    m = compare.compare(tagged, case_of("negative", x), wrong)
    assert m is not None and m.kind == "signed_zero" and m.index == (0,)
    assert compare.compare(tagged, case_of("negative", x), -x) is None


# ---- low precision --------------------------------------------------------------------------------------------


def test_float32_as_good_as_numpy_float32_passes() -> None:
    """sum([1e8, 1, -1e8]) is 1 in float64 but 0 in float32 (numpy's own float32 answer): 0 must pass,
    anything at least as close to 1 passes, anything farther fails."""
    x = np.array([1e8, 1.0, -1e8], dtype=np.float32)
    case = case_of("sum", x, axis=None, keepdims=False)
    assert np.sum(x) == 0.0 and np.sum(x.astype(np.float64)) == 1.0
    assert check("sum", case, np.float32(0.0)) is None
    assert check("sum", case, np.float32(1.0)) is None
    assert check("sum", case, np.float32(0.5)) is None
    m = check("sum", case, np.float32(2.5))
    assert m is not None and m.kind == "values"
    assert check("sum", case, np.float32(-0.25)) is not None


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
    assert check("exp", case, np.exp(x)) is None
    assert check("exp", case, np.exp(x.astype(np.float16)).astype(np.float32)) is not None


def test_spec_tolerance_overrides_the_default() -> None:
    spec = CATALOG.op("tanh")
    x = np.array([0.5, 1.0])
    close_enough = np.tanh(x) * (1 + 1e-4)
    assert compare.compare(spec, case_of("tanh", x), close_enough) is not None
    loose = dataclasses.replace(spec, tolerances=(Tolerance("float64", 1e-3, 0.0, "test"),))
    assert compare.compare(loose, case_of("tanh", x), close_enough) is None
    assert compare.tolerance(loose, "float64", "float64").source == "test"
    assert compare.tolerance(spec, "int16", "float32") == compare.Tolerance(1.3e-6, 1e-5, "default")
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
    case = next(c for c in inputs.generate_cases(CATALOG.op("add"), "float32", salt=SALT) if c.operands[0].layout == "strided")
    buffers = [o.buffer.copy() for o in case.operands]
    assert compare.inputs_unchanged(case, buffers) is None
    gap = int(np.flatnonzero(~case.operands[0].addressed())[0])
    buffers[0][gap] = 1.0
    m = compare.inputs_unchanged(case, buffers)
    assert m.kind == "input_changed" and "x1" in m.message
    assert compare.inputs_unchanged(case, [o.buffer_b.copy() for o in case.operands], which="b") is None


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


def test_device_parity_is_exact_for_integers() -> None:
    a = np.arange(10, dtype=np.int32)
    case = case_of("add", a, a)
    assert compare.device_parity(CATALOG.op("add"), case, a + a, a + a) is None
    off = a + a
    off[9] += 1
    assert compare.device_parity(CATALOG.op("add"), case, a + a, off).kind == "device_parity"
