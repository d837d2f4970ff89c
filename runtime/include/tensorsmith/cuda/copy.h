// Copies that involve a CUDA tensor (host <-> device, device <-> device, with
// broadcast and dtype cast); Tensor::copy_from sends them here. Defined only
// where CUDA is enabled (TS_WITH_CUDA).
#pragma once

#include "tensorsmith/tensor.h"

namespace ts::cuda {

// dst = src broadcast to dst's shape and cast to dst's dtype, as the CPU copy
// does. Copies to the host have completed when this returns; the others are
// ordered on the destination device's current stream.
void copy(const Tensor& dst, const Tensor& src);

}  // namespace ts::cuda
