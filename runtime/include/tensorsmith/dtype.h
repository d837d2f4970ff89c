// Data types of the runtime and the NumPy 2 promotion rules between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tensorsmith/complex.h"
#include "tensorsmith/half.h"

namespace ts {

// Order matters: it indexes the per-dtype kernel tables (see dispatch.h).
enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float32,
  Float64,
  Float16,   // appended: earlier table indices stay
  BFloat16,
  Complex64,  // appended after the 16-bit floats
  Complex128,
};
constexpr int kNumDTypes = 15;

size_t itemsize(DType d);
const char* dtype_name(DType d);             // "float32", "bool", "bfloat16", ...
DType dtype_from_name(const std::string& s);  // throws TypeError on an unknown name

bool is_bool(DType d);
bool is_integer(DType d);  // signed or unsigned integer; bool is not an integer
bool is_signed_integer(DType d);
bool is_unsigned_integer(DType d);
bool is_floating(DType d);  // float16, bfloat16, float32, float64 (real floating)
bool is_complex(DType d);   // complex64, complex128
// The real dtype of a complex one's parts (complex64 -> float32); other dtypes are their own.
DType real_dtype(DType d);
// The complex dtype whose parts are `d` (float32 -> complex64, float64 -> complex128); a complex dtype is its own.
DType complex_dtype(DType d);

// numpy.result_type for two arrays (NumPy 2 rules, no value-based casting);
// for bfloat16 what np.result_type gives with ml_dtypes 0.7's bfloat16:
// bool, int8, uint8 -> bfloat16; int16, uint16 and float16 -> float32; wider
// integers -> float64; float32/float64 win. With a complex dtype: the complex
// dtype of the promotion of the real one with the complex one's parts.
DType promote_types(DType a, DType b);
// The floating type NumPy computes a float-valued function of `d` in
// (np.exp(int8) -> float16, int16 -> float32, int32/int64 -> float64).
DType float_result_type(DType d);
// Accumulator/result type of sum and prod: bool and signed -> int64,
// unsigned -> uint64, floating and complex unchanged.
DType sum_result_type(DType d);

// C++ type <-> DType.
template <DType D> struct cpp_type;
template <> struct cpp_type<DType::Bool> { using type = bool; };
template <> struct cpp_type<DType::Int8> { using type = int8_t; };
template <> struct cpp_type<DType::Int16> { using type = int16_t; };
template <> struct cpp_type<DType::Int32> { using type = int32_t; };
template <> struct cpp_type<DType::Int64> { using type = int64_t; };
template <> struct cpp_type<DType::UInt8> { using type = uint8_t; };
template <> struct cpp_type<DType::UInt16> { using type = uint16_t; };
template <> struct cpp_type<DType::UInt32> { using type = uint32_t; };
template <> struct cpp_type<DType::UInt64> { using type = uint64_t; };
template <> struct cpp_type<DType::Float32> { using type = float; };
template <> struct cpp_type<DType::Float64> { using type = double; };
template <> struct cpp_type<DType::Float16> { using type = float16; };
template <> struct cpp_type<DType::BFloat16> { using type = bfloat16; };
template <> struct cpp_type<DType::Complex64> { using type = complex64; };
template <> struct cpp_type<DType::Complex128> { using type = complex128; };
template <DType D> using cpp_type_t = typename cpp_type<D>::type;

}  // namespace ts
