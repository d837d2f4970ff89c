"""Selection by data (take, take_along_axis, nonzero, the unique_* functions, x[mask] and x[indices]) as a
user calls it: numpy's results, dtypes, shapes and errors. test_composites checks each spec's examples too."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorsmith as ts

DTYPES = ["bool", "int8", "uint32", "int64", "float16", "float32", "float64"]


def sample(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4, size=shape).astype(dtype)  # repeats and zeros in every dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_take_and_take_along_axis_follow_numpy(dtype: str) -> None:
    a = sample(dtype, (4, 5, 6))
    x = ts.asarray(a)
    idx = np.array([[3, -1], [0, 0]])
    for axis in (0, 1, -1, None):
        np.testing.assert_array_equal(np.asarray(ts.take(x, ts.asarray(idx), axis=axis)), np.take(a, idx, axis=axis))
    along = np.random.default_rng(1).integers(-4, 4, size=(4, 3, 6))
    np.testing.assert_array_equal(np.asarray(ts.take_along_axis(x, ts.asarray(along), axis=1)), np.take_along_axis(a, along, axis=1))
    broadcast = np.random.default_rng(2).integers(0, 6, size=(1, 5, 2))
    np.testing.assert_array_equal(np.asarray(ts.take_along_axis(x, ts.asarray(broadcast), axis=2)),
                                  np.take_along_axis(a, broadcast, axis=2))  # fmt: skip


@pytest.mark.parametrize("threads", ["1", "3"])
def test_large_takes_split_over_threads_give_numpys_bytes(threads: str) -> None:
    # Gathers past the pool's grain run in ranges of slices on several threads, each range starting mid-way
    # through an outer index; the bytes are numpy's for any thread count, slices of 1 byte to 8 KiB, and none.
    code = """if True:
        import numpy as np, tensorsmith as ts
        rng = np.random.default_rng(4)
        cases = [(rng.integers(0, 255, (2048, 2048), dtype=np.uint8).view(np.float32).reshape(2048, 512), 0),
                 (rng.standard_normal((3, 70001, 2)), 1), (rng.integers(0, 9, (5, 40003)).astype(np.int8), 1),
                 (rng.standard_normal((7, 30001)), None), (np.zeros((4, 100001, 0)), 1)]
        for a, axis in cases:
            n = a.size if axis is None else a.shape[axis]
            idx = rng.integers(-n, n, 3 * n // 2 if n > 1000 else 9)
            got = np.asarray(ts.take(ts.asarray(a), ts.asarray(idx), axis=axis))
            want = np.take(a, idx, axis=axis)
            assert got.shape == want.shape and got.tobytes() == want.tobytes(), (a.shape, axis)
        print("ok")
    """
    env = {**os.environ, "TS_NUM_THREADS": threads}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr[-3000:]


def test_take_errors_match_numpy() -> None:
    x = ts.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        ts.take(x, ts.asarray([3]), axis=1)
    with pytest.raises(IndexError, match="cannot do a non-empty take from an empty axes"):
        ts.take(ts.asarray(np.zeros((0,))), ts.asarray([0]))
    with pytest.raises(TypeError, match="indices must have an integer dtype, not float64"):
        ts.take(x, ts.asarray([0.0]))
    with pytest.raises(ValueError, match="must have the same number of dimensions"):
        ts.take_along_axis(x, ts.asarray([0]), axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_follows_numpy(dtype: str) -> None:
    a = sample(dtype, (3, 4, 5), seed=3)
    got = ts.nonzero(ts.asarray(a))
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, np.nonzero(a)):
        assert g.dtype == ts.int64
        np.testing.assert_array_equal(np.asarray(g), w)


def test_nonzero_counts_nan_and_not_negative_zero() -> None:
    a = np.array([0.0, -0.0, np.nan, 1.0, -np.inf])
    np.testing.assert_array_equal(np.asarray(ts.nonzero(ts.asarray(a))[0]), np.nonzero(a)[0])
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
        ts.nonzero(ts.asarray(1.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_functions_follow_numpy(dtype: str) -> None:
    a = sample(dtype, (5, 7), seed=4)
    x = ts.asarray(a)
    np.testing.assert_array_equal(np.asarray(ts.unique_values(x)), np.sort(np.unique_values(a)))  # any order is the standard's; ours is sorted
    counts, want = ts.unique_counts(x), np.unique_counts(a)
    np.testing.assert_array_equal(np.asarray(counts.values), want.values)
    np.testing.assert_array_equal(np.asarray(counts.counts), want.counts)
    inverse, want = ts.unique_inverse(x), np.unique_inverse(a)
    assert inverse.inverse_indices.shape == a.shape
    np.testing.assert_array_equal(np.asarray(inverse.inverse_indices), want.inverse_indices)
    every, want = ts.unique_all(x), np.unique_all(a)
    for field in ("values", "indices", "inverse_indices", "counts"):
        np.testing.assert_array_equal(np.asarray(getattr(every, field)), getattr(want, field), err_msg=field)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_unique_of_integers_by_counting_and_by_sorting_agree_with_numpy(dtype: str) -> None:
    """Integers whose values span a short range are counted (a stable counting sort); a wide span (the type's
    extremes together) takes the comparison sort. Both give numpy's answers, first indices and inverse included."""
    rng = np.random.default_rng(9)
    info = np.iinfo(dtype) if dtype != "bool" else None
    narrow = rng.integers(0, 2, 500).astype(dtype) if dtype == "bool" else rng.integers(-5, 6, 500).astype(dtype)
    cases = [narrow, narrow[::-3], np.full(7, narrow[0]), narrow[:1]]
    if info is not None:
        wide = narrow.copy()
        wide[[3, 77, 200]] = [info.min, info.max, info.min]  # the span of the whole type
        cases.append(wide)
    for a in cases:
        every, want = ts.unique_all(ts.asarray(a)), np.unique_all(a)
        for field in ("values", "indices", "inverse_indices", "counts"):
            np.testing.assert_array_equal(np.asarray(getattr(every, field)), getattr(want, field), err_msg=field)
        assert np.asarray(every.values).dtype == a.dtype


def test_unique_keeps_every_nan_and_one_zero() -> None:
    a = np.array([np.nan, 0.0, 1.0, np.nan, -0.0, 1.0], dtype=np.float32)
    got = ts.unique_counts(ts.asarray(a))
    want = np.unique_counts(a)
    np.testing.assert_array_equal(np.asarray(got.values), want.values)  # two NaNs, one zero
    np.testing.assert_array_equal(np.asarray(got.counts), want.counts)


def test_boolean_and_integer_array_keys_follow_numpy() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ts.asarray(a)
    for key in (a > 7, (a > 7)[:, :, 0], (a > 100)[:, 0, 0]):  # over all axes, the leading two, one (all false)
        np.testing.assert_array_equal(np.asarray(x[ts.asarray(key)]), a[key])
    np.testing.assert_array_equal(np.asarray(x[x > 7.0]), a[a > 7])
    np.testing.assert_array_equal(np.asarray(x[[1, 0, -1]]), a[[1, 0, -1]])
    np.testing.assert_array_equal(np.asarray(x[np.array([[0], [1]])]), a[np.array([[0], [1]])])
    np.testing.assert_array_equal(np.asarray(x[ts.asarray([1])]), a[[1]])
    assert x[[]].shape == a[[]].shape
    picked = x[[0]]
    picked[...] = -1.0  # a copy, as numpy's advanced indexing gives
    assert float(np.asarray(x)[0, 0, 0]) == 0.0


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "complex128"])
def test_boolean_mask_reads_numpys_rows_for_any_density_width_and_layout(dtype: str) -> None:
    # x[mask] copies the rows the mask keeps (rows of 1 to 16 bytes without a branch, wider ones with one) up to
    # the last kept row: masks all true, all false, ending either way, over all axes or the leading ones, and of
    # strided views as well as contiguous tensors.
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((6, 10, 3)) * 4).astype(dtype)
    for density in (0.0, 0.1, 0.5, 0.9, 1.0):
        full = rng.random(a.shape) < density
        for mask in (full, full[:, :, 0], full[:, 0, 0]):
            for last in (True, False):
                mask = mask.copy()
                mask.reshape(-1)[-1] = last
                np.testing.assert_array_equal(np.asarray(ts.asarray(a)[ts.asarray(mask)]), a[mask], strict=True)
        strided_a, strided_mask = a[::2, ::-1], full[::2, ::-1]
        np.testing.assert_array_equal(np.asarray(ts.asarray(a)[::2, ::-1][ts.asarray(full)[::2, ::-1]]),
                                      strided_a[strided_mask], strict=True)  # fmt: skip


