// GemmKernels over OpenBLAS (scipy-openblas64: 64-bit integers, `scipy_` symbol
// prefix, `64_` suffix). OpenBLAS picks its own blocking per size; its jobs run
// on the engines' pool, and its thread count follows theirs.
#include "tensorsmith/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "tensorsmith/parallel.h"

namespace ts {

namespace {

// OpenBLAS's threaded GEMM runs its jobs on the engines' pool, as a gang (each job on its own thread, all at
// once: they hand packed panels to each other), rather than on a pool of OpenBLAS's own: two pools whose idle
// threads poll for work on the same cores take turns with each other. A loop of 256x128x512 float32 products,
// each followed by a tanh over the result, ran 1.8x faster on 2 cores (60-65 ms against 34-35).
void run_openblas_jobs(int /*sync: always wait*/, openblas_dojob_callback dojob, int jobs, size_t job_bytes,
                       void* job_data, int dojob_data) {
  try {
    parallel_gang(jobs, [&](int j) { dojob(j, static_cast<char*>(job_data) + j * job_bytes, dojob_data); });
  } catch (const std::exception& e) {  // nothing may unwind through OpenBLAS's C frames
    std::fprintf(stderr, "tensorsmith: OpenBLAS's jobs failed: %s\n", e.what());
    std::abort();
  }
}
// Set once, before any GEMM (OpenBLAS reads it on every threaded call; setting it is not thread-safe).
[[maybe_unused]] const bool g_openblas_on_the_pool = (scipy_openblas_set_threads_callback_function64_(run_openblas_jobs), true);

// OpenBLAS threads as many ways as the engines do (TS_NUM_THREADS), never more than it
// chose at load (OPENBLAS_NUM_THREADS or the cores): a gang larger than the pool would start threads of its
// own on every threaded GEMM (TS_NUM_THREADS=1 made 64 products of 32x16 @ 16x32 take 1.5 ms, not 20 us).
// Set again only when the count changed.
const int g_openblas_threads_at_load = scipy_openblas_get_num_threads64_();
std::atomic<int> g_openblas_threads{0};
std::mutex g_openblas_threads_mutex;
void follow_thread_count() {
  const int threads = std::min(num_threads(), std::max(g_openblas_threads_at_load, 1));
  if (g_openblas_threads.load(std::memory_order_relaxed) == threads) return;
  const std::lock_guard<std::mutex> lock(g_openblas_threads_mutex);
  if (g_openblas_threads.load() != threads) {
    scipy_openblas_set_num_threads64_(threads);
    g_openblas_threads.store(threads);
  }
}

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

// One call per batch entry. OpenBLAS splits each product over its threads where it is large (a batch of small
// products reaches here one entry at a time, split over the engines' pool by the contraction engine).
template <typename T, typename Gemm>
void gemm_each(const GemmArgs& args, Gemm gemm) {
  const T* a = reinterpret_cast<const T*>(args.a);
  const T* b = reinterpret_cast<const T*>(args.b);
  T* c = reinterpret_cast<T*>(args.c);
  const T one(1), zero(0);
  const BlasOperand oa = blas_operand(args.a_row_stride, args.a_col_stride);
  const BlasOperand ob = blas_operand(args.b_row_stride, args.b_col_stride);
  for (int64_t i = 0; i < args.batch; ++i) {
    gemm(CblasRowMajor, oa.trans, ob.trans, args.m, args.n, args.k, scalar_arg(one), a + i * args.a_batch_stride, oa.ld,
         b + i * args.b_batch_stride, ob.ld, scalar_arg(zero), c + i * args.c_batch_stride, args.n);
  }
}

// The whole batch in one call: OpenBLAS's strided batched GEMM runs the entries side by side on its threads,
// each on one, rather than splitting every small product over all of them (64 float32 products of 128^2:
// 4.2 ms called one by one, 2.4 ms batched, through ctypes on 2 cores). Real dtypes only: the complex ones of the
// OpenBLAS wheel do not step through the batch in complex elements (tried: wrong products).
template <typename T, typename GemmBatch>
void gemm_batched(const GemmArgs& args, GemmBatch gemm_batch) {
  const BlasOperand oa = blas_operand(args.a_row_stride, args.a_col_stride);
  const BlasOperand ob = blas_operand(args.b_row_stride, args.b_col_stride);
  gemm_batch(CblasRowMajor, oa.trans, ob.trans, args.m, args.n, args.k, T(1), reinterpret_cast<const T*>(args.a), oa.ld,
             args.a_batch_stride, reinterpret_cast<const T*>(args.b), ob.ld, args.b_batch_stride, T(0),
             reinterpret_cast<T*>(args.c), args.n, args.c_batch_stride, args.batch);
}

// An empty sum is zeros (and BLAS rejects a leading dimension of 0); true where it was.
template <typename T>
bool fill_empty_sums(const GemmArgs& args) {
  if (args.k != 0) return false;
  T* c = reinterpret_cast<T*>(args.c);
  for (int64_t i = 0; i < args.batch; ++i) std::fill_n(c + i * args.c_batch_stride, args.m * args.n, T(0));
  return true;
}

template <typename T, typename Gemm, typename GemmBatch>
void gemm_real(const GemmArgs& args, Gemm gemm, GemmBatch gemm_batch) {
  follow_thread_count();
  if (fill_empty_sums<T>(args)) return;
  if (args.batch > 1) {
    gemm_batched<T>(args, gemm_batch);
  } else {
    gemm_each<T>(args, gemm);
  }
}

template <typename T, typename Gemm>
void gemm_complex(const GemmArgs& args, Gemm gemm) {
  follow_thread_count();
  if (!fill_empty_sums<T>(args)) gemm_each<T>(args, gemm);
}

}  // namespace

void blas_sgemm(const GemmArgs& args) { gemm_real<float>(args, scipy_cblas_sgemm64_, scipy_cblas_sgemm_batch_strided64_); }
void blas_dgemm(const GemmArgs& args) { gemm_real<double>(args, scipy_cblas_dgemm64_, scipy_cblas_dgemm_batch_strided64_); }
void blas_cgemm(const GemmArgs& args) { gemm_complex<complex64>(args, scipy_cblas_cgemm64_); }
void blas_zgemm(const GemmArgs& args) { gemm_complex<complex128>(args, scipy_cblas_zgemm64_); }

}  // namespace ts
