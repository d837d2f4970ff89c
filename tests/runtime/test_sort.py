"""sort and argsort (the sort family) as a user calls them: numpy's stable order, NaN last (first when
descending), ties in their order both ways, any axis and layout, numpy's errors. The gate and
test_ops_differential judge every dtype over the family's cases."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorsmith as ts


def stable_descending_positions(a: np.ndarray, axis: int) -> np.ndarray:
    """Positions of a stable descending sort (ties in index order), from numpy's stable ascending one."""
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64"])
def test_sort_and_argsort_follow_numpy_on_ties(dtype: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 4, size=(6, 50, 7)).astype(dtype)  # many ties: stability decides argsort
    x = ts.asarray(a)
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(np.asarray(ts.sort(x, axis=axis)), np.sort(a, axis=axis, kind="stable"))
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=axis)), np.argsort(a, axis=axis, kind="stable"))
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=axis, descending=True)), stable_descending_positions(a, axis))
        np.testing.assert_array_equal(np.asarray(ts.sort(x, axis=axis, descending=True)),
                                      np.take_along_axis(a, stable_descending_positions(a, axis), axis=axis))


def test_nan_and_signed_zeros_keep_numpy_places() -> None:
    a = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, np.nan, -1.0, 0.0, np.inf, -0.0], dtype=np.float32)
    got = np.asarray(ts.sort(ts.asarray(a)))
    want = np.sort(a, kind="stable")
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)), "-0.0 and +0.0 tie: a stable sort keeps their order"
    down = np.asarray(ts.sort(ts.asarray(a), descending=True))
    assert np.isnan(down[:2]).all() and down[2] == np.inf, "descending puts NaN first"
    np.testing.assert_array_equal(np.asarray(ts.argsort(ts.asarray(a))), np.argsort(a, kind="stable"))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_numbers_sort_in_numpys_lexicographic_order(dtype: str) -> None:
    """Real parts first, then imaginary ones; a NaN imaginary part after every number, then a NaN real part,
    both NaN last (numpy's CFLOAT_LT); ties (-0.0 and +0.0 parts among them) keep their order."""
    part = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]
    grid = np.array([complex(a, b) for a in part for b in part] * 2, dtype=dtype)
    rng = np.random.default_rng(6)
    for a in (grid, rng.permutation(grid), rng.permutation(grid).reshape(8, 16)):
        x = ts.asarray(a)
        np.testing.assert_array_equal(np.asarray(ts.argsort(x)), np.argsort(a, axis=-1, kind="stable"))
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=0)), np.argsort(a, axis=0, kind="stable"))
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, descending=True)), stable_descending_positions(a, -1))
        got = np.asarray(ts.sort(x))
        np.testing.assert_array_equal(got.view(np.uint8), np.sort(a, kind="stable").view(np.uint8))  # every bit
    values = rng.integers(-2, 3, size=(2, 300)).astype(np.float64)
    z = (values[0] + 1j * values[1]).astype(dtype)  # many ties
    np.testing.assert_array_equal(np.asarray(ts.unique_values(ts.asarray(z))), np.unique(z))
    result = ts.unique_all(ts.asarray(z))
    want = np.unique(z, return_index=True, return_inverse=True, return_counts=True)
    for got_part, want_part in zip(result, want):
        np.testing.assert_array_equal(np.asarray(got_part).reshape(-1), np.asarray(want_part).reshape(-1))


def test_views_long_rows_and_many_rows() -> None:
    rng = np.random.default_rng(8)
    base = rng.standard_normal((300, 400)).astype(np.float32)
    for view in (base.T, base[::3, ::-2], base[7]):
        for axis in range(view.ndim):
            np.testing.assert_array_equal(np.asarray(ts.argsort(ts.asarray(view), axis=axis)),
                                          np.argsort(view, axis=axis, kind="stable"))  # fmt: skip
    long = rng.integers(-1000, 1000, size=200_003).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(ts.argsort(ts.asarray(long))), np.argsort(long, kind="stable"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "float16"])
