// The CUDA contraction machinery for dtypes cuBLAS lacks: the generated body
// computes one kTile x kTile tile of C (G::tile); this launches a 16 x 16
// block per tile, grid-strided over tiles and batch entries.
#pragma once

#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

constexpr int kTile = 16;  // kTile * kTile == kBlockThreads

template <typename G>
__global__ void __launch_bounds__(kBlockThreads) gemm_tiles(GemmArgs a) {
  const int64_t tiles_m = (a.m + kTile - 1) / kTile, tiles_n = (a.n + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
      for (int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) G::tile(a, b, tm * kTile, tn * kTile);
    }
  }
}

// The GemmKernel of tile functor G, on the current stream of a.device.
template <typename G>
void launch_gemm(const GemmArgs& a, const char* op) {
  if (a.batch == 0 || a.m == 0 || a.n == 0) return;
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  constexpr int64_t kMaxGridYZ = 65535;
  const auto capped = [](int64_t v, int64_t cap) { return static_cast<unsigned>(v < cap ? v : cap); };
  const dim3 grid(capped((a.n + kTile - 1) / kTile, int64_t{1} << 30), capped((a.m + kTile - 1) / kTile, kMaxGridYZ),
                  capped(a.batch, kMaxGridYZ));
  gemm_tiles<G><<<grid, dim3(kTile, kTile), 0, stream>>>(a);
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
