"""Zero-copy exchange with numpy, the buffer protocol, DLPack and (when importable) torch.

"Zero-copy" is checked by sharing (np.shares_memory, or a write on one side
showing on the other), and "keeps the memory alive" by deleting the producer,
collecting, reusing the freed memory and reading the consumer.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tensorsmith as ts

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16",
          "complex64", "complex128"]  # fmt: skip
# bfloat16 (no buffer-protocol format, numpy cannot import it through DLPack): tests/runtime/test_half.py
KDLCPU = 1  # DLPack's device type for host memory


def sample(name: str, shape=(3, 4)) -> np.ndarray:
    n = int(np.prod(shape))
    values = np.arange(n) % 2 if name == "bool" else (np.arange(n) % 5) + 1
    if name.startswith("complex"):
        values = values - 1j * (np.arange(n) % 3)
    return values.astype(name).reshape(shape)


def runtime_tensor(n: int = 4096) -> tuple[ts.Tensor, np.ndarray]:
    """A tensor in memory the runtime allocated itself (not borrowed from numpy), and its expected values."""
    expected = np.arange(n, dtype=np.float64) + 0.5
    return ts.add(ts.asarray(np.arange(n, dtype=np.float64)), 0.5), expected


def reuse_freed_memory(n: int = 4096) -> list:
    """Allocations the size of runtime_tensor's, to overwrite its block if it was wrongly freed."""
    return [ts.multiply(ts.asarray(np.full(n, -1.0)), 7.0) for _ in range(8)] + [np.full(n, -9.0) for _ in range(8)]


def changed(value):
    """A value of the same Python type that differs from `value` (to see a write land)."""
    return (not value) if isinstance(value, bool) else value + 1


def layouts():
    """(name, ts view, the same view of a numpy array, the numpy base)."""
    base = np.arange(60.0).reshape(5, 12)
    t = ts.asarray(base)
    return {
        "contiguous": (t, base),
        "transposed": (t.T, base.T),
        "strided": (t[::2, 1::3], base[::2, 1::3]),
        "negative-strides": (t[::-1, ::-2], base[::-1, ::-2]),
        "broadcast": (ts.broadcast_to(t[0], (3, 12)), np.broadcast_to(base[0], (3, 12))),
        "0-d": (t[2, 3], base[2, 3, ...]),
        "empty": (t[3:1], base[3:1]),
    }, base


LAYOUTS = list(layouts()[0])


# ---- numpy views of tensors -------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_numpy_method_is_a_zero_copy_view(name: str) -> None:
    t = ts.asarray(sample(name), copy=True)
    v = t.numpy()
    assert v.dtype == np.dtype(name) and v.shape == t.shape and v.strides == t.strides
    assert v.base is t, "the tensor is the array's base, which keeps its memory alive"
    assert v.flags.writeable
    new = changed(v[1, 2].item())
    v[1, 2] = new
    assert t[1, 2].item() == new
    new = changed(t[2, 3].item())
    t[2, 3] = new
    assert v[2, 3].item() == new
    assert np.shares_memory(np.asarray(t), v)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_np_asarray_views_every_layout(layout: str) -> None:
    cases, base = layouts()
    t, expected = cases[layout]
    v = np.asarray(t)
    assert v.shape == expected.shape
    assert v.strides == expected.strides == t.strides
    np.testing.assert_array_equal(v, expected)
    if v.size:
        assert np.shares_memory(v, base)


def test_np_asarray_write_shows_in_tensor() -> None:
    t, _ = runtime_tensor(10)
    v = np.asarray(t)
    v[3] = -42.0
    assert t[3].item() == -42.0


@pytest.mark.parametrize(
    "export",
    [lambda t: t.numpy(), np.asarray, lambda t: np.asarray(memoryview(t)), np.from_dlpack, lambda t: t.__array__()],
    ids=["numpy()", "np.asarray", "memoryview", "np.from_dlpack", "__array__"],
)
def test_numpy_view_keeps_tensor_memory_alive(export) -> None:
    t, expected = runtime_tensor()
    v = export(t)
    assert np.shares_memory(v, t.numpy())
    del t
    gc.collect()
    junk = reuse_freed_memory()
    np.testing.assert_array_equal(v, expected)
    v[0] = 123.0  # still writable memory of its own
    assert v[0] == 123.0
    del junk


