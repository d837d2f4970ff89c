// The CUDA standardization machinery (layer norm's rows): per row, the mean of x, the variance of x - mean
// (a second pass over the row, as the reference computes it), rstd = 1 / sqrt(variance + eps), and for the
// gradient (g set) the means of g and of g n, n = (x - mean) rstd; then S::output per element. A warp per
// row up to kWarpRowLimitStandardize columns, else a block per row.
#pragma once

#include <cmath>
#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

constexpr int64_t kWarpRowLimitStandardize = 1024;  // rows up to this long get a warp each

// The sum over a row of term(c), c = lane, lane + kThreadsPerRow, ...: every lane of the row's warp (or
// every thread of its block) gets it. `shared` holds one value per warp of the block.
template <int kThreadsPerRow, typename acc_t, typename Term>
__device__ __forceinline__ acc_t row_total(int64_t cols, int lane, acc_t* shared, Term term) {
  acc_t s = 0;
  for (int64_t c = lane; c < cols; c += kThreadsPerRow) s += term(c);
  const auto add = [](acc_t a, acc_t b) { return a + b; };
  if constexpr (kThreadsPerRow == kWarpSize) {
    return shfl_first(warp_fold(s, add));
  } else {
    __shared__ acc_t total;
    s = block_fold(s, shared, add);
    if (threadIdx.x == 0) total = s;
    __syncthreads();
    s = total;
    __syncthreads();
    return s;
  }
}

template <typename S, typename T, typename acc_t, int kThreadsPerRow>
__global__ void __launch_bounds__(kBlockThreads) standardize_rows(StandardizeArgs a) {
  constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
  __shared__ acc_t shared[kBlockThreads / kWarpSize];
  const int lane = threadIdx.x % kThreadsPerRow;
  const acc_t count = static_cast<acc_t>(a.cols);
  for (int64_t r = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
       r - threadIdx.x / kThreadsPerRow < a.rows; r += int64_t{gridDim.x} * kRowsPerBlock) {
    const bool live = r < a.rows;  // block-per-row: every thread reaches the block folds
    const int64_t cols = live ? a.cols : 0;
    const T* x = reinterpret_cast<const T*>(a.x) + (live ? r : 0) * a.cols;
    const T* g = a.g != nullptr ? reinterpret_cast<const T*>(a.g) + (live ? r : 0) * a.cols : nullptr;
    const acc_t mean =
        row_total<kThreadsPerRow, acc_t>(cols, lane, shared, [&](int64_t c) { return static_cast<acc_t>(x[c]); }) /
        count;
    const acc_t variance = row_total<kThreadsPerRow, acc_t>(cols, lane, shared, [&](int64_t c) {
      const acc_t centered = static_cast<acc_t>(x[c]) - mean;
      return centered * centered;
    }) / count;
    const acc_t rstd = acc_t(1) / std::sqrt(variance + static_cast<acc_t>(a.eps));
    acc_t g_mean = 0, gn_mean = 0;
    if (g != nullptr) {
      g_mean =
          row_total<kThreadsPerRow, acc_t>(cols, lane, shared, [&](int64_t c) { return static_cast<acc_t>(g[c]); }) /
          count;
      gn_mean = row_total<kThreadsPerRow, acc_t>(cols, lane, shared, [&](int64_t c) {
        return static_cast<acc_t>(g[c]) * ((static_cast<acc_t>(x[c]) - mean) * rstd);
      }) / count;
    }
    if (live) {
      T* out = reinterpret_cast<T*>(a.out) + r * a.cols;
      for (int64_t c = lane; c < a.cols; c += kThreadsPerRow) {
        const acc_t gc = g != nullptr ? static_cast<acc_t>(g[c]) : acc_t(0);
        out[c] = S::output(gc, static_cast<acc_t>(x[c]), mean, rstd, g_mean, gn_mean);
      }
    }
  }
}

// The StandardizeKernel of functor S, on the current stream of a.device.
template <typename S, typename T, typename acc_t>
void launch_standardize(const StandardizeArgs& a, const char* op) {
  launch_rows(standardize_rows<S, T, acc_t, kWarpSize>, standardize_rows<S, T, acc_t, kBlockThreads>, a, a.rows, a.cols,
              kWarpRowLimitStandardize, a.device, op);
}

}  // namespace ts::cuda
