// The CUDA reduction machinery, shared by the reduction family (a fold:
// identity/combine/finalize) and the index reductions (argmax/argmin). A
// Policy says what one element contributes, how two partial results merge and
// what is written; merge must be associative, because threads fold their own
// elements and the partials are merged as a tree:
//   columns    adjacent outputs (a reduction over an outer axis), or short rows:
//              a thread per output, the reduced axis split over threadIdx.y (and,
//              for few outputs over a long axis, over blocks: partials merged as
//              in the split path)
//   rows       a warp (rows up to kWarpRowLimit) or a block per output row,
//              warp shuffles then a block fold through shared memory
//   split      few long rows: chunks of every row fold into partials in
//              device scratch memory, a second launch merges them (no atomics)
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/cuda/workspace.h"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

constexpr int64_t kWarpRowLimit = 1024;     // rows up to this long get a warp each
constexpr int64_t kSplitMinRow = 1 << 16;    // rows at least this long may be split over blocks
constexpr int64_t kSplitChunk = 1 << 14;     // elements of a row one block folds in the split path
constexpr int64_t kSplitMaxRows = 1024;      // more rows than this keep the device busy unsplit
constexpr int kColumnsX = 32, kColumnsY = kBlockThreads / kColumnsX;
// Adjacent outputs in fewer blocks than this, over a reduced axis of at least two chunks, split the axis:
// the sum over axis 0 of a (10^7, 64) array ran on 2 blocks (2 of an H200's 132 SMs) unsplit.
constexpr int64_t kColumnSplitBlocks = 256;
constexpr int64_t kColumnChunk = 2048;      // reduced elements one block folds per output in that split
constexpr int64_t kMaxGridY = 65535;

// A fold of the reduction family: R::combine(acc, x), R::finalize(acc, count), R::identity().
template <typename R, typename T, typename acc_t, typename out_t, bool kHasIdentity>
struct FoldPolicy {
  using In = T;
  using Out = out_t;
  struct Partial {
    acc_t value;
    bool has;
  };
  static __device__ __forceinline__ Partial empty() { return Partial{acc_t{}, false}; }
  // A fold starts from the op's identity where it has one, as numpy's and the CPU's do: a sum of -0.0 alone
  // is +0.0 (0 + -0), not the element itself.
  static __device__ __forceinline__ acc_t start(T x) {
    if constexpr (kHasIdentity) {
      return R::combine(R::identity(), static_cast<acc_t>(x));
    } else {
      return static_cast<acc_t>(x);
    }
  }
  static __device__ __forceinline__ Partial element(T x, int64_t) { return Partial{start(x), true}; }
  static __device__ __forceinline__ Partial merge(Partial a, Partial b) {
    if (!a.has) return b;
    if (!b.has) return a;
    return Partial{R::combine(a.value, b.value), true};
  }
  static __device__ __forceinline__ Partial fold(Partial a, T x, int64_t) {
    return a.has ? Partial{R::combine(a.value, static_cast<acc_t>(x)), true} : Partial{start(x), true};
  }
  static __device__ __forceinline__ out_t finalize(Partial p, int64_t count) {
    if constexpr (kHasIdentity) {
      return R::finalize(p.has ? p.value : R::identity(), count);
    } else {
      return R::finalize(p.value, count);  // never empty: the engine raises first
    }
  }
};

// argmax/argmin: B::better(candidate, best); the first index wins among equals.
template <typename B, typename T>
struct IndexPolicy {
  using In = T;
  using Out = int64_t;
  struct Partial {
    T value;
    int64_t index;
    bool has;
  };
  static __device__ __forceinline__ Partial empty() { return Partial{T{}, 0, false}; }
  static __device__ __forceinline__ Partial fold(Partial a, T x, int64_t j) {
    // Threads see their indices in increasing order: only a strictly better x replaces.
    return (!a.has || B::better(x, a.value)) ? Partial{x, j, true} : a;
  }
  static __device__ __forceinline__ Partial merge(Partial a, Partial b) {
    if (!a.has) return b;
    if (!b.has) return a;
    if (B::better(b.value, a.value)) return b;
    if (B::better(a.value, b.value)) return a;
    return a.index <= b.index ? a : b;  // equivalent (equal, or both NaN): the first
  }
  static __device__ __forceinline__ int64_t finalize(Partial p, int64_t) { return p.index; }
};