def test_array_dunder_dtype_and_copy() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ts.asarray(a)
    assert np.shares_memory(t.__array__(), a)
    assert np.shares_memory(t.__array__(copy=False), a)
    copied = t.__array__(copy=True)
    assert not np.shares_memory(copied, a)
    np.testing.assert_array_equal(copied, a)
    cast = t.__array__(np.float64)
    assert cast.dtype == np.float64
    np.testing.assert_array_equal(cast, a.astype(np.float64))
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert np.shares_memory(np.asarray(t, dtype=np.int32), a)  # same dtype: still a view


def test_np_array_copies_and_np_asarray_copy_false_refuses_a_cast() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ts.asarray(a)
    c = np.array(t)
    assert not np.shares_memory(c, a)
    c[0, 0] = 5
    assert t[0, 0].item() == 0
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float64, copy=False)


@pytest.mark.parametrize("ufunc", [np.exp, np.negative, np.sqrt, np.isnan])
def test_numpy_ufuncs_accept_tensors(ufunc) -> None:
    a = np.array([[0.5, 1.0], [2.0, 4.0]])
    np.testing.assert_array_equal(ufunc(ts.asarray(a)), ufunc(a))


@pytest.mark.parametrize("fn", ["argmax", "argmin", "transpose", "ravel", "cumsum", "sort"])
def test_numpy_functions_accept_tensors(fn: str) -> None:
    a = np.array([[3.0, -1.0, 2.0], [0.0, 5.0, 1.0]])
    np.testing.assert_array_equal(np.asarray(getattr(np, fn)(ts.asarray(a))), getattr(np, fn)(a))


@pytest.mark.parametrize("fn", ["sum", "mean", "max", "min", "prod"])
def test_numpy_reductions_accept_tensors(fn: str) -> None:
    """np.sum(obj) calls obj.sum(axis=None, out=None) on non-ndarrays, so the methods must take out=None."""
    a = np.array([[3.0, -1.0, 2.0], [0.5, 5.0, 1.0]])
    t = ts.asarray(a)
    np.testing.assert_allclose(np.asarray(getattr(np, fn)(t)), getattr(np, fn)(a))
    np.testing.assert_allclose(np.asarray(getattr(np, fn)(t, axis=0)), getattr(np, fn)(a, axis=0))


# ---- buffer protocol ---------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_memoryview_describes_the_tensor(name: str) -> None:
    a = sample(name)
    t = ts.asarray(a)
    m = memoryview(t)
    assert np.asarray(m).dtype == np.dtype(name), m.format  # numpy's dtype() does not parse "Zf"; its buffer import does
    assert m.itemsize == np.dtype(name).itemsize
    assert m.shape == a.shape and m.strides == a.strides and m.ndim == 2
    assert not m.readonly
    assert (np.asarray(m) if m.format in ("e", "Zf", "Zd") else m).tolist() == a.tolist()  # memoryview.tolist lacks these
    assert np.shares_memory(np.asarray(m), a)


def test_memoryview_of_non_contiguous_and_0d_tensors() -> None:
    a = np.arange(24.0).reshape(4, 6)
    v = ts.asarray(a)[::-1, ::3]
    m = memoryview(v)
    assert m.strides == a[::-1, ::3].strides == (-48, 24)
    assert not m.c_contiguous
    assert m.tolist() == a[::-1, ::3].tolist()
    z = memoryview(ts.asarray(np.array(2.5)))
    assert z.shape == () and z.tolist() == 2.5


def test_write_through_memoryview() -> None:
    t = ts.asarray(np.array([1, 2, 3], dtype=np.int16))
    m = memoryview(t)
    m[1] = -7
    assert t.tolist() == [1, -7, 3]


# ---- DLPack with numpy ---------------------------------------------------------------------


def test_dlpack_device_is_cpu() -> None:
    assert ts.asarray([1.0]).__dlpack_device__() == (KDLCPU, 0)


