"""all/any (generated reductions) and the functions composed of generated ops (clip, diff, var, std,
count_nonzero, vecdot, tensordot, tile, unstack, broadcast_arrays, meshgrid): numpy's answers on the cases
the specs' examples do not reach (Python scalar operands, dtypes, errors, views and copies)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = ["bool", "int8", "uint8", "int32", "uint64", "float16", "float32", "float64"]


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values with many zeros (both signs), so that all and any see both answers."""
    values = rng.integers(-2, 3, size=shape)
    if dtype == "bool":
        return values > 0
    data = np.abs(values) if dtype.startswith("uint") else values
    data = data.astype(dtype)
    if np.dtype(dtype).kind == "f":
        data[(data == 0) & (rng.random(shape) < 0.5)] = -0.0
        data.reshape(-1)[:1] = np.nan  # NaN is true
    return data


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_and_any_match_numpy(name: str, dtype: str) -> None:
    rng = np.random.default_rng(7)
    for shape, axis, keepdims in [((5, 3), 1, False), ((4, 1, 3), (0, 2), True), ((0, 4), 0, False), ((0, 4), None, True),
                                  ((), None, False), ((3, 70000), 1, False), ((70001,), None, False), ((2, 3), (), False)]:  # fmt: skip
        a = _array(rng, shape, dtype)
        got = getattr(ts, name)(ts.asarray(a), axis=axis, keepdims=keepdims)
        want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
        assert got.dtype == ts.bool and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(getattr(ts.asarray(a), name)(axis=axis, keepdims=keepdims)).tolist() == want.tolist()


def test_all_and_any_read_zero_signs_and_nan_as_numpy() -> None:
    x = ts.asarray(np.array([-0.0, 0.0], dtype=np.float32))
    assert not bool(ts.any(x)) and not bool(ts.all(x))
    assert bool(ts.all(ts.asarray(np.array([np.nan, 1.0])))) and bool(ts.any(ts.asarray(np.array([0.0, np.nan]))))
    assert bool(ts.all(ts.asarray(np.zeros((0,))))) and not bool(ts.any(ts.asarray(np.zeros((0,)))))
    assert np.all(ts.asarray([[1, 0], [1, 1]]), axis=1).tolist() == [False, True]  # numpy calls the method


def test_clip_takes_scalars_tensors_and_none() -> None:
    a = np.array([1, -5, 100], dtype=np.int8)
    x = ts.asarray(a)
    for low, high in [(0, 1000), (-1000, 5), (None, 2), (3, None), (4, 2)]:
        got = ts.clip(x, low, high)
        assert got.dtype == ts.int8
        assert np.asarray(got).tolist() == np.clip(a, low, high).tolist()
    f = np.array([1.0, np.nan, -3.0, 7.0], dtype=np.float32)
    assert np.asarray(ts.clip(ts.asarray(f), 0.5, 2)).tolist()[2:] == [0.5, 2.0]
    np.testing.assert_array_equal(np.asarray(ts.clip(ts.asarray(f), min=0.0, max=np.nan)), np.clip(f, 0.0, np.nan))
    bounds = np.array([[0.0], [5.0]], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(ts.clip(ts.asarray(f), ts.asarray(bounds))), np.clip(f, bounds, None))
    same = ts.clip(x)
    same[0] = 7  # a new tensor, as numpy's clip returns: x is unchanged
    assert np.asarray(x).tolist() == a.tolist() and np.asarray(same).tolist() == [7, -5, 100]
    with pytest.raises(TypeError, match="max"):
        ts.clip(x, 0, "9")


@pytest.mark.parametrize("dtype", ["int16", "bool", "float16", "float32", "float64", "complex64", "complex128"])
def test_var_and_std_follow_numpy_dtypes_and_corrections(dtype: str) -> None:
    """Complex numbers too: their squared deviations are magnitudes, so the result is real, as numpy's."""
    rng = np.random.default_rng(3)
    a = rng.normal(10.0, 3.0, (6, 5, 4))
    a = (a + 1j * rng.normal(-4.0, 2.0, a.shape) if dtype.startswith("complex") else a).astype(dtype)
    for kwargs in [{}, {"axis": 1}, {"axis": (0, 2), "correction": 1, "keepdims": True}, {"axis": -1, "correction": 2.5}]:
        ddof = {"ddof": kwargs["correction"]} if "correction" in kwargs else {}
        rest = {k: v for k, v in kwargs.items() if k != "correction"}
        for name in ("var", "std"):
            got = getattr(ts, name)(ts.asarray(a), **kwargs)
            want = getattr(np, name)(a, **rest, **ddof)
            assert got.dtype == ts.dtype(want.dtype.name) and got.shape == want.shape
            rtol = {"float16": 2e-3, "float32": 1e-5}.get(want.dtype.name, 1e-12)
            np.testing.assert_allclose(np.asarray(got), want, rtol=rtol)


