// cuBLAS, loaded on first use (tensorsmith/cuda/blas.h). The few entry points
// used are declared here from cuBLAS's stable C ABI (cublas_api.h) rather than
// included, so the build needs no cuBLAS headers.
#include "tensorsmith/cuda/blas.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tensorsmith/cuda/runtime.h"
#include "tensorsmith/errors.h"

namespace ts::cuda {

namespace {

using Handle = void*;                   // cublasHandle_t
using Status = int;                     // cublasStatus_t; CUBLAS_STATUS_SUCCESS = 0
constexpr int kOpN = 0;                 // CUBLAS_OP_N
using Create = Status (*)(Handle*);     // cublasCreate_v2
using SetStream = Status (*)(Handle, cudaStream_t);  // cublasSetStream_v2
using StatusName = const char* (*)(Status);          // cublasGetStatusName
template <typename T>
using GemmStridedBatched = Status (*)(Handle, int, int, int, int, int, const T*, const T*, int, long long, const T*,
                                      int, long long, const T*, T*, int, long long, int);

struct Library {
  void* so = nullptr;
  std::string error;  // why it could not be loaded
  Create create = nullptr;
  SetStream set_stream = nullptr;
  StatusName status_name = nullptr;
  GemmStridedBatched<float> sgemm = nullptr;
  GemmStridedBatched<double> dgemm = nullptr;
  std::mutex mutex;
  std::vector<Handle> handles;  // by device, created on first use, never destroyed
};

template <typename F>
void resolve(Library& lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib.so, name));
  if (fn == nullptr && lib.error.empty()) lib.error = std::string("libcublas has no symbol ") + name;
}

Library& library() {
  static Library* lib = [] {
    auto* l = new Library();
    const std::string soname = "libcublas.so." + std::to_string(CUDART_VERSION / 1000);
    l->so = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l->so == nullptr) {
      const char* why = dlerror();
      l->error = "cannot load " + soname + " (" + (why ? why : "unknown error") +
                 "): install the CUDA toolkit's cuBLAS or `pip install nvidia-cublas`";
      return l;
    }
    resolve(*l, l->create, "cublasCreate_v2");
    resolve(*l, l->set_stream, "cublasSetStream_v2");
    resolve(*l, l->status_name, "cublasGetStatusName");
    resolve(*l, l->sgemm, "cublasSgemmStridedBatched");
    resolve(*l, l->dgemm, "cublasDgemmStridedBatched");
    return l;
  }();
  TS_CHECK(lib->error.empty(), RuntimeError, "matmul: cuBLAS is not available: " << lib->error);
  return *lib;
}

void check_blas(Library& lib, Status status, const char* what) {
  TS_CHECK(status == 0, RuntimeError, "matmul: cuBLAS error " << lib.status_name(status) << " in " << what);
}

// The current device's handle, bound to its current stream.
Handle handle(Library& lib, int device) {
  std::lock_guard<std::mutex> lock(lib.mutex);
  if (lib.handles.empty()) lib.handles.assign(static_cast<size_t>(device_count()), nullptr);
  Handle& h = lib.handles.at(static_cast<size_t>(device));
  if (h == nullptr) check_blas(lib, lib.create(&h), "cublasCreate");
  check_blas(lib, lib.set_stream(h, current_stream(device)), "cublasSetStream");
  return h;
}

// Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS gets B as its
// first operand, with the roles of m and n swapped.
template <typename T>
void gemm(const GemmArgs& args, GemmStridedBatched<T> Library::*fn) {
  if (args.batch == 0 || args.m == 0 || args.n == 0) return;
  const int device = current_device();
  cudaStream_t stream = current_stream(device);
  T* c = reinterpret_cast<T*>(args.c);
  if (args.k == 0) {  // an empty sum (and cuBLAS rejects a leading dimension of 0)
    for (int64_t i = 0; i < args.batch; ++i) {
      TS_CUDA_CHECK(cudaMemsetAsync(c + i * args.c_batch_stride, 0, static_cast<size_t>(args.m * args.n) * sizeof(T), stream),
                    "matmul (cudaMemsetAsync)");
    }
    return;
  }
  TS_CHECK(args.m <= INT32_MAX && args.n <= INT32_MAX && args.k <= INT32_MAX && args.batch <= INT32_MAX, ValueError,
           "matmul: dimensions beyond 2^31 - 1 are not supported by cuBLAS");
  Library& lib = library();
  const T one = 1, zero = 0;
  check_blas(lib,
             (lib.*fn)(handle(lib, device), kOpN, kOpN, static_cast<int>(args.n), static_cast<int>(args.m),
                       static_cast<int>(args.k), &one, reinterpret_cast<const T*>(args.b), static_cast<int>(args.n),
                       args.b_batch_stride, reinterpret_cast<const T*>(args.a), static_cast<int>(args.k),
                       args.a_batch_stride, &zero, c, static_cast<int>(args.n), args.c_batch_stride,
                       static_cast<int>(args.batch)),
             "gemm");
}

}  // namespace

void blas_sgemm(const GemmArgs& args) { gemm<float>(args, &Library::sgemm); }
void blas_dgemm(const GemmArgs& args) { gemm<double>(args, &Library::dgemm); }

}  // namespace ts::cuda
