"""The hand-written Tensor API (tensorsmith._C), checked against numpy doing the same thing.

Covers dtype objects, ts.asarray (inference, casting, copy semantics, zero-copy
sharing), tensor attributes, views (and that they really are views: a write
through the view shows in the base), basic indexing and __setitem__, Python
scalar conversions, repr, and the generated methods/operators as a tensor user
sees them. Op numerics per dtype are test_ops_differential.py's job; errors are
test_errors.py's; numpy/DLPack/torch exchange is test_interop.py's.
"""

from __future__ import annotations

import gc
import itertools
import operator
import pickle
import warnings

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16",
          "bfloat16", "complex64", "complex128"]  # fmt: skip


def shares(t: ts.Tensor, a: np.ndarray) -> bool:
    return np.shares_memory(np.asarray(t), a)


def assert_same(t: ts.Tensor, expected: np.ndarray) -> None:
    """t holds exactly numpy's result: dtype, shape and values."""
    assert isinstance(t, ts.Tensor), type(t)
    got = np.asarray(t)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def strides_that_matter(x) -> tuple[int, ...]:
    """Byte strides of the axes longer than 1; numpy and tensorsmith may pick anything for the others."""
    return tuple(s for s, n in zip(x.strides, x.shape, strict=True) if n > 1)


# ---- dtype objects -----------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_object_matches_numpy(name: str) -> None:
    d = getattr(ts, name)
    assert isinstance(d, ts.DType)
    assert d.name == name
    assert str(d) == name
    assert repr(d) == f"ts.{name}"
    assert d.itemsize == np.dtype(name).itemsize


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("spelling", ["name", "numpy dtype", "numpy scalar type", "DType"])
def test_ts_dtype_accepts_names_numpy_dtypes_and_dtypes(name: str, spelling: str) -> None:
    arg = {
        "name": name,
        "numpy dtype": np.dtype(name),
        "numpy scalar type": np.dtype(name).type,
        "DType": getattr(ts, name),
    }[spelling]
    assert ts.dtype(arg) == getattr(ts, name)


@pytest.mark.parametrize(("pytype", "expected"), [(bool, "bool"), (int, "int64"), (float, "float64")])
def test_ts_dtype_of_python_types_follows_numpy(pytype: type, expected: str) -> None:
    assert np.dtype(pytype).name == expected
    assert ts.dtype(pytype) == getattr(ts, expected)


def test_dtype_equality_and_hash() -> None:
    assert ts.float32 == ts.dtype("float32")
    assert hash(ts.float32) == hash(ts.dtype("float32"))
    assert len({getattr(ts, n) for n in DTYPES}) == len(DTYPES)
    for a, b in itertools.combinations(DTYPES, 2):
        assert getattr(ts, a) != getattr(ts, b), (a, b)
    assert ts.float32 != "float32"  # a DType is not a string; ts.dtype("float32") converts
    assert ts.float32 != None and ts.float32 != np.float32  # noqa: E711 - __eq__ of other types is NotImplemented


@pytest.mark.parametrize("name", DTYPES)
def test_a_tensors_dtype_is_the_namespaces_object(name: str) -> None:
    """t.dtype makes no new object per read (autograd reads it per formula): it is ts.<name> itself."""
    dtype = getattr(ts, name)
    assert ts.zeros(2, dtype=dtype).dtype is dtype
    assert ts.zeros(2, dtype=dtype).dtype == ts.dtype(name) and ts.dtype(name) == dtype


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_pickles(name: str) -> None:
    assert pickle.loads(pickle.dumps(getattr(ts, name))) == getattr(ts, name)


# ---- asarray: sharing numpy memory ---------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_asarray_of_numpy_array_is_zero_copy(name: str) -> None:
    a = (np.arange(12) % 3).astype(name).reshape(3, 4)
    t = ts.asarray(a)
    assert t.dtype == getattr(ts, name)
    assert t.shape == a.shape
    assert shares(t, a)
    a[1, 2] = 1 if name == "bool" else 7
    assert t[1, 2].item() == a[1, 2].item(), "a write through numpy must show in the tensor"
    t[0, 0] = 1 if name == "bool" else 5
    assert a[0, 0] == t[0, 0].item(), "a write through the tensor must show in the numpy array"


@pytest.mark.parametrize(
    "index",
    [np.s_[::-1], np.s_[::2, 1:], np.s_[:, ::-3], np.s_[1:, ::-2], "T"],
    ids=["reversed", "strided", "neg-step", "mixed", "transposed"],
)
def test_asarray_shares_non_contiguous_numpy_views(index) -> None:
    base = np.arange(30.0).reshape(5, 6)
    view = base.T if isinstance(index, str) else base[index]
    t = ts.asarray(view)
    assert_same(t, view)
    assert t.strides == view.strides
    assert shares(t, base)


class _Int(int):
    pass