MIXED_KEYS = [
    (slice(None), [0, 2]),
    (0, [1, 2]),
    ([1, 0], 2),
    ([1, 0], [2, 0]),
    ([[1], [0]], [0, 2, 1]),  # broadcast against each other
    (0, slice(None), [3, 1]),  # arrays (the 0 counts) apart: the broadcast axes first
    (slice(None), [0, 2], [1, 3]),  # adjacent, after a slice: in their place
    (slice(1, 2), [[0, 2]], slice(None, None, -1)),
    (Ellipsis, [3, 0]),
    ([1], Ellipsis, 0),
    (None, [1, 0], None, 0),
    ([1, 0], None, [2, 0]),  # apart (a new axis between): first
    (np.array([1, 0]), slice(None), np.int64(-1)),
    (slice(None), np.array([True, False, True])),  # a mask among other items: its nonzero() positions
    (0, np.array([[True, False, False, True], [False, True, False, False], [True, True, False, False]])),
    (np.array([[True, False, True], [False, False, True]]), [0, 3, 1]),
    ([1, -2], [-1, 0], [3, 0]),
    ([], slice(None)),
    (slice(None), [], 0),
    (1, [[]]),
]


@pytest.mark.parametrize("dtype", ["int32", "float64", "complex64", "bool"])
def test_index_arrays_among_other_items_follow_numpy(dtype: str) -> None:
    a = sample(dtype, (2, 3, 4), seed=11)
    x = ts.asarray(a)
    for key in MIXED_KEYS:
        want = a[key]
        got = x[tuple(ts.asarray(k) if isinstance(k, np.ndarray) and k.ndim and k.dtype == bool else k for k in key)]
        assert got.shape == want.shape and got.dtype == ts.asarray(want).dtype, key
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(key))


