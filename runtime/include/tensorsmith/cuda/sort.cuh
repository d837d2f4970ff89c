// The CUDA sort machinery: a thread per row runs the shared stable merge sort (tensorsmith/sort_rows.h) in
// the row's scratch. Simple and exact; rows long enough to want a block (or a device-wide merge) each are
// the next step for speed.
#pragma once

#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/sort_rows.h"

namespace ts::cuda {

template <typename K, typename T, typename compute_t, SortOutput kOutput>
__global__ void __launch_bounds__(kBlockThreads) sort_thread_rows(SortArgs a) {
  for (int64_t r = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; r < a.rows; r += int64_t{gridDim.x} * blockDim.x) {
    ts::sorting::sort_row<K, T, compute_t, kOutput>(a, r);
  }
}

// The SortKernel of comparator K writing kOutput, on the current stream of a.device.
template <typename K, typename T, typename compute_t, SortOutput kOutput>
void launch_sort(const SortArgs& a, const char* op) {
  if (a.rows == 0 || a.n == 0) return;
  DeviceGuard guard(a.device);
  sort_thread_rows<K, T, compute_t, kOutput>
      <<<grid_for(a.rows, kBlockThreads), kBlockThreads, 0, current_stream(a.device)>>>(a);
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
