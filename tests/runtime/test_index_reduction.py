"""argmax/argmin fold contiguous rows of twice their lanes or more in 32 interleaved lanes (64 for float and 8/16-bit
types): the answer must still be numpy's, the first of equal values and the first NaN, whichever lane found it."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_]


def _rows(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    # Few distinct values, so every row has ties between lanes.
    if dtype == np.bool_:
        return rng.random(shape) < 0.02
    low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -3
    return rng.integers(low, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cols", [64, 65, 97, 127, 128, 129, 200, 1000, 4099])
def test_lanes_agree_with_numpy_on_ties(dtype, cols: int) -> None:
    x = _rows(dtype, (37, cols), np.random.default_rng(cols))
    for ours, theirs in ((ts.argmax, np.argmax), (ts.argmin, np.argmin)):
        assert np.array_equal(np.asarray(ours(ts.asarray(x), axis=1)), theirs(x, axis=1))
        assert int(ours(ts.asarray(x))) == int(theirs(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=lambda d: np.dtype(d).name)
def test_the_first_nan_wins_in_any_lane_or_the_tail(dtype) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, size=(200, 1000)).astype(dtype)
    # One row per NaN position: in each lane of the first stride, deep in the row, in the tail, and two NaNs
    # whose later one sits in an earlier lane.
    positions = [[k] for k in range(64)] + [[500], [999], [990], [35, 33], [63, 40], [40, 63], [127, 70], [70, 127]]
    for row, where in enumerate(positions):
        x[row, where] = np.nan
    x[140:150] = -0.0  # +0.0 and -0.0 tie: the first stays
    x[140:150, 70] = 0.0
    x[150:160] = np.inf
    x[160:170] = -np.inf
    for ours, theirs in ((ts.argmax, np.argmax), (ts.argmin, np.argmin)):
        assert np.array_equal(np.asarray(ours(ts.asarray(x), axis=1)), theirs(x, axis=1))
        assert np.array_equal(np.asarray(ours(ts.asarray(x), axis=0)), theirs(x, axis=0))


def test_strided_rows_take_the_element_by_element_path() -> None:
    x = np.random.default_rng(9).integers(-5, 6, size=(50, 300)).astype(np.float32)
    view = ts.asarray(x)[:, ::3]
    assert np.array_equal(np.asarray(ts.argmax(view, axis=1)), np.argmax(x[:, ::3], axis=1))
    assert np.array_equal(np.asarray(ts.argmin(view, axis=1)), np.argmin(x[:, ::3], axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, np.bool_], ids=lambda d: np.dtype(d).name)
def test_long_rows_split_into_chunks_keep_the_first_winner(dtype) -> None:
    # Rows of 2^16 elements or more are cut into chunks of 2^16 that are folded in parallel, then the chunks'
    # winners are compared: equal winners in several chunks, and a NaN in a later chunk than an equal value.
    cols = 5 * 65536 + 123
    x = np.zeros((4, cols), dtype=dtype)
    one = np.array(1).astype(dtype)
    x[0, [70_000, 200_000, 300_000]] = one           # the same best in chunks 1, 3 and 4
    x[1, [cols - 1, 65_536]] = one                    # at a chunk's first element and in the tail
    x[2, 100] = one
    x[3, :] = one                                     # all equal: index 0
    if np.issubdtype(dtype, np.floating):
        x[2, [150_000, 250_000]] = np.nan             # the first NaN wins over the larger value before it
    for ours, theirs in ((ts.argmax, np.argmax), (ts.argmin, np.argmin)):
        assert np.array_equal(np.asarray(ours(ts.asarray(x), axis=1)), theirs(x, axis=1))
        assert int(ours(ts.asarray(x[0]))) == int(theirs(x[0]))
        assert int(ours(ts.asarray(x))) == int(theirs(x))  # flattened: one row of four


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint16", "bool"])
@pytest.mark.parametrize("length", [33, 40, 63, 64, 65, 95, 256, 257])
def test_extremes_and_truth_of_rows_of_every_length_past_the_lanes(dtype: str, length: int) -> None:
    """max, min, all and any fold rows of more than 32 elements in 32 lanes and fold the row's last 32 again
    rather than one at a time: the extreme (or a NaN) anywhere in the row, the last element included, counts."""
    rng = np.random.default_rng(length)
    x = (rng.standard_normal((6, length)) * 50).astype(dtype) if dtype != "bool" else rng.random((6, length)) < 0.97
    for row, position in enumerate([0, 1, length // 2, length - 33, length - 2, length - 1]):
        if dtype == "bool":
            x[row, position] = False
        else:
            x[row, position] = np.iinfo(dtype).max if np.dtype(dtype).kind in "iu" else 1e30
    if np.dtype(dtype).kind == "f":
        x[3, length - 1] = np.nan  # a NaN in the last element wins over everything
    t = ts.asarray(x)
    for ours, theirs in ((ts.max, np.max), (ts.min, np.min), (ts.all, np.all), (ts.any, np.any)):
        if dtype == "bool" and ours in (ts.max, ts.min):
            continue
        np.testing.assert_array_equal(np.asarray(ours(t, axis=1)), theirs(x, axis=1), strict=True)