def test_var_with_too_few_elements_is_inf_or_nan_as_numpy() -> None:
    x = np.array([[1.0, 2.0], [3.0, 3.0]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning, match="Degrees of freedom"):  # numpy's warning
        np.testing.assert_array_equal(np.asarray(ts.var(ts.asarray(x), axis=1, correction=2)), np.var(x, axis=1, ddof=2))
        assert np.isnan(np.asarray(ts.std(ts.asarray(np.zeros(0)))))
    with pytest.raises(TypeError, match="correction"):
        ts.var(ts.asarray(x), correction="1")
    with pytest.raises(ValueError, match="duplicate"):
        ts.var(ts.asarray(x), axis=(0, 0))


def test_count_nonzero_counts_nan_not_negative_zero() -> None:
    a = np.array([[0.0, -0.0, np.nan], [1.0, 0.0, 2.0]])
    got = ts.count_nonzero(ts.asarray(a), axis=1)
    assert got.dtype == ts.int64 and np.asarray(got).tolist() == [1, 2]
    assert int(ts.count_nonzero(ts.asarray(a))) == 3
    assert np.asarray(ts.count_nonzero(ts.asarray(a), axis=0, keepdims=True)).tolist() == [[1, 0, 2]]


def test_diff_of_bool_is_not_equal_and_errors_are_named() -> None:
    b = np.array([True, False, False, True])
    got = ts.diff(ts.asarray(b))
    assert got.dtype == ts.bool and np.asarray(got).tolist() == np.diff(b).tolist()
    u = np.array([3, 1, 7], dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(ts.diff(ts.asarray(u), n=2)), np.diff(u, n=2))  # wraps as numpy
    with pytest.raises(ValueError, match="non-negative"):
        ts.diff(ts.asarray(u), n=-1)
    with pytest.raises(ValueError, match="at least one dimension"):
        ts.diff(ts.asarray(np.float64(1.0)))
    with pytest.raises(TypeError, match="prepend"):
        ts.diff(ts.asarray(u), prepend=[1])
    with pytest.raises(ValueError):
        ts.diff(ts.asarray(np.zeros((2, 3))), prepend=ts.asarray(np.zeros((3, 1))))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool", "float32"])
def test_vecdot_keeps_numpy_dtypes(dtype: str) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 90, (3, 1, 40)).astype(dtype)
    b = rng.integers(0, 90, (2, 40)).astype(dtype)
    got, want = ts.vecdot(ts.asarray(a), ts.asarray(b)), np.vecdot(a, b)
    assert got.dtype == ts.dtype(want.dtype.name) and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    with pytest.raises(ValueError, match="lengths"):
        ts.vecdot(ts.asarray(a), ts.asarray(b[:, :3]))


def test_tensordot_axes_forms_and_errors() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 4, 2))
    for axes in [([1, 2], [1, 0]), ((2,), (0,)), 0]:
        np.testing.assert_allclose(np.asarray(ts.tensordot(ts.asarray(a), ts.asarray(b), axes=axes)), np.tensordot(a, b, axes=axes))
    with pytest.raises(ValueError, match="shape-mismatch"):
        ts.tensordot(ts.asarray(a), ts.asarray(b))
    with pytest.raises(ValueError, match="named twice"):
        ts.tensordot(ts.asarray(a), ts.asarray(b), axes=([2, 2], [0, 0]))
    with pytest.raises(TypeError, match="pair of sequences"):
        ts.tensordot(ts.asarray(a), ts.asarray(b), axes="2")
    with pytest.raises(ValueError, match="exceeds"):
        ts.tensordot(ts.asarray(a), ts.asarray(b), axes=4)


def test_tile_copies_and_unstack_returns_views() -> None:
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    x = ts.asarray(a)
    tiled = ts.tile(x, (1, 1))
    tiled[0, 0] = 99
    assert int(x[0, 0]) == 0  # a copy even when nothing repeats, as numpy's
    assert np.asarray(ts.tile(x, (2, 1, 2))).tolist() == np.tile(a, (2, 1, 2)).tolist()
    with pytest.raises(ValueError, match="non-negative"):
        ts.tile(x, (-1,))
    parts = ts.unstack(x, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    assert [np.asarray(p).tolist() for p in parts] == [list(p) for p in np.unstack(a, axis=1)]
    x[1, 1] = 40  # views: they see the write
    assert int(parts[1][1]) == 40
    with pytest.raises(ValueError, match="at least one dimension"):
        ts.unstack(ts.asarray(np.int8(3)))


def test_broadcast_arrays_and_meshgrid() -> None:
    a, b = ts.asarray(np.arange(3.0)), ts.asarray(np.arange(2, dtype=np.int8).reshape(2, 1))
    out = ts.broadcast_arrays(a, b)
    assert isinstance(out, list) and [t.shape for t in out] == [(2, 3), (2, 3)] and out[1].dtype == ts.int8
    assert ts.broadcast_arrays() == []
    with pytest.raises(ValueError):
        ts.broadcast_arrays(a, ts.asarray(np.zeros(4)))
    with pytest.raises(TypeError, match="Tensors"):
        ts.broadcast_arrays(a, [1, 2])
    x, y = np.arange(3.0), np.arange(4, dtype=np.int32)
    for indexing in ("xy", "ij"):
        grids = ts.meshgrid(ts.asarray(x), ts.asarray(y), indexing=indexing)
        want = np.meshgrid(x, y, indexing=indexing)
        assert [np.asarray(g).tolist() for g in grids] == [w.tolist() for w in want]
        assert [g.dtype for g in grids] == [ts.float64, ts.int32]
    with pytest.raises(ValueError, match="indexing"):
        ts.meshgrid(ts.asarray(x), indexing="yx")
    with pytest.raises(TypeError):
        ts.meshgrid(ts.asarray(x), ts.asarray(y), "ij")  # indexing is keyword-only


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_composed_functions_on_a_cuda_device() -> None:
    a = np.random.default_rng(1).normal(size=(64, 33)).astype(np.float32)
    x = ts.asarray(a).to_device("cuda")
    np.testing.assert_allclose(np.asarray(ts.var(x, axis=0, correction=1).cpu()), np.var(a, axis=0, ddof=1), rtol=1e-5)
    assert np.asarray(ts.any(x > 2, axis=1).cpu()).tolist() == np.any(a > 2, axis=1).tolist()
    np.testing.assert_allclose(np.asarray(ts.tensordot(x, x, axes=([0], [0])).cpu()), np.tensordot(a, a, axes=([0], [0])), rtol=1e-4)