SCALARS = [True, False, 0, -5, 200, 300, 2**53 + 1, 2**62, -(2**63), 2**63, 2**64, 1.5, -0.0, 1e300, float("nan"), float("inf"), 1 + 2j, _Int(3)]


@pytest.mark.parametrize("dtype", [None, "int64", "int8", "int16", "uint8", "uint64", "float16", "float32", "float64", "bool", "complex64"])
@pytest.mark.parametrize("copy", [None, True, False])
@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_asarray_of_a_python_scalar_is_numpys(value, dtype, copy) -> None:
    """Python bools, ints and floats become 0-d tensors without numpy.asarray (its cost was most of a small
    op's); every dtype, value, error and copy=False answer is still numpy's."""
    def outcome(make):
        with warnings.catch_warnings(record=True) as caught:  # numpy warns of a float cast beyond the range
            warnings.simplefilter("always")
            try:
                return make(), None, [w.category for w in caught]
            except (ValueError, TypeError, OverflowError) as exc:
                return None, type(exc), [w.category for w in caught]

    want, want_error, want_warnings = outcome(lambda: np.asarray(value, dtype=dtype, copy=copy))
    if want is not None and want.dtype == object:  # beyond uint64: numpy's object array, which has no dtype here
        want, want_error = None, TypeError
    got, got_error, got_warnings = outcome(lambda: ts.asarray(value, dtype=None if dtype is None else getattr(ts, dtype), copy=copy))
    assert (got_error, got_warnings) == (want_error, want_warnings)
    if want is not None:
        assert (got.dtype, got.shape) == (getattr(ts, str(want.dtype)), ())
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.signbit(np.asarray(got)) == np.signbit(want) if want.dtype.kind == "f" else True


ELEMENTS = {
    "bool": [True, False], "int8": [-128, 127], "int16": [-32768, 7], "int32": [-(2**31), 2**31 - 1],
    "int64": [-(2**63), 2**63 - 1], "uint8": [0, 255], "uint16": [65535], "uint32": [2**32 - 1],
    "uint64": [2**64 - 1, 2**63], "float16": [-0.0, 65504.0, float("nan"), 6e-8], "float32": [-0.0, 0.1, float("inf"), 1e-45],
    "float64": [-0.0, 0.1, float("-inf"), 5e-324], "complex64": [complex(0.1, -0.0), complex(float("nan"), 1.0)],
    "complex128": [complex(0.1, -2.5)],
}  # fmt: skip


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, vs in ELEMENTS.items() for v in vs], ids=repr)
def test_item_and_scalar_conversions_are_numpys(name: str, value) -> None:
    """item(), float(), int(), bool(), complex() and index of a one-element tensor: the Python scalar numpy's
    item() gives, of the same type and value (read by dtype, not through a numpy view: 0.4 us a call before)."""
    array = np.asarray([value], dtype=name)[0:1].reshape(())
    for t in (ts.asarray(array), ts.asarray(np.asarray([7, value], dtype=name))[1:]):  # 0-d, and a 1-element view
        want = array.item()
        got = t.item()
        assert type(got) is type(want)
        assert got == want or (got != got and want != want)
        assert repr(complex(got) if isinstance(got, complex) else got) == repr(want)
        for convert in (bool, float, int, complex):
            try:
                expected = convert(array)
            except (TypeError, ValueError, OverflowError) as exc:
                with pytest.raises(type(exc)):
                    convert(t)
                continue
            result = convert(t)
            assert type(result) is type(expected) and repr(result) == repr(expected), convert
    if np.issubdtype(array.dtype, np.integer):
        assert operator.index(ts.asarray(array)) == operator.index(array)


def test_asarray_of_broadcast_numpy_array_keeps_its_values() -> None:
    b = np.broadcast_to(np.arange(3), (2, 3))  # read-only, stride 0
    assert_same(ts.asarray(b), b.copy())


def test_asarray_copies_read_only_numpy_arrays() -> None:
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = ts.asarray(ro)
    assert_same(t, ro)
    t[0] = 7
    assert ro[0] == 0, "read-only memory is copied, never shared by a writeable tensor"


def test_asarray_converts_non_native_byte_order() -> None:
    big = np.arange(4, dtype=">i4")
    t = ts.asarray(big)
    assert t.dtype == ts.int32
    assert t.tolist() == big.tolist()


def test_asarray_copies_unaligned_numpy_arrays() -> None:
    raw = bytearray(8 * 5 + 1)
    a = np.frombuffer(raw, dtype=np.float64, offset=1, count=5)
    a[:] = np.arange(5.0)
    assert not a.flags.aligned
    t = ts.asarray(a)
    assert t.tolist() == a.tolist()
    assert not shares(t, a)


