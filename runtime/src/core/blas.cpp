// GemmKernels over OpenBLAS (scipy-openblas64: 64-bit integers, `scipy_` symbol
// prefix, `64_` suffix). OpenBLAS picks its own thread count (the machine's
// cores, or OPENBLAS_NUM_THREADS) and its own blocking per size.
#include "tensorsmith/blas.h"

#include <cblas.h>

#include <algorithm>

namespace ts {

namespace {

// alpha and beta: by value for the real GEMMs, by address for the complex ones (cblas_cgemm / zgemm).
template <typename T>
auto scalar_arg(const T& value) {
  if constexpr (is_complex_v<T>) {
    return static_cast<const void*>(&value);
  } else {
    return value;
  }
}

// GemmArgs' layout rule: a row-major operand is CblasNoTrans with its row stride as leading dimension, a
// column-major one is the transpose of a row-major matrix whose leading dimension is its column stride.
struct BlasOperand {
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
BlasOperand blas_operand(int64_t row_stride, int64_t col_stride) {
  return col_stride == 1 ? BlasOperand{CblasNoTrans, row_stride} : BlasOperand{CblasTrans, col_stride};
}

template <typename T, typename Gemm>
void gemm_batches(const GemmArgs& args, Gemm gemm) {
  const T* a = reinterpret_cast<const T*>(args.a);
  const T* b = reinterpret_cast<const T*>(args.b);
  T* c = reinterpret_cast<T*>(args.c);
  const T one(1), zero(0);
  const BlasOperand oa = blas_operand(args.a_row_stride, args.a_col_stride);
  const BlasOperand ob = blas_operand(args.b_row_stride, args.b_col_stride);
  for (int64_t i = 0; i < args.batch; ++i) {
    if (args.k == 0) {  // an empty sum (and BLAS rejects a leading dimension of 0)
      std::fill_n(c + i * args.c_batch_stride, args.m * args.n, T(0));
      continue;
    }
    gemm(CblasRowMajor, oa.trans, ob.trans, args.m, args.n, args.k, scalar_arg(one), a + i * args.a_batch_stride, oa.ld,
         b + i * args.b_batch_stride, ob.ld, scalar_arg(zero), c + i * args.c_batch_stride, args.n);
  }
}

}  // namespace

void blas_sgemm(const GemmArgs& args) { gemm_batches<float>(args, scipy_cblas_sgemm64_); }
void blas_dgemm(const GemmArgs& args) { gemm_batches<double>(args, scipy_cblas_dgemm64_); }
void blas_cgemm(const GemmArgs& args) { gemm_batches<complex64>(args, scipy_cblas_cgemm64_); }
void blas_zgemm(const GemmArgs& args) { gemm_batches<complex128>(args, scipy_cblas_zgemm64_); }

}  // namespace ts
