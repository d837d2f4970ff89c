// The CUDA side of the core, as generated CUDA kernels and the engines see it:
// device queries, the current stream, and error checks that name the op.
// Only compiled where CUDA is enabled (TS_WITH_CUDA; see CMakeLists.txt).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ts::cuda {

// False (never an exception) without a driver, without a device, or when the
// driver is too old for the runtime.
bool is_available() noexcept;
int device_count() noexcept;

int current_device();
void set_device(int index);  // throws ValueError for an index out of range

// The stream kernels of `device` are launched on. Results reach the host only
// through copies that synchronise it.
cudaStream_t current_stream(int device);
void synchronize(int device);

// Throws ts::RuntimeError naming `what` (an op or a runtime call) and the CUDA
// error, e.g. "add: CUDA error cudaErrorInvalidConfiguration (invalid configuration argument)".
// A kernel's fault (an illegal address, say) surfaces only at the next call that
// waits for it: the error then also names the op whose kernel was launched last.
void check(cudaError_t status, const char* what);
// check() for a launch of `op`'s kernel, which it remembers as the last launched.
void check_launch(const char* op);

}  // namespace ts::cuda

// Every CUDA call and every launch goes through one of these.
#define TS_CUDA_CHECK(expr, what) ::ts::cuda::check((expr), (what))
#define TS_CUDA_CHECK_LAUNCH(op) ::ts::cuda::check_launch(op)
