"""Python scalars among an op's operands, judged against numpy 2 (NEP 50) for every mix tested.

- where: the condition never takes part in promotion; a scalar condition counts by its truth value.
- comparisons with a Python int outside an integer tensor's range answer by value, as numpy does.
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
