"""The pointwise engine's walk over operands of any layout: short broadcast rows, several outer axes, ranges
split over the pool mid-row, up to three inputs with different strides each. Expected values are numpy's."""

from __future__ import annotations

import numpy as np
import pytest
import tensorsmith as ts


def layout(a: np.ndarray, kind: str) -> tuple[np.ndarray, ts.Tensor]:
    """`a` (numpy) and the same values as a tensor view of the given kind."""
    if kind == "contiguous":
        return a, ts.asarray(a)
    if kind == "reversed":  # negative strides on every axis
        flipped = np.ascontiguousarray(a[(slice(None, None, -1),) * a.ndim])
        return a, ts.asarray(flipped)[(slice(None, None, -1),) * a.ndim]
    if kind == "transposed":  # the last two axes swapped in memory
        stored = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        return a, ts.matrix_transpose(ts.asarray(stored))
    raise ValueError(kind)


@pytest.mark.parametrize("rows, cols", [(4096, 8), (512, 64), (33, 4099), (70001, 1)])
def test_short_and_long_broadcast_rows(rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows + cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    column, row = x[:, :1].copy(), x[:1].copy()
    for other in (column, row):
        np.testing.assert_array_equal(np.asarray(ts.subtract(ts.asarray(x), ts.asarray(other))), x - other)
        np.testing.assert_array_equal(np.asarray(ts.subtract(ts.asarray(other), ts.asarray(x))), other - x)


@pytest.mark.parametrize("kinds", [("contiguous", "reversed", "transposed"), ("transposed", "contiguous", "reversed"),
                                   ("reversed", "transposed", "contiguous")])  # fmt: skip
def test_three_inputs_of_different_layouts_over_many_rows(kinds: tuple[str, str, str]) -> None:
    """where(cond, a, b) over (5, 7, 3, 1031): more than two grains, so the pool splits it mid-row; each operand
    broadcasts along other axes and walks memory its own way."""
    rng = np.random.default_rng(7)
    cond = rng.random((5, 1, 3, 1031)) < 0.5
    a = rng.standard_normal((1, 7, 3, 1031))
    b = rng.standard_normal((5, 7, 1031, 3)).swapaxes(-1, -2).copy()
    (cn, ct), (an, at), (bn, bt) = layout(cond, kinds[0]), layout(a, kinds[1]), layout(b, kinds[2])
    got = ts.where(ct, at, bt)
    np.testing.assert_array_equal(np.asarray(got), np.where(cn, an, bn))
    out = ts.zeros((5, 7, 3, 1031), dtype=ts.float64)
    ts.add(at, bt, out=out)
    np.testing.assert_array_equal(np.asarray(out), an + bn)
