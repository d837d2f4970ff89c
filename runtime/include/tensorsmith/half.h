// 16-bit floating-point value types: ts::float16 (IEEE 754 binary16) and
// ts::bfloat16 (the top half of a float32). Both store two bytes and compute in
// float: they convert implicitly to float, and explicitly (round to nearest,
// ties to even; NaN stays NaN, overflow gives infinity, subnormals kept) from
// float, double and integers. Everything is integer bit manipulation and exact
// float arithmetic whose results are normal floats (so flush-to-zero and
// denormals-are-zero modes change nothing), and the same code compiles for the
// host and for CUDA devices (TS_HOST_DEVICE).
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensorsmith/bits.h"
#include "tensorsmith/macros.h"

namespace ts {

namespace half_detail {

// Rounds a binary float with SE exponent and SM mantissa bits (bit pattern x) to
// one with DE exponent and DM mantissa bits, to nearest, ties to even. NaNs stay
// NaN (quiet, keeping the payload's top bits), too-large values become infinity.
template <typename U, int SE, int SM, int DE, int DM>
TS_HOST_DEVICE constexpr uint16_t narrow(U x) {
  constexpr int kSrcBias = (1 << (SE - 1)) - 1;
  constexpr int kDstBias = (1 << (DE - 1)) - 1;
  constexpr U kSrcInf = static_cast<U>((U(1) << SE) - 1) << SM;
  constexpr uint16_t kDstInf = static_cast<uint16_t>(((1u << DE) - 1) << DM);
  const uint16_t sign = static_cast<uint16_t>(static_cast<uint16_t>(x >> (SE + SM)) << (DE + DM));
  const U ax = x & ((U(1) << (SE + SM)) - 1);
  if (ax > kSrcInf) {
    const uint16_t payload = static_cast<uint16_t>((ax >> (SM - DM)) & ((U(1) << DM) - 1));
    return static_cast<uint16_t>(sign | kDstInf | (1u << (DM - 1)) | payload);
  }
  if (ax == kSrcInf) return static_cast<uint16_t>(sign | kDstInf);
  const U exponent_field = ax >> SM;
  // value = m * 2^(e - SM), m with its implicit leading bit.
  const int e = exponent_field == 0 ? 1 - kSrcBias : static_cast<int>(exponent_field) - kSrcBias;
  const U m = exponent_field == 0 ? (ax & ((U(1) << SM) - 1)) : ((ax & ((U(1) << SM) - 1)) | (U(1) << SM));
  if (e > kDstBias) return static_cast<uint16_t>(sign | kDstInf);
  const bool normal = e >= 1 - kDstBias;
  const int ulp_exponent = (normal ? e : 1 - kDstBias) - DM;  // exponent of the destination's last mantissa bit
  const int shift = ulp_exponent - (e - SM);                  // >= SM - DM > 0
  if (shift > SM + 1) return sign;                            // below half the smallest subnormal
  U q = m >> shift;
  const U rest = m & ((U(1) << shift) - 1);
  const U half = U(1) << (shift - 1);
  if (rest > half || (rest == half && (q & 1) != 0)) ++q;
  // A normal q includes the implicit bit; rounding up may carry into the exponent.
  const U magnitude = normal ? (static_cast<U>(e + kDstBias - 1) << DM) + q : q;
  if (magnitude >= kDstInf) return static_cast<uint16_t>(sign | kDstInf);
  return static_cast<uint16_t>(sign | magnitude);
}

// The conversions between float and the 16-bit types below give narrow's and the exact widening's bits
// without a branch or a loop: every case is computed and one is selected, so GCC vectorises loops of them
// (a float16 add ran 3.5x slower with the branches). tests/runtime/test_half.py checks all 2^16 values
// of each type, and float values on every rounding boundary, against numpy and ml_dtypes.

// float16 bits -> float, exactly.
TS_HOST_DEVICE inline float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  const uint32_t normal = ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 -> 127
  const uint32_t special = 0x7f800000u | (mantissa << 13);                 // infinity, NaN with its payload
  // A subnormal (or zero) is mantissa * 2^-24: an exact int -> float conversion and power-of-two scaling.
  const uint32_t subnormal = ts::bits::of(static_cast<float>(static_cast<int32_t>(mantissa)) * 0x1p-24f);
  const uint32_t magnitude = exponent == 0x1fu ? special : (exponent != 0 ? normal : subnormal);
  return ts::bits::to_float(sign | magnitude);
}

// float -> float16 bits, to nearest, ties to even: narrow<uint32_t, 8, 23, 5, 10>'s result.
TS_HOST_DEVICE inline uint16_t float_to_float16(float f) {
  const uint32_t x = ts::bits::of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  const uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);  // quiet, the payload's top bits
  // Normal results: rebias 127 -> 15, round at bit 13 (add just under half an ulp, plus the kept lsb).
  const uint32_t normal = (ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  // |f| < 2^-14 (a float16 subnormal or zero): adding 0.5, whose ulp is 2^-24, rounds |f| to a multiple of
  // 2^-24 in the float unit's round-to-nearest-even; the multiple is the float16 bits (2^-14 gives 0x400).
  const uint32_t subnormal = ts::bits::of(ts::bits::to_float(ax) + 0.5f) - 0x3f000000u;
  uint32_t magnitude = ax < 0x38800000u ? subnormal : normal;
  magnitude = ax >= 0x477ff000u ? 0x7c00u : magnitude;  // 65520 and above round to infinity
  magnitude = ax > 0x7f800000u ? nan : magnitude;
  return static_cast<uint16_t>(sign | magnitude);
}

// float -> bfloat16 bits, to nearest, ties to even: narrow<uint32_t, 8, 23, 8, 7>'s result.
TS_HOST_DEVICE inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = ts::bits::of(f);
  const uint32_t nan = ((x >> 16) & 0x8000u) | 0x7fc0u | ((x >> 16) & 0x7fu);  // quiet, the payload's top bits
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // the largest finite values carry to infinity
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

}  // namespace half_detail

