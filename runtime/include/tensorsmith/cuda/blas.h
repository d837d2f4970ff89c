// cuBLAS behind the float32/float64 CUDA contraction kernels, as
// tensorsmith/blas.h is OpenBLAS behind the CPU ones. cuBLAS is loaded at the
// first call (dlopen of libcublas.so.<CUDA major>, which `import tensorsmith`
// preloads from the nvidia-cublas wheel when that is installed), so the build
// needs neither its library nor its headers, and `import tensorsmith` works
// on machines without it. Defined only where CUDA is enabled (TS_WITH_CUDA).
#pragma once

#include "tensorsmith/dispatch.h"

namespace ts::cuda {

// GemmKernels on the current device's current stream: C[b] = A[b] @ B[b] for
// every batch entry. Throws RuntimeError when cuBLAS cannot be loaded or fails.
void blas_sgemm(const GemmArgs& args);
void blas_dgemm(const GemmArgs& args);

}  // namespace ts::cuda
