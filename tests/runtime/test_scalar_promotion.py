"""Python scalars among an op's operands, judged against numpy 2 (NEP 50) for every mix tested.

- where: the condition never takes part in promotion; a scalar condition counts by its truth value.
- comparisons with a Python int outside an integer tensor's range answer by value, as numpy does; true
  division divides by its value; arithmetic still raises OverflowError.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorsmith as ts

# numpy-native dtypes (bfloat16's scalar rules are ml_dtypes' and documented apart, in the README).
TENSOR_DTYPES = ["bool", "int8", "uint8", "int16", "int64", "uint64", "float16", "float32", "float64"]


def sample(dtype: str, n: int = 4) -> np.ndarray:
    return (np.arange(n) % 3).astype(dtype)


def numpy_or_error(fn):
    try:
        return fn(), None
    except (TypeError, OverflowError, ValueError) as e:
        return None, type(e)


def assert_matches(got: ts.Tensor, expected) -> None:
    expected = np.asarray(expected)
    assert got.dtype == ts.dtype(expected.dtype), f"dtype {got.dtype} != numpy's {expected.dtype}"
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(got), expected)


# ---- where ------------------------------------------------------------------------------------

CONDITIONS = {
    "float64": np.array([1.5, 0.0, -2.0, 0.0]),
    "bool": np.array([True, False, True, False]),
    "int8": np.array([0, 3, 0, -1], np.int8),
    "uint64": np.array([1, 0, 2**64 - 1, 0], np.uint64),
}
SCALARS = [True, False, 0, 7, -3, 2.5, -0.0]


@pytest.mark.parametrize("cond", sorted(CONDITIONS))
@pytest.mark.parametrize("x1, x2", [(a, b) for a, b in itertools.product(SCALARS, SCALARS) if a is not b][::3])
def test_where_of_two_scalars_ignores_the_condition_dtype(cond: str, x1, x2) -> None:
    c = CONDITIONS[cond]
    assert_matches(ts.where(ts.asarray(c), x1, x2), np.where(c, x1, x2))


@pytest.mark.parametrize("cond", sorted(CONDITIONS))
@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
@pytest.mark.parametrize("scalar", SCALARS)
def test_where_of_a_tensor_and_a_scalar(cond: str, dtype: str, scalar) -> None:
    c, x = CONDITIONS[cond], sample(dtype)
    if np.dtype(dtype).kind == "u" and isinstance(scalar, int) and not isinstance(scalar, bool) and scalar < 0:
        # numpy's where (not a ufunc) wraps -3 into the unsigned dtype; tensorsmith raises, as ufuncs do.
        with pytest.raises(OverflowError, match=r"Python integer -3 out of bounds for uint"):
            ts.where(ts.asarray(c), ts.asarray(x), scalar)
        return
    assert_matches(ts.where(ts.asarray(c), ts.asarray(x), scalar), np.where(c, x, scalar))
    assert_matches(ts.where(ts.asarray(c), scalar, ts.asarray(x)), np.where(c, scalar, x))


@pytest.mark.parametrize("cond", [True, False, 0, 1, 0.0, 2.5, float("nan"), 2**70, -(2**70)])
def test_where_with_a_scalar_condition_reads_its_truth_value(cond) -> None:
    x, y = sample("int8"), sample("float32")[::-1].copy()
    assert_matches(ts.where(cond, ts.asarray(x), ts.asarray(y)), np.where(cond, x, y))
    assert_matches(ts.where(cond, 1, 2), np.where(cond, 1, 2))
    assert_matches(ts.where(cond, ts.asarray(x), 5), np.where(cond, x, 5))


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
def test_where_condition_tensor_dtype_never_promotes(dtype: str) -> None:
    c = sample(dtype)
    for x1, x2 in [(1, 2), (True, False), (1, 2.0), (sample("int8"), 3), (sample("float16"), 1.0)]:
        expected = np.where(c, x1, x2)
        args = [ts.asarray(v) if isinstance(v, np.ndarray) else v for v in (x1, x2)]
        assert_matches(ts.where(ts.asarray(c), *args), expected)


def test_where_out_of_range_int_branch_raises_where_numpy_wraps() -> None:
    # np.where(c, int8, 1000) silently gives -24; tensorsmith keeps NEP 50's OverflowError (as np.add does).
    c, x = CONDITIONS["bool"], sample("int8")
    with pytest.raises(OverflowError, match=r"Python integer 1000 out of bounds for int8"):
        ts.where(ts.asarray(c), ts.asarray(x), 1000)


# ---- Python ints beyond an integer dtype ----------------------------------------------------------

INTEGER_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
COMPARISONS = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]


def edge_values(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([False, True])
    if np.dtype(dtype).kind == "f":
        return np.array([0, 1, -1, np.inf, -np.inf, np.nan], dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, 0, info.max - 1, info.max], dtype)


def edge_ints() -> list[int]:
    """Each integer dtype's bounds and their neighbours, and ints far beyond every dtype (and float64)."""
    values = {0, 1, -1, 2**200, -(2**200), 10**400, -(10**400)}
    for name in INTEGER_DTYPES:
        info = np.iinfo(name)
        values |= {int(info.min) - 1, int(info.min), int(info.max), int(info.max) + 1}
    return sorted(values)


