"""float16 and bfloat16: promotion, conversions to and from numpy (ml_dtypes for bfloat16), the exchange
protocols, and a few ops against numpy's float64 result rounded to the narrow type.

The catalog-wide differential tests (test_ops_differential.py) cover every op in both dtypes with the gate's
inputs; these are the cases that need values chosen by hand (rounding ties, subnormals, NaN, overflow).
"""

from __future__ import annotations

import ctypes
import warnings

import ml_dtypes
import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith_forge.catalog.dtypes import DTYPES

BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = {"float16": np.dtype(np.float16), "bfloat16": BF16}


def numpy_result_type(a: str, b: str) -> str | None:
    """np.result_type with ml_dtypes' bfloat16; None where they have no common dtype (ml_dtypes 0.6: bfloat16
    with float16 or integers wider than 8 bits)."""
    try:
        return np.result_type(np.dtype(a), np.dtype(b)).name
    except TypeError:
        return None


def numpy_add_dtype(a: str, b: str) -> str:
    """The dtype of numpy's add: its ufunc loops promote every pair, with ml_dtypes 0.6 and 0.7 alike."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.add(np.ones(2, a), np.ones(2, b)).dtype.name


def bits(a) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(a))
    return a.view(f"u{a.dtype.itemsize}")


# ---- promotion ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("a", DTYPES)
def test_promotion_matches_numpy_and_ml_dtypes(a: str) -> None:
    for b in DTYPES:
        x, y = ts.asarray(np.ones(2, a)), ts.asarray(np.ones(2, b))
        expected = numpy_add_dtype(a, b)
        assert ts.add(x, y).dtype == ts.dtype(expected), (a, b)
        # ml_dtypes 0.7's np.result_type agrees; 0.6's has no common dtype for some bfloat16 pairs.
        assert numpy_result_type(a, b) in (expected, None), (a, b)
        if "bfloat16" not in (a, b):
            assert numpy_result_type(a, b) == expected, (a, b)


@pytest.mark.parametrize("other", ["int16", "uint16", "int32", "uint32", "int64", "uint64", "float16"])
def test_bfloat16_promotes_with_wide_integers_and_float16_by_value(other: str) -> None:
    # ml_dtypes 0.6 refused these in np.result_type (tensorsmith raised TypeError); numpy's ufuncs and 0.7 promote.
    b = np.array([1.5, -2.0, 3.0], BF16)
    o = np.array([300, 7, 1], other)
    got = ts.add(ts.asarray(b), ts.asarray(o))
    expected = np.add(b, o)
    assert got.dtype == ts.dtype(expected.dtype) == ts.dtype(numpy_add_dtype(other, "bfloat16"))
    np.testing.assert_array_equal(np.asarray(got), expected)
    np.testing.assert_array_equal(np.asarray(ts.less(ts.asarray(o), ts.asarray(b))), np.less(o, b))
    np.testing.assert_array_equal(np.asarray(ts.where(np.array([True, False, True]), ts.asarray(b), ts.asarray(o))),
                                  np.where(np.array([True, False, True]), b.astype(expected.dtype), o))


@pytest.mark.parametrize(("dtype", "expected"), [("bool", "float16"), ("int8", "float16"), ("uint8", "float16"),
                                                 ("int16", "float32"), ("float16", "float16"),
                                                 ("bfloat16", "bfloat16")])  # fmt: skip
def test_float_functions_of_small_types_compute_in_float16_like_numpy(dtype: str, expected: str) -> None:
    x = np.arange(-3, 4).astype(dtype) if dtype != "bool" else np.array([True, False])
    got = ts.exp(ts.asarray(x))
    assert got.dtype == ts.dtype(expected)
    want = np.exp(x.astype(np.float64)).astype(expected)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dtype", list(HALVES))
def test_python_scalars_keep_the_half_dtype(dtype: str) -> None:
    # NEP 50: a Python scalar adopts the tensor's floating dtype. numpy does so for float16, and for bfloat16
    # with ml_dtypes 0.7 (0.6 gave float32 with a Python float); tensorsmith stays in bfloat16 with either.
    x = np.array([1.0, -2.5, 3.25], dtype=HALVES[dtype])
    for result, want in ((ts.asarray(x) + 1.5, x.astype(np.float64) + 1.5), (ts.asarray(x) * 2, x.astype(np.float64) * 2),
                         (3 - ts.asarray(x), 3 - x.astype(np.float64))):  # fmt: skip
        assert result.dtype == ts.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(result).astype(np.float64), want.astype(HALVES[dtype]).astype(np.float64))
    assert (ts.asarray(x) < 2.0).dtype == ts.bool


# ---- conversions ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(HALVES))
def test_every_bit_pattern_widens_like_numpy(dtype: str) -> None:
    every = np.arange(2**16, dtype=np.uint16).view(HALVES[dtype])
    t = ts.asarray(every)
    got = np.asarray(t.astype(ts.float32))
    np.testing.assert_array_equal(bits(got), bits(every.astype(np.float32)))  # NaN payloads and signs too
    # float64 goes through float32, whose signalling NaNs the CPU quiets on the way; numpy keeps them signalling
    got, want = np.asarray(t.astype(ts.float64)), every.astype(np.float64)
    nan = np.isnan(want)
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def float32_edge_values() -> np.ndarray:
    """Every half value, the midpoints between neighbours (ties) and one float32 step either side, the
    subnormal range, overflow thresholds, infinities and NaN."""
    halves = np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float32)
    halves = halves[np.isfinite(halves)]
    ordered = np.unique(halves)
    mid = ((ordered[:-1].astype(np.float64) + ordered[1:]) / 2).astype(np.float32)
    near = np.concatenate([mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))])
    extra = np.array([65504, 65519.99, 65520, 65536, 1e5, 3.4e38, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0001, 2.0**-26,
                      1e-45, np.inf, -np.inf, np.nan, -0.0], dtype=np.float32)  # fmt: skip
    bf = np.arange(2**16, dtype=np.uint32) << 16  # bfloat16 ties: the float32 halfway patterns
    bf_near = np.concatenate([bf | 0x8000, (bf | 0x8000) + 1, (bf | 0x8000) - 1, bf | 0x7FFF]).view(np.float32)
    return np.concatenate([halves, near, extra, -extra, bf_near])


@pytest.mark.parametrize("dtype", list(HALVES))
def test_narrowing_from_float32_rounds_to_nearest_even_like_numpy(dtype: str) -> None:
    values = float32_edge_values()
    with np.errstate(all="ignore"):
        want = values.astype(HALVES[dtype])
    got = np.asarray(ts.asarray(values).astype(ts.dtype(dtype)))
    nan = np.isnan(values)
    assert np.isnan(got[nan].astype(np.float32)).all()
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def test_narrowing_from_float64_rounds_once() -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
                             [65519.999, 65520.0, 2.0**-25, 2.0**-25 * (1 + 2.0**-40), 5e-324, np.inf, -np.inf]])  # fmt: skip
    with np.errstate(all="ignore"):
        want = values.astype(np.float16)  # numpy rounds float64 to float16 directly
    np.testing.assert_array_equal(bits(ts.asarray(values).astype(ts.float16)), bits(want))
    # ml_dtypes goes through float32 (two roundings); tensorsmith rounds once: 1 + 2**-8 + 2**-30 lies just above
    # the tie between bfloat16's 1 and 1 + 2**-7, so it rounds up, while float32 first drops the 2**-30.
    x = np.array([1 + 2.0**-8 + 2.0**-30, -(1 + 2.0**-8 + 2.0**-30)])
    assert np.asarray(ts.asarray(x).astype(ts.bfloat16)).astype(np.float64).tolist() == [1 + 2.0**-7, -(1 + 2.0**-7)]
    exact = values[np.isfinite(values)].astype(np.float32).astype(np.float64)  # one rounding either way
    np.testing.assert_array_equal(bits(ts.asarray(exact).astype(ts.bfloat16)), bits(exact.astype(BF16)))


@pytest.mark.parametrize("dtype", list(HALVES))
def test_integer_and_bool_conversions_follow_numpy(dtype: str) -> None:
    ints = np.array([0, 1, -1, 7, 255, 256, 257, 2049, 2051, 65504, 65519, 65520, 2**24 + 1, -(2**40), 2**62])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(bits(ts.asarray(ints).astype(ts.dtype(dtype))), bits(ints.astype(HALVES[dtype])))
    back = np.array([0.0, 1.5, -2.5, 100.75, -0.0, 1000.0], dtype=HALVES[dtype])
    for target in ("int8", "int32", "uint8", "int64", "bool"):
        with np.errstate(all="ignore"):
            want = back.astype(np.float32).astype(target)  # the same values, through float32
        np.testing.assert_array_equal(np.asarray(ts.asarray(back).astype(ts.dtype(target))), want, err_msg=target)
    assert np.asarray(ts.asarray(np.array([True, False])).astype(ts.dtype(dtype))).astype(float).tolist() == [1, 0]


# ---- dtype objects and exchange ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(HALVES))
def test_dtype_objects_and_names(dtype: str) -> None:
    d = getattr(ts, dtype)
    assert d.name == dtype and d.itemsize == 2 and repr(d) == f"ts.{dtype}"
    for spelling in (dtype, HALVES[dtype], HALVES[dtype].type, d):
        assert ts.dtype(spelling) == d
    assert ts.float16 != ts.bfloat16


@pytest.mark.parametrize("dtype", list(HALVES))
def test_numpy_round_trip_is_zero_copy_and_bit_exact(dtype: str) -> None:
    every = np.arange(2**16, dtype=np.uint16).view(HALVES[dtype]).reshape(256, 256)
    t = ts.asarray(every)
    assert t.dtype == ts.dtype(dtype) and t.shape == (256, 256)
    back = np.asarray(t)
    assert back.dtype == HALVES[dtype] and np.shares_memory(back, every)
    np.testing.assert_array_equal(bits(back), bits(every))
    view = t[::-3, 1::5]
    np.testing.assert_array_equal(bits(np.asarray(view)), bits(every[::-3, 1::5]))
    np.testing.assert_array_equal(bits(np.asarray(view.copy())), bits(every[::-3, 1::5]))
    assert np.asarray(t, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("dtype", list(HALVES))
def test_item_tolist_and_repr(dtype: str) -> None:
    x = np.array([1.5, -2.0, np.inf], dtype=HALVES[dtype])
    t = ts.asarray(x)
    assert t[0].item() == 1.5 and type(t[0].item()) is float
    assert t.tolist() == x.tolist() == [1.5, -2.0, float("inf")]
    # numpy's (ml_dtypes') formatting of the values; the dtype spelled by name, as ts.bfloat16 is (with ml_dtypes 0.7
    # numpy writes dtype=dtype(bfloat16), its fallback for a dtype class with a repr of its own).
    assert repr(t) == repr(x).replace("array(", "tensor(").replace("dtype(bfloat16)", "bfloat16")
    assert float(ts.asarray(np.array(0.1, HALVES[dtype]))) == float(np.array(0.1, HALVES[dtype]))


def dl_dtype(capsule) -> tuple[int, int, int]:
    """(code, bits, lanes) of a legacy DLPack capsule's DLTensor."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    raw = (ctypes.c_uint8 * 24).from_address(get(capsule, b"dltensor"))  # data, device, ndim, then dtype
    return raw[20], raw[21], raw[22] | raw[23] << 8


