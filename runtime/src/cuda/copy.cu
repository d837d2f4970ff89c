// The on-device strided copy with dtype cast: one kernel per (destination,
// source) dtype pair, with the CPU copy's conversion rules (core/copy.cpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "copy_kernel.h"
#include "tensorsmith/cuda/runtime.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/errors.h"

namespace ts::cuda {

namespace {

// Float -> integer as core/copy.cpp's float_to_int: truncate; a value that fits
// int64 wraps modulo 2^bits; NaN, infinities and anything beyond int64 (uint64
// for uint64) give To's minimum.
template <typename To, typename From>
__device__ To float_to_int(From v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  const double t = trunc(static_cast<double>(v));
  if (t >= -kTwo63 && t < kTwo63) return static_cast<To>(static_cast<int64_t>(t));
  if (std::is_same_v<To, uint64_t> && t >= 0 && t < 2 * kTwo63) return static_cast<To>(t);
  return std::is_signed_v<To> ? static_cast<To>(To(1) << (sizeof(To) * 8 - 1)) : To(0);
}

// C-style conversion as core/copy.cpp's convert. Types that are not C++
// arithmetic types (complex aside, the 16-bit floats) convert through float (through double
// from a double or an integer, so that it rounds once).
template <typename To, typename From>
__device__ To convert(From v) {
  if constexpr (is_complex_v<To>) {
    return To(v);  // complex parts converted, or a real number with imaginary part +0
  } else if constexpr (is_complex_v<From>) {
    if constexpr (std::is_same_v<To, bool>) return static_cast<bool>(v);  // either part nonzero
    return convert<To>(v.re);  // numpy's astype keeps the real part
  } else if constexpr (!std::is_arithmetic_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (!std::is_arithmetic_v<To>) {
    if constexpr (std::is_same_v<From, double> || std::is_integral_v<From>) {
      return To(static_cast<double>(v));  // one rounding, as the CPU's ts::float16(double) / (integer)
    } else {
      return To(static_cast<float>(v));
    }
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Every dtype the copy handles: its DType enumerator and its element type on the
// device (the 16-bit floats are tensorsmith's own, so they round as the CPU's do).
#define TS_CUDA_COPY_DTYPES(X) \
  X(Bool, bool)                \
  X(Int8, int8_t)              \
  X(Int16, int16_t)            \
  X(Int32, int32_t)            \
  X(Int64, int64_t)            \
  X(UInt8, uint8_t)            \
  X(UInt16, uint16_t)          \
  X(UInt32, uint32_t)          \
  X(UInt64, uint64_t)          \
  X(Float32, float)            \
  X(Float64, double)           \
  X(Float16, ts::float16)      \
  X(BFloat16, ts::bfloat16)    \
  X(Complex64, ts::complex64)  \
  X(Complex128, ts::complex128)

bool supported(DType d) {
  switch (d) {
#define TS_CUDA_COPY_CASE(D, T) case DType::D:
    TS_CUDA_COPY_DTYPES(TS_CUDA_COPY_CASE)
#undef TS_CUDA_COPY_CASE
    return true;
    default:
      return false;
  }
}

// One kernel per destination type; the source type is a switch per element,
// the same branch for every thread (no divergence) in a memory-bound copy. A
// kernel per (destination, source) pair, 121 of them, took over two minutes of
// nvcc on the 2-core CI machine; this takes seconds.
template <typename To>
__device__ To load_converted(const char* p, DType from) {
  switch (from) {
#define TS_CUDA_COPY_LOAD(D, T) \
  case DType::D:                \
    return convert<To>(*reinterpret_cast<const T*>(p));
    TS_CUDA_COPY_DTYPES(TS_CUDA_COPY_LOAD)
#undef TS_CUDA_COPY_LOAD
    default:
      return To();  // unreachable: the host checks `from` before launching
  }
}

template <typename To>
__global__ void cast_copy(char* out, const char* in, DType from, int64_t n, CopyLayout layout) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rest = i, out_offset = 0, in_offset = 0;
    for (int d = layout.ndim - 1; d >= 0; --d) {
      const int64_t index = rest % layout.shape[d];
      rest /= layout.shape[d];
      out_offset += index * layout.out_strides[d];
      in_offset += index * layout.in_strides[d];
    }
    *reinterpret_cast<To*>(out + out_offset) = load_converted<To>(in + in_offset, from);
  }
}

template <typename To>
void launch(char* out, const char* in, DType from, int64_t n, const CopyLayout& layout, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  // Grid-stride loop: past this many blocks each thread copies several elements.
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  cast_copy<To><<<grid, kThreads, 0, stream>>>(out, in, from, n, layout);
}

}  // namespace

void launch_cast_copy(DType to, DType from, char* out, const char* in, int64_t n, const CopyLayout& layout,
                      cudaStream_t stream, const char* what) {
  TS_CHECK(supported(to) && supported(from), NotImplementedError,
           what << ": no CUDA copy from " << dtype_name(from) << " to " << dtype_name(to));
  switch (to) {
#define TS_CUDA_COPY_TO(D, T)                          \
  case DType::D:                                       \
    launch<T>(out, in, from, n, layout, stream);       \
    break;
    TS_CUDA_COPY_DTYPES(TS_CUDA_COPY_TO)
#undef TS_CUDA_COPY_TO
    default:
      break;
  }
  TS_CUDA_CHECK_LAUNCH(what);
}

}  // namespace ts::cuda