def test_asarray_keeps_the_numpy_memory_alive() -> None:
    def make() -> ts.Tensor:
        return ts.asarray(np.full(1000, 3.0))  # the array dies with this frame

    t = make()
    gc.collect()
    junk = [np.full(1000, -1.0) for _ in range(10)]  # reuse freed memory, if it was freed
    assert t.tolist() == [3.0] * 1000
    del junk


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4)])
def test_asarray_of_empty_arrays(shape) -> None:
    a = np.zeros(shape, np.float32)
    t = ts.asarray(a)
    assert t.shape == shape and t.size == 0 and t.dtype == ts.float32


def test_asarray_of_buffer_objects() -> None:
    raw = bytearray(b"abc")
    t = ts.asarray(raw)
    assert t.dtype == ts.uint8
    assert t.tolist() == list(b"abc")
    assert ts.asarray(memoryview(raw)).tolist() == list(b"abc")


# ---- asarray: Python objects, dtype=, copy= -------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [
        1.5,
        3,
        True,
        False,
        -7,
        [1, 2],
        [1.0, 2],
        [True, False],
        [[1, 2], [3, 4]],
        [1, 2.5],
        [True, 2],
        [[True], [False]],
        [],
        [[]],
        2**63,
        np.float32(1.5),
        np.int8(-3),
        np.bool_(True),
        np.uint64(2**64 - 1),
    ],
    ids=repr,
)
def test_asarray_infers_dtype_like_numpy(obj) -> None:
    expected = np.asarray(obj)
    t = ts.asarray(obj)
    assert t.dtype == ts.dtype(expected.dtype)
    assert t.shape == expected.shape
    assert t.tolist() == expected.tolist()


def test_asarray_python_scalar_defaults() -> None:
    assert ts.asarray(1.5).dtype == ts.float64
    assert ts.asarray(3).dtype == ts.int64
    assert ts.asarray(True).dtype == ts.bool
    assert ts.asarray(3).ndim == 0


@pytest.mark.parametrize("dtype", ["int8", ts.float32, np.uint16, np.dtype("int64"), "bool", ts.float64])
@pytest.mark.parametrize("obj", [[[1, 2], [3, 0]], [1.7, -0.0, 2.2], 3], ids=["ints", "floats", "scalar"])
def test_asarray_dtype_casts_like_numpy(obj, dtype) -> None:
    expected = np.asarray(obj, dtype=ts.dtype(dtype).name)
    assert_same(ts.asarray(obj, dtype=dtype), expected)


def test_asarray_dtype_of_numpy_array_casts_into_a_copy() -> None:
    a = np.arange(6, dtype=np.int32)
    t = ts.asarray(a, dtype=ts.float64)
    assert_same(t, a.astype(np.float64))
    assert not shares(t, a)


@pytest.mark.parametrize("copy", [None, False])
def test_asarray_copy_none_or_false_shares_numpy_memory(copy) -> None:
    a = np.arange(6.0)
    t = ts.asarray(a, copy=copy)
    a[0] = 42
    assert t[0].item() == 42


def test_asarray_copy_true_copies_numpy_arrays() -> None:
    a = np.arange(6.0)
    t = ts.asarray(a, copy=True)
    assert not shares(t, a)
    a[1] = -1
    assert t[1].item() == 1.0


def test_asarray_of_tensor_shares_unless_copy_or_cast() -> None:
    a = np.arange(6.0)
    t = ts.asarray(a)
    assert shares(ts.asarray(t), a)
    assert shares(ts.asarray(t, copy=False), a)
    assert shares(ts.asarray(t, dtype=ts.float64), a)  # same dtype: nothing to copy
    copied = ts.asarray(t, copy=True)
    assert not shares(copied, a) and copied.tolist() == t.tolist()
    cast = ts.asarray(t, dtype=ts.int32)
    assert cast.dtype == ts.int32 and cast.tolist() == a.astype(np.int32).tolist()
    assert not shares(cast, a)


@pytest.mark.parametrize("device", [None, "cpu", ts.Device("cpu")], ids=["None", "str", "Device"])
def test_asarray_on_the_cpu_device(device) -> None:
    t = ts.asarray([1, 2], device=device)
    assert t.device == "cpu"
    assert t.device == ts.Device("cpu")


# ---- attributes ------------------------------------------------------------------------


def _attribute_cases():
    base = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    return {
        "contiguous": base,
        "transposed": base.T,
        "sliced": base[1:, ::2, ::-1],
        "0-d": np.array(2.5),
        "empty": np.zeros((3, 0), np.int16),
        "1-d int8": np.arange(7, dtype=np.int8),
    }


@pytest.mark.parametrize("case", list(_attribute_cases()))
def test_attributes_match_numpy(case: str) -> None:
    a = _attribute_cases()[case]
    t = ts.asarray(a)
    assert t.shape == a.shape and isinstance(t.shape, tuple)
    assert t.dtype == ts.dtype(a.dtype)
    assert t.ndim == a.ndim
    assert t.size == a.size
    assert t.strides == a.strides
    assert t.itemsize == a.itemsize
    assert t.nbytes == a.nbytes
    assert isinstance(t.device, ts.Device) and t.device == "cpu" and t.device.type == "cpu"


