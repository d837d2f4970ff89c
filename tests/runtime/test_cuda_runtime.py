"""The CUDA runtime: what every build must do without a GPU (run everywhere), and what a GPU must do (skipped,
with the reason in the summary, where no CUDA device is available)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorsmith as ts

BUILT = ts.build_info()["cuda"]
STAT_KEYS = {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "num_allocs", "num_frees", "cache_hits"}
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]

gpu = pytest.mark.skipif(
    not ts.cuda.is_available(),
    reason="no CUDA device: " + ("no GPU or driver on this machine" if BUILT else "tensorsmith was built without CUDA"),
)


# ---- every build, no GPU needed -------------------------------------------------------------------------------------


def test_build_info_says_whether_cuda_is_compiled_in() -> None:
    info = ts.build_info()
    assert ts.cuda.is_built() is info["cuda"]
    if info["cuda"]:
        assert info["cuda_runtime_version"].split(".")[0].isdigit()
        # e.g. "80,90", or "80-virtual" (PTX only, as CI builds it)
        assert all(re.fullmatch(r"\d+(?:-real|-virtual)?", arch) for arch in info["cuda_architectures"].split(","))
    else:
        assert info["cuda_runtime_version"] is None and info["cuda_architectures"] is None


@pytest.mark.skipif(ts.cuda.is_available(), reason="a CUDA device is available: the no-device behaviour cannot be seen")
class TestWithoutDevice:
    WHY = "no CUDA device/driver available" if BUILT else "tensorsmith was built without CUDA"

    def test_queries_answer_without_crashing(self) -> None:
        assert ts.cuda.is_available() is False
        assert ts.cuda.device_count() == 0
        assert ts.cuda.memory_stats() == dict.fromkeys(STAT_KEYS, 0)
        ts.cuda.empty_cache()  # nothing cached: a no-op, not an error
        ts.cuda.reset_peak_memory_stats()
        assert ts.cuda.memory_stats() == dict.fromkeys(STAT_KEYS, 0)

    @pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3", ts.Device("cuda:1")], ids=str)
    def test_cuda_devices_are_refused_with_the_reason(self, device) -> None:
        t = ts.asarray([1.0, 2.0])
        for call in (
            lambda: ts.asarray([1.0], device=device),
            lambda: t.to(device),
            lambda: t.to_device(device),
            lambda: t.astype(ts.float32, device=device),
            lambda: ts.from_dlpack(np.arange(2.0), device=device),
        ):
            with pytest.raises(ValueError, match=rf"^device '{device}' is not available: {self.WHY}"):
                call()

    def test_device_functions_say_why(self) -> None:
        for call in (ts.cuda.current_device, lambda: ts.cuda.set_device(0), ts.cuda.synchronize):
            with pytest.raises(ValueError, match="no CUDA device|built without CUDA"):
                call()

    def test_cpu_moves_are_free_and_exact(self) -> None:
        a = np.arange(6.0).reshape(2, 3)
        t = ts.asarray(a)
        for same in (t.to("cpu"), t.cpu(), t.to_device("cpu"), ts.asarray(t, device="cpu")):
            assert np.shares_memory(np.asarray(same), a)
        assert t.__dlpack_device__() == (1, 0)
        with pytest.raises(ValueError, match="stream must be None"):
            t.to_device("cpu", stream=1)


# ---- on a GPU -------------------------------------------------------------------------------------------------------


def values(dtype: str, shape=(3, 5)) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_of_every_dtype(dtype) -> None:
    a = values(dtype)
    t = ts.asarray(a, device="cuda")
    assert t.device == "cuda:0" and str(t.device) == "cuda:0" and t.dtype == ts.dtype(dtype)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    np.testing.assert_array_equal(ts.asarray(a).to("cuda").to("cpu").numpy(), a)
    assert t.tolist() == a.tolist()
    assert "tensor(" in repr(t)


@gpu
def test_strided_and_broadcast_copies() -> None:
    a = np.arange(4 * 6 * 5, dtype=np.float64).reshape(4, 6, 5)
    t = ts.asarray(a, device="cuda")
    for view, expected in ((t.T, a.T), (t[::2, 1::3, ::-1], a[::2, 1::3, ::-1]), (t[:, 2], a[:, 2])):
        np.testing.assert_array_equal(view.cpu().numpy(), expected)  # device -> host of a strided view
        np.testing.assert_array_equal(view.copy().cpu().numpy(), expected)  # on-device strided copy
    row = ts.asarray(np.arange(5.0), device="cuda")
    np.testing.assert_array_equal(ts.broadcast_to(row, (3, 5)).cpu().numpy(), np.broadcast_to(np.arange(5.0), (3, 5)))
    # Host -> device into a strided destination, broadcasting the source.
    dst = ts.asarray(np.zeros((4, 6)), device="cuda")
    dst[:, ::2] = np.arange(4.0).reshape(4, 1)
    expected = np.zeros((4, 6))
    expected[:, ::2] = np.arange(4.0).reshape(4, 1)
    np.testing.assert_array_equal(dst.cpu().numpy(), expected)
    # An overlapping source on the device is read before it is written.
    x = ts.asarray(np.arange(10.0), device="cuda")
    x[1:] = x[:-1]
    assert x.tolist() == [0.0, 0, 1, 2, 3, 4, 5, 6, 7, 8]


@gpu
@pytest.mark.parametrize("to", DTYPES)
@pytest.mark.parametrize("frm", ["bool", "int8", "uint64", "float32", "float64"])
def test_casts_match_the_cpu(frm, to) -> None:
    a = values(frm)
    if frm.startswith("float"):
        a.flat[:4] = [np.nan, np.inf, -1.5, 3e20]  # the conversions C leaves undefined follow the CPU copy
    on_cpu = ts.asarray(a).astype(to).numpy()
    on_gpu = ts.asarray(a, device="cuda").astype(to)
    assert on_gpu.device == "cuda:0"
    np.testing.assert_array_equal(on_gpu.cpu().numpy(), on_cpu)
    np.testing.assert_array_equal(ts.asarray(a, device="cuda").T.astype(to).cpu().numpy(), on_cpu.T)


@gpu
def test_allocator_reuses_blocks_and_counts() -> None:
    ts.cuda.synchronize()
    ts.cuda.empty_cache()
    before = ts.cuda.memory_stats()
    t = ts.asarray(np.zeros(1000, np.float32), device="cuda")  # 4000 bytes -> one 4096-byte block
    during = ts.cuda.memory_stats()
    assert during["allocated_bytes"] - before["allocated_bytes"] == 4096
    assert during["num_allocs"] == before["num_allocs"] + 1
    assert during["reserved_bytes"] >= during["allocated_bytes"]
    assert during["peak_allocated_bytes"] >= during["allocated_bytes"]
    del t
    after = ts.cuda.memory_stats()
    assert after["allocated_bytes"] == before["allocated_bytes"] and after["num_frees"] == before["num_frees"] + 1
    assert after["reserved_bytes"] == during["reserved_bytes"]  # cached, not freed
    u = ts.asarray(np.ones(1000, np.float32), device="cuda")  # same size class: served from the cache
    assert ts.cuda.memory_stats()["cache_hits"] == after["cache_hits"] + 1
    assert ts.cuda.memory_stats()["reserved_bytes"] == during["reserved_bytes"]
    assert u.tolist() == [1.0] * 1000
    del u
    ts.cuda.empty_cache()
    emptied = ts.cuda.memory_stats()
    assert emptied["reserved_bytes"] == emptied["allocated_bytes"]
    ts.cuda.reset_peak_memory_stats()
    assert ts.cuda.memory_stats()["peak_allocated_bytes"] == emptied["allocated_bytes"]


@gpu
def test_out_of_memory_is_a_memory_error_naming_the_size() -> None:
    with pytest.raises(MemoryError, match=r"CUDA out of memory: cannot allocate \d+ bytes on cuda:0"):
        ts.broadcast_to(ts.asarray(1.0, device="cuda"), (2**45,)).copy()  # 256 TiB


@gpu
def test_numpy_refuses_device_memory() -> None:
    t = ts.asarray([1.0, 2.0], device="cuda")
    with pytest.raises(TypeError, match=r"call \.cpu\(\) first"):
        np.asarray(t)
    with pytest.raises(TypeError, match=r"call \.cpu\(\) first"):
        t.numpy()
    assert float(t[1]) == 2.0 and bool(t[0]) and t[0].item() == 1.0


@gpu
def test_dlpack_round_trip_on_the_device() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ts.asarray(a, device="cuda")
    assert t.__dlpack_device__() == (2, 0)
    shared = ts.from_dlpack(t)
    assert shared.device == "cuda:0"
    shared[0, 0] = 100  # the same device memory
    assert t[0, 0].item() == 100
    for stream in (None, 1, 2, -1):
        assert ts.from_dlpack(t.T.__dlpack__(stream=stream)).device == "cuda:0"
    with pytest.raises(ValueError, match="stream=0 is ambiguous"):
        t.__dlpack__(stream=0)
    on_host = ts.from_dlpack(t, device="cpu")
    assert on_host.device == "cpu" and on_host.tolist() == t.tolist()
    with pytest.raises(ValueError, match="requires a copy"):
        ts.from_dlpack(t, device="cpu", copy=False)
    host_capsule = t.__dlpack__(dl_device=(1, 0), max_version=(1, 0))  # exported as a host copy
    assert ts.from_dlpack(type("P", (), {"__dlpack__": lambda self, **k: host_capsule})()).tolist() == t.tolist()
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no foreign CUDA producer to exchange with")
    if torch.cuda.is_available():
        tt = torch.arange(6, device="cuda", dtype=torch.float32)
        assert ts.from_dlpack(tt).tolist() == tt.tolist()
        assert torch.from_dlpack(t).tolist() == t.tolist()


@gpu
def test_mixed_devices_are_a_clear_error() -> None:
    on_gpu = ts.asarray([1.0, 2.0], device="cuda")
    with pytest.raises(ValueError, match=r"expected all inputs on one device, got cuda:0 and cpu"):
        ts.add(on_gpu, ts.asarray([1.0, 2.0]))