def test_index_arrays_among_other_items_follow_numpy_on_drawn_keys() -> None:
    """Keys drawn as the Array API suite draws them (an int or an index array for every axis), and with slices."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(1, 5)))
        a = rng.integers(-50, 50, size=shape).astype(np.int32)
        kinds = rng.integers(3, size=len(shape))  # 0: an index array, 1: an int, 2: a slice
        kinds[rng.integers(len(shape))] = 0
        index_shape = tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(1, 3)))
        key = []
        for kind, n in zip(kinds, shape):
            if kind == 0:
                sub = tuple(m if rng.random() < 0.7 else 1 for m in index_shape)
                key.append(rng.integers(-n, n, size=sub))
            elif kind == 1:
                key.append(int(rng.integers(-n, n)))
            else:
                key.append(slice(int(rng.integers(0, n)), None, int(rng.choice([1, 2]))))
        key = tuple(key)
        want = a[key]
        got = ts.asarray(a)[tuple(ts.asarray(k) if isinstance(k, np.ndarray) and rng.random() < 0.5 else k for k in key)]
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(key))


@pytest.mark.parametrize("dtype", ["int32", "float64", "complex64", "bool"])
def test_assigning_through_index_arrays_follows_numpy(dtype: str) -> None:
    a = sample(dtype, (2, 3, 4), seed=12)
    whole_keys = [[1, 0, 1], np.array([[0], [1]]), ts.asarray([1]), np.array([], dtype=np.int64)]
    masks = [(a.real > 0) if dtype != "bool" else a, np.array([True, False])]
    for key in MIXED_KEYS + [(k,) for k in whole_keys] + [(m,) for m in masks]:
        selected = a[tuple(np.asarray(k) if isinstance(k, ts.Tensor) else k for k in key)]
        for value in (sample(dtype, selected.shape, seed=13),  # one value per selected element
                      sample(dtype, selected.shape[-1:], seed=14),  # broadcast along the leading axes
                      a.reshape(-1)[5]):  # a scalar
            want = a.copy()
            want[tuple(np.asarray(k) if isinstance(k, ts.Tensor) else k for k in key)] = value
            x = ts.asarray(a.copy())
            ts_key = tuple(ts.asarray(k) if isinstance(k, np.ndarray) and k.dtype == bool else k for k in key)
            x[ts_key if len(ts_key) > 1 else ts_key[0]] = ts.asarray(value) if isinstance(value, np.ndarray) else value
            np.testing.assert_array_equal(np.asarray(x), want, err_msg=f"{key} = {value!r}")


def test_assigning_through_repeated_indices_keeps_the_last_value_and_reads_an_overlapping_value_first() -> None:
    a = np.arange(10.0)
    x = ts.asarray(a.copy())
    x[[1, 3, 1]] = ts.asarray([7.0, 8.0, 9.0])
    want = a.copy()
    want[[1, 3, 1]] = [7.0, 8.0, 9.0]
    np.testing.assert_array_equal(np.asarray(x), want)
    y = ts.asarray(a.copy())
    y[[0, 1, 2]] = y[1:4]  # the value views the tensor being written
    want = a.copy()
    want[[0, 1, 2]] = want[1:4].copy()
    np.testing.assert_array_equal(np.asarray(y), want)


def test_boolean_scalar_keys_add_an_axis_as_numpy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = ts.asarray(a)
    for key in (True, False, np.True_, np.array(False), ts.asarray(True)):
        want = a[np.asarray(key)]
        got = np.asarray(x[key])
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got, want)
    zero_d = ts.asarray(np.array(2.5))
    assert zero_d[ts.asarray(False)].shape == (0,) and zero_d[ts.asarray(True)].tolist() == [2.5]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "float64", "complex64"])
def test_masked_assignment_follows_numpy(dtype: str) -> None:
    a = sample(dtype, (3, 4, 2), seed=3)
    masks = (a.real > 0 if dtype != "bool" else a, (a.real > 0 if dtype != "bool" else a)[:, :, 0], np.array([True, False, True]))
    values = [np.asarray(1, dtype=dtype), True, 0, a.reshape(-1)[0], np.zeros(2, dtype=dtype)]  # scalars; one sub-tensor
    for mask in masks:
        for value in values:
            if np.ndim(value) > a.ndim - mask.ndim:
                continue  # shaped for another mask (test_assigning_through_index_arrays_follows_numpy covers one per element)
            want = a.copy()
            want[mask] = value
            x = ts.asarray(a.copy())
            x[ts.asarray(mask)] = value if not isinstance(value, np.ndarray) else ts.asarray(value)
            got = np.asarray(x)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    x = ts.asarray(a.copy())
    x[True] = a.reshape(-1)[1]  # a 0-d mask selects everything
    np.testing.assert_array_equal(np.asarray(x), np.full_like(a, a.reshape(-1)[1]))


def test_array_key_errors_match_numpy() -> None:
    x = ts.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0; size of axis is 2 but size of corresponding boolean axis is 3"):
        x[ts.asarray([True, False, True])]
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
        x[[2]]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer \\(or boolean\\) type"):
        x[np.array([0.5])]


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_selection_on_a_cuda_device() -> None:
    a = sample("float32", (6, 7), seed=5)
    x = ts.asarray(a).to_device("cuda")
    got = x[x > 1.0]
    assert got.device == x.device
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), a[a > 1.0])
    np.testing.assert_array_equal(np.asarray(ts.unique_values(x).to_device("cpu")), np.sort(np.unique_values(a)))
    np.testing.assert_array_equal(np.asarray(ts.take(x, ts.asarray([2, 0]).to_device("cuda"), axis=1).to_device("cpu")),
                                  np.take(a, [2, 0], axis=1))  # fmt: skip


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "float64"])
def test_searchsorted_follows_numpy(dtype: str) -> None:
    rng = np.random.default_rng(9)
    x1 = np.sort(rng.integers(0, 20, size=40)).astype(dtype)  # sorted, with runs of equal values
    x2 = rng.integers(-2, 23, size=(3, 11)).astype(dtype)
    for side in ("left", "right"):
        got = ts.searchsorted(ts.asarray(x1), ts.asarray(x2), side=side)
        assert got.dtype == ts.int64 and got.shape == x2.shape
        np.testing.assert_array_equal(np.asarray(got), np.searchsorted(x1, x2, side=side))
    shuffled = rng.permutation(x1)
    sorter = np.argsort(shuffled, kind="stable")
    np.testing.assert_array_equal(np.asarray(ts.searchsorted(ts.asarray(shuffled), ts.asarray(x2), sorter=ts.asarray(sorter))),
                                  np.searchsorted(shuffled, x2, sorter=sorter))  # fmt: skip


def test_searchsorted_places_nan_last_and_checks_its_arguments() -> None:
    x1 = np.array([-np.inf, 0.0, 1.0, np.nan, np.nan])
    x2 = np.array([np.nan, -0.0, np.inf, -np.inf])
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(ts.searchsorted(ts.asarray(x1), ts.asarray(x2), side=side)),
                                      np.searchsorted(x1, x2, side=side))  # fmt: skip
    with pytest.raises(ValueError, match="search side must be 'left' or 'right' \\(got 'middle'\\)"):
        ts.searchsorted(ts.asarray(x1), ts.asarray(x2), side="middle")
    with pytest.raises(ValueError, match="x1 must be 1-D"):
        ts.searchsorted(ts.asarray(np.ones((2, 2))), ts.asarray(x2))


def test_unique_results_are_one_named_tuple_type_each() -> None:
    x = ts.asarray(np.array([2, 1, 2], dtype=np.int32))
    first, second = ts.unique_all(x), ts.unique_all(x)
    assert type(first) is type(second) and type(first).__name__ == "UniqueAllResult"
    assert type(ts.unique_counts(x))._fields == ("values", "counts")
    assert type(ts.unique_inverse(x))._fields == ("values", "inverse_indices")