template <typename P>
__device__ __forceinline__ const typename P::In& element_at(const ReduceArgs& a, int64_t i, int64_t j) {
  return *reinterpret_cast<const typename P::In*>(a.in + i * a.in_outer_stride + j * a.in_reduce_stride);
}

template <typename P>
__device__ __forceinline__ void write_out(const ReduceArgs& a, int64_t i, typename P::Partial p, int64_t count) {
  *reinterpret_cast<typename P::Out*>(a.out + i * a.out_stride) = P::finalize(p, count);
}

// Thread x of a block owns output blockIdx.x * kColumnsX + x; the threads of
// column x (threadIdx.y) fold every kColumnsY-th element of it within chunk
// blockIdx.y of the reduced axis (`chunk` elements; the whole axis when gridDim.y
// is 1). With `partials`, a chunk's result goes to partials[i * gridDim.y + chunk]
// for reduce_partials to merge (few outputs over a long axis: the split path).
template <typename P>
__global__ void __launch_bounds__(kBlockThreads) reduce_columns(ReduceArgs a, int64_t chunk, typename P::Partial* partials) {
  using Partial = typename P::Partial;
  __shared__ Partial shared[kColumnsY][kColumnsX];
  const int64_t begin = int64_t{blockIdx.y} * chunk;
  const int64_t end = begin + chunk < a.n_reduce ? begin + chunk : a.n_reduce;
  for (int64_t base = int64_t{blockIdx.x} * kColumnsX; base < a.n_outer; base += int64_t{gridDim.x} * kColumnsX) {
    const int64_t i = base + threadIdx.x;
    Partial p = P::empty();
    if (i < a.n_outer) {
      for (int64_t j = begin + threadIdx.y; j < end; j += kColumnsY) p = P::fold(p, element_at<P>(a, i, j), j);
    }
    shared[threadIdx.y][threadIdx.x] = p;
    __syncthreads();
    if (threadIdx.y == 0 && i < a.n_outer) {
      for (int y = 1; y < kColumnsY; ++y) p = P::merge(p, shared[y][threadIdx.x]);
      if (partials != nullptr) {
        partials[i * gridDim.y + blockIdx.y] = p;
      } else {
        write_out<P>(a, i, p, a.n_reduce);
      }
    }
    __syncthreads();
  }
}

// One warp per row: rows blockIdx.x * warps + warp, grid-strided.
template <typename P>
__global__ void __launch_bounds__(kBlockThreads) reduce_rows_warp(ReduceArgs a) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = kBlockThreads / kWarpSize;
  const auto merge = [](typename P::Partial x, typename P::Partial y) { return P::merge(x, y); };
  for (int64_t i = int64_t{blockIdx.x} * warps + threadIdx.x / kWarpSize; i < a.n_outer; i += int64_t{gridDim.x} * warps) {
    typename P::Partial p = P::empty();
    for (int64_t j = lane; j < a.n_reduce; j += kWarpSize) p = P::fold(p, element_at<P>(a, i, j), j);
    p = warp_fold(p, merge);
    if (lane == 0) write_out<P>(a, i, p, a.n_reduce);
  }
}

// One block per row (or per chunk of a row, when `partials` is set: the split path's first pass).
template <typename P>
__global__ void __launch_bounds__(kBlockThreads) reduce_rows_block(ReduceArgs a, int64_t chunk, typename P::Partial* partials) {
  __shared__ typename P::Partial shared[kBlockThreads / kWarpSize];
  const auto merge = [](typename P::Partial x, typename P::Partial y) { return P::merge(x, y); };
  const int64_t chunks = (a.n_reduce + chunk - 1) / chunk;
  for (int64_t task = blockIdx.x; task < a.n_outer * chunks; task += gridDim.x) {
    const int64_t i = task / chunks, begin = (task % chunks) * chunk;
    const int64_t end = begin + chunk < a.n_reduce ? begin + chunk : a.n_reduce;
    typename P::Partial p = P::empty();
    for (int64_t j = begin + threadIdx.x; j < end; j += kBlockThreads) p = P::fold(p, element_at<P>(a, i, j), j);
    p = block_fold(p, shared, merge);
    if (threadIdx.x == 0) {
      if (partials != nullptr) {
        partials[task] = p;
      } else {
        write_out<P>(a, i, p, a.n_reduce);
      }
    }
  }
}

