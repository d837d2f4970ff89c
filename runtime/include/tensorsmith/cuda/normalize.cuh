// The CUDA softmax-family machinery: one fused pass per row computes the row's
// maximum and its sum of exp(x - max) together (the online update: the sum is
// rescaled whenever the maximum grows), then a second pass writes
// N::output(x, row_max, row_sum). A warp per row up to kWarpRowLimit columns,
// else a block per row.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/scalar_ops.h"

namespace ts::cuda {

constexpr int64_t kWarpRowLimitNormalize = 1024;  // rows up to this long get a warp each

template <typename acc_t>
struct RowStats {
  acc_t max;  // -inf while the row had no element but -inf
  acc_t sum;  // of exp(x - max)
};

// exp(from - to) for a sum kept relative to `from`, now relative to `to` (>= from).
template <typename acc_t>
__device__ __forceinline__ acc_t rescale(acc_t from, acc_t to) {
  return from == -std::numeric_limits<acc_t>::infinity() ? acc_t(0) : std::exp(from - to);
}

template <typename acc_t>
__device__ __forceinline__ RowStats<acc_t> merge_stats(RowStats<acc_t> a, RowStats<acc_t> b) {
  const acc_t m = ts::ops::maximum(a.max, b.max);  // NaN wins
  if (m == -std::numeric_limits<acc_t>::infinity()) return RowStats<acc_t>{m, a.sum + b.sum};  // 0, or a NaN kept
  return RowStats<acc_t>{m, a.sum * rescale(a.max, m) + b.sum * rescale(b.max, m)};
}

// One exp per element: the sum is rescaled only when the maximum grows. The element that sets the
// maximum adds exp(x - x), not 1, so that +inf gives NaN as exp(inf - inf) does in the reference.
template <typename acc_t>
__device__ __forceinline__ RowStats<acc_t> add_element(RowStats<acc_t> s, acc_t x) {
  if (x == -std::numeric_limits<acc_t>::infinity()) return s;  // contributes exp(-inf) = 0
  if (!(x <= s.max)) return RowStats<acc_t>{x, s.sum * rescale(s.max, x) + std::exp(x - x)};  // a new maximum, or NaN
  return RowStats<acc_t>{s.max, s.sum + std::exp(x - s.max)};
}

template <typename N, typename T, typename acc_t, int kThreadsPerRow>
__global__ void __launch_bounds__(kBlockThreads) normalize_rows(RowArgs a) {
  constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
  __shared__ RowStats<acc_t> shared[kBlockThreads / kWarpSize];
  const auto merge = [](RowStats<acc_t> x, RowStats<acc_t> y) { return merge_stats(x, y); };
  const int lane = threadIdx.x % kThreadsPerRow;
  for (int64_t r = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kThreadsPerRow; r - threadIdx.x / kThreadsPerRow < a.rows;
       r += int64_t{gridDim.x} * kRowsPerBlock) {
    const bool live = r < a.rows;  // block-per-row: every thread reaches block_fold
    const T* in = reinterpret_cast<const T*>(a.in) + (live ? r : 0) * a.cols;
    RowStats<acc_t> s{-std::numeric_limits<acc_t>::infinity(), acc_t(0)};
    if (live) {
      for (int64_t c = lane; c < a.cols; c += kThreadsPerRow) s = add_element(s, static_cast<acc_t>(in[c]));
    }
    if constexpr (kThreadsPerRow == kWarpSize) {
      s = shfl_first(warp_fold(s, merge));  // lane 0 has the row's stats; every lane needs them
    } else {
      __shared__ RowStats<acc_t> row;
      s = block_fold(s, shared, merge);
      if (threadIdx.x == 0) row = s;
      __syncthreads();
      s = row;
      __syncthreads();
    }
    if (live) {
      T* out = reinterpret_cast<T*>(a.out) + r * a.cols;
      const acc_t row_max = s.max, row_sum = s.sum;
      for (int64_t c = lane; c < a.cols; c += kThreadsPerRow) out[c] = N::output(static_cast<acc_t>(in[c]), row_max, row_sum);
    }
  }
}

// The RowKernel of functor N, on the current stream of a.device.
template <typename N, typename T, typename acc_t>
void launch_normalize(const RowArgs& a, const char* op) {
  launch_rows(normalize_rows<N, T, acc_t, kWarpSize>, normalize_rows<N, T, acc_t, kBlockThreads>, a, a.rows, a.cols,
              kWarpRowLimitNormalize, a.device, op);
}

}  // namespace ts::cuda
