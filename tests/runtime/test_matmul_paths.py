"""matmul's engine paths beyond the gate's cases: a shared B folded into one GEMM over every batch's rows,
a shared A, an empty contraction per batch, sizes past the blocked kernel's tiles, and the OpenBLAS the
extension links staying out of the global symbol namespace."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = ["float32", "float64", "complex64", "int32", "uint8", "bool"]


def _operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.integers(0, 5, shape).astype(dtype)


def _check(a: np.ndarray, b: np.ndarray) -> None:
    got = np.asarray(ts.matmul(ts.asarray(a), ts.asarray(b)))
    expected = np.matmul(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype in (np.float32, np.complex64):
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


# Views the engine hands to the GEMM as they are (row- or column-major matrices with one batch stride) and
# views it must copy first. Each maps a batch shape to (the base's shape, the view of a numpy array, the same
# view of a tensorsmith tensor); the test multiplies the views' leading 5x5 blocks.
def _swap_batch(batch: tuple[int, ...]) -> tuple[int, ...]:
    return batch[::-1] if len(batch) == 2 else batch


_VIEWS = {
    "contiguous": (lambda b: b + (8, 8), lambda x: x, lambda x: x),
    "mT": (lambda b: b + (8, 8), lambda x: np.swapaxes(x, -1, -2), lambda x: x.mT),
    "padded": (lambda b: b + (8, 8), lambda x: x[..., 1:, 2:], lambda x: x[..., 1:, 2:]),
    "padded mT": (lambda b: b + (8, 8), lambda x: np.swapaxes(x, -1, -2)[..., 2:, 1:], lambda x: x.mT[..., 2:, 1:]),
    "strided rows": (lambda b: b + (10, 8), lambda x: x[..., ::2, :], lambda x: x[..., ::2, :]),
    # attention's heads: (heads, batch) stored, (batch, heads) read, transposed: the batch is not one stride
    "permuted batch mT": (lambda b: _swap_batch(b) + (8, 8),
                          lambda x: np.swapaxes(np.swapaxes(x, 0, 1) if x.ndim == 4 else x, -1, -2),
                          lambda x: (ts.permute_dims(x, (1, 0, 2, 3)) if x.ndim == 4 else x).mT),
    "reversed columns": (lambda b: b + (8, 8), lambda x: x[..., ::-1], lambda x: x[..., ::-1]),
    "strided columns": (lambda b: b + (8, 10), lambda x: x[..., ::2], lambda x: x[..., ::2]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view_a", sorted(_VIEWS))
@pytest.mark.parametrize("view_b", sorted(_VIEWS))
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_matmul_of_views_matches_numpy(view_a: str, view_b: str, batch: tuple[int, ...], dtype: str) -> None:
    rng = np.random.default_rng(7)
    (shape_a, np_a, ts_a), (shape_b, np_b, ts_b) = _VIEWS[view_a], _VIEWS[view_b]
    a, b = _operand(rng, shape_a(batch), dtype), _operand(rng, shape_b(batch), dtype)
    got = np.asarray(ts.matmul(ts_a(ts.asarray(a))[..., :5, :5], ts_b(ts.asarray(b))[..., :5, :5]))
    expected = np.matmul(np_a(a)[..., :5, :5], np_b(b)[..., :5, :5])
    assert got.shape == expected.shape == batch + (5, 5)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_of_single_rows_and_columns_of_views(dtype: str) -> None:
    """A one-row or one-column matrix has no stride along its one-element axis: any leading dimension fits."""
    rng = np.random.default_rng(3)
    x = _operand(rng, (5, 8), dtype)
    t = ts.asarray(x)
    for a, b, ta, tb in [
        (x[2:3, :], x.T, t[2:3, :], t.mT),  # a row of A, B transposed
        (x[:, 1:2].T, x[:, ::3], t[:, 1:2].mT, t[:, ::3]),  # a row whose elements are 8 apart
        (x.T, x[:, 4:5], t.mT, t[:, 4:5]),  # a column of B
        (x[:, ::-1].T, x[:, 4:5], t[:, ::-1].mT, t[:, 4:5]),  # a negative stride: copied
    ]:
        got = np.asarray(ts.matmul(ta, tb))
        if x.dtype.kind in "fc":
            np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, np.matmul(a, b))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int32"])
@pytest.mark.parametrize("width", [16, 512])
def test_attention_heads_split_from_one_projection(dtype: str, width: int) -> None:
    """q @ k^T and p @ v over heads cut out of one (batch, tokens, 3 * heads * width) projection: no single
    stride walks their (batch, heads) entries. Small products are run one call each from where they lie, over
    the pool's threads (64 entries: more than one grain); large ones (width 512: 2^19 multiply-adds) from copies."""
    rng = np.random.default_rng(width)
    batch, tokens, heads = 16, 32, 4
    qkv = _operand(rng, (batch, tokens, 3 * heads * width), dtype)
    tq = ts.asarray(qkv)

    def head(x, part: int):
        piece = x[:, :, part * heads * width : (part + 1) * heads * width]
        shaped = (batch, tokens, heads, width)
        if isinstance(x, np.ndarray):
            return np.transpose(piece.reshape(shaped), (0, 2, 1, 3))
        return ts.permute_dims(ts.reshape(piece, shaped), (0, 2, 1, 3))

    q, k, v = (head(qkv, i) for i in range(3))
    _check_views(ts.matmul(head(tq, 0), head(tq, 1).mT), np.matmul(q, np.swapaxes(k, -1, -2)))
    scores = _operand(rng, (batch, heads, tokens, tokens), dtype)
    _check_views(ts.matmul(ts.asarray(scores), head(tq, 2)), np.matmul(scores, v))
    _check_views(ts.matmul(head(tq, 0).mT, ts.asarray(scores)), np.matmul(np.swapaxes(q, -1, -2), scores))


def _check_views(got_tensor, expected: np.ndarray) -> None:
    got = np.asarray(got_tensor)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind in "fc":
        tolerance = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())
    else:
        np.testing.assert_array_equal(got, expected)


def test_openblas_symbols_stay_local() -> None:
    """tensorsmith loads its OpenBLAS with RTLD_LOCAL, so numpy (or anything loaded later) does not bind to it.
    In a fresh interpreter: this one may have imported scipy_openblas64 itself (the gate does), which is global."""
    code = ("import ctypes, tensorsmith as ts; assert ts.matmul([[1.0]], [[2.0]]).item() == 2.0; "
            "print(hasattr(ctypes.CDLL(None), 'scipy_cblas_sgemm64_'))")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
