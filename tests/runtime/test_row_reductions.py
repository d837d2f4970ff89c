"""Reductions along contiguous rows: the pairwise path (float64, integer sums and products) folds whole blocks of
256 and then the whole lane steps short of a block lane-wise as one more block, the last few elements in order.
Rows of every length around those boundaries are right: float64 sums within the pairwise bound of the exact sum,
integer sums and products exactly numpy's (wrapping), and a row's result does not depend on the rows beside it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorsmith as ts

LENGTHS = [31, 32, 33, 47, 255, 256, 257, 271, 300, 511, 512, 513, 767, 1000, 1025]


@pytest.mark.parametrize("cols", LENGTHS)
def test_float64_row_sums_are_within_the_pairwise_bound(cols: int) -> None:
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((9, cols)) * 10.0 ** rng.integers(-3, 4, (9, cols))
    got = np.asarray(ts.sum(ts.asarray(x), axis=1))
    for row, value in zip(x, got):
        bound = 4 * math.log2(cols) * np.finfo(np.float64).eps * np.abs(row).sum()
        assert abs(value - math.fsum(row)) <= bound
    mean = np.asarray(ts.mean(ts.asarray(x), axis=1))
    assert np.allclose(mean, [math.fsum(row) / cols for row in x], rtol=1e-13, atol=1e-13 * np.abs(x).max())


@pytest.mark.parametrize("cols", LENGTHS)
def test_integer_row_sums_and_products_are_numpys(cols: int) -> None:
    rng = np.random.default_rng(cols)
    x = rng.integers(-(2**40), 2**40, (5, cols), dtype=np.int64)
    assert np.array_equal(np.asarray(ts.sum(ts.asarray(x), axis=1)), np.sum(x, axis=1))
    small = rng.integers(-3, 4, (5, cols), dtype=np.int64)  # products wrap as numpy's do
    assert np.array_equal(np.asarray(ts.prod(ts.asarray(small), axis=1)), np.prod(small, axis=1))


@pytest.mark.parametrize("cols", [300, 513])
def test_a_rows_sum_is_the_same_bytes_whatever_rows_are_beside_it(cols: int) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, cols))
    whole = np.asarray(ts.sum(ts.asarray(x), axis=1))
    alone = np.array([np.asarray(ts.sum(ts.asarray(np.ascontiguousarray(row)))) for row in x])
    assert whole.tobytes() == alone.tobytes()
    products = np.asarray(ts.prod(ts.asarray(1 + x / 100), axis=1))
    assert products.tobytes() == np.array([np.asarray(ts.prod(ts.asarray(1 + row / 100))) for row in x]).tobytes()
