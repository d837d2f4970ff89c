// CUDA device helpers beyond runtime.h: why no device is available, and a
// scoped switch of the calling thread's current device. Free of CUDA types, so
// the core and the bindings include it in every build; defined only where
// CUDA is enabled (TS_WITH_CUDA).
#pragma once

#include <string>

namespace ts::cuda {

// Why is_available() is false, e.g. "cudaErrorNoDevice (no CUDA-capable device
// is detected)"; empty when a device is available.
std::string unavailable_reason();

// Makes `device` current for the calling thread until the guard dies.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
  bool switched_;
};

}  // namespace ts::cuda
