"""cumulative_sum and cumulative_prod (the scan family) as a user calls them: numpy's results, dtypes, axis
rules and errors (the gate and test_ops_differential judge the values over every dtype and layout)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorsmith as ts

SCANS = [(ts.cumulative_sum, np.cumulative_sum), (ts.cumulative_prod, np.cumulative_prod)]


@pytest.mark.parametrize(("ours", "theirs"), SCANS, ids=["sum", "prod"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint64", "float16", "float32", "float64"])
def test_result_dtype_and_values_follow_numpy(ours, theirs, dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, size=(4, 5, 6)).astype(dtype)  # small integers: every dtype sums and multiplies them exactly
    for axis in (0, 1, 2, -1):
        for include_initial in (False, True):
            got = ours(ts.asarray(a), axis=axis, include_initial=include_initial)
            want = theirs(a, axis=axis, include_initial=include_initial)
            assert got.dtype == ts.dtype(want.dtype.name)
            assert got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize(("ours", "theirs"), SCANS, ids=["sum", "prod"])
def test_one_dimensional_and_zero_dimensional_inputs_take_no_axis(ours, theirs) -> None:
    a = np.arange(1, 8, dtype=np.int64)
    np.testing.assert_array_equal(np.asarray(ours(ts.asarray(a))), theirs(a))
    scalar = np.float32(2.5)
    for include_initial in (False, True):
        got = ours(ts.asarray(scalar), include_initial=include_initial)
        want = theirs(scalar, include_initial=include_initial)
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)


def test_views_are_scanned_in_place_of_copies() -> None:
    base = np.random.default_rng(5).standard_normal((30, 40))
    for view in (base.T, base[::2, ::-3], base[3:9, 5]):
        x = ts.asarray(view)
        for axis in range(view.ndim):
            np.testing.assert_allclose(np.asarray(ts.cumulative_sum(x, axis=axis)), np.cumulative_sum(view, axis=axis), rtol=1e-12)


def test_leading_negative_zero_and_nan_follow_numpy() -> None:
    a = np.array([[-0.0, -0.0, 1.0], [np.nan, 1.0, 2.0], [np.inf, -np.inf, 3.0]])
    got = np.asarray(ts.cumulative_sum(ts.asarray(a), axis=1, include_initial=True))
    want = np.cumulative_sum(a, axis=1, include_initial=True)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_long_and_wide_scans_cross_the_engines_tiles() -> None:
    rng = np.random.default_rng(11)
    wide = rng.integers(-3, 4, size=(5, 5000)).astype(np.int32)  # more adjacent columns than one call takes
    np.testing.assert_array_equal(np.asarray(ts.cumulative_sum(ts.asarray(wide), axis=0)), np.cumulative_sum(wide, axis=0))
    long = rng.standard_normal(300_001).astype(np.float32)
    got = np.asarray(ts.cumulative_sum(ts.asarray(long)))
    exact = np.cumulative_sum(long.astype(np.float64))
    bound = 2e-6 * np.cumulative_sum(np.abs(long.astype(np.float64)))
    assert np.all(np.abs(got - exact) <= bound), "a float32 running sum drifts further than float32 rounding allows"


def test_empty_axes_give_the_identity_where_asked() -> None:
    a = np.ones((3, 0, 2), dtype=np.float32)
    for include_initial in (False, True):
        got = ts.cumulative_prod(ts.asarray(a), axis=1, include_initial=include_initial)
        want = np.cumulative_prod(a, axis=1, include_initial=include_initial)
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)


def test_errors_match_numpy() -> None:
    x = ts.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="more than one dimension ``axis`` argument is required"):
        ts.cumulative_sum(x)
    with pytest.raises(ValueError, match="out of bounds"):
        ts.cumulative_sum(x, axis=2)
    with pytest.raises(ValueError, match="out of bounds"):
        ts.cumulative_prod(ts.asarray(np.float64(1.0)), axis=1)
    with pytest.raises(TypeError):
        ts.cumulative_sum(x, 0)  # axis is keyword-only, as the standard has it


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_scans_on_a_cuda_device() -> None:
    rng = np.random.default_rng(2)
    for shape, axis in (((5000,), 0), ((7, 300, 9), 1), ((40, 3), 0), ((3, 100_003), 1)):
        a = rng.standard_normal(shape)
        x = ts.asarray(a).to_device("cuda")
        for include_initial in (False, True):
            got = ts.cumulative_sum(x, axis=axis, include_initial=include_initial).to_device("cpu")
            np.testing.assert_allclose(np.asarray(got), np.cumulative_sum(a, axis=axis, include_initial=include_initial),
                                       rtol=1e-9, atol=1e-9 * np.abs(a).sum())
