"""A reduction over an outer axis (outputs adjacent in memory: sum(axis=0) of a C-contiguous matrix, or over
axis 1 of its transpose) folds a tile of outputs side by side, four reduced steps per pass over the tile: each
output must still be folded in order, term after term, so the results are those of a sequential loop, bit for
bit, at every count of reduced steps around the groups of four and at tile widths around 2048."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsmith as ts


def _sequential(x: np.ndarray, combine, acc_dtype) -> np.ndarray:
    acc = x[0].astype(acc_dtype)
    for row in x[1:]:
        acc = combine(acc, row.astype(acc_dtype))
    return acc


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 7, 8, 9, 1027])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_sums_and_products_over_an_outer_axis_are_folded_in_order(rows: int, dtype) -> None:
    rng = np.random.default_rng(rows)
    for cols in (5, 2047, 2048, 2049, 4100):
        # Terms of many magnitudes, so any regrouping changes the rounded sum.
        x = (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-30, 30, (rows, cols)))).astype(dtype)
        t = ts.asarray(x)
        want = _sequential(x, np.add, np.float64).astype(dtype)
        np.testing.assert_array_equal(np.asarray(ts.sum(t, axis=0)), want, err_msg=f"{rows}x{cols}")
        np.testing.assert_array_equal(np.asarray(ts.sum(t.T, axis=1)), want, err_msg=f"{rows}x{cols} of x.T")
        near_one = (1 + rng.standard_normal((rows, cols)) * 1e-3).astype(dtype)
        prod_want = _sequential(near_one, np.multiply, np.float64 if dtype == np.float32 else dtype).astype(dtype)
        np.testing.assert_array_equal(np.asarray(ts.prod(ts.asarray(near_one), axis=0)), prod_want)


@pytest.mark.parametrize("rows", [3, 4, 6, 13])
def test_maxima_over_an_outer_axis_keep_nans_and_the_first_row(rows: int) -> None:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 3000)).astype(np.float32)
    x[rows - 1, 10] = np.nan  # in the tail after the last group of four when rows % 4 != 0
    x[0, 11] = np.nan
    x[:, 12] = -np.inf
    t = ts.asarray(x)
    for ours, theirs in ((ts.max, np.max), (ts.min, np.min)):
        np.testing.assert_array_equal(np.asarray(ours(t, axis=0)), theirs(x, axis=0))