def test_T_reverses_axes_as_a_view() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    t = ts.asarray(a)
    assert_same(t.T, a.T)
    assert t.T.strides == a.T.strides
    assert shares(t.T, a)
    assert ts.asarray(np.arange(3)).T.shape == (3,)
    assert ts.asarray(5).T.shape == ()


def test_mT_swaps_the_last_two_axes_as_a_view() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    t = ts.asarray(a)
    assert_same(t.mT, np.swapaxes(a, -1, -2))
    assert_same(ts.matrix_transpose(t), np.swapaxes(a, -1, -2))
    t.mT[1, 3, 2] = -5
    assert a[1, 2, 3] == -5


# ---- views ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 4), (4, -1), (24,), (2, 3, 2, 2), (1, 24, 1)])
def test_reshape_of_contiguous_tensor_is_a_view(shape) -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    t = ts.asarray(a)
    r = t.reshape(shape)
    assert_same(r, a.reshape(shape))
    assert shares(r, a)
    r[(0,) * r.ndim] = -1
    assert a[0, 0, 0] == -1


@pytest.mark.parametrize("spelling", ["varargs", "tuple", "list"])
def test_reshape_accepts_varargs_tuples_and_lists(spelling: str) -> None:
    t = ts.asarray(np.arange(24).reshape(2, 3, 4))
    r = {"varargs": lambda: t.reshape(4, 6), "tuple": lambda: t.reshape((4, 6)), "list": lambda: t.reshape([4, 6])}
    assert r[spelling]().shape == (4, 6)


def test_reshape_of_sliced_tensor_is_a_view_where_numpy_makes_one() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    view = a[:, :, ::2]
    expected = view.reshape(6, 2)
    assert np.shares_memory(expected, a)  # numpy could do it without a copy
    r = ts.asarray(view).reshape(6, 2)
    assert_same(r, expected)
    assert shares(r, a)


def test_reshape_copies_when_strides_do_not_allow_a_view() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    r = ts.asarray(a).T.reshape(24)
    assert_same(r, a.T.reshape(24))
    assert not shares(r, a)


def test_ts_reshape_copy_keyword() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    t = ts.asarray(a)
    assert shares(ts.reshape(t, (24,)), a)
    assert shares(ts.reshape(t, (24,), copy=False), a)
    copied = ts.reshape(t, (24,), copy=True)
    assert_same(copied, a.reshape(24))
    assert not shares(copied, a)


@pytest.mark.parametrize("axes", [(2, 0, 1), (0, 2, 1), (1, 0, 2), (-1, 0, 1), (0, 1, 2)])
def test_permute_dims_and_transpose_are_views(axes) -> None:
    a = np.arange(24).reshape(2, 3, 4)
    t = ts.asarray(a)
    expected = np.transpose(a, axes)
    for p in (
        t.permute_dims(*axes),
        t.permute_dims(axes),
        ts.permute_dims(t, axes),
        t.transpose(*axes),
        t.transpose(axes),
    ):
        assert_same(p, expected)
        assert p.strides == expected.strides
        assert shares(p, a)
    assert_same(t.transpose(), a.transpose())


def test_write_through_permuted_view() -> None:
    a = np.zeros((2, 3, 4))
    ts.asarray(a).permute_dims(2, 0, 1)[3, 1, 2] = 9
    assert a[1, 2, 3] == 9


@pytest.mark.parametrize(
    "key",
    [np.s_[::2], np.s_[::-1], np.s_[::-3], np.s_[5:1:-2], np.s_[1:-1, ::-2], np.s_[:, 3::-1], np.s_[-2:, 1::3]],
    ids=str,
)
def test_slices_with_steps_are_views(key) -> None:
    a = np.arange(48.0).reshape(8, 6)
    t = ts.asarray(a)
    s = t[key]
    assert_same(s, a[key])
    assert s.strides == a[key].strides
    assert shares(s, a)
    s[(0,) * s.ndim] = -1  # write through the view, see it in the base
    assert a[key][(0,) * s.ndim] == -1
    assert np.asarray(t)[key][(0,) * s.ndim] == -1


@pytest.mark.parametrize(
    ("src", "shape"), [((3,), (4, 3)), ((2, 1), (2, 5)), ((), (2, 2)), ((1, 3), (2, 4, 3)), ((3,), (3,))]
)
def test_broadcast_to_is_a_view_with_zero_strides(src, shape) -> None:
    a = np.arange(int(np.prod(src)), dtype=np.float64).reshape(src)
    t = ts.broadcast_to(ts.asarray(a), shape)
    expected = np.broadcast_to(a, shape)
    assert_same(t, expected)
    assert t.strides == expected.strides  # 0 on every repeated axis
    if t.size:
        assert shares(t, a)
    a[...] = -1
    assert (np.asarray(t) == -1).all(), "the broadcast view reads the base's memory"