def test_dlpack_codes_and_round_trips() -> None:
    f16 = ts.asarray(np.array([1.0, -0.5, 65504.0], np.float16))
    assert dl_dtype(f16.__dlpack__()) == (2, 16, 1)  # kDLFloat
    shared = np.from_dlpack(f16)
    assert shared.dtype == np.float16 and np.shares_memory(shared, np.asarray(f16))
    assert ts.from_dlpack(np.zeros(3, np.float16)).dtype == ts.float16
    b16 = ts.asarray(np.array([1.0, -0.5, 3.0], BF16))
    assert dl_dtype(b16.__dlpack__()) == (4, 16, 1)  # kDLBfloat
    again = ts.from_dlpack(b16)
    assert again.dtype == ts.bfloat16 and again.tolist() == [1.0, -0.5, 3.0]


def test_bfloat16_has_no_buffer_format_but_converts_through_array() -> None:
    t = ts.asarray(np.array([1.0, 2.0], BF16))
    with pytest.raises(BufferError):  # pybind11 reports "Error getting buffer"
        memoryview(t)
    assert memoryview(ts.asarray(np.array([1.0], np.float16))).format == "e"
    assert np.array(t).dtype == BF16


# ---- ops on half tensors against numpy's float64 result ----------------------------------------------------

