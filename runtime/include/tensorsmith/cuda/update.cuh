// The CUDA update machinery (an optimizer's step): a generated update kernel is one functor, U::apply(state,
// grad, scalars), which updates one element's state values (the parameter, then its moments) in place; a thread
// to an element in a grid-stride loop, each value loaded once and stored once.
#pragma once

#include <cstdint>

#include "tensorsmith/cuda/launch.cuh"
#include "tensorsmith/dispatch.h"

namespace ts::cuda {

template <typename U, typename T, typename acc_t>
__global__ void update_elements(UpdateArgs a) {
  const T* grad = reinterpret_cast<const T*>(a.data[a.states]);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += step) {
    acc_t state[kMaxOperands - 1];
    for (int k = 0; k < a.states; ++k) state[k] = static_cast<acc_t>(reinterpret_cast<const T*>(a.data[k])[i]);
    U::apply(state, static_cast<acc_t>(grad[i]), a.scalars);
    for (int k = 0; k < a.states; ++k) reinterpret_cast<T*>(a.data[k])[i] = static_cast<T>(state[k]);
  }
}

// The UpdateKernel of functor U, on the current stream of a.device.
template <typename U, typename T, typename acc_t>
void launch_update(const UpdateArgs& a, const char* op) {
  if (a.n == 0) return;
  DeviceGuard guard(a.device);
  update_elements<U, T, acc_t><<<grid_for(a.n, kBlockThreads), kBlockThreads, 0, current_stream(a.device)>>>(a);
  TS_CUDA_CHECK_LAUNCH(op);
}

}  // namespace ts::cuda