def test_squeeze_and_expand_dims_are_views() -> None:
    a = np.arange(6.0).reshape(1, 3, 1, 2)
    t = ts.asarray(a)
    cases = [
        (t.squeeze(), a.squeeze()),
        (t.squeeze(0), a.squeeze(0)),
        (t.squeeze(-2), a.squeeze(-2)),
        (t.squeeze((0, 2)), a.squeeze((0, 2))),
        (ts.squeeze(t, axis=(0, 2)), np.squeeze(a, axis=(0, 2))),
        (t.expand_dims(0), np.expand_dims(a, 0)),
        (t.expand_dims(-1), np.expand_dims(a, -1)),
        (t.expand_dims(2), np.expand_dims(a, 2)),
        (ts.expand_dims(t, axis=-5), np.expand_dims(a, -5)),
        (ts.expand_dims(t), np.expand_dims(a, 0)),
    ]
    for got, expected in cases:
        assert_same(got, expected)
        assert shares(got, a)
    sq = t.squeeze()
    sq[2, 1] = 100
    assert a[0, 2, 0, 1] == 100


def test_astype_copies_unless_told_otherwise() -> None:
    a = np.arange(6, dtype=np.int64)
    t = ts.asarray(a)
    assert_same(t.astype(ts.float32), a.astype(np.float32))
    assert_same(t.astype("int8"), a.astype(np.int8))
    assert not shares(t.astype(ts.int64), a), "astype copies by default, like numpy"
    assert shares(t.astype("int64", copy=False), a)
    assert not shares(t.astype(ts.int32, copy=False), a)


@pytest.mark.parametrize(
    ("values", "src", "dst"),
    [
        ([1.7, -1.7, 3.5, 0.0], "float64", "int32"),
        ([0.0, 0.5, np.nan], "float64", "bool"),
        ([0, 2, -1], "int64", "bool"),
        ([200, -200, 300], "int64", "int8"),
        ([True, False], "bool", "float32"),
        ([-1, 5], "int64", "uint32"),
        ([2**64 - 1], "uint64", "float64"),
        ([1.5, 255.5], "float32", "uint8"),
    ],
)
def test_astype_casts_like_numpy(values, src, dst) -> None:
    a = np.array(values, dtype=src)
    with np.errstate(all="ignore"):
        expected = a.astype(dst)
    assert_same(ts.asarray(a).astype(dst), expected)


def test_copy_is_contiguous_and_independent() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    c = ts.asarray(a).T.copy()
    expected = np.ascontiguousarray(a.T)
    assert_same(c, expected)
    assert c.strides == expected.strides
    assert not shares(c, a)


# ---- indexing -----------------------------------------------------------------------------

GRID_SHAPE = (4, 5, 6)
INDEX_KEYS = [
    0,
    -1,
    3,
    -4,
    (1, 2),
    (1, 2, 3),
    (-1, -1, -1),
    slice(None),
    slice(1, 3),
    slice(None, None, 2),
    slice(None, None, -1),
    slice(4, 1, -2),
    slice(-2, None),
    slice(10, 20),
    slice(-100, 100),
    slice(None, None, -3),
    (slice(None), 1),
    (slice(1, None), slice(None, None, 2), slice(5, 0, -2)),
    (Ellipsis, 2),
    (Ellipsis, slice(None, None, -1)),
    (0, Ellipsis, slice(-2, None)),
    (None,),
    (None, 0, Ellipsis, None),
    (Ellipsis, None),
    (1, None, slice(None, None, 2), None),
    (),
    Ellipsis,
    (Ellipsis,),
    (slice(None), slice(None), slice(None)),
    (np.int64(1), None),
    (np.int8(-2), slice(None, 3)),
    (2, slice(None, None, -1), 0),
    (slice(3, None, -1), Ellipsis, 5),
    (None, None, slice(None, None, 3)),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=repr)
def test_getitem_matches_numpy(key) -> None:
    a = np.arange(120.0).reshape(GRID_SHAPE)
    t = ts.asarray(a)
    got = t[key]
    assert_same(got, a[key])
    assert strides_that_matter(got) == strides_that_matter(a[key])
    if got.size:
        assert shares(got, a), "basic indexing returns a view"


def test_getitem_grid_of_combined_index_expressions() -> None:
    """Every tuple of up to 3 atoms; numpy decides which are valid, and those must agree."""
    atoms = [
        0,
        -1,
        3,
        slice(None),
        slice(1, 3),
        slice(None, None, 2),
        slice(None, None, -1),
        slice(4, 1, -2),
        slice(10, 20),
        None,
        Ellipsis,
    ]
    a = np.arange(120.0).reshape(GRID_SHAPE)
    t = ts.asarray(a)
    compared = 0
    for n in range(1, 4):
        for key in itertools.product(atoms, repeat=n):
            try:
                expected = a[key]
            except IndexError:
                with pytest.raises(IndexError):
                    t[key]
                continue
            got = t[key]
            assert got.shape == expected.shape, key
            assert got.tolist() == expected.tolist(), key
            assert strides_that_matter(got) == strides_that_matter(expected), key
            compared += 1
    assert compared > 1000


