"""Broadcast views are read-only, as numpy's broadcast_to is: every way of writing into one is refused.

Each write is tried on numpy's broadcast_to view too, and both must refuse it with the same exception;
the memory under the view must be unchanged afterwards. Views of a read-only tensor stay read-only and
copies are writeable, as in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorsmith as ts


def pair(shape=(2, 3)):
    """(ts base, ts broadcast view, numpy base, numpy broadcast view) over the same values."""
    base = np.arange(3.0)
    t = ts.asarray(base.copy())
    return t, ts.broadcast_to(t, shape), base, np.broadcast_to(base, shape)


def refusal(write, target) -> type[BaseException] | None:
    try:
        write(target)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return None


def assert_refused_like_numpy(write_ts, write_np) -> None:
    t, view, base, np_view = pair()
    before = np.asarray(t).copy()
    expected = refusal(write_np, np_view)
    assert expected is not None, "numpy refuses this write; the test compares against that"
    got = refusal(write_ts, view)
    assert got is expected, f"tensorsmith raised {got}, numpy {expected}"
    np.testing.assert_array_equal(np.asarray(t), before)
    np.testing.assert_array_equal(base, before)  # numpy's side is unchanged as well


def setitem(key, value):
    def write(target):
        target[key] = value

    return write


@pytest.mark.parametrize(
    "key, value",
    [((0, 1), 7.0), (0, 5.0), ((slice(None), 0), 1), (Ellipsis, 0.0), ((), 2.5), ((None, 1), [9.0, 8.0, 7.0])],
    ids=["element", "row", "column", "ellipsis", "empty-tuple", "newaxis"],
)
def test_setitem_into_a_broadcast_view_is_refused(key, value) -> None:
    assert_refused_like_numpy(setitem(key, value), setitem(key, value))
    _, view, _, _ = pair()
    with pytest.raises(ValueError, match=r"^assignment destination is read-only$"):
        view[key] = value


def test_setitem_with_a_tensor_value_is_refused() -> None:
    _, view, _, _ = pair()
    with pytest.raises(ValueError, match=r"assignment destination is read-only"):
        view[0] = ts.asarray([1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "name, args",
    [("add", (1.0, 2.0)), ("exp", (0.5,)), ("negative", (1.0,)), ("maximum", (1.0, 2.0)), ("less", (1.0, 2.0))],
)
def test_out_into_a_broadcast_view_is_refused(name: str, args) -> None:
    ts_args = [ts.asarray(np.full((2, 3), a)) for a in args]
    np_args = [np.full((2, 3), a) for a in args]
    out_dtype = np.bool_ if name == "less" else np.float64

    def write_ts(view):
        target = view if name != "less" else ts.broadcast_to(ts.asarray(np.zeros(3, out_dtype)), (2, 3))
        getattr(ts, name)(*ts_args, out=target)

    def write_np(view):
        target = view if name != "less" else np.broadcast_to(np.zeros(3, out_dtype), (2, 3))
        getattr(np, name)(*np_args, out=target)

    assert_refused_like_numpy(write_ts, write_np)
    _, view, _, _ = pair()
    with pytest.raises(ValueError, match=rf"{name}: out is a broadcast view .* output array is read-only"):
        write_ts(view)
    with pytest.raises(ValueError, match=r"output array is read-only"):
        getattr(ts, name)(*ts_args, out=(view[0:1],) if name != "less" else (ts.broadcast_to(ts.asarray(False), (3,)),))


def test_where_out_into_a_broadcast_view_is_refused() -> None:
    # np.where has no out=; the refusal is the ufuncs' one.
    t, view, _, _ = pair()
    with pytest.raises(ValueError, match=r"where: out is a broadcast view .* output array is read-only"):
        ts.where(True, 1.0, 2.0, out=view)
    np.testing.assert_array_equal(np.asarray(t), np.arange(3.0))


@pytest.mark.parametrize(
    "make",
    [lambda v: v[0], lambda v: v[:, ::2], lambda v: v.T, lambda v: v[None], lambda v: v.reshape(2, 1, 3)],
    ids=["row", "strided", "transposed", "newaxis", "reshape-view"],
)
def test_views_of_a_broadcast_view_stay_read_only(make) -> None:
    _, view, _, np_view = pair()
    sub = make(view)
    assert np.asarray(sub).flags.writeable == make(np_view).flags.writeable is False
    with pytest.raises(ValueError, match=r"assignment destination is read-only"):
        sub[...] = 1.0


def test_asarray_of_a_broadcast_view_is_the_view() -> None:
    _, view, _, np_view = pair()
    assert np.shares_memory(np.asarray(ts.asarray(view)), np.asarray(view))
    assert not np.asarray(np_view).flags.writeable  # numpy's asarray keeps the view, read-only
    with pytest.raises(ValueError, match=r"assignment destination is read-only"):
        ts.asarray(view)[0, 0] = 1.0


@pytest.mark.parametrize(
    "make",
    [lambda v: v.copy(), lambda v: v.astype(ts.float32), lambda v: v.reshape(6), lambda v: ts.asarray(v, copy=True), lambda v: v + 0],
    ids=["copy", "astype", "reshape-copy", "asarray-copy", "op-result"],
)
def test_copies_of_a_broadcast_view_are_writeable(make) -> None:
    t, view, _, _ = pair()
    c = make(view)
    c[(0,) * c.ndim] = 42
    assert np.asarray(c).flags.writeable
    assert c[(0,) * c.ndim].item() == 42
    np.testing.assert_array_equal(np.asarray(t), np.arange(3.0))


def test_the_base_stays_writeable_and_the_view_sees_its_writes() -> None:
    t, view, base, np_view = pair()
    t[1] = 10.0
    base[1] = 10.0
    np.testing.assert_array_equal(np.asarray(view), np_view)


def test_broadcast_to_its_own_shape_is_read_only_too() -> None:
    a = np.arange(3.0)
    assert not np.broadcast_to(a, a.shape).flags.writeable
    with pytest.raises(ValueError, match=r"assignment destination is read-only"):
        ts.broadcast_to(ts.asarray(a), (3,))[0] = 1.0


# ---- exports ------------------------------------------------------------------------------


def test_numpy_views_of_a_broadcast_view_are_read_only() -> None:
    _, view, _, np_view = pair()
    for exported in (np.asarray(view), view.numpy(), np.array(view, copy=False)):
        assert exported.flags.writeable == np_view.flags.writeable is False
        with pytest.raises(ValueError, match=r"assignment destination is read-only"):
            exported[0, 0] = 1.0
    assert np.array(view).flags.writeable, "np.array copies, and its copy is writeable"


def test_buffer_protocol_exports_a_read_only_buffer() -> None:
    _, view, _, np_view = pair()
    assert memoryview(view).readonly == memoryview(np_view).readonly is True
    with pytest.raises(TypeError):
        memoryview(view)[0, 0] = 1.0
    with pytest.raises(TypeError, match=r"not writable"):
        (np.ctypeslib.ctypes.c_double * 6).from_buffer(view)
    assert not memoryview(ts.asarray(np.arange(3.0))).readonly


def test_dlpack_marks_the_capsule_read_only() -> None:
    _, view, _, np_view = pair()
    imported = np.from_dlpack(view)
    assert not imported.flags.writeable
    assert np.shares_memory(imported, np.asarray(view)), "still a zero-copy export"
    np.testing.assert_array_equal(imported, np_view)


def test_legacy_dlpack_refuses_a_read_only_view_as_numpy_does() -> None:
    _, view, _, np_view = pair()
    with pytest.raises(BufferError):
        np_view.__dlpack__()
    with pytest.raises(BufferError, match=r"read-only .* DLPack 0\.x capsule"):
        view.__dlpack__()
    assert type(view.__dlpack__(copy=True)).__name__ == "PyCapsule", "a copy is writeable, so it may go"


def test_from_dlpack_of_a_read_only_view_gives_a_writeable_copy() -> None:
    t, view, _, _ = pair()
    back = ts.from_dlpack(view)
    back[0, 0] = 99.0
    np.testing.assert_array_equal(np.asarray(t), np.arange(3.0))
    with pytest.raises(ValueError, match=r"read-only"):
        ts.from_dlpack(view, copy=False)
