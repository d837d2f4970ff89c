"""sum, prod, cumulative_sum and cumulative_prod take the standard's dtype=: the input is cast to it first and
the result is in it, as numpy's dtype= gives (an integer result wraps around as numpy's does)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorsmith as ts

DTYPES = ["bool", "int8", "uint8", "int32", "uint64", "int64", "float16", "float32", "float64", "complex64", "complex128"]
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "complex64": 2e-6}


def sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(3)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(dtype)  # prods wrap around
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return values.astype(dtype)


def check(got: ts.Tensor, want: np.ndarray, target: str) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.dtype(target).kind in "fc":
        np.testing.assert_allclose(got, want, rtol=TOLERANCE.get(target, 1e-12), atol=TOLERANCE.get(target, 1e-12))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", DTYPES)
@pytest.mark.parametrize("source", DTYPES)
def test_sum_and_prod_with_dtype_match_numpy(source: str, target: str) -> None:
    a = sample(source, (5, 7))
    x = ts.asarray(a)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's ComplexWarning for complex -> real
        for axis in (None, 1, (0, 1)):
            check(ts.sum(x, axis=axis, dtype=getattr(ts, target)), np.sum(a, axis=axis, dtype=target), target)
            check(ts.prod(x[:, :4], axis=axis, dtype=target), np.prod(a[:, :4], axis=axis, dtype=target), target)
        check(ts.sum(x, axis=0, dtype=np.dtype(target), keepdims=True), np.sum(a, axis=0, dtype=target, keepdims=True), target)


@pytest.mark.parametrize("target", DTYPES)
@pytest.mark.parametrize("source", ["bool", "int8", "uint64", "float32", "complex64"])
def test_running_sums_and_products_with_dtype_match_numpy(source: str, target: str) -> None:
    a = sample(source, (4, 6))
    x = ts.asarray(a)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(ts.cumulative_sum(x, axis=1, dtype=target), np.cumulative_sum(a, axis=1, dtype=target), target)
        check(ts.cumulative_prod(x, axis=0, dtype=target, include_initial=True),
              np.cumulative_prod(a, axis=0, dtype=target, include_initial=True), target)  # fmt: skip


def test_the_default_dtype_is_unchanged_and_numpy_passes_dtype_to_the_method() -> None:
    a = np.arange(1, 7, dtype=np.int8).reshape(2, 3)
    x = ts.asarray(a)
    assert ts.sum(x).dtype == ts.int64 and ts.sum(x, dtype=None).dtype == ts.int64
    assert x.sum(dtype=ts.int8).dtype == ts.int8 and x.prod(1, ts.float32).dtype == ts.float32  # methods: positional too
    assert np.sum(x, dtype=np.int16) == 21 and np.prod(x, dtype=np.float64) == 720.0  # numpy calls x.sum(..., dtype=)
    assert int(ts.sum(ts.asarray(np.full(300, 1, dtype=np.int8)), dtype=ts.int8)) == np.sum(np.full(300, 1, np.int8), dtype=np.int8)


def test_reductions_without_dtype_refuse_it() -> None:
    x = ts.asarray(np.arange(6.0))
    with pytest.raises(TypeError):
        ts.mean(x, dtype=ts.float32)
    with pytest.raises(TypeError, match=r"dtype= is not supported"):
        x.mean(dtype=ts.float32)
    with pytest.raises(TypeError, match=r"out= is not supported"):
        x.sum(out=x)
    with pytest.raises(TypeError, match=r"data type 'not-a-dtype' not understood|not understood"):
        ts.sum(x, dtype="not-a-dtype")
