// Everything a generated CUDA kernel translation unit may include: the kernel
// signatures, dtypes, the scalar helpers spec expressions use (constexpr, so
// callable on the device under --expt-relaxed-constexpr), and the family
// machinery that launches a generated functor.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "tensorsmith/cuda/gemm.cuh"
#include "tensorsmith/cuda/normalize.cuh"
#include "tensorsmith/cuda/pointwise.cuh"
#include "tensorsmith/cuda/reduce.cuh"
#include "tensorsmith/cuda/scan.cuh"
#include "tensorsmith/cuda/sort.cuh"
#include "tensorsmith/cuda/standardize.cuh"
#include "tensorsmith/cuda/update.cuh"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/scalar_ops.h"