TOL = {"float16": 1e-3, "bfloat16": 1.6e-2}


def expect(dtype: str, got, want64: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.dtype == HALVES[dtype]
    with np.errstate(all="ignore"):
        want = want64.astype(HALVES[dtype]).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=TOL[dtype], atol=1e-5)


@pytest.mark.parametrize("dtype", list(HALVES))
def test_ops_compute_in_float_and_round_once(dtype: str) -> None:
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((37, 29)) * 4).astype(HALVES[dtype])
    b = (rng.standard_normal((29, 23)) * 4).astype(HALVES[dtype])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ta, tb = ts.asarray(a), ts.asarray(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect(dtype, ts.exp(ta), np.exp(a64))
        expect(dtype, ts.add(ta, ta[::-1]), a64 + a64[::-1])
        expect(dtype, ts.sum(ta, axis=0), a64.sum(axis=0))
        expect(dtype, ts.mean(ta), np.array(a64.mean()))
        expect(dtype, ts.matmul(ta, tb), a64 @ b64)
        e = np.exp(a64 - a64.max(axis=-1, keepdims=True))
        expect(dtype, ts.softmax(ta, axis=-1), e / e.sum(axis=-1, keepdims=True))
        expect(dtype, ts.max(ta, axis=1), a64.max(axis=1))
    np.testing.assert_array_equal(np.asarray(ts.argmax(ta, axis=1)), a64.argmax(axis=1))
    np.testing.assert_array_equal(np.asarray(ts.less(ta, ta * 0.5)), a64 < a64 * 0.5)  # halving is exact here
    # an overflowing result is infinity, as rounding the float64 result gives
    big = np.array([60000.0, -60000.0], HALVES[dtype])
    expect(dtype, ts.asarray(big) * 2, big.astype(np.float64) * 2)
    nan = ts.asarray(np.array([np.nan, 1.0], HALVES[dtype]))
    assert np.isnan(np.asarray(ts.max(nan)).astype(np.float32)) and ts.argmax(nan).item() == 0
