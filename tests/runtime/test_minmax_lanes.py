"""max/min fold contiguous rows of 64 or more elements in 32 lanes that each take every 32nd element across the
whole row (the order does not change a maximum): the answer must still be numpy's, with a NaN anywhere in a
row, infinities, the extremes of integer types, rows split into chunks, and the tail after the last full
stride."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorsmith as ts

FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
INTS = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64]


def _same(ours: ts.Tensor, theirs: np.ndarray) -> bool:
    got = np.asarray(ours)
    return got.dtype == theirs.dtype and np.array_equal(got.astype(np.float64), theirs.astype(np.float64), equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_a_nan_anywhere_in_a_row_wins(dtype) -> None:
    cols = 1000  # 31 full strides of 32 after the first element, then a tail of 7
    x = np.random.default_rng(4).uniform(-50, 50, size=(80, cols)).astype(dtype)
    # One row per NaN position: the first element (the fold's start), each lane of the first stride, deep in
    # the row, the last full stride, the tail, the last element; then rows of infinities around finite values.
    positions = [0] + list(range(1, 33)) + [500, 992, 993, 996, 999]
    for row, where in enumerate(positions):
        x[row, where] = np.nan
    x[60, 17] = np.inf
    x[61, 998] = -np.inf
    x[62] = np.inf
    x[63] = -np.inf
    t = ts.asarray(x)
    for ours, theirs in ((ts.max, np.max), (ts.min, np.min)):
        assert _same(ours(t, axis=1), theirs(x, axis=1))
        assert _same(ours(t), theirs(x))
        assert _same(ours(t[:40, 1:], axis=1), theirs(x[:40, 1:], axis=1))  # rows that start off the lane grid


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cols", [64, 65, 95, 4099])
def test_integer_extremes_in_every_lane_and_the_tail(dtype, cols: int) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(cols)
    x = rng.integers(info.min // 2, info.max // 2, size=(3 * cols, cols), dtype=dtype, endpoint=True)
    for row in range(cols):  # row r holds the type's largest value at r and its smallest at the mirrored place
        x[row, row] = info.max
        x[cols + row, cols - 1 - row] = info.min
    t = ts.asarray(x)
    for ours, theirs in ((ts.max, np.max), (ts.min, np.min)):
        assert _same(ours(t, axis=1), theirs(x, axis=1))
        assert _same(ours(t, axis=0), theirs(x, axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=lambda d: np.dtype(d).name)
def test_long_rows_split_into_chunks(dtype) -> None:
    # Rows of 2^17 elements or more are folded in chunks of 2^16 in parallel, then the chunks' results.
    cols = 3 * 65536 + 77
    x = np.random.default_rng(8).integers(-1000, 1000, size=(3, cols)).astype(dtype)
    x[0, 2 * 65536 + 5] = 5000
    x[1, cols - 1] = -5000
    if np.issubdtype(dtype, np.floating):
        x[2, 65536 + 1] = np.nan
    t = ts.asarray(x)
    for ours, theirs in ((ts.max, np.max), (ts.min, np.min)):
        assert _same(ours(t, axis=1), theirs(x, axis=1))
        assert _same(ours(t[:2]), theirs(x[:2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
def test_float_sums_in_double_lanes_are_exact_on_both_sides_of_a_span(dtype) -> None:
    """float32 and float16 rows sum in 16 double lanes: rows shorter than a span (256 float32, 512 float16) in a
    loop of their own, longer ones in spans. Values in [1, 2) sum exactly in double however they are grouped, so
    every row's sum and mean must be the exact sum rounded once, at every length around the boundaries."""
    span = 1024 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(11)
    for cols in [31, 32, 33, 64, 100, span - 17, span - 1, span, span + 1, span + 16, 2 * span + 5]:
        x = rng.uniform(1, 2, size=(9, cols)).astype(dtype)
        exact = x.astype(np.float64).sum(axis=1)
        np.testing.assert_array_equal(np.asarray(ts.sum(ts.asarray(x), axis=1)), exact.astype(dtype), err_msg=f"{cols}")
        np.testing.assert_array_equal(np.asarray(ts.mean(ts.asarray(x), axis=1)), (exact / cols).astype(dtype), err_msg=f"{cols}")