// The split path's second pass: row i merges its `chunks` partials in order.
template <typename P>
__global__ void __launch_bounds__(kBlockThreads) reduce_partials(ReduceArgs a, int64_t chunks, const typename P::Partial* partials) {
  __shared__ typename P::Partial shared[kBlockThreads / kWarpSize];
  const auto merge = [](typename P::Partial x, typename P::Partial y) { return P::merge(x, y); };
  for (int64_t i = blockIdx.x; i < a.n_outer; i += gridDim.x) {
    typename P::Partial p = P::empty();
    for (int64_t c = threadIdx.x; c < chunks; c += kBlockThreads) p = P::merge(p, partials[i * chunks + c]);
    p = block_fold(p, shared, merge);
    if (threadIdx.x == 0) write_out<P>(a, i, p, a.n_reduce);
  }
}

// The ReduceKernel of policy P, on the current stream of a.device.
template <typename P>
void launch_reduce(const ReduceArgs& a, const char* op) {
  if (a.n_outer == 0) return;
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  const bool adjacent_outputs = a.in_outer_stride == static_cast<int64_t>(sizeof(typename P::In)) && a.n_outer > 1;
  const int64_t output_blocks = (a.n_outer + kColumnsX - 1) / kColumnsX;
  if (adjacent_outputs && a.n_outer >= kColumnsX && output_blocks < kColumnSplitBlocks && a.n_reduce >= 2 * kColumnChunk) {
    // Chunks of a fixed length (longer only past the grid's height), so results do not depend on the device.
    const int64_t chunk = std::max(kColumnChunk, (a.n_reduce + kMaxGridY - 1) / kMaxGridY);
    const int64_t chunks = (a.n_reduce + chunk - 1) / chunk;
    const Workspace scratch(static_cast<size_t>(a.n_outer * chunks) * sizeof(typename P::Partial), a.device);
    auto* partials = static_cast<typename P::Partial*>(scratch.get());
    const dim3 grid(grid_for(a.n_outer, kColumnsX), static_cast<unsigned>(chunks));
    reduce_columns<P><<<grid, dim3(kColumnsX, kColumnsY), 0, stream>>>(a, chunk, partials);
    TS_CUDA_CHECK_LAUNCH(op);
    reduce_partials<P><<<grid_for(a.n_outer, 1), kBlockThreads, 0, stream>>>(a, chunks, partials);
  } else if ((adjacent_outputs && a.n_outer >= kColumnsX) || a.n_reduce < kWarpSize) {
    reduce_columns<P><<<grid_for(a.n_outer, kColumnsX), dim3(kColumnsX, kColumnsY), 0, stream>>>(a, a.n_reduce, nullptr);
  } else if (a.n_reduce >= kSplitMinRow && a.n_outer <= kSplitMaxRows) {
    const int64_t chunks = (a.n_reduce + kSplitChunk - 1) / kSplitChunk;
    const Workspace scratch(static_cast<size_t>(a.n_outer * chunks) * sizeof(typename P::Partial), a.device);
    auto* partials = static_cast<typename P::Partial*>(scratch.get());
    reduce_rows_block<P><<<grid_for(a.n_outer * chunks, 1), kBlockThreads, 0, stream>>>(a, kSplitChunk, partials);
    TS_CUDA_CHECK_LAUNCH(op);
    reduce_partials<P><<<grid_for(a.n_outer, 1), kBlockThreads, 0, stream>>>(a, chunks, partials);
  } else if (a.n_reduce <= kWarpRowLimit) {
    reduce_rows_warp<P><<<grid_for(a.n_outer, kBlockThreads / kWarpSize), kBlockThreads, 0, stream>>>(a);
  } else {
    reduce_rows_block<P><<<grid_for(a.n_outer, 1), kBlockThreads, 0, stream>>>(a, a.n_reduce, nullptr);
  }
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
