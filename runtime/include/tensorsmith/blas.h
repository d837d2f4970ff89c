// The vendor BLAS behind the float32/float64 contraction kernels: OpenBLAS from
// the scipy-openblas64 wheel, found and linked at build time. Generated
// contraction translation units register these for their floating dtypes (a
// body is only instantiated for the other dtypes); the gate's symbol allowlist
// (validators/symbols.py) admits exactly these two functions.
#pragma once

#include "tensorsmith/dispatch.h"

namespace ts {

// GemmKernels: C[b] = A[b] @ B[b] for every batch entry, in float32 / float64.
void blas_sgemm(const GemmArgs& args);
void blas_dgemm(const GemmArgs& args);

}  // namespace ts