def outcome(fn):
    """numpy's or tensorsmith's answer as (values, None), or (None, the exception type)."""
    try:
        return np.asarray(fn()), None
    except (OverflowError, TypeError, ValueError) as e:
        return None, type(e)


@pytest.mark.parametrize("dtype", [*INTEGER_DTYPES, "bool", "float16", "float32", "float64"])
@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_with_python_ints_answer_as_numpy(dtype: str, name: str) -> None:
    a = edge_values(dtype)
    t = ts.asarray(a)
    for value in edge_ints():
        for left, right, np_left, np_right in ((t, value, a, value), (value, t, value, a)):
            expected, expected_error = outcome(lambda: getattr(np, name)(np_left, np_right))
            got, error = outcome(lambda: getattr(ts, name)(left, right))
            assert error is expected_error, f"{dtype} {name} {value}: raised {error}, numpy {expected_error}"
            if expected is not None:
                assert got.dtype == np.bool_
                np.testing.assert_array_equal(got, expected, err_msg=f"{dtype} {name} {value}")


def test_the_issue_cases() -> None:
    u = np.array([0, 1, 2**64 - 1], np.uint64)
    np.testing.assert_array_equal(np.asarray(ts.asarray(u) < 2**64), u < 2**64)
    assert (np.asarray(ts.asarray(u) < 2**64)).all()
    np.testing.assert_array_equal(np.asarray(2**64 > ts.asarray(u)), 2**64 > u)
    i8 = np.array([-128, 0, 127], np.int8)
    np.testing.assert_array_equal(np.asarray(ts.asarray(i8) == 1000), i8 == 1000)
    np.testing.assert_array_equal(np.asarray(ts.asarray(i8) != -1000), i8 != -1000)
    u8 = np.array([0, 255], np.uint8)
    np.testing.assert_array_equal(np.asarray(ts.asarray(u8) < -1), u8 < -1)
    np.testing.assert_array_equal(np.asarray(ts.asarray(u8) >= -(2**100)), u8 >= -(2**100))


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_of_two_python_scalars_answer_as_numpy(name: str) -> None:
    values = [0, 1, -1, 2**63, 2**64, 2**70, 2**71, -(2**70), True, False, 1.5, -2.5, 2**1100]
    for x, y in itertools.product(values, values):
        expected, expected_error = outcome(lambda: getattr(np, name)(x, y))
        got, error = outcome(lambda: getattr(ts, name)(x, y))
        assert error is expected_error, f"{name}({x}, {y}): raised {error}, numpy {expected_error}"
        if expected is not None:
            assert got.dtype == np.bool_ and got.shape == () and bool(got) == bool(expected), f"{name}({x}, {y})"


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_arithmetic_with_an_out_of_range_int_still_raises(dtype: str, name: str) -> None:
    a = edge_values(dtype)
    info = np.iinfo(dtype)
    for value in (int(info.max) + 1, int(info.min) - 1, 2**200):
        _, expected_error = outcome(lambda: getattr(np, name)(a, value))
        assert expected_error is OverflowError
        with pytest.raises(OverflowError):
            getattr(ts, name)(ts.asarray(a), value)
        with pytest.raises(OverflowError):
            getattr(ts, name)(value, ts.asarray(a))


@pytest.mark.parametrize("dtype", [*INTEGER_DTYPES, "bool"])
def test_true_division_by_an_out_of_range_int_divides_by_its_value(dtype: str) -> None:
    a = edge_values(dtype)
    t = ts.asarray(a)
    for value in edge_ints():
        for args, np_args in (((t, value), (a, value)), ((value, t), (value, a))):
            expected, expected_error = outcome(lambda: np.divide(*np_args))
            got, error = outcome(lambda: ts.divide(*args))
            assert error is expected_error, f"{dtype} / {value}: raised {error}, numpy {expected_error}"
            if expected is not None:
                assert got.dtype == expected.dtype
                np.testing.assert_array_equal(got, expected)


# Not uint64: numpy's logical ops read a Python int through a C long and raise OverflowError for 2**63 to
# 2**64 - 1, which fit uint64 and which tensorsmith takes (a difference this change leaves as it was).
@pytest.mark.parametrize("dtype", [d for d in INTEGER_DTYPES if d != "uint64"])
@pytest.mark.parametrize("name", ["logical_and", "logical_or"])
def test_logical_ops_take_an_out_of_range_int_by_its_truth_value(dtype: str, name: str) -> None:
    a = edge_values(dtype)
    for value in edge_ints():
        expected, expected_error = outcome(lambda: getattr(np, name)(a, value))
        got, error = outcome(lambda: getattr(ts, name)(ts.asarray(a), value))
        assert error is expected_error, f"{dtype} {name} {value}: raised {error}, numpy {expected_error}"
        if expected is not None:
            np.testing.assert_array_equal(got, expected)