@pytest.mark.parametrize("index", [np.int64(2), np.uint8(2), ts.asarray(2), ts.asarray(2, dtype=ts.uint8)], ids=repr)
def test_integer_like_indices(index) -> None:
    a = np.arange(120.0).reshape(GRID_SHAPE)
    assert_same(ts.asarray(a)[index], a[2])
    assert_same(ts.asarray(a)[1, index], a[1, 2])


def test_getitem_of_0d_tensor() -> None:
    t = ts.asarray(np.array(4.5))
    assert t[()].shape == () and t[()].item() == 4.5
    assert t[...].shape == ()
    assert t[None].shape == (1,)


def test_write_through_indexed_view() -> None:
    a = np.zeros(GRID_SHAPE)
    t = ts.asarray(a)
    row = t[1, ::2]
    row[...] = 3
    assert (a[1, ::2] == 3).all() and (a[1, 1::2] == 0).all() and (a[0] == 0).all()


SETITEM_CASES = [
    (1, 5),
    ((slice(None), slice(None), 0), [1.0, 2.0, 3.0, 4.0, 5.0]),
    ((2, slice(1, 3), 0), np.array([7, 8])),
    ((0, -1), True),
    ((Ellipsis, 3), 9),
    ((slice(None, None, -2), 1), np.arange(6.0)),
    ((Ellipsis, slice(1, 3)), np.array([[1.0], [2.0], [3.0], [4.0], [5.0]])),
    ((None, 0), 4.5),
    ((1, 2), "tensor"),
    (slice(5, 10), 1),
    ((1, 1, 1), np.float32(2.5)),
    ((), 0.25),
    ((slice(None), slice(None, None, -1), 0), np.arange(5)),
]


@pytest.mark.parametrize(
    ("key", "value"), SETITEM_CASES, ids=lambda x: repr(x) if not isinstance(x, np.ndarray) else "array"
)
def test_setitem_matches_numpy(key, value) -> None:
    if isinstance(value, str):
        value = ts.asarray(np.arange(6, dtype=np.int32))
    expected = np.arange(120.0).reshape(GRID_SHAPE)
    expected[key] = np.asarray(value)
    t = ts.asarray(np.arange(120.0).reshape(GRID_SHAPE))
    t[key] = value
    assert_same(t, expected)


@pytest.mark.parametrize(
    ("dtype", "value"), [("int64", 2.7), ("int8", -3.9), ("uint8", 3.9), ("bool", 2), ("float32", True)]
)
def test_setitem_casts_the_value_like_numpy(dtype: str, value) -> None:
    expected = np.zeros(3, dtype)
    expected[1] = value
    t = ts.asarray(np.zeros(3, dtype))
    t[1] = value
    assert_same(t, expected)


def test_setitem_with_tensor_of_another_dtype_casts() -> None:
    t = ts.asarray(np.zeros(4, np.int8))
    src = np.array([1.9, -2.9, 127.0, 3.0])
    t[:] = ts.asarray(src)
    assert_same(t, src.astype(np.int8))


@pytest.mark.parametrize(
    ("target", "source"),
    [
        (np.s_[1:], np.s_[:-1]),
        (np.s_[:-1], np.s_[1:]),
        (np.s_[::-1], np.s_[:]),
        (np.s_[2:], np.s_[:-2]),
        (np.s_[::2], np.s_[1::2]),
    ],
    ids=str,
)
def test_setitem_from_overlapping_view_of_itself(target, source) -> None:
    expected = np.arange(10.0)
    expected[target] = expected[source].copy()
    t = ts.asarray(np.arange(10.0))
    t[target] = t[source]
    assert_same(t, expected)
    t2 = ts.asarray(np.arange(10.0))
    t2[target] = t2.numpy()[source]  # the same memory, through a numpy view
    assert_same(t2, expected)


# ---- Python scalars, sequences and repr ------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_tolist_and_item_give_python_scalars_like_numpy(name: str) -> None:
    a = (np.arange(6) % 4).astype(name).reshape(2, 3)
    t = ts.asarray(a)
    assert t.tolist() == a.tolist()
    assert [[type(v) for v in row] for row in t.tolist()] == [[type(v) for v in row] for row in a.tolist()]
    assert t[1, 2].item() == a[1, 2].item() and type(t[1, 2].item()) is type(a[1, 2].item())
    assert t[1, 2].tolist() == a[1, 2].tolist()  # 0-d: a scalar, not a list


