// Launch helpers shared by the CUDA family machinery: the grid size, the launch of a
// row kernel (a warp or a block to a row) and block-level reductions over warp shuffles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"

namespace ts::cuda {

constexpr int kWarpSize = 32;
constexpr int kBlockThreads = 256;  // every family launches blocks of this many threads (8 warps)

// Blocks for `work` items of `per_block` each: a grid-stride loop covers the
// rest, so the grid stays within what one launch may have.
inline unsigned grid_for(int64_t work, int64_t per_block) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // a grid-stride loop handles larger sizes
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// Launches a row kernel on the current stream of `device`: `per_warp` (a warp to a row, 8 rows a block) for rows of
// up to `warp_row_limit` columns, else `per_block` (a block to a row).
template <typename Args>
void launch_rows(void (*per_warp)(Args), void (*per_block)(Args), const Args& a, int64_t rows, int64_t cols,
                 int64_t warp_row_limit, int device, const char* op) {
  if (rows == 0 || cols == 0) return;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  if (cols <= warp_row_limit) {
    per_warp<<<grid_for(rows, kBlockThreads / kWarpSize), kBlockThreads, 0, stream>>>(a);
  } else {
    per_block<<<grid_for(rows, 1), kBlockThreads, 0, stream>>>(a);
  }
  TS_CUDA_CHECK_LAUNCH(op);
}

// __shfl_down_sync for any trivially copyable value (bool, 8- and 16-bit
// integers, accumulator structs), moved as 32-bit words.
template <typename V>
__device__ __forceinline__ V shfl_down(V value, int offset) {
  constexpr int kWords = static_cast<int>((sizeof(V) + 3) / 4);
  unsigned words[kWords] = {};
  memcpy(words, &value, sizeof(V));
  for (int i = 0; i < kWords; ++i) words[i] = __shfl_down_sync(0xffffffffu, words[i], offset);
  memcpy(&value, words, sizeof(V));
  return value;
}

// Lane 0's value, in every lane of the warp.
template <typename V>
__device__ __forceinline__ V shfl_first(V value) {
  constexpr int kWords = static_cast<int>((sizeof(V) + 3) / 4);
  unsigned words[kWords] = {};
  memcpy(words, &value, sizeof(V));
  for (int i = 0; i < kWords; ++i) words[i] = __shfl_sync(0xffffffffu, words[i], 0);
  memcpy(&value, words, sizeof(V));
  return value;
}

// Folds `value` across the warp with `combine(a, b)`; lane 0 ends with the result
// of all 32 lanes (others hold partial results).
template <typename V, typename Combine>
__device__ __forceinline__ V warp_fold(V value, Combine combine) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = combine(value, shfl_down(value, offset));
  }
  return value;
}

// Folds one value per thread of the block; thread 0 returns the block's result.
// `shared` holds one V per warp. Every thread of the block must call it.
template <typename V, typename Combine>
__device__ __forceinline__ V block_fold(V value, V* shared, Combine combine) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_fold(value, combine);
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  if (warp == 0) {
    value = shared[lane < warps ? lane : 0];
    // Lanes past the warp count hold a copy of warp 0's value: never folded in.
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const V other = shfl_down(value, offset);
      if (lane + offset < warps) value = combine(value, other);
    }
  }
  __syncthreads();  // `shared` may be reused right after
  return value;
}

}  // namespace ts::cuda