@pytest.mark.parametrize(
    ("max_version", "capsule_name"),
    [(None, '"dltensor"'), ((0, 8), '"dltensor"'), ((1, 0), '"dltensor_versioned"'), ((1, 3), '"dltensor_versioned"')],
)
def test_dlpack_capsule_kind_follows_max_version(max_version, capsule_name: str) -> None:
    t = ts.asarray(np.arange(3.0))
    cap = t.__dlpack__() if max_version is None else t.__dlpack__(max_version=max_version)
    assert capsule_name in repr(cap)


def test_dlpack_export_to_cpu_dl_device() -> None:
    t = ts.asarray(np.arange(3.0))
    assert "dltensor" in repr(t.__dlpack__(dl_device=(KDLCPU, 0)))


@pytest.mark.parametrize("name", DTYPES)
def test_np_from_dlpack_shares_tensor_memory(name: str) -> None:
    t = ts.asarray(sample(name), copy=True)
    n = np.from_dlpack(t)
    assert n.dtype == np.dtype(name)
    np.testing.assert_array_equal(n, t.numpy())
    assert np.shares_memory(n, t.numpy())
    new = changed(n[0, 1].item())
    n[0, 1] = new
    assert t[0, 1].item() == new


@pytest.mark.parametrize("layout", LAYOUTS)
def test_np_from_dlpack_of_every_layout(layout: str) -> None:
    cases, base = layouts()
    t, expected = cases[layout]
    n = np.from_dlpack(t)
    assert n.shape == expected.shape
    assert n.strides == expected.strides
    np.testing.assert_array_equal(n, expected)
    if n.size:
        assert np.shares_memory(n, base)


@pytest.mark.parametrize("name", DTYPES)
def test_ts_from_dlpack_shares_numpy_memory(name: str) -> None:
    a = sample(name)
    t = ts.from_dlpack(a)
    assert t.dtype == getattr(ts, name)
    assert t.tolist() == a.tolist()
    new = changed(a[2, 1].item())
    a[2, 1] = new
    assert t[2, 1].item() == new
    assert np.shares_memory(t.numpy(), a)


@pytest.mark.parametrize(
    "view",
    [lambda a: a.T, lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a[1:, ::3], lambda a: a[2, 3, ...]],
    ids=["transposed", "reversed", "neg-step", "strided", "0-d"],
)
def test_ts_from_dlpack_of_non_contiguous_numpy_arrays(view) -> None:
    base = np.arange(60, dtype=np.int32).reshape(5, 12)
    v = view(base)
    t = ts.from_dlpack(v)
    assert t.shape == v.shape and t.strides == v.strides
    assert t.tolist() == v.tolist()
    assert np.shares_memory(t.numpy(), base)


def test_ts_from_dlpack_of_a_tensor_and_round_trip() -> None:
    a = np.arange(10.0)
    t = ts.asarray(a)
    assert np.shares_memory(ts.from_dlpack(t).numpy(), a)
    back = ts.from_dlpack(np.from_dlpack(t[::-2]))
    assert back.tolist() == a[::-2].tolist()
    assert np.shares_memory(back.numpy(), a)


def test_dlpack_copy_true_copies_both_ways() -> None:
    a = np.arange(5, dtype=np.int16)
    t = ts.from_dlpack(a, copy=True)
    a[1] = 100
    assert t.tolist() == [0, 1, 2, 3, 4]
    n = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(n, t.numpy())
    np.testing.assert_array_equal(n, t.numpy())