// CRTP base: storage, conversions and comparisons shared by both types.
template <typename Derived>
struct half_base {
  uint16_t bits;

  TS_HOST_DEVICE static constexpr Derived from_bits(uint16_t b) {
    Derived d{};
    d.bits = b;
    return d;
  }
  // Comparisons between two values of the same type follow IEEE (NaN compares unequal).
  TS_HOST_DEVICE friend bool operator==(Derived a, Derived b) { return float(a) == float(b); }
  TS_HOST_DEVICE friend bool operator!=(Derived a, Derived b) { return float(a) != float(b); }
  TS_HOST_DEVICE friend bool operator<(Derived a, Derived b) { return float(a) < float(b); }
  TS_HOST_DEVICE friend bool operator<=(Derived a, Derived b) { return float(a) <= float(b); }
  TS_HOST_DEVICE friend bool operator>(Derived a, Derived b) { return float(a) > float(b); }
  TS_HOST_DEVICE friend bool operator>=(Derived a, Derived b) { return float(a) >= float(b); }
};

struct float16 : half_base<float16> {
  float16() = default;
  TS_HOST_DEVICE explicit float16(float f) : half_base{half_detail::float_to_float16(f)} {}
  TS_HOST_DEVICE explicit float16(double d) : half_base{half_detail::narrow<uint64_t, 11, 52, 5, 10>(ts::bits::of(d))} {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  TS_HOST_DEVICE explicit float16(I i) : float16(static_cast<double>(i)) {}
  TS_HOST_DEVICE operator float() const { return half_detail::float16_to_float(bits); }
};

struct bfloat16 : half_base<bfloat16> {
  bfloat16() = default;
  TS_HOST_DEVICE explicit bfloat16(float f) : half_base{half_detail::float_to_bfloat16(f)} {}
  TS_HOST_DEVICE explicit bfloat16(double d) : half_base{half_detail::narrow<uint64_t, 11, 52, 8, 7>(ts::bits::of(d))} {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  TS_HOST_DEVICE explicit bfloat16(I i) : bfloat16(static_cast<double>(i)) {}
  TS_HOST_DEVICE operator float() const { return ts::bits::to_float(static_cast<uint32_t>(bits) << 16); }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "16-bit storage");
static_assert(std::is_trivially_copyable_v<float16> && std::is_trivially_copyable_v<bfloat16>, "plain bytes");

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
// float, double, float16, bfloat16.
template <typename T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

}  // namespace ts
