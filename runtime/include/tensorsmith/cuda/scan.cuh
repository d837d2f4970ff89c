// The CUDA scan machinery (cumulative_sum, cumulative_prod). Lines of the scanned axis, one per
// (batch, inner) position: a thread per line where adjacent lines are adjacent in memory (inner extents of
// a warp or more: the warp's loads coalesce) or lines are short; else a block per line, which scans tiles
// of kBlockThreads elements (warp shuffles, then the warps' totals) and carries each tile's total into the
// next. The block scan regroups the fold, so S::combine must be associative, and its identity pads a tile.
// A line's first element starts its fold, as numpy's accumulate does (a sum of -0.0 alone is -0.0): the
// identity is only written first where a.initial is set, and combined only into padding.
#pragma once

#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

constexpr int64_t kShortScan = 32;  // lines up to this long get a thread each

// __shfl_up_sync for any trivially copyable value, moved as 32-bit words.
template <typename V>
__device__ __forceinline__ V shfl_up(V value, int offset) {
  constexpr int kWords = static_cast<int>((sizeof(V) + 3) / 4);
  unsigned words[kWords] = {};
  memcpy(words, &value, sizeof(V));
  for (int i = 0; i < kWords; ++i) words[i] = __shfl_up_sync(0xffffffffu, words[i], offset);
  memcpy(&value, words, sizeof(V));
  return value;
}

// Inclusive scan of one value per lane: lane k ends with the fold of lanes 0..k.
template <typename S, typename acc_t>
__device__ __forceinline__ acc_t warp_scan(acc_t value) {
  const int lane = threadIdx.x % kWarpSize;
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const acc_t earlier = shfl_up(value, offset);
    if (lane >= offset) value = S::combine(earlier, value);
  }
  return value;
}

struct ScanLine {
  const char* in;
  char* out;  // where the scanned elements start (after the identity, where written)
};

// Line `line` of `a`; writes the leading identity when a.initial (by the caller's chosen thread).
template <typename S, typename out_t>
__device__ __forceinline__ ScanLine scan_line(const ScanArgs& a, int64_t line, bool writer) {
  const int64_t b = line / a.n_inner, i = line % a.n_inner;
  ScanLine l{a.in + b * a.in_batch_stride + i * a.in_inner_stride, a.out + b * a.out_batch_stride + i * a.out_inner_stride};
  if (a.initial) {
    if (writer) *reinterpret_cast<out_t*>(l.out) = static_cast<out_t>(S::identity());
    l.out += a.out_scan_stride;
  }
  return l;
}

template <typename S, typename T, typename acc_t, typename out_t>
__global__ void __launch_bounds__(kBlockThreads) scan_thread_lines(ScanArgs a) {
  const int64_t lines = a.n_batch * a.n_inner;
  for (int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; line < lines; line += int64_t{gridDim.x} * blockDim.x) {
    const ScanLine l = scan_line<S, out_t>(a, line, true);
    if (a.n_scan == 0) continue;
    acc_t acc = static_cast<acc_t>(*reinterpret_cast<const T*>(l.in));
    *reinterpret_cast<out_t*>(l.out) = static_cast<out_t>(acc);
    for (int64_t j = 1; j < a.n_scan; ++j) {
      acc = S::combine(acc, static_cast<acc_t>(*reinterpret_cast<const T*>(l.in + j * a.in_scan_stride)));
      *reinterpret_cast<out_t*>(l.out + j * a.out_scan_stride) = static_cast<out_t>(acc);
    }
  }
}

template <typename S, typename T, typename acc_t, typename out_t>
__global__ void __launch_bounds__(kBlockThreads) scan_block_lines(ScanArgs a) {
  constexpr int kWarps = kBlockThreads / kWarpSize;
  __shared__ acc_t warp_totals[kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t lines = a.n_batch * a.n_inner;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const ScanLine l = scan_line<S, out_t>(a, line, threadIdx.x == 0);
    acc_t carry = S::identity();  // the fold of every earlier tile (none before the first)
    for (int64_t base = 0; base < a.n_scan; base += kBlockThreads) {
      const bool first_tile = base == 0;
      const int64_t j = base + threadIdx.x;
      acc_t value = j < a.n_scan ? static_cast<acc_t>(*reinterpret_cast<const T*>(l.in + j * a.in_scan_stride)) : S::identity();
      value = warp_scan<S>(value);
      if (lane == kWarpSize - 1) warp_totals[warp] = value;
      __syncthreads();
      if (warp == 0) {
        const acc_t total = warp_scan<S>(lane < kWarps ? warp_totals[lane] : S::identity());
        if (lane < kWarps) warp_totals[lane] = total;
      }
      __syncthreads();
      if (j < a.n_scan) {
        acc_t result = value;  // lanes of warp 0 of the first tile have nothing before their warp
        if (warp > 0) result = S::combine(warp_totals[warp - 1], result);
        if (!first_tile) result = S::combine(carry, result);
        *reinterpret_cast<out_t*>(l.out + j * a.out_scan_stride) = static_cast<out_t>(result);
      }
      carry = first_tile ? warp_totals[kWarps - 1] : S::combine(carry, warp_totals[kWarps - 1]);
      __syncthreads();  // warp_totals is rewritten by the next tile
    }
  }
}

// The ScanKernel of policy S (static combine(acc, x) and identity()), on the current stream of a.device.
template <typename S, typename T, typename acc_t, typename out_t>
void launch_scan(const ScanArgs& a, const char* op) {
  const int64_t lines = a.n_batch * a.n_inner;
  if (lines == 0 || (a.n_scan == 0 && !a.initial)) return;
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  if (a.n_inner >= kWarpSize || a.n_scan <= kShortScan) {
    scan_thread_lines<S, T, acc_t, out_t><<<grid_for(lines, kBlockThreads), kBlockThreads, 0, stream>>>(a);
  } else {
    scan_block_lines<S, T, acc_t, out_t><<<grid_for(lines, 1), kBlockThreads, 0, stream>>>(a);
  }
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
