"""float32 tanh (tensorsmith/scalar_ops.h's vectorisable tanh_float): within 1.5 ulp of the exact value on both
sides of its switch from the polynomial to the exp form (|x| = 0.625) and across the range, odd, and exact at the
specials (signed zeros, NaN, infinities, the saturation at 1, subnormals)."""

from __future__ import annotations

import numpy as np

import tensorsmith as ts


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.asarray(ts.tanh(ts.asarray(x)))


def test_tanh_float32_is_within_1_5_ulp() -> None:
    rng = np.random.default_rng(5)
    # Every float in [0.6, 0.65] (the switch), and random floats over the range, by magnitude and uniformly.
    switch = np.arange(np.float32(0.6).view(np.uint32), np.float32(0.65).view(np.uint32), dtype=np.uint32).view(np.float32)
    x = np.concatenate([switch, 2.0 ** rng.uniform(-30, 3.5, 1 << 20), rng.uniform(0.0, 10.0, 1 << 20)]).astype(np.float32)
    x = np.concatenate([x, -x])
    got = _tanh(x)
    assert got.dtype == np.float32
    assert ulps(got, np.tanh(x.astype(np.float64))).max() <= 1.5
    half = x.size // 2
    assert np.array_equal(got[half:], -got[:half])  # odd, bit for bit


def test_tanh_float32_specials() -> None:
    tiny = np.float32(np.finfo(np.float32).smallest_subnormal)
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 9.0, 9.2, 50.0, -1e30, tiny, -tiny, 1e-20], dtype=np.float32)
    got = _tanh(x)
    assert got[0] == 0.0 and not np.signbit(got[0]) and got[1] == 0.0 and np.signbit(got[1])
    assert np.isnan(got[2])
    assert got[3] == 1.0 and got[4] == -1.0 and got[6] == 1.0 and got[7] == 1.0 and got[8] == -1.0
    assert got[5] == np.float32(np.tanh(9.0))  # just below the clamp: the exp form, rounded to 1 or just under
    assert got[9] == tiny and got[10] == -tiny and got[11] == np.float32(1e-20)  # tanh(x) rounds to x
