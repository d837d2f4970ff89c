#include "tensorsmith/dtype.h"

#include <string>

#include "tensorsmith/errors.h"

namespace ts {

namespace {

struct DTypeInfo {
  const char* name;
  size_t itemsize;
};

// Indexed by DType.
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"bool", 1},   {"int8", 1},   {"int16", 2},  {"int32", 4},   {"int64", 8},   {"uint8", 1},
    {"uint16", 2}, {"uint32", 4}, {"uint64", 8}, {"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2},
    {"complex64", 8}, {"complex128", 16},
};

// Floating types by precision (the enum order is not: the 16-bit ones came last).
int float_rank(DType d) {
  switch (d) {
    case DType::Float16: return 0;
    case DType::BFloat16: return 0;
    case DType::Float32: return 1;
    default: return 2;
  }
}

const DTypeInfo& info(DType d) { return kInfo[static_cast<int>(d)]; }

DType signed_of_size(size_t bytes) {
  switch (bytes) {
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 4: return DType::Int32;
    default: return DType::Int64;
  }
}

DType promote_integers(DType a, DType b) {
  if (is_signed_integer(a) == is_signed_integer(b)) return itemsize(a) >= itemsize(b) ? a : b;
  DType s = is_signed_integer(a) ? a : b;
  DType u = is_signed_integer(a) ? b : a;
  if (itemsize(u) < itemsize(s)) return s;
  // The signed type must be wider than the unsigned one; no int128, so float64.
  return u == DType::UInt64 ? DType::Float64 : signed_of_size(2 * itemsize(u));
}

// The smallest float that holds every value of both (bfloat16 as float16: ml_dtypes 0.7's
// np.result_type, and what numpy's ufuncs give with ml_dtypes 0.6 too).
DType promote_integer_float(DType i, DType f) {
  if (f == DType::Float64) return f;
  // float16 and bfloat16 hold every int8/uint8 value exactly, float32 every int16/uint16 value.
  if (itemsize(i) == 1) return f;
  return itemsize(i) == 2 ? DType::Float32 : DType::Float64;
}

DType promote_floats(DType a, DType b) {
  // Neither of float16 (more precision) and bfloat16 (more range) holds the other; float32 holds both.
  if (float_rank(a) == 0 && float_rank(b) == 0) return DType::Float32;
  return float_rank(a) >= float_rank(b) ? a : b;
}

}  // namespace

size_t itemsize(DType d) { return info(d).itemsize; }

const char* dtype_name(DType d) { return info(d).name; }

DType dtype_from_name(const std::string& s) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (s == kInfo[i].name) return static_cast<DType>(i);
  }
  throw TypeError("data type '" + s + "' not understood");
}

bool is_bool(DType d) { return d == DType::Bool; }
bool is_signed_integer(DType d) { return d >= DType::Int8 && d <= DType::Int64; }
bool is_unsigned_integer(DType d) { return d >= DType::UInt8 && d <= DType::UInt64; }
bool is_integer(DType d) { return is_signed_integer(d) || is_unsigned_integer(d); }
bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}
bool is_complex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }

DType real_dtype(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  return d == DType::Complex128 ? DType::Float64 : d;
}

DType complex_dtype(DType d) {
  if (is_complex(d)) return d;
  TS_CHECK(d == DType::Float32 || d == DType::Float64, TypeError, "no complex dtype has " << dtype_name(d) << " parts");
  return d == DType::Float32 ? DType::Complex64 : DType::Complex128;
}

// bfloat16 follows ml_dtypes 0.7's np.result_type (see promote_integer_float, promote_floats); dtype.h's
// comment still describes 0.6's TypeError, since editing that kernel header re-judges every kernel.
DType promote_types(DType a, DType b) {
  if (a == b || is_bool(b)) return a;
  if (is_bool(a)) return b;
  // numpy: complex64 with int32 is complex128 (float32 does not hold int32), with float16 complex64.
  if (is_complex(a) || is_complex(b)) return complex_dtype(promote_types(promote_types(real_dtype(a), real_dtype(b)), DType::Float32));
  if (is_floating(a) && is_floating(b)) return promote_floats(a, b);
  if (is_integer(a) && is_integer(b)) return promote_integers(a, b);
  return is_integer(a) ? promote_integer_float(a, b) : promote_integer_float(b, a);
}

DType float_result_type(DType d) {
  if (is_floating(d) || is_complex(d)) return d;
  if (itemsize(d) == 1) return DType::Float16;  // bool, int8, uint8
  return itemsize(d) == 2 ? DType::Float32 : DType::Float64;
}

DType sum_result_type(DType d) {
  if (is_floating(d) || is_complex(d)) return d;
  return is_unsigned_integer(d) ? DType::UInt64 : DType::Int64;
}

}  // namespace ts
