// Device queries, the per-device current stream and error checks
// (tensorsmith/cuda/runtime.h, tensorsmith/cuda/device.h).
#include "tensorsmith/cuda/runtime.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tensorsmith/cuda/device.h"
#include "tensorsmith/errors.h"

namespace ts::cuda {

namespace {

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

// The device count never changes within a process (CUDA_VISIBLE_DEVICES is read
// once), so the first probe is kept, with the reason for none.
struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    const cudaError_t status = cudaGetDeviceCount(&r.count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it so later checks do not report it
      r.count = 0;
      r.reason = describe(status);
    } else if (r.count == 0) {
      r.reason = "the driver reports no CUDA device";
    }
    return r;
  }();
  return p;
}

// One stream per device, created on first use and never destroyed (tensors
// may be freed during interpreter exit, after static destructors ran).
struct Streams {
  std::mutex mutex;
  std::vector<cudaStream_t> streams;
};

Streams& streams() {
  static Streams* s = new Streams();
  return *s;
}

void check_index(int index) {
  const int count = device_count();
  TS_CHECK(index >= 0 && index < count, ValueError,
           "CUDA device " << index << " does not exist: "
                          << (count == 0 ? "no CUDA device/driver available (" + probe().reason + ")"
                                         : std::to_string(count) + " CUDA device(s) available"));
}

}  // namespace

int device_count() noexcept { return probe().count; }

bool is_available() noexcept { return device_count() > 0; }

std::string unavailable_reason() { return probe().reason; }

int current_device() {
  TS_CHECK(is_available(), ValueError, "no CUDA device/driver available (" << probe().reason << ")");
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

void set_device(int index) {
  check_index(index);
  check(cudaSetDevice(index), "cudaSetDevice");
}

cudaStream_t current_stream(int device) {
  Streams& s = streams();
  check_index(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.streams.empty()) s.streams.assign(static_cast<size_t>(device_count()), nullptr);
  cudaStream_t& stream = s.streams[static_cast<size_t>(device)];
  if (stream == nullptr) {
    DeviceGuard guard(device);
    // Non-blocking: no implicit ordering with the legacy default stream, which
    // the runtime never uses; every copy and launch names this stream.
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  return stream;
}

void synchronize(int device) {
  DeviceGuard guard(device);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// The op whose kernel was launched last (op names are string literals of the generated kernels).
std::atomic<const char*> g_last_launch{nullptr};

// The errors a kernel raises while it runs: they surface at whatever call next waits for the device.
bool kernel_fault(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
      return true;
    default:
      return false;
  }
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // a non-sticky error must not resurface at the next launch check
  std::ostringstream os;
  os << what << ": CUDA error " << describe(status);
  const char* last = g_last_launch.load(std::memory_order_relaxed);
  if (kernel_fault(status) && last != nullptr && std::string(last) != what) {
    os << " (raised by a kernel that ran before this call; the last launched was " << last << "'s)";
  }
  throw RuntimeError(os.str());
}

void check_launch(const char* op) {
  g_last_launch.store(op, std::memory_order_relaxed);
  check(cudaGetLastError(), op);
}

DeviceGuard::DeviceGuard(int device) : previous_(device), switched_(false) {
  check_index(device);
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) (void)cudaSetDevice(previous_);  // destructors must not throw; the switch back cannot fail for a device used before
}

}  // namespace ts::cuda
