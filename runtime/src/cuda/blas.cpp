// Floating GEMM on CUDA through cuBLAS, loaded when first needed: the
// build needs no cuBLAS, and `import tensorsmith` works where it is missing
// (only a CUDA float matmul then raises, saying how to get it). The Python
// package preloads it from the nvidia-cublas wheel when that is installed.
#include "tensorsmith/cuda/blas.h"

#include <dlfcn.h>

#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"
#include "tensorsmith/errors.h"

namespace ts::cuda {

namespace {

// The few entry points used, from cublas_api.h (a stable C ABI since CUDA 4).
using Handle = void*;
using Status = int;  // CUBLAS_STATUS_SUCCESS == 0
constexpr int kOpN = 0;  // CUBLAS_OP_N
constexpr int kOpT = 1;  // CUBLAS_OP_T
using CreateFn = Status (*)(Handle*);
using SetStreamFn = Status (*)(Handle, cudaStream_t);
template <typename T>
using GemmFn = Status (*)(Handle, int, int, int, int, int, const T*, const T*, int, long long, const T*, int, long long,
                          const T*, T*, int, long long, int);
// cublasGemmStridedBatchedEx: the storage types as cudaDataType, float accumulation (CUBLAS_COMPUTE_32F).
using GemmExFn = Status (*)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int,
                            int, long long, const void*, void*, int, int, long long, int, int, int);
constexpr int kR16F = 2, kR16BF = 14;  // CUDA_R_16F, CUDA_R_16BF (library_types.h)
constexpr int kCompute32F = 68;        // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;       // CUBLAS_GEMM_DEFAULT

// The soname of the cuBLAS built for this CUDA major version (libcublas.so.13 for CUDA 13).
const std::string kLibrary = "libcublas.so." + std::to_string(CUDART_VERSION / 1000);

struct Library {
  CreateFn create = nullptr;
  SetStreamFn set_stream = nullptr;
  GemmFn<float> sgemm = nullptr;
  GemmFn<double> dgemm = nullptr;
  GemmFn<complex64> cgemm = nullptr;  // cuComplex / cuDoubleComplex: the same two packed parts
  GemmFn<complex128> zgemm = nullptr;
  GemmExFn gemm_ex = nullptr;
  std::vector<Handle> handles;  // per device, created on first use
  std::mutex mutex;
};

Library& library() {
  static Library* lib = [] {
    auto* l = new Library();  // never destroyed: handles may be used during exit
    void* so = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
    TS_CHECK(so != nullptr, RuntimeError,
             "matmul: CUDA floating-point matmul needs cuBLAS (" << kLibrary << "), which could not be loaded: "
                 << dlerror() << "; pip install nvidia-cublas, or install the CUDA toolkit's cuBLAS");
    l->create = reinterpret_cast<CreateFn>(dlsym(so, "cublasCreate_v2"));
    l->set_stream = reinterpret_cast<SetStreamFn>(dlsym(so, "cublasSetStream_v2"));
    l->sgemm = reinterpret_cast<GemmFn<float>>(dlsym(so, "cublasSgemmStridedBatched"));
    l->dgemm = reinterpret_cast<GemmFn<double>>(dlsym(so, "cublasDgemmStridedBatched"));
    l->cgemm = reinterpret_cast<GemmFn<complex64>>(dlsym(so, "cublasCgemmStridedBatched"));
    l->zgemm = reinterpret_cast<GemmFn<complex128>>(dlsym(so, "cublasZgemmStridedBatched"));
    l->gemm_ex = reinterpret_cast<GemmExFn>(dlsym(so, "cublasGemmStridedBatchedEx"));
    TS_CHECK(l->create && l->set_stream && l->sgemm && l->dgemm && l->cgemm && l->zgemm && l->gemm_ex, RuntimeError,
             "matmul: " << kLibrary << " lacks the cuBLAS entry points tensorsmith uses");
    return l;
  }();
  return *lib;
}

Handle handle_for(Library& lib, int device) {
  std::lock_guard<std::mutex> lock(lib.mutex);
  if (lib.handles.size() <= static_cast<size_t>(device)) lib.handles.resize(device + 1, nullptr);
  if (lib.handles[device] == nullptr) {
    Handle h = nullptr;
    TS_CHECK(lib.create(&h) == 0, RuntimeError, "matmul: cublasCreate failed on cuda:" << device);
    lib.handles[device] = h;
  }
  return lib.handles[device];
}

// Checks and the empty cases every GEMM shares; false when nothing is left to compute.
bool prepare(const GemmArgs& a, size_t itemsize, cudaStream_t stream) {
  if (a.batch == 0 || a.m == 0 || a.n == 0) return false;
  if (a.k == 0) {  // an empty sum: zeros (all-bits-zero is 0.0 in every floating and complex type)
    for (int64_t b = 0; b < a.batch; ++b) {
      TS_CUDA_CHECK(cudaMemsetAsync(a.c + b * a.c_batch_stride * itemsize, 0, itemsize * a.m * a.n, stream), "matmul");
    }
    return false;
  }
  TS_CHECK(a.m <= INT_MAX && a.n <= INT_MAX && a.k <= INT_MAX && a.batch <= INT_MAX, NotImplementedError,
           "matmul: cuBLAS takes dimensions up to " << INT_MAX << ", got m=" << a.m << " n=" << a.n << " k=" << a.k);
  return true;
}

Handle stream_handle(Library& lib, int device, cudaStream_t stream) {
  const Handle h = handle_for(lib, device);
  TS_CHECK(lib.set_stream(h, stream) == 0, RuntimeError, "matmul: cublasSetStream failed");
  return h;
}

// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS sees B (n x k) times A (k x m). A row-major
// operand (GemmArgs' layout rule) is, read column-major, its own transpose with its row stride as leading
// dimension (op N); a column-major one is op T of the matrix whose leading dimension is its column stride.
struct CublasOperand {
  int op;
  int ld;
};
CublasOperand cublas_operand(int64_t row_stride, int64_t col_stride) {
  const int64_t ld = col_stride == 1 ? row_stride : col_stride;
  TS_CHECK(ld <= INT_MAX, NotImplementedError, "matmul: cuBLAS takes leading dimensions up to " << INT_MAX << ", got " << ld);
  return {col_stride == 1 ? kOpN : kOpT, static_cast<int>(ld)};
}

template <typename T>
void gemm(const GemmArgs& a, GemmFn<T> Library::*fn) {
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  if (!prepare(a, sizeof(T), stream)) return;
  Library& lib = library();
  const Handle h = stream_handle(lib, a.device, stream);
  const T one(1), zero(0);
  const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  const CublasOperand oa = cublas_operand(a.a_row_stride, a.a_col_stride);
  const CublasOperand ob = cublas_operand(a.b_row_stride, a.b_col_stride);
  const Status status = (lib.*fn)(h, ob.op, oa.op, n, m, k, &one, reinterpret_cast<const T*>(a.b), ob.ld, a.b_batch_stride,
                                  reinterpret_cast<const T*>(a.a), oa.ld, a.a_batch_stride, &zero, reinterpret_cast<T*>(a.c), n,
                                  a.c_batch_stride, static_cast<int>(a.batch));
  TS_CHECK(status == 0, RuntimeError, "matmul: cuBLAS GEMM failed with status " << status);
}

void gemm_16bit(const GemmArgs& a, int type) {
  DeviceGuard guard(a.device);
  const cudaStream_t stream = current_stream(a.device);
  if (!prepare(a, 2, stream)) return;
  Library& lib = library();
  const Handle h = stream_handle(lib, a.device, stream);
  const float one = 1, zero = 0;
  const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  const CublasOperand oa = cublas_operand(a.a_row_stride, a.a_col_stride);
  const CublasOperand ob = cublas_operand(a.b_row_stride, a.b_col_stride);
  const Status status = lib.gemm_ex(h, ob.op, oa.op, n, m, k, &one, a.b, type, ob.ld, a.b_batch_stride, a.a, type, oa.ld,
                                    a.a_batch_stride, &zero, a.c, type, n, a.c_batch_stride, static_cast<int>(a.batch),
                                    kCompute32F, kGemmDefault);
  TS_CHECK(status == 0, RuntimeError, "matmul: cuBLAS GEMM failed with status " << status);
}

}  // namespace

void blas_sgemm(const GemmArgs& args) { gemm<float>(args, &Library::sgemm); }
void blas_dgemm(const GemmArgs& args) { gemm<double>(args, &Library::dgemm); }
void blas_cgemm(const GemmArgs& args) { gemm<complex64>(args, &Library::cgemm); }
void blas_zgemm(const GemmArgs& args) { gemm<complex128>(args, &Library::zgemm); }
void blas_hgemm(const GemmArgs& args) { gemm_16bit(args, kR16F); }
void blas_bgemm(const GemmArgs& args) { gemm_16bit(args, kR16BF); }

}  // namespace ts::cuda