def test_tolist_of_views_and_empty_tensors() -> None:
    a = np.arange(6).reshape(2, 3)
    assert ts.asarray(a).T.tolist() == a.T.tolist()
    assert ts.asarray(a)[:, ::-2].tolist() == a[:, ::-2].tolist()
    assert ts.asarray(np.zeros((2, 0))).tolist() == [[], []]


def test_item_of_extreme_values() -> None:
    assert ts.asarray(np.uint64(2**64 - 1)).item() == 2**64 - 1
    assert ts.asarray(np.int64(-(2**63))).item() == -(2**63)
    assert ts.asarray(np.float32(0.1)).item() == float(np.float32(0.1))


def test_len_and_iter_walk_axis_0_as_views() -> None:
    a = np.arange(6.0).reshape(3, 2)
    t = ts.asarray(a)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    for row, expected in zip(rows, a, strict=True):
        assert_same(row, expected)
    rows[1][0] = -1
    assert a[1, 0] == -1, "iteration yields views"
    assert len(ts.asarray(np.zeros((0, 2)))) == 0
    assert list(ts.asarray(np.zeros((0, 2)))) == []


@pytest.mark.parametrize("value", [0, 1, -2, 0.0, 2.5, -0.5, True, False, np.nan], ids=repr)
@pytest.mark.parametrize("wrap", [lambda v: v, lambda v: [v], lambda v: [[v]]], ids=["0-d", "1-d", "2-d"])
def test_bool_int_float_of_single_element_tensors(value, wrap) -> None:
    a = np.array(wrap(value))
    t = ts.asarray(a)
    assert bool(t) == bool(a.item())
    assert float(t) == float(a.item()) or (np.isnan(value) and np.isnan(float(t)))
    if not (isinstance(value, float) and np.isnan(value)):
        assert int(t) == int(a.item())
        assert type(int(t)) is int and type(float(t)) is float, "__int__/__float__ must return exact int/float"


def test_index_protocol_of_integer_scalar_tensors() -> None:
    assert ts.asarray(3).__index__() == 3
    assert [10, 20, 30][ts.asarray(1)] == 20
    assert list(range(ts.asarray(3, dtype=ts.uint8))) == [0, 1, 2]
    assert ts.asarray(np.uint64(2**63)).__index__() == 2**63
    assert "abcdef"[ts.asarray(1) : ts.asarray(4, dtype=ts.int8)] == "bcd"


class tensor(np.ndarray):  # noqa: N801 - the class name is what numpy's repr prints
    """numpy's repr of this subclass is 'tensor(...)', the spelling tensorsmith mirrors."""


@pytest.mark.parametrize(
    "a",
    [
        np.arange(3.0),
        np.arange(6, dtype=np.int8).reshape(2, 3),
        np.array(2.5),
        np.zeros((0, 2), np.float32),
        np.zeros(0),
        np.array([True]),
        np.arange(2000.0),
        np.arange(40, dtype=np.uint16).reshape(4, 10),
        np.array([np.nan, np.inf, -1.5]),
        np.array([1, 2], dtype=np.uint64),
        np.arange(6).reshape(2, 3).T,
    ],
    ids=lambda a: f"{a.dtype}{a.shape}",
)
def test_repr_matches_numpy(a: np.ndarray) -> None:
    assert repr(ts.asarray(a)) == repr(a.view(tensor))


@pytest.mark.parametrize("name", ["int8", "uint16", "int32", "float32", "uint64"])
def test_repr_shows_values_and_non_default_dtype(name: str) -> None:
    r = repr(ts.asarray(np.array([3, 5, 7], dtype=name)))
    assert r.startswith("tensor(")
    for v in ("3", "5", "7"):
        assert v in r
    assert f"dtype={name}" in r


# ---- methods and operators from the catalog ---------------------------------------------

A = np.array([[1.5, -2.0, 3.0], [0.0, 4.0, -1.0]])


@pytest.mark.parametrize(
    ("method", "args", "kwargs"),
    [
        ("sum", (0,), {}),
        ("sum", (), {"axis": 1}),
        ("sum", (), {}),
        ("sum", ((0, 1),), {}),
        ("sum", (), {"axis": -1, "keepdims": True}),
        ("mean", (), {"axis": 0}),
        ("max", (), {"axis": 1}),
        ("min", (), {}),
        ("prod", (), {"axis": 0, "keepdims": True}),
        ("argmax", (), {"axis": 1}),
        ("argmin", (), {}),
        ("argmax", (), {"axis": 0, "keepdims": True}),
        ("abs", (), {}),
    ],
    ids=lambda x: repr(x),
)
def test_reduction_methods_match_numpy(method: str, args, kwargs) -> None:
    got = getattr(ts.asarray(A), method)(*args, **kwargs)
    expected = np.asarray(getattr(np, method)(A, *args, **kwargs))
    assert_same(got, expected)


def test_binary_methods_match_numpy() -> None:
    t = ts.asarray(A)
    assert_same(t.add(1), A + 1)
    assert_same(t.add(t), A + A)
    assert_same(t.multiply(np.array([1.0, 2.0, 3.0])), A * np.array([1.0, 2.0, 3.0]))
    assert_same(t.negative(), -A)


