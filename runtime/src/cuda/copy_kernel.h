// Between copy.cpp (host logic) and copy.cu (the kernel): one strided cast copy
// on a device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensorsmith/dtype.h"

namespace ts::cuda {

// Enough for any tensor after size-1 axes are dropped and mergeable axes merged
// (copy.cpp); a layout that still needs more is refused with a clear error.
constexpr int kMaxCopyDims = 25;

// Row-major index space of `shape`; strides in BYTES (may be 0 or negative).
struct CopyLayout {
  int ndim = 0;
  int64_t shape[kMaxCopyDims];
  int64_t out_strides[kMaxCopyDims];
  int64_t in_strides[kMaxCopyDims];
};

// out[i] = cast<to>(in[i]) for the n = prod(shape) elements, on `stream` (of
// the current device). Checks the launch; `what` names the caller.
void launch_cast_copy(DType to, DType from, char* out, const char* in, int64_t n, const CopyLayout& layout,
                      cudaStream_t stream, const char* what);

}  // namespace ts::cuda
