// The vendor BLAS behind the float32/float64/complex64/complex128 contraction kernels: OpenBLAS from
// the scipy-openblas64 wheel, found and linked at build time. Generated
// contraction translation units register these for their floating dtypes (a
// body is only instantiated for the other dtypes); the gate's symbol allowlist
// (validators/symbols.py) admits exactly these functions.
#pragma once

#include "tensorsmith/dispatch.h"

namespace ts {

// GemmKernels: C[b] = A[b] @ B[b] for every batch entry, in float32 / float64.
void blas_sgemm(const GemmArgs& args);
void blas_dgemm(const GemmArgs& args);
void blas_cgemm(const GemmArgs& args);  // complex64 / complex128
void blas_zgemm(const GemmArgs& args);

}  // namespace ts