def test_every_row_length_merges_stably_both_ways(dtype: str) -> None:
    """The merge sort takes runs of equal length from both ends at once and unequal ones (a row's last run
    when its length is not a power of two) from the front: rows of every length to 70 and around powers
    of two, with ties, signed zeros and NaNs, give numpy's stable order bit for bit, ascending and descending."""
    rng = np.random.default_rng(12)
    lengths = list(range(1, 71)) + [127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 1536]
    choices = np.array([-2.0, -0.0, 0.0, 1.0, 3.0, np.nan, np.inf]) if dtype.startswith("float") else np.arange(-3, 4)
    for n in lengths:
        a = rng.choice(choices, size=(3, n)).astype(dtype)
        a[1] = rng.standard_normal(n).astype(dtype) if dtype.startswith("float") else rng.integers(-1000, 1000, n)
        x = ts.asarray(a)
        want = np.sort(a, axis=1, kind="stable")
        got = np.asarray(ts.sort(x, axis=1))
        assert got.tobytes() == want.tobytes(), f"sort, row length {n}"
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=1)), np.argsort(a, axis=1, kind="stable"), err_msg=f"n={n}")
        down = stable_descending_positions(a, 1)
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=1, descending=True)), down, err_msg=f"n={n}")
        got_down = np.asarray(ts.sort(x, axis=1, descending=True))
        assert got_down.tobytes() == np.take_along_axis(a, down, axis=1).tobytes(), f"descending sort, row length {n}"