UNARY_OPERATORS = {"neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert}
BINARY_OPERATORS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}
OPERAND_PAIRS = [
    "tensor-tensor",
    "tensor-int",
    "int-tensor",
    "tensor-float",
    "float-tensor",
    "tensor-bool",
    "tensor-ndarray",
    "ndarray-tensor",
    "tensor-list",
    "list-tensor",
]


@pytest.mark.parametrize("name", list(UNARY_OPERATORS))
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_unary_operators_match_numpy(name: str, dtype: str) -> None:
    a = np.array([[-3, 0, 2], [5, -1, 4]], dtype=dtype)
    try:
        expected = UNARY_OPERATORS[name](a)
    except TypeError:  # ~ of a float: numpy has no loop, and the op has no kernel for the dtype
        with pytest.raises((TypeError, NotImplementedError)):
            UNARY_OPERATORS[name](ts.asarray(a))
        return
    assert_same(UNARY_OPERATORS[name](ts.asarray(a)), expected)


@pytest.mark.parametrize("name", list(BINARY_OPERATORS))
@pytest.mark.parametrize("operands", OPERAND_PAIRS)
def test_binary_operators_match_numpy(name: str, operands: str) -> None:
    left_array = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    right_array = np.array([3, 2, 1], dtype=np.int64)

    def operand(kind: str, array: np.ndarray, tensors: bool):
        if kind == "tensor":
            return ts.asarray(array) if tensors else array
        return {"int": 2, "float": 0.5, "bool": True, "ndarray": array, "list": array.tolist()}[kind]

    left, right = operands.split("-")
    op = BINARY_OPERATORS[name]
    try:
        expected = np.asarray(op(operand(left, left_array, False), operand(right, right_array, False)))
    except TypeError:  # int64 & 0.5: numpy has no loop for float64, and the op no kernel
        with pytest.raises((TypeError, NotImplementedError)):
            op(operand(left, left_array, True), operand(right, right_array, True))
        return
    got = op(operand(left, left_array, True), operand(right, right_array, True))
    assert isinstance(got, ts.Tensor), f"{operands}: got {type(got).__name__}, not a Tensor"
    got_np = np.asarray(got)
    assert got_np.dtype == expected.dtype
    assert got_np.shape == expected.shape
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got_np, expected, rtol=1e-15)
    else:
        np.testing.assert_array_equal(got_np, expected)


def test_matmul_operator_matches_numpy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    t = ts.asarray(a)
    np.testing.assert_allclose(np.asarray(t @ t.T), a @ a.T)
    np.testing.assert_allclose(np.asarray(t.T @ t), a.T @ a)
    v = ts.asarray(np.array([1.0, -1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(t @ v), a @ np.array([1.0, -1.0, 2.0]))


def test_matmul_operator_with_ndarray_on_the_right() -> None:
    """Like every other operator, @ takes an array-like operand (the stub says Tensor | ArrayLike)."""
    a = np.arange(6.0).reshape(2, 3)
    m = np.arange(12.0).reshape(3, 4)
    result = ts.asarray(a) @ m
    assert isinstance(result, ts.Tensor)
    np.testing.assert_allclose(np.asarray(result), a @ m)


def test_matmul_operator_with_ndarray_on_the_left() -> None:
    """ndarray.__matmul__ defers to Tensor.__rmatmul__ (__array_priority__), which must then do the product."""
    a = np.arange(6.0).reshape(2, 3)
    result = a.T @ ts.asarray(a)
    assert isinstance(result, ts.Tensor)
    np.testing.assert_allclose(np.asarray(result), a.T @ a)


def test_ndarray_on_the_left_gives_a_tensor() -> None:
    a = np.arange(3, dtype=np.int8)
    r = a + ts.asarray(np.array([1, 2, 3], dtype=np.int8))
    assert isinstance(r, ts.Tensor)
    assert_same(r, a + np.array([1, 2, 3], dtype=np.int8))


def test_comparisons_give_bool_tensors_not_python_bools() -> None:
    t = ts.asarray(np.array([1, 2, 3]))
    eq = t == ts.asarray(np.array([1, 0, 3]))
    assert isinstance(eq, ts.Tensor) and eq.dtype == ts.bool
    assert eq.tolist() == [True, False, True]
    assert (t != 2).tolist() == [True, False, True]


def test_tensors_are_unhashable_like_ndarrays() -> None:
    with pytest.raises(TypeError, match="unhashable"):
        hash(ts.asarray([1]))


def test_array_namespace_is_tensorsmith() -> None:
    t = ts.asarray([1])
    assert t.__array_namespace__() is ts
    assert t.__array_namespace__(api_version="2024.12") is ts
    assert ts.__array_api_version__ == "2024.12"
