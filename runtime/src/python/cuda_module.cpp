// ts.cuda (present in every build: without CUDA compiled in, or without a
// driver, is_available() is False and the rest says why) and ts.build_info().
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "tensorsmith/errors.h"
#ifdef TS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "tensorsmith/cuda/allocator.h"
#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"
#endif

namespace ts::python {

namespace {

#ifdef TS_WITH_CUDA
constexpr bool kBuiltWithCuda = true;

// A device index argument: None means the current device.
int device_index(py::handle device) {
  if (device.is_none()) return cuda::current_device();
  const Device d = device_arg(py::isinstance<py::int_>(device) ? py::str("cuda:" + std::string(py::str(device)))
                                                                 : py::reinterpret_borrow<py::object>(device));
  TS_CHECK(d.type == DeviceType::CUDA, ValueError, "expected a CUDA device, got '" << device_str(d) << "'");
  return d.index;
}

py::dict stats_dict(const cuda::MemoryStats& s) {
  py::dict d;
  d["allocated_bytes"] = s.allocated_bytes;
  d["reserved_bytes"] = s.reserved_bytes;
  d["peak_allocated_bytes"] = s.peak_allocated_bytes;
  d["num_allocs"] = s.num_allocs;
  d["num_frees"] = s.num_frees;
  d["cache_hits"] = s.cache_hits;
  return d;
}
#else
constexpr bool kBuiltWithCuda = false;

[[noreturn]] void unavailable() {
  throw ts::ValueError("no CUDA device is available: tensorsmith was built without CUDA");
}
#endif

}  // namespace

void bind_cuda(py::module_& m) {
  m.def(
      "build_info",
      [] {
        py::dict info;
        info["cuda"] = kBuiltWithCuda;
#ifdef TS_WITH_CUDA
        info["cuda_runtime_version"] = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
        info["cuda_architectures"] = TS_CUDA_ARCHITECTURES_STR;
#else
        info["cuda_runtime_version"] = py::none();
        info["cuda_architectures"] = py::none();
#endif
        return info;
      },
      "How this tensorsmith was built: {'cuda': bool, 'cuda_runtime_version': str | None, "
      "'cuda_architectures': str | None}.");

  py::module_ c = m.def_submodule("cuda", "CUDA devices: availability, the current device, synchronisation and "
                                          "the caching allocator's memory statistics.");
  c.def("is_built", [] { return kBuiltWithCuda; }, "Whether this tensorsmith was compiled with CUDA.");
#ifdef TS_WITH_CUDA
  c.def("is_available", &cuda::is_available,
        "Whether a CUDA device can be used (False, never an error, without a driver or a device).");
  c.def("device_count", &cuda::device_count, "Number of usable CUDA devices (0 without a driver).");
  c.def("current_device", &cuda::current_device, "Index of the calling thread's current CUDA device.");
  c.def("set_device", [](py::handle device) { cuda::set_device(device_index(device)); }, py::arg("device"),
        "Make a device (an index, 'cuda:1' or a Device) current for the calling thread.");
  c.def(
      "synchronize",
      [](py::handle device) {
        const int index = device_index(device);
        py::gil_scoped_release no_gil;
        cuda::synchronize(index);
      },
      py::arg("device") = py::none(), "Wait until all work queued on a device (default: the current one) has finished.");
  c.def(
      "empty_cache", [] { cuda::empty_cache(); },
      "Return the allocator's cached (unused) device blocks to the driver.");
  c.def(
      "memory_stats",
      [](py::handle device) {
        if (device.is_none() && !cuda::is_available()) return stats_dict(cuda::MemoryStats{});
        return stats_dict(cuda::memory_stats(device_index(device)));
      },
      py::arg("device") = py::none(),
      "The caching allocator's statistics for a device (default: the current one; zeros without a device): "
      "allocated_bytes, reserved_bytes, peak_allocated_bytes, num_allocs, num_frees, cache_hits.");
  c.def(
      "reset_peak_memory_stats",
      [](py::handle device) {
        if (device.is_none() && !cuda::is_available()) return;
        cuda::reset_peak_memory_stats(device_index(device));
      },
      py::arg("device") = py::none(), "Set peak_allocated_bytes to the bytes allocated now.");
#else
  c.def("is_available", [] { return false; }, "Whether a CUDA device can be used (never, in this build).");
  c.def("device_count", [] { return 0; }, "Number of usable CUDA devices (0 in this build).");
  c.def("current_device", []() -> int { unavailable(); }, "Index of the calling thread's current CUDA device.");
  c.def("set_device", [](py::handle) { unavailable(); }, py::arg("device"), "Make a device current.");
  c.def("synchronize", [](py::handle) { unavailable(); }, py::arg("device") = py::none(),
        "Wait until all work queued on a device has finished.");
  c.def("empty_cache", [] {}, "Return cached device blocks to the driver (nothing is cached in this build).");
  c.def(
      "memory_stats",
      [](py::handle) {
        py::dict d;
        for (const char* key : {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "num_allocs", "num_frees",
                                "cache_hits"}) {
          d[key] = 0;
        }
        return d;
      },
      py::arg("device") = py::none(), "The caching allocator's statistics (zeros in this build).");
  c.def("reset_peak_memory_stats", [](py::handle) {}, py::arg("device") = py::none(),
        "Set peak_allocated_bytes to the bytes allocated now (nothing to reset in this build).");
#endif
}

}  // namespace ts::python