def _long_rows(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Rows that stress the CPU's bucket split (rows of 24 and more): orders a sample could be fooled by,
    few distinct values (buckets of one value), and a row whose sampled positions all hold its largest value
    (every element falls into one bucket, so the split gives up and merges)."""
    sample_positions = np.arange(1, 64, 2) * n // 64  # where a split of n >= 2048 draws its 32 samples
    fooled = rng.standard_normal(n)
    fooled[sample_positions] = np.inf
    return {
        "normal": rng.standard_normal(n),
        "sorted": np.arange(n, dtype=np.float64),
        "reversed": np.arange(n, 0, -1, dtype=np.float64),
        "organ pipe": np.concatenate([np.arange(n // 2), np.arange(n - n // 2, 0, -1)]).astype(np.float64),
        "one value": np.full(n, 7.0),
        "two values": rng.integers(0, 2, n).astype(np.float64),
        "few values": rng.integers(-3, 4, n).astype(np.float64),
        "periodic": (np.arange(n) % 64).astype(np.float64),
        "fooled sample": fooled,
        "zeros and nans": rng.choice([-0.0, 0.0, np.nan, 1.0], n),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint64", "bool", "bfloat16"])
@pytest.mark.parametrize("n", [24, 65, 513, 2049, 5000, 40_000])
def test_long_rows_of_every_shape_sort_stably_both_ways(dtype: str, n: int) -> None:
    """Each kind of row above, ascending and descending, values bit for bit and positions as numpy's stable
    argsort gives them (bfloat16 against float32 rounded to it: numpy has no bfloat16)."""
    rng = np.random.default_rng(n)
    for kind, row in _long_rows(n, rng).items():
        if dtype == "bool":
            row = np.nan_to_num(row, posinf=1.0) > 0.5
        elif dtype in ("int8", "uint64"):
            row = np.nan_to_num(row, posinf=100.0).astype(np.int64).astype(dtype)
        elif dtype == "bfloat16":
            row = (row.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)  # exact in bfloat16
        else:
            row = row.astype(dtype)
        a = np.stack([row, row[::-1]])
        x = ts.asarray(a).astype(ts.bfloat16) if dtype == "bfloat16" else ts.asarray(a)
        up = np.argsort(a, axis=1, kind="stable")
        down = stable_descending_positions(a, 1)
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=1)), up, err_msg=f"{kind}, n={n}")
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=1, descending=True)), down, err_msg=f"{kind}, n={n}")
        for descending, positions in ((False, up), (True, down)):
            got = ts.sort(x, axis=1, descending=descending)
            got = np.asarray(got.astype(ts.float32)) if dtype == "bfloat16" else np.asarray(got)
            want = np.take_along_axis(a, positions, axis=1)
            assert got.tobytes() == want.tobytes(), f"{kind}, n={n}, descending={descending}: values differ"


def test_nan_payloads_and_signed_zeros_keep_their_order_in_long_rows() -> None:
    """NaNs tie with each other and -0.0 with +0.0: a stable sort moves each one bit for bit, in row order."""
    rng = np.random.default_rng(21)
    bits = rng.choice(np.array([0x7FC00001, 0xFFC00002, 0x7F800003, 0x80000000, 0x00000000, 0x3F800000],
                               dtype=np.uint32), 3000)  # quiet and signalling NaNs of several payloads, zeros, 1
    a = bits.view(np.float32)
    for descending in (False, True):
        positions = stable_descending_positions(a, 0) if descending else np.argsort(a, kind="stable")
        got = np.asarray(ts.sort(ts.asarray(a), descending=descending))
        assert got.view(np.uint32).tolist() == bits[positions].tolist()


def test_stable_is_accepted_and_every_sort_is_stable() -> None:
    a = np.array([3, 1, 3, 1, 2, 3], dtype=np.int16)
    for stable in (True, False):
        np.testing.assert_array_equal(np.asarray(ts.argsort(ts.asarray(a), stable=stable)), np.argsort(a, kind="stable"))


def test_empty_and_errors() -> None:
    empty = np.zeros((3, 0), dtype=np.float64)
    assert ts.sort(ts.asarray(empty)).shape == (3, 0)
    assert ts.argsort(ts.asarray(empty), axis=0).dtype == ts.int64
    with pytest.raises(ValueError, match="out of bounds"):
        ts.sort(ts.asarray(np.float32(1.0)))  # a 0-d tensor has no axis -1, as numpy says
    with pytest.raises(ValueError, match="out of bounds"):
        ts.argsort(ts.asarray(empty), axis=2)
    with pytest.raises(TypeError):
        ts.sort(ts.asarray(empty), 0)  # axis is keyword-only, as the standard has it


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_sorts_on_a_cuda_device() -> None:
    rng = np.random.default_rng(6)
    a = rng.integers(0, 9, size=(33, 257)).astype(np.float32)
    x = ts.asarray(a).to_device("cuda")
    for axis in (0, 1):
        np.testing.assert_array_equal(np.asarray(ts.argsort(x, axis=axis).to_device("cpu")), np.argsort(a, axis=axis, kind="stable"))
        np.testing.assert_array_equal(np.asarray(ts.sort(x, axis=axis, descending=True).to_device("cpu")),
                                      np.take_along_axis(a, stable_descending_positions(a, axis), axis=axis))


SORT_AT_A_LEVEL_PROGRAM = """
import numpy as np, tensorsmith as ts
rng = np.random.default_rng(31)
lengths = [*range(1, 70), 127, 128, 129, 255, 256, 257, 511, 513, 1023, 1025, 2047, 2049, 4095, 4097]
for dtype in ("float32", "float64", "int32", "uint64", "float16", "int8", "uint16", "bool"):
    for n in lengths:
        ties = rng.choice(np.array([-2.0, -0.0, 0.0, 1.0, np.nan, np.inf]), n)
        spread = rng.standard_normal(n) * 1000
        rows = np.stack([ties, spread, -spread])
        if dtype == "bool":
            rows = np.nan_to_num(rows) > 0
        elif not dtype.startswith("float"):
            info = np.iinfo(dtype)
            rows = np.nan_to_num(rows, posinf=7).clip(max(info.min, -1e9), min(info.max, 1e9))
        a = rows.astype(dtype)
        x = ts.asarray(a)
        up = np.argsort(a, axis=1, kind="stable")
        down = n - 1 - np.flip(np.argsort(np.flip(a, axis=1), axis=1, kind="stable"), axis=1)
        for descending, positions in ((False, up), (True, down)):
            got = np.asarray(ts.argsort(x, axis=1, descending=descending))
            assert np.array_equal(got, positions), (dtype, n, descending)
            values = np.asarray(ts.sort(x, axis=1, descending=descending, stable=False))
            assert values.tobytes() == np.take_along_axis(a, positions, axis=1).tobytes(), (dtype, n, descending)
print("ok")
"""


@pytest.mark.parametrize("level", ["baseline", "avx2", "avx512"])
def test_every_instruction_set_level_sorts_rows_of_every_length_alike(level: str) -> None:
    """Each kernel variant sorts its short rows its own way (the sorting network in AVX2 or AVX-512 registers,
    or the comparator's sorts at the baseline; tensorsmith/sort_network.h is checked alone by the C++ self-test):
    TS_ISA caps the level, and every level gives numpy's stable order bit for bit, values and positions, for rows
    around each length where the way changes."""
    result = subprocess.run([sys.executable, "-c", SORT_AT_A_LEVEL_PROGRAM], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "TS_ISA": level}, check=False)  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr[-2000:]
