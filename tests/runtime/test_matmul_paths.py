"""matmul's engine paths beyond the gate's cases: a shared B folded into one GEMM over every batch's rows,
a shared A, an empty contraction per batch, sizes past the blocked kernel's tiles, and the OpenBLAS the
extension links staying out of the global symbol namespace."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = ["float32", "float64", "int32", "uint8", "bool"]


def _operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 5, shape).astype(dtype)


def _check(a: np.ndarray, b: np.ndarray) -> None:
    got = np.asarray(ts.matmul(ts.asarray(a), ts.asarray(b)))
    expected = np.matmul(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype == np.float32:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    elif expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 5, 7), (7, 4)),  # B shared: one GEMM over all 15 rows
        ((2, 1, 5, 7), (3, 7, 4)),  # both batched, A broadcast along a batch axis
        ((5, 7), (3, 7, 4)),  # A shared
        ((2, 3, 0), (0, 4)),  # empty sums: zeros
        ((67, 130), (130, 133)),  # past the blocked kernel's 4 x 64 tiles in both directions
        ((9,), (2, 9, 3)),  # 1-D A against a batch
    ],
)
def test_matmul_paths_match_numpy(a_shape, b_shape, dtype: str) -> None:
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    _check(_operand(rng, a_shape, dtype), _operand(rng, b_shape, dtype))


def test_matmul_of_transposed_views() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 70)).astype(np.float32)
    _check(a.T, a)
    _check(a, a.T[:, ::2])


def test_openblas_symbols_stay_local() -> None:
    """tensorsmith loads its OpenBLAS with RTLD_LOCAL, so numpy (or anything loaded later) does not bind to it.
    In a fresh interpreter: this one may have imported scipy_openblas64 itself (the gate does), which is global."""
    code = ("import ctypes, tensorsmith as ts; assert ts.matmul([[1.0]], [[2.0]]).item() == 2.0; "
            "print(hasattr(ctypes.CDLL(None), 'scipy_cblas_sgemm64_'))")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
