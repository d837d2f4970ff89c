// cuBLAS behind the floating CUDA contraction kernels (as ts::blas_[sd]gemm on
// the CPU): generated CUDA contraction translation units register these for
// their floating and complex dtypes; the gate's symbol allowlist admits exactly these.
#pragma once

#include "tensorsmith/dispatch.h"

namespace ts::cuda {

// GemmKernels: row-major C[b] = A[b] @ B[b], on the current stream of args.device.
void blas_sgemm(const GemmArgs& args);
void blas_dgemm(const GemmArgs& args);
void blas_cgemm(const GemmArgs& args);  // complex64 / complex128
void blas_zgemm(const GemmArgs& args);
// float16 / bfloat16 storage, float32 accumulation (cublasGemmStridedBatchedEx).
void blas_hgemm(const GemmArgs& args);
void blas_bgemm(const GemmArgs& args);

}  // namespace ts::cuda
