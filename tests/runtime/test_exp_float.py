"""float32 exp (tensorsmith/scalar_ops.h's vectorisable exp_float, used by exp, softmax and sigmoid) across its
whole range: within one ulp of the correctly rounded result, overflowing exactly where expf does, NaN kept."""

from __future__ import annotations

import numpy as np

import tensorsmith as ts


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / spacing


def test_exp_float32_is_within_one_ulp_over_its_range() -> None:
    rng = np.random.default_rng(7)
    largest_finite = np.float32(88.72283172607421875)  # exp rounds to FLT_MAX here, to inf one float above
    x = np.concatenate([rng.uniform(-87.0, 88.7, 1 << 20), np.linspace(-1e-3, 1e-3, 4097), [0.0, -0.0, 1.0, -1.0],
                        [largest_finite, np.nextafter(largest_finite, np.float32(np.inf)), np.nextafter(largest_finite, np.float32(0))]])
    x = x.astype(np.float32)
    got = np.asarray(ts.exp(ts.asarray(x)))
    want = np.exp(x.astype(np.float64)).astype(np.float32)  # correctly rounded (float64 has the digits to spare)
    finite = np.isfinite(want)
    assert ulps(got[finite], want[finite]).max() <= 1.0
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert np.isinf(got[-2]) and np.isfinite(got[-3])


def test_exp_float32_specials_and_underflow() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 89.0, 1000.0, -87.3, -100.0, -103.9, -104.0, -200.0], dtype=np.float32)
    got = np.asarray(ts.exp(ts.asarray(x)))
    want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0 and got[3] == np.inf and got[4] == np.inf
    # Near and below the smallest normal: as close as float's subnormals allow, and 0 once exp underflows.
    assert np.allclose(got[5:], want[5:], rtol=1e-6, atol=float(np.finfo(np.float32).smallest_subnormal) * 2)
    assert got[-1] == 0.0


def test_softmax_float32_rows_sum_to_one_and_match_numpy() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 1000)) * 20).astype(np.float32)
    got = np.asarray(ts.softmax(ts.asarray(x), axis=-1))
    shifted = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
    want = np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)
    assert got.dtype == np.float32
    assert np.allclose(got, want, rtol=2e-6, atol=1e-9)
    assert np.allclose(got.sum(axis=-1), 1.0, rtol=1e-5)


def _softmax_reference(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        shifted = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def test_softmax_float32_specials_anywhere_in_a_long_row() -> None:
    # Rows longer than the body's 64 maximum lanes: a special in the lanes, in the tail, or at the start.
    rng = np.random.default_rng(11)
    x = rng.standard_normal((12, 1000)).astype(np.float32)
    x[0, 700] = np.nan  # NaN: the whole row is NaN
    x[1, 999] = np.nan  # ... also in the tail after the last whole group of lanes
    x[2, 0] = np.inf  # inf - inf: NaN row, as numpy
    x[3, 5:400] = -np.inf  # exp(-inf) = 0
    x[4, :] = -np.inf  # max is -inf: -inf - -inf is NaN
    x[5, 333] = 80.0  # one element takes (almost) all the mass
    got = np.asarray(ts.softmax(ts.asarray(x), axis=-1))
    want = _softmax_reference(x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[:3]).all() and np.isnan(got[4]).all()
    assert (got[3, 5:400] == 0).all()
    assert np.allclose(got, want, rtol=2e-6, atol=1e-9, equal_nan=True)