def test_ts_from_dlpack_copies_read_only_numpy_arrays() -> None:
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = ts.from_dlpack(ro)
    t[0] = 1
    assert ro[0] == 0 and t.tolist() == [1.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        ts.from_dlpack(ro, copy=False)


def test_ts_from_dlpack_accepts_legacy_producers() -> None:
    class Legacy:  # pre-DLPack-1.0 producer: __dlpack__ takes no keywords
        def __init__(self, a):
            self.a = a

        def __dlpack__(self):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(3)
    t = ts.from_dlpack(Legacy(a))
    assert t.tolist() == [0, 1, 2]
    assert np.shares_memory(t.numpy(), a)


def test_ts_from_dlpack_keeps_producer_memory_alive() -> None:
    def make() -> ts.Tensor:
        return ts.from_dlpack(np.arange(4096, dtype=np.float64) * 3)

    t = make()
    gc.collect()
    junk = reuse_freed_memory()
    assert t[4095].item() == 4095 * 3 and t[1].item() == 3
    del junk


# ---- torch -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def torch_dtype(torch, name: str):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"this torch has no {name}")
    return dtype


@pytest.mark.parametrize("name", DTYPES)
def test_torch_from_dlpack_shares_tensor_memory(torch, name: str) -> None:
    t = ts.asarray(sample(name), copy=True)
    x = torch.from_dlpack(t)
    assert x.dtype == torch_dtype(torch, name)
    assert tuple(x.shape) == t.shape
    assert x.tolist() == t.tolist()
    new = changed(x[0, 1].item())
    x[0, 1] = new
    assert t[0, 1].item() == new


# Not negative strides: torch cannot import them (torch.from_dlpack(np.arange(3)[::-1]) aborts the process).
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "broadcast", "0-d", "empty"])
def test_torch_from_dlpack_of_layouts(torch, layout: str) -> None:
    cases, base = layouts()
    t, expected = cases[layout]
    x = torch.from_dlpack(t)
    assert tuple(x.shape) == expected.shape
    assert tuple(s * 8 for s in x.stride()) == expected.strides
    np.testing.assert_array_equal(np.array(x.tolist()).reshape(expected.shape), expected)
    if x.numel():
        assert x.data_ptr() == np.asarray(t).ctypes.data, "torch must view the tensor's memory, not a copy"


@pytest.mark.parametrize("name", DTYPES)
def test_ts_from_dlpack_shares_torch_memory(torch, name: str) -> None:
    x = torch.from_numpy(sample(name))
    t = ts.from_dlpack(x)
    assert t.dtype == getattr(ts, name)
    assert t.tolist() == x.tolist()
    new = changed(x[2, 1].item())
    x[2, 1] = new
    assert t[2, 1].item() == new


@pytest.mark.parametrize(
    "view",
    [lambda x: x.t(), lambda x: x[::2, 1::3], lambda x: x[0].expand(4, 12), lambda x: x[1, 2], lambda x: x[3:1]],
    ids=["transposed", "strided", "expanded", "0-d", "empty"],
)
def test_ts_from_dlpack_of_non_contiguous_torch_tensors(torch, view) -> None:
    base = torch.arange(60, dtype=torch.float32).reshape(5, 12)
    x = view(base)
    t = ts.from_dlpack(x)
    assert t.shape == tuple(x.shape)
    assert t.strides == tuple(s * 4 for s in x.stride())
    assert t.tolist() == x.tolist()
    if x.numel():
        assert np.asarray(t).ctypes.data == x.data_ptr()


def test_torch_round_trip_keeps_memory_alive(torch) -> None:
    def to_torch():
        t, expected = runtime_tensor()
        return torch.from_dlpack(t), expected

    x, expected = to_torch()
    gc.collect()
    junk = reuse_freed_memory()
    np.testing.assert_array_equal(np.array(x.tolist()).reshape(expected.shape), expected)

    def to_ts():
        return ts.from_dlpack(torch.arange(4096, dtype=torch.float64) * 2)

    t = to_ts()
    gc.collect()
    junk += [torch.full((4096,), -1.0, dtype=torch.float64) for _ in range(8)]
    assert t[4095].item() == 8190.0 and t[1].item() == 2.0
    del junk


@pytest.mark.parametrize("name", ["complex32"])  # torch's 16-bit-part complex: no tensorsmith dtype
def test_ts_from_dlpack_refuses_unsupported_torch_dtypes(torch, name: str) -> None:
    x = torch.zeros(2, dtype=torch_dtype(torch, name))
    with pytest.raises(TypeError, match=r"DLPack dtype \(code \d+, bits \d+.*not supported by tensorsmith"):
        ts.from_dlpack(x)
