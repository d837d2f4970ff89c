// The CUDA pointwise machinery: a generated pointwise kernel is one functor
// (F::apply), launched here over the engine's coalesced iteration space.
//   packed   every operand contiguous (or a broadcast scalar) and 16-byte
//            aligned: each thread moves 16-byte packs, a plain tail after them
//   strided  anything else: each element's offsets from its linear index by
//            div/mod over the coalesced axes (32-bit indices when they fit)
#pragma once

#include <cstdint>
#include <utility>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <typename T, int N>
struct Lanes {
  T v[N];
};

// Elements per thread step on the packed path: 16 bytes of the widest operand.
template <typename Out, typename... In>
constexpr int pack_width() {
  size_t widest = sizeof(Out);
  for (size_t s : {sizeof(In)...}) widest = s > widest ? s : widest;
  return static_cast<int>(16 / widest);
}

template <int N, typename In>
__device__ __forceinline__ Lanes<In, N> load_lanes(const char* base, int64_t stride, int64_t pack) {
  Lanes<In, N> lanes;
  if (stride == 0) {  // a broadcast scalar: read once, never materialised
    const In x = *reinterpret_cast<const In*>(base);
#pragma unroll
    for (int j = 0; j < N; ++j) lanes.v[j] = x;
  } else {
    const Pack<In, N> p = reinterpret_cast<const Pack<In, N>*>(base)[pack];
#pragma unroll
    for (int j = 0; j < N; ++j) lanes.v[j] = p.v[j];
  }
  return lanes;
}

// F with its operand types, as one type (a __global__ template takes at most one pack).
template <typename F, typename Out, typename... In>
struct Functor {
  static constexpr int kOperands = 1 + static_cast<int>(sizeof...(In));
  static constexpr int kPack = pack_width<Out, In...>();

  template <size_t... I>
  static __device__ __forceinline__ void at(const PointwiseNdArgs& a, const int64_t* offsets, std::index_sequence<I...>) {
    *reinterpret_cast<Out*>(a.data[0] + offsets[0]) = F::apply(*reinterpret_cast<const In*>(a.data[I + 1] + offsets[I + 1])...);
  }
  static __device__ __forceinline__ void at(const PointwiseNdArgs& a, const int64_t* offsets) {
    at(a, offsets, std::index_sequence_for<In...>{});
  }

  template <size_t... I>
  static __device__ __forceinline__ void pack(const PointwiseNdArgs& a, int64_t p, std::index_sequence<I...>) {
    store(a.data[0], p, load_lanes<kPack, In>(a.data[I + 1], a.strides[I + 1][0], p)...);
  }
  static __device__ __forceinline__ void pack(const PointwiseNdArgs& a, int64_t p) {
    pack(a, p, std::index_sequence_for<In...>{});
  }
  static __device__ __forceinline__ void store(char* out, int64_t p, const Lanes<In, kPack>&... lanes) {
    Pack<Out, kPack> result;
#pragma unroll
    for (int j = 0; j < kPack; ++j) result.v[j] = F::apply(lanes.v[j]...);
    reinterpret_cast<Pack<Out, kPack>*>(out)[p] = result;
  }
};

template <typename Op>
__global__ void __launch_bounds__(kBlockThreads) pointwise_packed(PointwiseNdArgs a) {
  const int64_t packs = a.numel / Op::kPack;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (int64_t p = first; p < packs; p += step) Op::pack(a, p);
  // The last numel % kPack elements, one per thread.
  const int64_t tail = packs * Op::kPack + first;
  if (tail < a.numel) {
    int64_t offsets[Op::kOperands];
    for (int k = 0; k < Op::kOperands; ++k) offsets[k] = tail * a.strides[k][0];
    Op::at(a, offsets);
  }
}

template <typename index_t, typename Op>
__global__ void __launch_bounds__(kBlockThreads) pointwise_strided(PointwiseNdArgs a) {
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < a.numel; i += step) {
    int64_t offsets[Op::kOperands] = {};
    index_t rest = static_cast<index_t>(i);
    for (int d = a.ndim - 1; d >= 0; --d) {
      const index_t size = static_cast<index_t>(a.sizes[d]);
      const index_t coord = rest % size;
      rest /= size;
#pragma unroll
      for (int k = 0; k < Op::kOperands; ++k) offsets[k] += static_cast<int64_t>(coord) * a.strides[k][d];
    }
    Op::at(a, offsets);
  }
}

template <int N, typename Out, typename... In, size_t... I>
bool packable(const PointwiseNdArgs& a, std::index_sequence<I...>) {
  if (a.ndim != 1) return false;
  const auto aligned = [](const char* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; };
  bool ok = a.strides[0][0] == static_cast<int64_t>(sizeof(Out)) && aligned(a.data[0], sizeof(Pack<Out, N>));
  ((ok = ok && (a.strides[I + 1][0] == 0 ||
                (a.strides[I + 1][0] == static_cast<int64_t>(sizeof(In)) && aligned(a.data[I + 1], sizeof(Pack<In, N>))))),
   ...);
  return ok;
}

// The PointwiseNdKernel of functor F: out = F::apply(in...), on the current stream of a.device.
template <typename F, typename Out, typename... In>
void launch_pointwise(const PointwiseNdArgs& a, const char* op) {
  static_assert(sizeof...(In) + 1 <= kMaxOperands, "too many operands");
  if (a.numel == 0) return;
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  using Op = Functor<F, Out, In...>;
  constexpr int N = Op::kPack;
  if (packable<N, Out, In...>(a, std::index_sequence_for<In...>{})) {
    const int64_t packs = a.numel / N;
    const int64_t threads = packs > a.numel % N ? packs : a.numel % N;
    pointwise_packed<Op><<<grid_for(threads, kBlockThreads), kBlockThreads, 0, stream>>>(a);
  } else if (a.numel <= int64_t{UINT32_MAX}) {
    pointwise_strided<uint32_t, Op><<<grid_for(a.numel, kBlockThreads), kBlockThreads, 0, stream>>>(a);
  } else {
    pointwise_strided<uint64_t, Op><<<grid_for(a.numel, kBlockThreads), kBlockThreads, 0, stream>>>(a);
  }
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
