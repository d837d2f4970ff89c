// Scalar helpers that spec expressions call where plain C++ operators do not
// match numpy (NaN propagation, signed zero, integer powers, bool arithmetic).
// Every function is a pure function of its arguments: safe in any kernel. All
// are constexpr, which nvcc (--expt-relaxed-constexpr) also compiles for the device.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tensorsmith/bits.h"
#include "tensorsmith/complex.h"
#include "tensorsmith/complex_math.h"
#include "tensorsmith/half.h"
#include "tensorsmith/log_exp_tables.h"
#include "tensorsmith/macros.h"

namespace ts::ops {

template <typename T>
constexpr bool is_nan(T x) {
  if constexpr (ts::is_floating_v<T>) {
    return x != x;
  } else {
    (void)x;
    return false;
  }
}

// numpy.maximum / numpy.minimum: NaN wins over any number, and of two equal values the second is
// returned, as numpy's float32/float64 loops do (maximum(-0.0, 0.0) is 0.0, maximum(0.0, -0.0) is -0.0; a
// max reduction folding maximum(acc, x) then keeps the later of equal zeros). One select, no branch, so
// loops of them vectorise.
template <typename T>
constexpr T maximum(T a, T b) {
  return ((a > b) | is_nan(a)) ? a : b;
}
template <typename T>
constexpr T minimum(T a, T b) {
  return ((a < b) | is_nan(a)) ? a : b;
}

// numpy.sign: -1, 0 or 1 (+0.0 for either zero), NaN for NaN.
template <typename T>
constexpr T sign(T x) {
  if (is_nan(x)) return x;
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

// abs that works for unsigned and bool (std::abs would not compile or warn)
// and wraps the most negative signed value like numpy.
template <typename T>
constexpr T abs(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(x);
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;
  } else {
    return x;
  }
}

// Two's-complement negation for integers without signed-overflow UB.
template <typename T>
constexpr T negative(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

// Wrapping integer add/subtract/multiply (numpy wraps; C++ signed overflow is UB).
template <typename T>
constexpr T add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
constexpr T subtract(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
constexpr T multiply(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<T>) {
    // Promote to at least unsigned int so the product of two small unsigned
    // values never becomes a signed int that overflows.
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// acc + a * b in the accumulator type: wrapping for integers, OR-of-AND for
// bool (numpy's bool matmul), plain arithmetic for floats.
template <typename Acc, typename T>
constexpr Acc multiply_add(Acc acc, T a, T b) {
  if constexpr (std::is_integral_v<Acc>) {
    return add<Acc>(acc, multiply<Acc>(static_cast<Acc>(a), static_cast<Acc>(b)));
  } else {
    return acc + static_cast<Acc>(a) * static_cast<Acc>(b);
  }
}

TS_HOST_DEVICE inline float pow_float(float base, float exponent);  // below, with the exp and log forms
TS_HOST_DEVICE TS_FORCE_INLINE bool pow_double_near_ok(double base, double exponent);  // below too
TS_HOST_DEVICE TS_FORCE_INLINE double pow_double_near(double base, double exponent);

namespace detail {

// base ** bits by kSteps fixed steps over the exponent's low bits, each multiplying by base or by 1 (a mask
// picks), with wrap-around: no branch, so loops vectorise and random exponents leave nothing to mispredict.
// Unrolled whole (GCC stops at 8 steps in a large kernel).
template <int kSteps, typename T>
constexpr T pow_by_fixed_steps(T base, std::make_unsigned_t<T> bits) {
  using U = std::make_unsigned_t<T>;
  using W = std::common_type_t<U, unsigned>;  // no signed overflow in the mask arithmetic
  T result = 1;
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC unroll 16
#endif
  for (int step = 0; step < kSteps; ++step) {
    const W take = W{0} - static_cast<W>(bits & 1u);  // all ones where this bit is set
    result = multiply<T>(result, static_cast<T>(W{1} + ((static_cast<W>(base) - W{1}) & take)));
    base = multiply<T>(base, base);
    bits = static_cast<U>(bits >> 1);
  }
  return result;
}

}  // namespace detail

// numpy.power. float: pow_float. Integers: exponentiation by squaring with wrap-around.
template <typename T>
constexpr T pow(T base, T exponent) {
  if constexpr (std::is_same_v<T, float>) {
    return pow_float(base, exponent);
  } else if constexpr (std::is_same_v<T, double>) {
    // x**0 and 1**y are 1 for every x and y, NaN included (IEEE 754, numpy); libm gives NaN for a signalling one.
    if (exponent == 0.0 || base == 1.0) return 1.0;
    return pow_double_near_ok(base, exponent) ? pow_double_near(base, exponent) : std::pow(base, exponent);
  } else if constexpr (std::is_floating_point_v<T>) {
    return exponent == T(0) || base == T(1) ? T(1) : std::pow(base, exponent);
  } else if constexpr (std::is_same_v<T, bool>) {
    return base || !exponent;
  } else {
    // The engine refuses negative exponents before a kernel runs (the spec's domain, as numpy raises);
    // the exponent's bits are walked unsigned, so no value can make this loop run forever.
    using U = std::make_unsigned_t<T>;
    U bits = static_cast<U>(exponent);
    if constexpr (sizeof(T) <= 2) {
      // An 8- or 16-bit exponent in a fixed step per bit (4M int16 elements, exponents 0-3, one core: 23 -> 4.4 ms).
      return detail::pow_by_fixed_steps<8 * static_cast<int>(sizeof(T))>(base, bits);
    } else {
      // Wider exponents bit by bit up to the highest set one: fixed steps cost 32-bit loops of a repeated
      // exponent (x**3) more than a predicted branch does. Blocks of small exponents take pow_fast.
      T result = 1;
      for (; bits != 0; bits >>= 1) {
        if (bits & 1) result = multiply<T>(result, base);
        base = multiply<T>(base, base);
      }
      return result;
    }
  }
}

// numpy.floor / numpy.ceil: integers (and bool) are returned unchanged.
template <typename T>
constexpr T floor(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::floor(x);
  } else {
    return x;
  }
}
template <typename T>
constexpr T ceil(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::ceil(x);
  } else {
    return x;
  }
}

#if !defined(__CUDA_ARCH__)  // host code only: the device calls CUDA's own functions
namespace detail {

// What the branch-free exp and log forms need of float and double's layout and of ln2.
template <typename F>
struct FloatLayout;
template <>
struct FloatLayout<float> {
  using Bits = uint32_t;
  using SignedBits = int32_t;
  static constexpr int kMantissa = 23;
  static constexpr Bits kBias = 127;
  static constexpr float kRound = 12582912.0f;  // 1.5 * 2**23: adding it rounds to an integer
  static constexpr float kInvLn2 = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693359375f;  // ln2 = kLn2Hi + kLn2Lo; n * kLn2Hi is exact for |n| < 2**15
  static constexpr float kLn2Lo = -2.12194440e-4f;
  static constexpr float kMinNormal = 1.17549435e-38f;
  static constexpr float kSubnormalScale = 8388608.0f;  // 2**23
  static constexpr float kSubnormalExponent = 23.0f;
  static constexpr Bits kSqrtHalf = 0x3f3504f3u;  // sqrt(1/2)'s bits
};
template <>
struct FloatLayout<double> {
  using Bits = uint64_t;
  using SignedBits = int64_t;
  static constexpr int kMantissa = 52;
  static constexpr Bits kBias = 1023;
  static constexpr double kRound = 6755399441055744.0;  // 1.5 * 2**52
  static constexpr double kInvLn2 = 1.4426950408889634;
  static constexpr double kLn2Hi = 0x1.62e42ffp-1;  // 29 bits: n * kLn2Hi is exact for |n| < 2**24
  static constexpr double kLn2Lo = -0x1.718432a1b0e26p-35;
  static constexpr double kMinNormal = 2.2250738585072014e-308;
  static constexpr double kSubnormalScale = 0x1p54;
  static constexpr double kSubnormalExponent = 54.0;
  static constexpr Bits kSqrtHalf = 0x3fe6a09e667f3bcdull;
};

// x = n ln2 + r with |r| <= ln2/2: `shifted` is n + kRound (n rounded by the addition; its low bits are n's).
template <typename F>
struct Ln2Reduced {
  F shifted, n, r;
};
template <typename F>
inline Ln2Reduced<F> reduce_ln2(F x) {
  using L = FloatLayout<F>;
  const F shifted = x * L::kInvLn2 + L::kRound;
  const F n = shifted - L::kRound;
  return {shifted, n, (x - n * L::kLn2Hi) - n * L::kLn2Lo};
}

// The integer n of `shifted` (reduce_ln2's), as unsigned bits: defined for any bits, NaN's included.
template <typename F>
inline typename FloatLayout<F>::Bits n_bits(F shifted) {
  return ts::bits::of(shifted) - ts::bits::of(FloatLayout<F>::kRound);
}

// 2**n for an n whose float is normal.
template <typename F>
inline F pow2(typename FloatLayout<F>::Bits n) {
  using L = FloatLayout<F>;
  return ts::bits::cast<F>(static_cast<typename L::Bits>((n + L::kBias) << L::kMantissa));
}

// q 2**n, 2**n in two halves that are each normal, so that results near the ends of the range neither
// overflow early nor lose subnormals.
template <typename F>
inline F times_pow2(F q, F shifted) {
  using L = FloatLayout<F>;
  const typename L::Bits n = n_bits(shifted);
  const auto half = static_cast<typename L::Bits>(static_cast<typename L::SignedBits>(n) >> 1);
  return q * pow2<F>(half) * pow2<F>(n - half);
}

// e**r - 1 for |r| <= ln2/2 (plus rounding), accurate relative to itself. float: r + r**2 p(r), p of degree 4
// by Estrin's scheme, a minimax fit of (e**r - 1 - r) / r**2 weighted by r**2 (absolute error of e**r below
// 5e-9). double: p the Taylor series to r**11 (e**r's to r**13; truncation below 5e-18 relative), in fused
// steps (horner_fused: a third faster than a multiply and an add each, and no less accurate).
inline float expm1_reduced(float r) {
  const float r2 = r * r;
  const float p01 = 1.66665181517601e-1f * r + 0.5f;
  const float p23 = 8.368883281946182e-3f * r + 4.166620597243309e-2f;
  const float p = (1.3950474094599485e-3f * r2 + p23) * r2 + p01;
  return p * r2 + r;
}
// c[0] + x (c[1] + x (c[2] + ...)) by Horner's rule, each step one fused multiply-add: one instruction at the
// AVX2 and AVX-512 levels (isa.h), libm's fma at the baseline x86-64 level (slower there, the same bits).
// Unrolled by recursion on the index: GCC vectorises no loop that holds this one.
template <int I = 0, int N>
inline double horner_fused(double x, const double (&c)[N]) {
  if constexpr (I == N - 1) {
    return c[I];
  } else {
    return std::fma(x, horner_fused<I + 1>(x, c), c[I]);
  }
}

// 1/2!, 1/3!, ..., 1/13!: e**r - 1 - r = r**2 (1/2! + r (1/3! + ...)), the Taylor series to r**13.
inline constexpr double kExpTaylor[12] = {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                          1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800,
                                          1.0 / 479001600, 1.0 / 6227020800};
inline double expm1_tail(double r) { return r * r * horner_fused(r, kExpTaylor); }  // e**r - 1 - r
inline double expm1_reduced(double r) { return r + expm1_tail(r); }

// a + b = s + two_sum_error(a, b, s) exactly, for s = a + b rounded (Knuth's TwoSum: no ordering needed).
inline double two_sum_error(double a, double b, double s) {
  const double b_part = s - a;
  return (a - (s - b_part)) + (b - b_part);
}

// An unevaluated sum hi + lo, |lo| at most half an ulp of hi: a double with about 106 bits.
struct DoubleDouble {
  double hi, lo;
};

// a b exactly (barring underflow): the product and its rounding error, which one fused multiply-add gives.
inline DoubleDouble two_product(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}

// e**x = 2**n (1 + em_hi + em_lo) for x in [-746, 710] or NaN, with em = e**r - 1 carried past double
// precision: r = x - n ln2 rounded, plus its rounding error c, and e**(r + c) - 1 = em + c (1 + em).
struct Expm1Parts {
  double shifted;  // reduce_ln2's: n + kRound
  double em_hi, em_lo;
};
inline Expm1Parts expm1_parts(double x) {
  using L = FloatLayout<double>;
  const Ln2Reduced<double> t = reduce_ln2(x);
  const double r_hi = x - t.n * L::kLn2Hi;            // exact
  const double c = (r_hi - t.r) - t.n * L::kLn2Lo;  // x - n ln2 = r + c
  const double q = expm1_tail(t.r);
  const double em_hi = t.r + q;
  return {t.shifted, em_hi, ((t.r - em_hi) + q) + c * (1.0 + em_hi)};
}

// e**x - 1 from its parts, as a DoubleDouble within about 0.5 ulp, for n in [-58, 57] (x in [-40, 40]):
// 2**n + 2**n em_hi and then - 1 are summed exactly (2**n em_hi is exact), the small terms added once.
inline DoubleDouble expm1_sum(const Expm1Parts& e) {
  const double scale = pow2<double>(n_bits(e.shifted));
  const double b = scale * e.em_hi;
  const double s1 = scale + b;
  const double s2 = s1 - 1.0;
  const double tail = (two_sum_error(scale, b, s1) + two_sum_error(s1, -1.0, s2)) + scale * e.em_lo;
  const double hi = s2 + tail;
  return {hi, (s2 - hi) + tail};  // |s2| >= |tail|: the error of hi is exact
}

// R(z) of log's 2 atanh(s) = 2s + s R(s**2): the series to s**8 for float, s**20 for double (truncation
// below 3e-9 and 1e-17 relative for |s| <= 0.172).
inline float atanh_tail(float z) {
  return z * (0.666666666666666667f + z * (0.4f + z * (0.285714285714285714f + z * 0.222222222222222222f)));
}
inline double atanh_tail(double z) {
  return z * (2.0 / 3 + z * (2.0 / 5 + z * (2.0 / 7 + z * (2.0 / 9 + z * (2.0 / 11 + z * (2.0 / 13 +
         z * (2.0 / 15 + z * (2.0 / 17 + z * (2.0 / 19 + z * (2.0 / 21))))))))));
}

// k of log's bits - bits(sqrt(1/2)) (the arithmetic shift of its bits by the mantissa's width), as F. double:
// through a 2**52 bias, since int64 -> double is one instruction only from AVX-512 on (a plain cast kept
// AVX2 loops of log scalar); adding 1024 to k first keeps the bits from wrapping for every positive double.
inline float exponent_of(uint32_t bits) {
  return static_cast<float>(static_cast<int32_t>(bits) >> FloatLayout<float>::kMantissa);
}
inline double exponent_of(uint64_t bits) {
  constexpr int kMantissa = FloatLayout<double>::kMantissa;
  const uint64_t biased = (bits + (uint64_t{1024} << kMantissa)) >> kMantissa;  // k + 1024, in [0, 2048]
  return ts::bits::cast<double>(biased + ts::bits::of(0x1p52)) - (0x1p52 + 1024.0);
}

// m of the same bits: their mantissa moved back to [sqrt(1/2), sqrt(2)).
template <typename Bits>
inline auto mantissa_of(Bits bits) {
  using F = std::conditional_t<sizeof(Bits) == 4, float, double>;
  using L = FloatLayout<F>;
  constexpr Bits kMantissaMask = (Bits{1} << L::kMantissa) - 1;
  return ts::bits::cast<F>(static_cast<Bits>((bits & kMantissaMask) + L::kSqrtHalf));
}

// Natural log, branch-free. x = 2**k m with m in [sqrt(1/2), sqrt(2)) from the bits (subnormals scaled
// first); with f = m - 1 (exact) and s = f / (2 + f), log(m) = 2 atanh(s) = f - f**2/2 + s (f**2/2 + R),
// and k ln2 added in two parts. 0 gives -inf, negatives NaN, inf inf, NaN NaN.
template <typename F>
inline F log_branch_free(F x) {
  using L = FloatLayout<F>;
  const bool subnormal = x < L::kMinNormal;  // also zero and negatives, which the selects below replace
  const F xs = subnormal ? x * L::kSubnormalScale : x;
  // Unsigned arithmetic on the bits: m's exponent is moved to 0 or -1 so that m is in [sqrt(1/2), sqrt(2)).
  const typename L::Bits bits = ts::bits::of(xs) - L::kSqrtHalf;
  const F m = mantissa_of(bits);
  const F kf = exponent_of(bits) - (subnormal ? L::kSubnormalExponent : F(0));
  const F f = m - F(1);
  const F s = f / (F(2) + f);
  const F hfsq = F(0.5) * f * f;
  const F result = kf * L::kLn2Hi + ((f - hfsq) + (s * (hfsq + atanh_tail(s * s)) + kf * L::kLn2Lo));
  const F special = x == F(0) ? -std::numeric_limits<F>::infinity()
                              : (x < F(0) ? std::numeric_limits<F>::quiet_NaN() : x);  // inf, NaN stay
  return (x > F(0) && x < std::numeric_limits<F>::infinity()) ? result : special;
}

}  // namespace detail
#endif

// e**x. float: a branch-free, inlinable form the compiler vectorises (a call to
// libm's expf keeps a loop scalar): x = n ln2 + r with |r| <= ln2/2, e**r by a
// degree-6 polynomial (detail::expm1_reduced), times 2**n built from exponent bits
// in two halves; NaN propagates. Checked over every float in [-104, 89]: at most 1.03 ulp from
// the exact value, so never more than 1 ulp from the correctly rounded result.
// Other types: std::exp.
TS_HOST_DEVICE inline float exp_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  constexpr float kMaxFinite = 88.72283172607421875f;  // the largest float whose exp is finite
  // Two one-sided clamps, each one vector min or max (NaN compares false: stays NaN); n is then in
  // [-150, 129], whose halves are each a normal exponent.
  const float low = x < -104.0f ? -104.0f : x;
  const float xc = low > 89.0f ? 89.0f : low;
  const detail::Ln2Reduced<float> t = detail::reduce_ln2(xc);
  const float result = detail::times_pow2(detail::expm1_reduced(t.r) + 1.0f, t.shifted);
  return x > kMaxFinite ? std::numeric_limits<float>::infinity() : result;
#endif
}

// e**x for double, in exp_float's way, e**r = 1 + (r + r**2 p(r)) with p a Taylor series
// (detail::expm1_reduced). Checked on 10**8 random doubles over the whole range, near 0 and at its ends: at most 1 ulp
// from glibc's exp, 0.97 from the exact value (5x faster than glibc's in a loop, which it kept scalar).
TS_HOST_DEVICE inline double exp_double(double x) {
#if defined(__CUDA_ARCH__)
  return ::exp(x);
#else
  constexpr double kMaxFinite = 709.782712893383973;  // the largest double whose exp is finite
  const double low = x < -746.0 ? -746.0 : x;  // NaN compares false: stays NaN; n is in [-1077, 1025]
  const double xc = low > 710.0 ? 710.0 : low;
  const detail::Ln2Reduced<double> t = detail::reduce_ln2(xc);
  const double result = detail::times_pow2(1.0 + detail::expm1_reduced(t.r), t.shifted);
  return x > kMaxFinite ? std::numeric_limits<double>::infinity() : result;
#endif
}

template <typename T>
TS_HOST_DEVICE inline T exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_float(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return exp_double(x);
  } else {
    return std::exp(x);
  }
}

// tanh. float: branch-free and inlinable, so loops of it vectorise (libm's tanhf kept a loop scalar: 5 ns an
// element). Below |x| = 0.625, x + x**3 p(x**2) with p a degree-4 fit of (tanh(x)/x - 1)/x**2 weighted by
// the relative error of tanh; above, 1 - 2 / (e**2|x| + 1) with exp_float, where the subtraction loses
// nothing (its result exceeds the subtracted term from 0.55 on); both are computed and one selected. Past
// |x| = 9.1 the float result is 1 (the clamp keeps e**2|x| finite). Signs of zero and NaN propagate. Checked
// every float: at most 1.4 ulp from the exact value. Other types: std::tanh.
TS_HOST_DEVICE inline float tanh_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#else
  const float a = std::fabs(x);
  const float x2 = x * x;
  const float p = (((-5.775797152552403e-3f * x2 + 2.070450778496588e-2f) * x2 - 5.376072209035652e-2f) * x2 +
                   1.3331712498532633e-1f) * x2 - 3.3333293159180316e-1f;
  const float small = a + (a * x2) * p;  // on |x|, so that -0 keeps its sign through copysign
  const float ac = a > 9.1f ? 9.1f : a;
  const float large = 1.0f - 2.0f / (exp_float(ac + ac) + 1.0f);
  return std::copysign(a < 0.625f ? small : large, x);  // NaN is not < 0.625, and exp_float keeps it NaN
#endif
}

// tanh for double: -m / (2 + m) for m = e**-2|x| - 1 (detail::expm1_sum, carried as a DoubleDouble), the
// quotient corrected once by its exact remainder (detail::two_product), so it is within about 0.5 ulp before
// its last rounding; past |x| = 20 the result is 1 (the clamp keeps e**-2|x| normal). One division, whose
// reciprocal makes both the quotient and its correction (a vector division takes as long as the rest of it).
// Branch-free, so loops vectorise. Signs of zero and NaN propagate. Checked on 10**7 random doubles of every
// scale to 25 against long double: at most 0.81 ulp from the exact value (glibc's: 2.2).
TS_HOST_DEVICE inline double tanh_double(double x) {
#if defined(__CUDA_ARCH__)
  return ::tanh(x);
#else
  const double a = std::fabs(x);
  const double ac = a > 20.0 ? 20.0 : a;
  const detail::DoubleDouble m = detail::expm1_sum(detail::expm1_parts(-2.0 * ac));  // in (-1, 0]
  const double d_hi = 2.0 + m.hi;
  const double d_lo = detail::two_sum_error(2.0, m.hi, d_hi) + m.lo;
  const double inverse = 1.0 / d_hi;
  const double t0 = -m.hi * inverse;
  const detail::DoubleDouble t0_d = detail::two_product(t0, d_hi);
  // -m - t0 (d_hi + d_lo), where -m.hi - t0 d_hi is exact (the two are within an ulp of each other)
  const double remainder = ((-m.hi - t0_d.hi) - t0_d.lo) - m.lo - t0 * d_lo;
  return std::copysign(t0 + remainder * inverse, x);
#endif
}

template <typename T>
TS_HOST_DEVICE inline T tanh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return tanh_float(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return tanh_double(x);
  } else {
    return std::tanh(x);
  }
}

// e**x - 1. float: branch-free like exp_float, from the same reduction x = n ln2 + r and polynomial
// (e**r - 1 = r + r**2 p(r), accurate relative to itself for small r), then 2**n (e**r - 1) + (2**n - 1),
// where 2**n - 1 is exact for |n| <= 24; past x = 80 it is exp_float(x) (the -1 vanishes); below -30 the
// result is -1. The sign is x's (expm1(-0) = -0). Checked over every float: at most 1.75 ulp from the
// exact value (where 2 (e**r - 1) + 1 doubles the polynomial's error). Other types: std::expm1.
TS_HOST_DEVICE inline float expm1_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::expm1f(x);
#else
  const float low = x < -30.0f ? -30.0f : x;  // NaN compares false: stays NaN
  const float xc = low > 80.0f ? 80.0f : low;
  const detail::Ln2Reduced<float> t = detail::reduce_ln2(xc);  // n in [-43, 115]: 2**n is one normal float
  const float em = detail::expm1_reduced(t.r);                  // e**r - 1
  const float scale = detail::pow2<float>(detail::n_bits(t.shifted));
  const float reduced = scale * em + (scale - 1.0f);
  return std::copysign(x > 80.0f ? exp_float(x) : reduced, x);
#endif
}

// e**x - 1 for double: 2**n (1 + em) - 1 summed exactly but for its last rounding (detail::expm1_sum) for x in
// [-40, 40] (below, -1); above, e**x as exp_double computes it from the same reduction and polynomial (the - 1
// is below half an ulp). Branch-free, so loops vectorise. The sign is x's (expm1(-0) = -0). Checked on 10**7
// random doubles of every scale against long double: at most 0.83 ulp from the exact value in [-40, 40] and
// exp_double's 0.97 above (glibc's: 0.83).
TS_HOST_DEVICE inline double expm1_double(double x) {
#if defined(__CUDA_ARCH__)
  return ::expm1(x);
#else
  constexpr double kMaxFinite = 709.782712893383973;  // the largest double whose exp is finite
  const double low = x < -40.0 ? -40.0 : x;             // NaN compares false: stays NaN
  const double xc = low > 710.0 ? 710.0 : low;
  const detail::Expm1Parts parts = detail::expm1_parts(xc);
  const double large = x > kMaxFinite ? std::numeric_limits<double>::infinity()
                                      : detail::times_pow2(1.0 + parts.em_hi, parts.shifted);
  return std::copysign(x > 40.0 ? large : detail::expm1_sum(parts).hi, x);
#endif
}

// Natural log. float: branch-free, so loops of it vectorise (detail::log_branch_free). Checked over every
// float: at most 1.2 ulp from the exact value. Other types: std::log.
TS_HOST_DEVICE inline float log_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#else
  return detail::log_branch_free(x);
#endif
}

// log(1 + x). float: log_float(u) for u = 1 + x rounded, plus the rounding's correction c / u, where
// c = x - (u - 1) (or 1 - (u - x) from u = 2 on; both differences are exact). -1 gives -inf, below it NaN,
// zeros keep their sign. Checked over every float: at most 1.7 ulp from the exact value. Other types:
// std::log1p.
TS_HOST_DEVICE inline float log1p_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::log1pf(x);
#else
  const float u = 1.0f + x;
  const float c = u < 2.0f ? x - (u - 1.0f) : 1.0f - (u - x);
  const float result = log_float(u) + c / u;
  const bool exact = x == 0.0f || u == 0.0f || x == std::numeric_limits<float>::infinity();
  return exact ? (u == 0.0f ? -std::numeric_limits<float>::infinity() : x) : result;
#endif
}

#if !defined(__CUDA_ARCH__)  // host code only: the device calls CUDA's sinf and cosf
namespace detail {  // (continued)

// 2/pi's first 224 bits after the binary point, 32 to a word, after one word of zeros (so that a window may
// start before the point). tests/runtime/test_float_math.py recomputes them from Machin's formula.
inline constexpr uint32_t kTwoOverPiBits[8] = {0u,          0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u,
                                               0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu};

// A non-negative finite float a = M 2**(E-23) as q pi/2 + r with |r| <= pi/4 (r in double), branch-free and
// exact enough for any float (Payne-Hanek): only 2/pi's bits b_i with i > E - 25 change a 2/pi mod 4, and
// 96 of them from there, times M, give (a 2/pi mod 4) in units of 2**-94 with an error below 2**-62 (the
// smallest |r| of any float is above 2**-30). Below pi/4, q = 0 and r = a.
struct QuarterTurns {
  uint32_t q;  // quadrant, mod 4
  double r;
};
inline QuarterTurns reduce_quarter_turns(float a) {
  const uint32_t bits = ts::bits::of(a);
  const int32_t e_raw = static_cast<int32_t>(bits >> 23) - 127;
  const int32_t e = e_raw < -1 ? -1 : (e_raw > 127 ? 127 : e_raw);  // the small, inf and NaN cases are replaced
  const uint32_t m = (bits & 0x007fffffu) | 0x00800000u;
  const uint32_t j = static_cast<uint32_t>(e - 25 + 32);  // bit offset of the window in kTwoOverPiBits
  const uint32_t w = j >> 5, sh = j & 31u;  // w is 0..4
  // kTwoOverPiBits[w + i] from masks on w, not an indexed load: GCC's generic tuning emulates a vector
  // gather with scalar loads, which made the loop as slow as libm's.
  const auto table = [w](uint32_t i) {  // as masks: written as selects, GCC made a switch of them
    uint32_t t = 0;
    for (uint32_t k = 0; k <= 4; ++k) t |= kTwoOverPiBits[i + k] & (0u - static_cast<uint32_t>(w == k));
    return t;
  };
  const uint32_t t0 = table(0), t1 = table(1), t2 = table(2), t3 = table(3);
  const auto window = [sh](uint32_t high, uint32_t low) {  // 32 bits of 2/pi, sh bits into high:low
    return static_cast<uint32_t>((((uint64_t{high} << 32) | low) << sh) >> 32);
  };
  const uint32_t w2 = window(t0, t1), w1 = window(t1, t2), w0 = window(t2, t3);
  // P = m * (w2:w1:w0), 32 x 32 -> 64-bit products; v = P's bits 32..95 (mod 2**64: higher bits are
  // multiples of 4 quarter turns).
  const uint64_t lo = uint64_t{m} * w0, mid = uint64_t{m} * w1, hi = uint64_t{m} * w2;
  const uint64_t v = (hi << 32) + mid + (lo >> 32);
  // Quadrant: P's bits 94-95, rounded by the first fraction bit, so that the fraction is in [-1/2, 1/2).
  const uint32_t q = static_cast<uint32_t>((v >> 62) + ((v >> 61) & 1u)) & 3u;
  const int64_t frac = static_cast<int64_t>(v << 2);  // the fraction in units of 2**-64, signed
  // As two int32 halves (each converts to double in one vector instruction, where int64 may not).
  const double f = static_cast<double>(static_cast<int32_t>(frac >> 32)) * 0x1p-32 +
                   static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(frac) >> 8)) * 0x1p-56;
  const bool small = a < 0.78539816f;
  return {small ? 0u : q, small ? static_cast<double>(a) : f * 1.5707963267948966};
}

// Below this magnitude a float reduces by Cody-Waite (reduce_near_quarter_turns), the cheap way; at or above it,
// and for inf and NaN, exactly (reduce_quarter_turns, Payne-Hanek: 2.7x the time).
inline constexpr float kNearTrigLimit = 0x1p20f;

// A non-negative float a < kNearTrigLimit as q pi/2 + r, |r| <= pi/4 (to rounding), in double: q = a 2/pi rounded
// to the nearest integer (below 2**20), r = ((a - q C1) - q C2) - q C3 with pi/2 = C1 + C2 + C3 + 4e-35, C1 and C2 of
// 30 significant bits: q C1 and q C2 are exact, a - q C1 too (Sterbenz: a and q C1 are within a factor 2), so r is
// within 2**-52 |r| + 2**-92 of the exact remainder (the smallest |r| of any float above 2**-30): as close as the
// exact reduction's r (not always the same double; sin and cos of every such float still round the same).
inline QuarterTurns reduce_near_quarter_turns(float a) {
  const double x = static_cast<double>(a);
  const double shifted = x * 0x1.45f306dc9c883p-1 + 0x1.8p52;  // a 2/pi + 1.5 * 2**52: rounds to an integer
  const double q = shifted - 0x1.8p52;
  const double r = ((x - q * 0x1.921fb54p+0) - q * 0x1.10b46118p-30) - q * 0x1.313198a2e037p-61;
  return {static_cast<uint32_t>(static_cast<int32_t>(q)) & 3u, r};
}

// sin and cos of |r| <= pi/4 by their Taylor series to r**9 and r**10 in double (truncation below 3e-9
// relative), so that the float results are within about half an ulp.
inline double sin_quarter(double r) {
  const double r2 = r * r;
  return r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880))));
}
inline double cos_quarter(double r) {
  const double r2 = r * r;
  return 1.0 - 0.5 * r2 + r2 * r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 + r2 * (-1.0 / 3628800))));
}

// 2 atanh(s) / (s ln2), the log2 of m = (1 + s) / (1 - s) over s, in z = s**2 for |s| <= 3 - 2 sqrt(2) (m in
// [sqrt(1/2), sqrt(2))): Chebyshev fit of degree 5 (mpmath.chebyfit), within 2.7e-14 relative.
inline constexpr double kLog2OverS[6] = {0x1.71547652b8253p+1, 0x1.ec709dc539e76p-1, 0x1.2776c295f01cfp-1,
                                         0x1.a61a2cc1ced3bp-2, 0x1.4795a63079ddfp-2, 0x1.21ac9c9040d9ep-2};
// (2**r - 1) / r for |r| <= 1/2: Chebyshev fit of degree 7, so 1 + r q(r) is within 2.2e-12 relative of 2**r.
// tests/runtime/test_float_math.py checks both bounds.
inline constexpr double kExp2Minus1OverR[8] = {0x1.62e42fef9cc69p-1, 0x1.ebfbdff82a734p-3, 0x1.c6b08da70cce3p-5,
                                               0x1.3b2ab70ad2565p-7, 0x1.5d877598350dep-10, 0x1.4308c7183d6a2p-13,
                                               0x1.00c0e4e15189cp-16, 0x1.63b2d7971923fp-20};

// log2(a) for a double holding a positive finite float (normal as a double, subnormal floats included): a =
// 2**k m with m in [sqrt(1/2), sqrt(2)) from the bits, k + s P(s**2) with s = f / (2 + f), f = m - 1 exact,
// so that near a = 1 the result is as close relatively as P.
TS_FORCE_INLINE double log2_of_float(double a) {
  using L = FloatLayout<double>;
  const uint64_t bits = ts::bits::of(a) - L::kSqrtHalf;
  const double f = mantissa_of(bits) - 1.0;
  const double s = f / (2.0 + f);
  return std::fma(s, horner_fused(s * s, kLog2OverS), exponent_of(bits));
}

// 2**t for t in [-160, 130] (or NaN), where 2**n stays one normal double: t = n + r with n rounded to the
// nearest integer and r = t - n exact, 2**n times 1 + r q(r).
TS_FORCE_INLINE double exp2_of_clamped(double t) {
  using L = FloatLayout<double>;
  const double shifted = t + L::kRound;
  const double r = t - (shifted - L::kRound);
  return std::fma(r, horner_fused(r, kExp2Minus1OverR), 1.0) * pow2<double>(n_bits(shifted));
}

// |x|**y from log2|x| (finite, +-inf or NaN): 2**(y log2|x|), t clamped to where 2**t stays one normal double.
TS_FORCE_INLINE float pow_from_log2(double log2_a, float y) {
  const double t = static_cast<double>(y) * log2_a;  // NaN stays NaN through both clamps
  const double low = t < -160.0 ? -160.0 : t;       // 2**-160 rounds to float 0, 2**130 to inf
  return static_cast<float>(exp2_of_clamped(low > 130.0 ? 130.0 : low));
}

}  // namespace detail
#endif

// sin and cos. float: branch-free over the whole range, so loops of them vectorise (libm's sinf/cosf kept
// them scalar and branch by range: 7 ns an element on random inputs, 2.2 ns here, on one Zen 5 core): |x| reduced
// to q pi/2 + r (Cody-Waite below detail::kNearTrigLimit, exactly by detail::reduce_quarter_turns above), the
// quarter's series in double, the quadrant picking sin or cos and the sign. inf and NaN give NaN; sin keeps the
// sign of zero. Checked over every float: at most 0.53 ulp from the exact value. Other types: std::sin, std::cos.
// sin_float_near and cos_float_near reduce by Cody-Waite instead, where trig_float_near(x) holds (|x| < 2**20):
// about 2.7x faster, and the same bits as sin_float and cos_float for every such float (checked over all of them
// in C++), so the pointwise template's blocks of near elements (spec fields fast_when, fast_expr) give every
// element the result it gets anywhere else.
#if !defined(__CUDA_ARCH__)
namespace detail {  // (continued)
inline float sin_of_quarter_turns(float x, QuarterTurns t) {
  const double s = (t.q & 1u) ? cos_quarter(t.r) : sin_quarter(t.r);
  const float magnitude = static_cast<float>((t.q & 2u) ? -s : s);
  return ts::bits::to_float(ts::bits::of(magnitude) ^ (ts::bits::of(x) & 0x80000000u));  // sin(-x) = -sin(x)
}
inline float cos_of_quarter_turns(QuarterTurns t) {
  const double c = (t.q & 1u) ? sin_quarter(t.r) : cos_quarter(t.r);
  return static_cast<float>(((t.q + 1u) & 2u) ? -c : c);
}
}  // namespace detail
#endif

TS_HOST_DEVICE inline bool trig_float_near(float x) {
#if defined(__CUDA_ARCH__)
  return false;
#else
  return std::fabs(x) < detail::kNearTrigLimit;  // false for NaN
#endif
}
TS_HOST_DEVICE inline float sin_float_near(float x) {
#if defined(__CUDA_ARCH__)
  return ::sinf(x);
#else
  return detail::sin_of_quarter_turns(x, detail::reduce_near_quarter_turns(std::fabs(x)));
#endif
}
TS_HOST_DEVICE inline float cos_float_near(float x) {
#if defined(__CUDA_ARCH__)
  return ::cosf(x);
#else
  return detail::cos_of_quarter_turns(detail::reduce_near_quarter_turns(std::fabs(x)));
#endif
}
TS_HOST_DEVICE inline float sin_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::sinf(x);
#else
  const float a = std::fabs(x);
  const float result = detail::sin_of_quarter_turns(x, detail::reduce_quarter_turns(a));
  return a < std::numeric_limits<float>::infinity() ? result : x - x;  // inf - inf and NaN: NaN
#endif
}
TS_HOST_DEVICE inline float cos_float(float x) {
#if defined(__CUDA_ARCH__)
  return ::cosf(x);
#else
  const float a = std::fabs(x);
  const float result = detail::cos_of_quarter_turns(detail::reduce_quarter_turns(a));
  return a < std::numeric_limits<float>::infinity() ? result : x - x;
#endif
}

template <typename T>
TS_HOST_DEVICE inline T sin(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return sin_float(x);
  } else {
    return std::sin(x);
  }
}

template <typename T>
TS_HOST_DEVICE inline T cos(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return cos_float(x);
  } else {
    return std::cos(x);
  }
}

template <typename T>
TS_HOST_DEVICE inline T expm1(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return expm1_float(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return expm1_double(x);
  } else {
    return std::expm1(x);
  }
}

// x**y for float (numpy.power): 2**(y log2|x|) in double (detail::log2_of_float, detail::exp2_of_clamped), so
// the float result is within about 5e-12 relative of the exact value before its one rounding: on 10**7 random
// and every special pair, all but about 1 in 150000 equal the correctly rounded result, the rest 1 ulp from
// it (libm's powf is about as close; a loop of it stays scalar: 3x slower). Branch-free, with fused
// multiply-adds, so loops vectorise: 1.8 ns an element at the AVX-512 level on one Zen 4 core, 3.0 at AVX2
// (e**(y log|x|) without fusing, before: 2.9 and 4.8). IEEE 754's special cases: x**0 and 1**y are 1 (NaN
// included); a negative finite x to a non-integer y is NaN; the sign is x's for an odd integer y; zeros and
// infinities go through log2(0) = -inf and log2(inf) = inf; (-1)**(+-inf) is 1.
TS_HOST_DEVICE inline float pow_float(float x, float y) {
#if defined(__CUDA_ARCH__)
  return y == 0.0f || x == 1.0f ? 1.0f : ::powf(x, y);
#else
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float a = std::fabs(x);
  const double ad = a;
  // & and | rather than && and ||: GCC vectorises the selects, not the branches those become
  const double log2_a = ((a > 0.0f) & (a < kInf)) ? detail::log2_of_float(ad) : (a == 0.0f ? -double(kInf) : ad);
  const float magnitude = detail::pow_from_log2(log2_a, y);
  // Whether y is an integer, and its low bit, through int32 (floor is a libm call before SSE4.1): y clamped to
  // +-2**24 (NaN to -2**24), from where on every float is an even integer, infinities included. The low bit,
  // shifted to the sign's place, takes x's sign where y is an odd integer.
  const float clamped = y > -16777216.0f ? (y < 16777216.0f ? y : 16777216.0f) : -16777216.0f;
  const int32_t whole = static_cast<int32_t>(clamped);
  const bool integer = static_cast<float>(whole) == y;
  const uint32_t sign = integer ? ts::bits::of(x) & (static_cast<uint32_t>(whole) << 31) : 0u;
  const float result = ts::bits::to_float(ts::bits::of(magnitude) | sign);
  // A negative finite x to a non-integer y (below 2**24, where some floats are not integers); NaN is NaN already.
  const bool not_real = (x < 0.0f) & (a < kInf) & (clamped == y) & !integer;
  const bool one = (y == 0.0f) | (x == 1.0f) | ((a == 1.0f) & (std::fabs(y) == kInf));
  return one ? 1.0f : (not_real ? std::numeric_limits<float>::quiet_NaN() : result);
#endif
}

// x**y for double where pow_double_near_ok holds (a positive normal x, a finite y, |y log2 x| <= 1020, so the
// result is a normal double): e**(y log x) with log x and y log x carried as pairs of doubles (within about
// 2**-66 relative) and e**t as 2**m 2**(j/128) e**u, |u| <= ln2/256, rounded once at the end. Checked on 1.7e7
// random pairs over the whole domain against long double's powl: at most 0.505 ulp from the exact value (glibc's
// pow differs from it in 1 result of 1000, by 1 ulp; numpy's float64 power, SVML's on AVX-512, in 1 of 19, never
// by more than 1 ulp). Branch-free, so loops vectorise (the tables' loads become one load a lane: GCC's generic
// tuning makes no gathers): 4 ns an element on one Zen 4 core against libm's 10. Elsewhere pow takes libm's.
#if !defined(__CUDA_ARCH__)
namespace detail {
// log x for a positive normal double, as hi + lo: x = 2**k z, z in [sqrt(1/2), sqrt(2)) from the bits, and
// log z = -log c + log(z c) with c from the table for z's interval; z c - 1 = r + r_lo exactly (the product as
// a pair, and its hi minus 1 exact by Sterbenz), log(1 + r) by its series to r**8 (truncation below 2**-70 for
// |r| < 2**-8), the large terms summed as pairs.
TS_FORCE_INLINE DoubleDouble log_pair(double x) {
  namespace t = log_exp;
  const uint64_t bits = ts::bits::of(x) - FloatLayout<double>::kSqrtHalf;
  const double k = exponent_of(bits);
  const t::LogEntry& entry = t::kLog[(bits >> 45) & 127];
  const DoubleDouble product = two_product(mantissa_of(bits), entry.c);
  const double a = product.hi - 1.0;
  const double r = a + product.lo;
  const double r_lo = product.lo - (r - a);
  const double k_ln2 = k * t::kLn2Hi;  // exact: 42 bits times |k| < 2**11
  const double s1 = k_ln2 + entry.minus_log_c_hi;
  const double s2 = s1 + r;
  const DoubleDouble square = two_product(r, r);
  const double s3 = s2 - 0.5 * square.hi;
  // log(1 + r) = r - r**2/2 + r**3 series(r)
  constexpr double kSeries[6] = {1.0 / 3, -1.0 / 4, 1.0 / 5, -1.0 / 6, 1.0 / 7, -1.0 / 8};
  const double series = horner_fused(r, kSeries);
  const double tail = two_sum_error(k_ln2, entry.minus_log_c_hi, s1) + two_sum_error(s1, r, s2) +
                      two_sum_error(s2, -0.5 * square.hi, s3) + std::fma(k, t::kLn2Lo, entry.minus_log_c_lo) +
                      (r_lo - r * r_lo) - 0.5 * square.lo + (r * square.hi) * series;
  const double hi = s3 + tail;
  return {hi, tail - (hi - s3)};
}

// e**(t_hi + t_lo) for |t_hi| <= 1020 ln2 (plus rounding): n = t 128/ln2 rounded, u + u_lo = t - n ln2/128
// (n times the hi part exact: 35 bits times |n| < 2**18), e**u - 1 by its series to u**6, times 2**(j/128) from
// the table (a pair) for j = n mod 128, rounded once, and 2**(n div 128) added to the exponent's bits.
TS_FORCE_INLINE double exp_of_pair(double t_hi, double t_lo) {
  namespace t = log_exp;
  using L = FloatLayout<double>;
  const double shifted = std::fma(t_hi, t::k128OverLn2, L::kRound);
  const double n = shifted - L::kRound;
  const uint64_t n_int = n_bits(shifted);
  const double u = std::fma(-n, t::kLn2Over128Hi, t_hi);
  const double u_lo = std::fma(-n, t::kLn2Over128Lo, t_lo);
  const double s = u + u_lo;
  constexpr double kSeries[5] = {0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720};  // e**s - 1 = s + s**2 series(s)
  const double series = horner_fused(s, kSeries);
  const double em1 = u + std::fma(s * s, series, u_lo);
  const t::Exp2Entry& power = t::kExp2[n_int & 127];
  const double mantissa = power.hi + std::fma(power.hi, em1, power.lo);
  return ts::bits::cast<double>(ts::bits::of(mantissa) + ((n_int >> 7) << L::kMantissa));  // unsigned: wraps as n
}
}  // namespace detail
#endif

// Whether pow_double_near holds for the pair: x positive and normal (k of x = 2**k z is then exact), y finite,
// and |y| (|k| + 1/2) <= 1020, which bounds |y log2 x|. False for NaN. Device code never takes it.
TS_HOST_DEVICE TS_FORCE_INLINE bool pow_double_near_ok(double base, double exponent) {
#if defined(__CUDA_ARCH__)
  (void)base;
  (void)exponent;
  return false;
#else
  const double k = detail::exponent_of(ts::bits::of(base) - detail::FloatLayout<double>::kSqrtHalf);
  return (base >= 0x1p-1022) & (base < std::numeric_limits<double>::infinity()) &
         (std::fabs(exponent) * (std::fabs(k) + 0.5) <= 1020.0);
#endif
}

TS_HOST_DEVICE TS_FORCE_INLINE double pow_double_near(double base, double exponent) {
#if defined(__CUDA_ARCH__)
  return ::pow(base, exponent);
#else
  const detail::DoubleDouble log_base = detail::log_pair(base);
  const double t_hi = exponent * log_base.hi;
  const double t_lo = std::fma(exponent, log_base.hi, -t_hi) + exponent * log_base.lo;
  return detail::exp_of_pair(t_hi, t_lo);
#endif
}

// Natural log for double, in log_float's way. Checked on 10**8 random doubles over the whole range, near 1
// and at subnormals: at most 1 ulp from glibc's log, 1.2 from the exact value (where k = -1 and m is near sqrt(2), the sum cancels).
TS_HOST_DEVICE inline double log_double(double x) {
#if defined(__CUDA_ARCH__)
  return ::log(x);
#else
  return detail::log_branch_free(x);
#endif
}

template <typename T>
TS_HOST_DEVICE inline T log(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return log_float(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return log_double(x);
  } else {
    return std::log(x);
  }
}

// log(1 + x) for double: log(u) for u = 1 + x rounded, plus the rounding's correction c / u (c exact, as in
// log1p_float), in log's way from u's bits, with k ln2 + f, the two largest terms, summed exactly so that the
// rest (-f**2/2 + s (f**2/2 + R), k ln2's low part, c / u) is added with one rounding. -1 gives -inf, below it
// NaN, zeros keep their sign. Branch-free, so loops vectorise. Checked on 10**7 random doubles of every scale
// and near -1, 0 and 1 against long double: at most 0.88 ulp from the exact value (glibc's: 0.83).
TS_HOST_DEVICE inline double log1p_double(double x) {
#if defined(__CUDA_ARCH__)
  return ::log1p(x);
#else
  using L = detail::FloatLayout<double>;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double u = 1.0 + x;  // 0 or at least 2**-53 where x >= -1: never subnormal
  const double c = u < 2.0 ? x - (u - 1.0) : 1.0 - (u - x);
  const uint64_t bits = ts::bits::of(u) - L::kSqrtHalf;
  const double kf = detail::exponent_of(bits);
  const double m = detail::mantissa_of(bits);
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double hfsq = 0.5 * f * f;
  const double k_hi = kf * L::kLn2Hi;  // exact
  const double hi = k_hi + f;
  const double rest = (s * (hfsq + detail::atanh_tail(s * s)) - hfsq) + (kf * L::kLn2Lo + c / u);
  const double result = hi + (detail::two_sum_error(k_hi, f, hi) + rest);
  const double special = u == 0.0 ? -kInf : (x < -1.0 ? std::numeric_limits<double>::quiet_NaN() : x);  // inf, NaN stay
  return x == 0.0 ? x : (((u > 0.0) & (x < kInf)) ? result : special);
#endif
}

template <typename T>
TS_HOST_DEVICE inline T log1p(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return log1p_float(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return log1p_double(x);
  } else {
    return std::log1p(x);
  }
}

// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below: e^-|x| never overflows, so results down to the
// subnormals are kept (1 / (1 + e^-x) underflowed to 0 from x = -88.7 in float, where the result is 3e-39).
template <typename T>
TS_HOST_DEVICE inline T sigmoid(T x) {
  const T e = ts::ops::exp(-ts::ops::abs(x));
  const T d = T(1) + e;
  return x >= T(0) ? T(1) / d : e / d;
}

// GELU's tanh form (PyTorch's gelu(approximate='tanh')), 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as
// x sigmoid(u) with u = x (a + b x^2), a = 2 sqrt(2/pi), b = 0.044715 a: the same function without the
// cancellation of 1 + tanh for negative x, one exp an element. An error of one ulp in u moves e^u by |u| ulps,
// so where the result is far below x (x < -1) its error is relative to x (the spec's `relative_to`).
namespace detail {
constexpr double kGeluA = 1.5957691216057308;   // 2 sqrt(2/pi)
constexpr double kGeluB = 0.07135481627260025;  // 0.044715 a
}  // namespace detail
template <typename T>
TS_HOST_DEVICE inline T gelu_tanh(T x) {
  return x * sigmoid(x * (T(detail::kGeluA) + T(detail::kGeluB) * (x * x)));
}
// g times gelu_tanh's derivative s + x u' s (1 - s), u' = a + 3 b x^2, from e = e^-|u| and d = 1 + e
// (s (1 - s) = e / d^2): g p q / d with p = 1, q = 1 + w e / d for u >= 0 and p = e, q = 1 + w / d below,
// w = x u'. Selects of values, no branch, so loops vectorise. Where e underflows to 0 (float: from x = -10.5)
// the factor p q / d is a zero with the sign of q, w from x clamped to 1e10 so that x^2 cannot overflow into
// inf * 0. The factor is never 0 at a finite x but where q is, so an infinite g gives g sign(q) there, in
// every dtype alike (not inf * 0 = NaN where the dtype's exp happens to underflow). The factor is in T (float
// vectorises: 2.7x faster than double); g times it in double, so that the product rounds once and overflows
// only where the exact one nearly does (the factor reaches 1.13).
template <typename T>
TS_HOST_DEVICE TS_FORCE_INLINE T gelu_tanh_grad(T g, T x) {
  const T u = x * (T(detail::kGeluA) + T(detail::kGeluB) * (x * x));
  const T e = ts::ops::exp(-ts::ops::abs(u));
  const T d = T(1) + e;
  const T low = x < T(-1e10) ? T(-1e10) : x;  // NaN compares false: stays NaN
  const T xc = low > T(1e10) ? T(1e10) : low;
  const T w = xc * (T(detail::kGeluA) + T(3 * detail::kGeluB) * (xc * xc));
  const bool upper = u >= T(0);  // false for NaN: p = e is NaN
  const T p = upper ? T(1) : e;
  const T q = T(1) + w * (upper ? e : T(1)) / d;
  const T factor = p * q / d;
  const bool infinite_g = ts::ops::abs(g) == std::numeric_limits<T>::infinity() && ts::ops::abs(x) < std::numeric_limits<T>::infinity();
  const T sign_q = q > T(0) ? T(1) : (q < T(0) ? T(-1) : T(0));
  return infinite_g ? g * sign_q : static_cast<T>(static_cast<double>(g) * static_cast<double>(factor));
}

// ---- Transcendental functions with no float implementation of their own here: float is evaluated in double
// and rounded once (double libm's error is 2**-29 of a float ulp, so all but a vanishing few round correctly);
// double calls libm. On the device these are CUDA's double functions.
#define TS_FLOAT_VIA_DOUBLE_1(name)                                   \
  template <typename T>                                               \
  TS_HOST_DEVICE inline T name(T x) {                                 \
    if constexpr (std::is_same_v<T, float>) {                         \
      return static_cast<float>(std::name(static_cast<double>(x)));   \
    } else {                                                          \
      return std::name(x);                                            \
    }                                                                 \
  }
TS_FLOAT_VIA_DOUBLE_1(tan)
TS_FLOAT_VIA_DOUBLE_1(asin)
TS_FLOAT_VIA_DOUBLE_1(acos)
TS_FLOAT_VIA_DOUBLE_1(sinh)
TS_FLOAT_VIA_DOUBLE_1(cosh)
TS_FLOAT_VIA_DOUBLE_1(atanh)
TS_FLOAT_VIA_DOUBLE_1(log2)
TS_FLOAT_VIA_DOUBLE_1(log10)
#undef TS_FLOAT_VIA_DOUBLE_1

// atan and atan2. float: in double, branch-free (selects of values) with one division, and forced inline, so
// loops of them vectorise (libm's double atan2 kept them scalar at 11 ns an element); the double result is
// within 7.3e-13 of the exact one, so the float is the correctly rounded one but for the rarest ties. double:
// atan2_double (atan(x) as atan2(x, 1)); CUDA's on the device.
namespace detail {
// atan(small / big) for 0 <= small <= big, NaN where either is NaN, and 0/0 or inf/inf where both are 0 or
// both infinite (the callers' special cases). Above tan(pi/8) it is pi/4 + atan(r), r = (small - big) /
// (small + big); both terms are exact for operands from floats (their exponents differ by at most 2), so r
// is rounded once either way. Then r P(r^2), |r| <= tan(pi/8), P a degree-7 Chebyshev fit of atan(r) / r in
// r^2 (relative error 7.3e-13).
TS_HOST_DEVICE TS_FORCE_INLINE double atan_quotient(double small, double big) {
  const bool upper = small > 0.41421356237309503 * big;
  const double r = (upper ? small - big : small) / (upper ? small + big : big);
  const double s = r * r;
  double p = -0.037701658834008535;
  p = p * s + 0.06977000775938226;
  p = p * s + -0.08993216294715256;
  p = p * s + 0.11103534808203183;
  p = p * s + -0.14285391253330895;
  p = p * s + 0.19999993188721818;
  p = p * s + -0.3333333327838276;
  p = p * s + 0.9999999999992707;
  return (upper ? 0.7853981633974483 : 0.0) + r * p;
}
}  // namespace detail

// atan2 for double, branch-free and forced inline, so loops vectorise (libm's is scalar: 5.0 ns an element at
// the AVX-512 level on one Zen 4 core against its 18.6, under load). small/big (|y| and |x| in order, both scaled
// by a power of two that brings big into [2**-900, 2**1000], so that nothing below overflows and half of big is
// exact) is reduced by c in {0, 1/2, 1} chosen by its range: atan(small/big) = atan(c) + atan(u),
// u = (small - c big) / (big + c small), |u| <= 1/4, where small - c big is exact (Sterbenz) and u is a pair from
// one division and its exact residual; atan(u) = u + u**3 P(u**2) with P the series to u**31. The angle stays a
// pair through pi/2 - angle and pi - angle and is rounded once: on 8e6 random pairs of every scale at most 0.5625
// ulp from the exact value (long double), never more than 1 ulp from glibc's or numpy's (SVML's); the specials
// (zeros of both signs, infinities, NaN, subnormals) are glibc's bit for bit.
TS_HOST_DEVICE TS_FORCE_INLINE double atan2_double(double y, double x) {
#if defined(__CUDA_ARCH__)
  return ::atan2(y, x);
#else
  constexpr double kPiHi = 0x1.921fb54442d18p+1, kPiLo = 0x1.1a62633145c07p-53;
  constexpr double kHalfPiHi = 0x1.921fb54442d18p+0, kHalfPiLo = 0x1.1a62633145c07p-54;
  constexpr double kQuarterPiHi = 0x1.921fb54442d18p-1, kQuarterPiLo = 0x1.1a62633145c07p-55;
  constexpr double kAtanHalfHi = 0x1.dac670561bb4fp-2, kAtanHalfLo = 0x1.a2b7f222f65e2p-56;
  // atan(u) = u + u**3 P(u**2), P the series to u**31: (-1)**n / (2n + 1) for n = 1..15
  constexpr double kSeries[15] = {-0x1.5555555555555p-2, 0x1.999999999999ap-3,  -0x1.2492492492492p-3,
                                  0x1.c71c71c71c71cp-4,  -0x1.745d1745d1746p-4, 0x1.3b13b13b13b14p-4,
                                  -0x1.1111111111111p-4, 0x1.e1e1e1e1e1e1ep-5,  -0x1.af286bca1af28p-5,
                                  0x1.8618618618618p-5,  -0x1.642c8590b2164p-5, 0x1.47ae147ae147bp-5,
                                  -0x1.2f684bda12f68p-5, 0x1.1a7b9611a7b96p-5,  -0x1.0842108421084p-5};
  const double ax = std::fabs(x), ay = std::fabs(y);
  const bool steep = ay > ax;
  const double largest = steep ? ay : ax;
  const double scale = largest > 0x1p1000 ? 0x1p-600 : (largest < 0x1p-900 ? 0x1p600 : 1.0);
  const double small = (steep ? ax : ay) * scale, big = largest * scale;
  const bool half = small > 0.25 * big, one = small > 0.75 * big;
  const double c_small = one ? small : (half ? 0.5 * small : 0.0);  // selects, not c times: 0 inf is NaN
  const double num = one ? small - big : (half ? small - 0.5 * big : small);
  const double den = big + c_small;
  const double den_lo = detail::two_sum_error(big, c_small, den);
  const double u = num / den;
  // The residual and its quotient are exact while both are normal. Below (small or |u| under 2**-968) the
  // correction is not needed: u is then atan's value correctly rounded (c = 0) or vanishes beside atan(c).
  const bool no_correction = (small < 0x1p-968) | (std::fabs(u) < 0x1p-968);
  const double u_lo = no_correction ? 0.0 : (std::fma(-u, den, num) - u * den_lo) / den;
  const double w = u * u;
  const double odd = (u * w) * detail::horner_fused(w, kSeries);  // atan(u) - u
  const double base_hi = one ? kQuarterPiHi : (half ? kAtanHalfHi : 0.0);
  const double base_lo = one ? kQuarterPiLo : (half ? kAtanHalfLo : 0.0);
  double hi = base_hi + u;
  double lo = detail::two_sum_error(base_hi, u, hi) + base_lo + (u_lo - u_lo * w) + odd;  // atan'(u) = 1 - u**2 ...
  const double steep_hi = kHalfPiHi - hi;
  lo = steep ? detail::two_sum_error(kHalfPiHi, -hi, steep_hi) + (kHalfPiLo - lo) : lo;
  hi = steep ? steep_hi : hi;
  const bool left = std::copysign(1.0, x) < 0.0;  // x < 0 or x = -0 (std::signbit keeps loops scalar)
  const double left_hi = kPiHi - hi;
  lo = left ? detail::two_sum_error(kPiHi, -hi, left_hi) + (kPiLo - lo) : lo;
  hi = left ? left_hi : hi;
  double angle = hi + lo;
  angle = big == 0.0 ? (left ? kPiHi : 0.0) : angle;  // both zero: the axis's angle
  const double diagonal = left ? 0x1.2d97c7f3321d2p+1 : kQuarterPiHi;  // both infinite: 3 pi/4 or pi/4
  angle = small == std::numeric_limits<double>::infinity() ? diagonal : angle;
  angle = (x != x) | (y != y) ? x + y : angle;
  return std::copysign(angle, y);
#endif
}

template <typename T>
TS_HOST_DEVICE TS_FORCE_INLINE T atan(T x) {
  if constexpr (std::is_same_v<T, float>) {
    // atan(a) or pi/2 - atan(1/a) (atan(inf) = pi/2 - atan(0)). Every select is on `over` and NaN is put back
    // last: selects on a < 1 made GCC evaluate the polynomial twice per vector (113 -> 69 us on 64K floats).
    const double a = std::fabs(static_cast<double>(x));
    const bool over = a > 1.0;
    double unit = detail::atan_quotient(over ? 1.0 : a, over ? a : 1.0);
    unit = over ? 1.5707963267948966 - unit : unit;
    unit = a != a ? a : unit;
    return static_cast<float>(std::copysign(unit, static_cast<double>(x)));
  } else if constexpr (std::is_same_v<T, double>) {
    return atan2_double(x, 1.0);
  } else {
    return std::atan(x);
  }
}

template <typename T>
TS_HOST_DEVICE TS_FORCE_INLINE T atan2(T y, T x) {
  if constexpr (std::is_same_v<T, float>) {
    const double dy = static_cast<double>(y), dx = static_cast<double>(x);
    const double ay = std::fabs(dy), ax = std::fabs(dx);
    const bool steep = ay > ax;
    const double small = steep ? ax : ay, big = steep ? ay : ax;
    // The quotient cannot underflow (float's range is a small part of double's). Both zero: the angle of the
    // axis (0 or pi by x's sign, then y's sign); both infinite: the diagonal's.
    double angle = detail::atan_quotient(small, big);
    angle = big == 0.0 ? 0.0 : angle;
    angle = small == std::numeric_limits<double>::infinity() ? 0.7853981633974483 : angle;
    angle = steep ? 1.5707963267948966 - angle : angle;
    angle = std::copysign(1.0, dx) < 0.0 ? 3.141592653589793 - angle : angle;  // x < 0 or x = -0
    angle = dx != dx || dy != dy ? dx + dy : angle;
    return static_cast<float>(std::copysign(angle, dy));
  } else if constexpr (std::is_same_v<T, double>) {
    return atan2_double(y, x);
  } else {
    return std::atan2(y, x);
  }
}

// erf. float: x Q(x**2) in double, with Q(t) = erf(sqrt t) / sqrt t on [0, 16] (|x| <= 4; beyond, erf rounds to
// +-1 in float) a degree-22 polynomial in s = t/8 - 1 (a Chebyshev fit to CPython's math.erf, by Horner's rule:
// relative error 4e-13, so the float is the correctly rounded one but for the rarest ties). Branch-free, so
// loops of it vectorise (libm's erf kept them scalar: 15 ns an element, this form 3.8 at AVX2 in a plain loop),
// and the same on both devices.
// Other types: the C library's (CUDA's on the device).
namespace detail {
TS_HOST_DEVICE inline double erf_q(double s) {
  double q = 1.5257104338488184e-06;
  q = q * s + -4.589038025526912e-06;
  q = q * s + 4.864165308937373e-06;
  q = q * s + -1.2621646968263437e-05;
  q = q * s + 5.100372594108025e-05;
  q = q * s + -0.00012652487181737075;
  q = q * s + 0.0002724339396536777;
  q = q * s + -0.0006048245860193939;
  q = q * s + 0.0012946131952440265;
  q = q * s + -0.002583058770072749;
  q = q * s + 0.004852696486434758;
  q = q * s + -0.008604345419881417;
  q = q * s + 0.01434983825860523;
  q = q * s + -0.022474033852952324;
  q = q * s + 0.033060590326311826;
  q = q * s + -0.04576504003616534;
  q = q * s + 0.05988690939469232;
  q = q * s + -0.07472787164858247;
  q = q * s + 0.09020899387487204;
  q = q * s + -0.10771044230033333;
  q = q * s + 0.13167511689969613;
  q = q * s + -0.17657623330397576;
  q = q * s + 0.3535309956433873;
  return q;
}
}  // namespace detail

template <typename T>
TS_HOST_DEVICE inline T erf(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const double d = static_cast<double>(x);
    const double t = d * d;
    const double within = d * detail::erf_q((t < 16.0 ? t : 16.0) * 0.125 - 1.0);  // NaN stays NaN
    return static_cast<float>(t > 16.0 ? (d > 0.0 ? 1.0 : -1.0) : within);
  } else {
    return std::erf(x);
  }
}

// asinh and acosh: glibc's double ones return log(2x) in two roundings for large x, 0.4 ulp low on average;
// on the host double is evaluated in long double (x87: 11 more bits) and rounded once, float in double.
template <typename T>
TS_HOST_DEVICE inline T asinh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(std::asinh(static_cast<double>(x)));
  } else {
#if defined(__CUDA_ARCH__)
    return std::asinh(x);
#else
    return static_cast<T>(std::asinh(static_cast<long double>(x)));
#endif
  }
}
template <typename T>
TS_HOST_DEVICE inline T acosh(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(std::acosh(static_cast<double>(x)));
  } else {
#if defined(__CUDA_ARCH__)
    return std::acosh(x);
#else
    return static_cast<T>(std::acosh(static_cast<long double>(x)));
#endif
  }
}

// numpy.logaddexp: log(e**a + e**b) as the larger plus log1p(e**-|a - b|), which never overflows; equal
// arguments (both infinite of one sign included) give a + ln 2, and a NaN difference is returned as NaN.
template <typename T>
TS_HOST_DEVICE inline T logaddexp(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(logaddexp(static_cast<double>(a), static_cast<double>(b)));
  } else {
    if (a == b) return a + T(0.6931471805599453);  // ln 2
    const T d = a - b;
    if (d > T(0)) return a + std::log1p(std::exp(-d));
    if (d <= T(0)) return b + std::log1p(std::exp(d));
    return d;  // NaN
  }
}

// IEEE 754 copysign and nextafter (nextafter's float is float's own: the next float, not the next double).
template <typename T>
TS_HOST_DEVICE inline T copysign(T magnitude, T sign) {
  return std::copysign(magnitude, sign);
}
template <typename T>
TS_HOST_DEVICE inline T nextafter(T from, T to) {
  return std::nextafter(from, to);
}

// numpy.trunc and numpy.round (halves to even, the default rounding mode's nearbyint): integers and bool
// are returned unchanged.
template <typename T>
TS_HOST_DEVICE inline T trunc(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(x);
  } else {
    return x;
  }
}
template <typename T>
TS_HOST_DEVICE inline T round_half_even(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nearbyint(x);
  } else {
    return x;
  }
}

// numpy.isinf and numpy.isfinite: integers and bool are finite.
template <typename T>
constexpr bool is_inf(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x == std::numeric_limits<T>::infinity() || x == -std::numeric_limits<T>::infinity();
  } else {
    (void)x;
    return false;
  }
}
template <typename T>
constexpr bool is_finite(T x) {
  return !is_nan(x) && !is_inf(x);
}

// A NaN whose quiet bit is clear (float or double).
template <typename T>
TS_HOST_DEVICE inline bool is_signalling_nan(T x) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double");
  using Bits = std::conditional_t<std::is_same_v<T, double>, uint64_t, uint32_t>;
  constexpr Bits quiet = Bits(1) << (std::numeric_limits<T>::digits - 2);
  return is_nan(x) && !(ts::bits::cast<Bits>(x) & quiet);
}

// numpy.hypot as glibc answers it, on every device: an infinity gives +inf beside a quiet NaN but NaN beside a
// signalling one (IEEE 754; CUDA's hypot gives inf for both). In its own precision: through double, a float
// signalling NaN would be quietened on the way.
template <typename T>
TS_HOST_DEVICE inline T hypot(T a, T b) {
  if (is_inf(a) || is_inf(b)) {
    if (is_signalling_nan(a) || is_signalling_nan(b)) return std::numeric_limits<T>::quiet_NaN();
    return std::numeric_limits<T>::infinity();
  }
  return std::hypot(a, b);
}

// Bitwise operations; bool's are the logical ones (numpy's bool loops).
template <typename T>
constexpr T bitwise_and(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else {
    return static_cast<T>(a & b);
  }
}
template <typename T>
constexpr T bitwise_or(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else {
    return static_cast<T>(a | b);
  }
}
template <typename T>
constexpr T bitwise_xor(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a != b;
  } else {
    return static_cast<T>(a ^ b);
  }
}
template <typename T>
constexpr T bitwise_invert(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return !x;
  } else {
    return static_cast<T>(~x);
  }
}

// numpy.left_shift / numpy.right_shift: a count that is negative or at least the width shifts everything
// out (0; -1 for a negative value shifted right), where C++ leaves it undefined. The count is compared as
// unsigned 64 bits, as numpy does, so a negative count is a huge one.
template <typename T>
constexpr T left_shift(T value, T count) {
  using U = std::make_unsigned_t<T>;
  if (static_cast<uint64_t>(static_cast<std::make_signed_t<T>>(count)) >= sizeof(T) * 8) return T(0);
  return static_cast<T>(static_cast<U>(static_cast<U>(value) << count));
}
template <typename T>
constexpr T right_shift(T value, T count) {
  if (static_cast<uint64_t>(static_cast<std::make_signed_t<T>>(count)) >= sizeof(T) * 8) {
    if constexpr (std::is_signed_v<T>) {
      return value < T(0) ? T(-1) : T(0);
    } else {
      return T(0);
    }
  }
  return static_cast<T>(value >> count);
}

// numpy.floor_divide and numpy.remainder. Integers: floor division and a remainder with the divisor's sign;
// a divisor of 0 gives 0 for both, and the minimum over -1 wraps to itself (numpy warns; both are defined
// here, where C++'s are not). Floats: numpy's divmod (npy_divmod): the remainder from fmod, moved into the
// divisor's sign; the quotient (a - mod) / b floored and corrected by a half. float computes in double and
// rounds once (in float, (a - mod) / b rounds twice: 2 ulp off a large quotient).
//
// float's fast path, the same values without libm's fmod (a loop of 30-40 ns an element): for x = X 2^i and
// y = Y 2^k, floats held in double (X, Y integers below 2^24), a quotient below 2^28 that is not an integer n
// is more than 2^-29 n from one, so the double quotient q truncates to the true one, t = trunc(q); t * y (28 +
// 24 bits) and fmod = x - t * y are exact, and (x - fmod) / y is t itself. Quotients from 2^28, an infinite or
// NaN operand and a zero divisor take the general path.
TS_HOST_DEVICE inline bool truncates_exactly(double quotient_of_floats, double divisor) {
  return std::fabs(quotient_of_floats) < 0x1p28 && std::fabs(divisor) <= 0x1.fffffffffffffp1023;
}
namespace detail {

// float's floor_divide and remainder of x / y where truncates_exactly(q, y), q = x / y (all in double).
TS_HOST_DEVICE inline float floor_divide_truncating(double x, double y, double q) {
  const double t = std::trunc(q);
  const double mod = x - t * y;
  const double div = t - static_cast<double>((mod != 0.0) & ((y < 0.0) != (mod < 0.0)));
  // A nonzero div has q's sign already, and a zero one takes it (numpy's -0.0 for a negative quotient):
  // copysign, not a select on div == 0, which random operands mispredicted (64K elements 694 -> 590 us
  // in a C++ loop).
  return static_cast<float>(std::copysign(div, q));
}
TS_HOST_DEVICE inline float remainder_truncating(double x, double y, double q) {
  // mod moved into y's sign; a remainder has y's sign in every case, a zero one too. Selects, not branches:
  // the signs of random operands mispredicted half the time (2.5x slower).
  const double mod = x - std::trunc(q) * y;
  const double into_sign = static_cast<double>((mod != 0.0) & ((y < 0.0) != (mod < 0.0)));
  return static_cast<float>(std::copysign(mod + into_sign * y, y));
}

}  // namespace detail

template <typename T>
TS_HOST_DEVICE inline T floor_divide(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    const double x = a, y = b, q = x / y;
    if (truncates_exactly(q, y)) return detail::floor_divide_truncating(x, y, q);
    return static_cast<float>(floor_divide<double>(a, b));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (b == T(0)) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), a / b);
    T floor_div = std::floor(div);
    if (div - floor_div > T(0.5)) floor_div += T(1);
    return floor_div;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return negative(a);
      T q = static_cast<T>(a / b);
      if ((a % b != T(0)) && ((a < T(0)) != (b < T(0)))) q = static_cast<T>(q - 1);
      return q;
    } else {
      return static_cast<T>(a / b);
    }
  }
}
template <typename T>
TS_HOST_DEVICE inline T remainder(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    const double x = a, y = b, q = x / y;
    if (truncates_exactly(q, y)) return detail::remainder_truncating(x, y, q);
    return static_cast<float>(remainder<double>(a, b));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (b == T(0)) return std::fmod(a, b);
    T mod = std::fmod(a, b);
    if (mod != T(0)) {
      if ((b < T(0)) != (mod < T(0))) mod += b;
    } else {
      mod = std::copysign(T(0), b);
    }
    return mod;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);
      T r = static_cast<T>(a % b);
      if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
      return r;
    } else {
      return static_cast<T>(a % b);
    }
  }
}

// Argmax/argmin order: the first NaN wins (numpy), else the strict comparison. That is
// !is_nan(best) & (is_nan(candidate) | candidate > best), written as a negated comparison (true where
// unordered, so for a NaN candidate) and an ordered self-comparison of the best: two vector compares and a
// mask and, where the is_nan form took four (argmax's lanes at AVX-512: 0.125 -> 0.107 ns an element).
// Bitwise &, not &&: without branches a loop of selects vectorises.
template <typename T>
constexpr bool greater_nan_first(T candidate, T best) {
  return !(candidate <= best) & (best == best);
}
template <typename T>
constexpr bool less_nan_first(T candidate, T best) {
  return !(candidate >= best) & (best == best);
}

// numpy.sqrt and numpy.reciprocal of real types (complex ones below).
template <typename T>
TS_HOST_DEVICE inline T sqrt(T x) {
  return std::sqrt(x);
}
template <typename T>
TS_HOST_DEVICE inline T reciprocal(T x) {
  return T(1) / x;
}

// ---- Complex numbers: numpy's own loops where numpy has them (sign, reciprocal; arithmetic is
// ts::complex's), else the C library's complex functions numpy calls (csqrt, cexp, clog, csin, ...) as
// tensorsmith/complex_math.h computes them, alike on the host and the device.
template <typename F>
TS_HOST_DEVICE constexpr bool is_nan(ts::complex<F> z) {
  return z.re != z.re || z.im != z.im;
}
template <typename F>
TS_HOST_DEVICE constexpr bool is_inf(ts::complex<F> z) {
  return is_inf(z.re) || is_inf(z.im);
}
template <typename F>
TS_HOST_DEVICE constexpr bool is_finite(ts::complex<F> z) {
  return !is_nan(z) && !is_inf(z);
}
// |z| in the parts' real type (numpy.abs of complex64 is float32); complex64's is float's hypot in double,
// rounded once (GCC may expand a float hypotf inline as sqrtf(x*x + y*y), an ulp off). An infinite part gives
// inf whatever the other (numpy's loop; libm's hypot(inf, signalling NaN) is NaN).
template <typename F>
TS_HOST_DEVICE inline F abs(ts::complex<F> z) {
  if (is_inf(z.re) || is_inf(z.im)) return std::numeric_limits<F>::infinity();
  if constexpr (std::is_same_v<F, float>) {
    return static_cast<float>(std::hypot(static_cast<double>(z.re), static_cast<double>(z.im)));
  } else {
    return std::hypot(z.re, z.im);
  }
}
template <typename F>
TS_HOST_DEVICE constexpr ts::complex<F> negative(ts::complex<F> z) {
  return -z;
}
// numpy.conj, numpy.real and numpy.imag: of a real number (or bool), itself, itself and zero.
template <typename T>
TS_HOST_DEVICE constexpr T conj(T x) {
  return x;
}
template <typename F>
TS_HOST_DEVICE constexpr ts::complex<F> conj(ts::complex<F> z) {
  return {z.re, -z.im};
}
template <typename T>
TS_HOST_DEVICE constexpr T real(T x) {
  return x;
}
template <typename F>
TS_HOST_DEVICE constexpr F real(ts::complex<F> z) {
  return z.re;
}
template <typename T>
TS_HOST_DEVICE constexpr T imag(T) {
  return T(0);
}
template <typename F>
TS_HOST_DEVICE constexpr F imag(ts::complex<F> z) {
  return z.im;
}
// numpy.sign of complex (NumPy 2): z / |z|; 0 for 0; an infinite part gives its unit direction, NaN where
// both parts are infinite or any part is NaN (numpy's loop, branch for branch, on glibc's hypot). Where both
// parts are subnormal, |z| is taken of them scaled up by an exact power of two and scaled back, so that no
// device's hypot loses their digits on the way (it still rounds to a subnormal, as numpy's does).
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> sign(ts::complex<F> z) {
  const F smallest_normal = std::numeric_limits<F>::min();
  const F magnitude = std::fabs(z.re) < smallest_normal && std::fabs(z.im) < smallest_normal
                          ? std::ldexp(std::hypot(std::ldexp(z.re, 100), std::ldexp(z.im, 100)), -100)
                          : hypot(z.re, z.im);
  const F nan = std::numeric_limits<F>::quiet_NaN();
  if (magnitude != magnitude) return {nan, nan};
  if (is_inf(magnitude)) {
    if (is_inf(z.re)) return is_inf(z.im) ? ts::complex<F>{nan, nan} : ts::complex<F>{z.re > F(0) ? F(1) : F(-1), F(0)};
    return {F(0), z.im > F(0) ? F(1) : F(-1)};
  }
  if (magnitude == F(0)) return {F(0), F(0)};
  return {z.re / magnitude, z.im / magnitude};
}
// numpy.reciprocal of complex: its own loop (not 1 / z: reciprocal(0) is NaN + NaN j there).
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> reciprocal(ts::complex<F> z) {
  if (std::fabs(z.im) <= std::fabs(z.re)) {
    const F r = z.im / z.re;
    const F d = z.re + z.im * r;
    return {F(1) / d, -r / d};
  }
  const F r = z.re / z.im;
  const F d = z.re * r + z.im;
  return {r / d, F(-1) / d};
}

// complex64 in complex128, rounded once, as the gate's reference computes it.
#define TS_COMPLEX_FUNCTION(name)                                          \
  template <typename F>                                                    \
  TS_HOST_DEVICE inline ts::complex<F> name(ts::complex<F> z) {            \
    return ts::complex<F>(complex_math::name(ts::complex<double>(z)));     \
  }
TS_COMPLEX_FUNCTION(sqrt)
TS_COMPLEX_FUNCTION(exp)
TS_COMPLEX_FUNCTION(log)
TS_COMPLEX_FUNCTION(sin)
TS_COMPLEX_FUNCTION(cos)
TS_COMPLEX_FUNCTION(tan)
TS_COMPLEX_FUNCTION(sinh)
TS_COMPLEX_FUNCTION(cosh)
TS_COMPLEX_FUNCTION(tanh)
TS_COMPLEX_FUNCTION(asin)
TS_COMPLEX_FUNCTION(acos)
TS_COMPLEX_FUNCTION(atan)
TS_COMPLEX_FUNCTION(asinh)
TS_COMPLEX_FUNCTION(acosh)
TS_COMPLEX_FUNCTION(atanh)
#undef TS_COMPLEX_FUNCTION

// numpy's complex functions that are not the C library's (its funcs.inc and npy_math loops). complex64 is
// computed in complex128 and rounded once, as the gate's reference computes it: numpy's float formulas lose
// a part to cancellation or an intermediate overflow where the same formula in double does not.

// numpy.expm1 of complex: expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y (numpy's formula, exact near 0). A
// non-finite part gives the standard's special values, exp(z) - 1 (C99 Annex G), where numpy's formula
// makes NaNs (expm1(+inf + 0j) is +inf + 0j, expm1(-inf + inf j) is -1 + 0j).
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> expm1(ts::complex<F> z) {
  if constexpr (std::is_same_v<F, float>) {
    return ts::complex<float>(expm1(ts::complex<double>(z)));
  } else {
    if (!is_finite(z)) return exp(z) - ts::complex<F>(F(1));
    const F half_sine = std::sin(z.im / 2);
    return {std::expm1(z.re) * std::cos(z.im) - 2 * half_sine * half_sine, std::exp(z.re) * std::sin(z.im)};
  }
}
// numpy.log1p of complex: log|1 + z| + i arg(1 + z) (numpy's formula; its special values are the standard's).
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> log1p(ts::complex<F> z) {
  if constexpr (std::is_same_v<F, float>) {
    return ts::complex<float>(log1p(ts::complex<double>(z)));
  } else {
    const F shifted = z.re + F(1);
    return {std::log(std::hypot(shifted, z.im)), std::atan2(z.im, shifted)};
  }
}
namespace complex_detail {
// The logarithm in another base: the natural logarithm's parts scaled by that base's logarithm of e.
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> scaled_log(ts::complex<F> z, double log_e) {
  const ts::complex<double> natural = log(ts::complex<double>(z));
  return ts::complex<F>(ts::complex<double>{natural.re * log_e, natural.im * log_e});
}
}  // namespace complex_detail

// numpy.log2 and numpy.log10 of complex: numpy's own loops (clog's parts scaled by log2(e), log10(e)).
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> log2(ts::complex<F> z) {
  return complex_detail::scaled_log(z, 1.4426950408889634);
}
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> log10(ts::complex<F> z) {
  return complex_detail::scaled_log(z, 0.4342944819032518);
}

// numpy.power of complex (npy_cpow): z ** 0 is 1 (0 ** 0 too); 0 ** w is 0 where w's real part is positive,
// else NaN; a real integer exponent below 100 in magnitude multiplies (squaring; a negative one divides 1
// by the product); any other, the C library's cpow: glibc's itself on the host, as numpy's (e^(w log z) is
// ill-conditioned where w log z is huge: an ulp of log z turns an infinite result's quadrant, and the host
// keeps numpy's bits there), complex_math.h's e^(w log z) on the device.
template <typename F>
TS_HOST_DEVICE inline ts::complex<F> pow(ts::complex<F> base, ts::complex<F> exponent) {
  if constexpr (std::is_same_v<F, float>) {
    return ts::complex<float>(pow(ts::complex<double>(base), ts::complex<double>(exponent)));
  } else {
    using complex_math::schoolbook_product;  // numpy's integer powers multiply without fused parts
    if (exponent.re == F(0) && exponent.im == F(0)) return {F(1), F(0)};
    if (base.re == F(0) && base.im == F(0)) {
      if (exponent.re > F(0)) return {F(0), F(0)};
      const F nan = std::numeric_limits<F>::quiet_NaN();
      return {nan, nan};
    }
    if (exponent.im == F(0) && std::fabs(exponent.re) < F(100) && exponent.re == std::trunc(exponent.re)) {
      const int n = static_cast<int>(exponent.re);
      if (n == 1) return base;
      if (n == 2) return schoolbook_product(base, base);
      if (n == 3) return schoolbook_product(base, schoolbook_product(base, base));
      const int magnitude = n < 0 ? -n : n;
      ts::complex<F> product(F(1));
      ts::complex<F> square = base;
      for (int bit = 1;; bit <<= 1) {
        if (magnitude & bit) product = schoolbook_product(product, square);
        if (magnitude < (bit << 1)) break;
        square = schoolbook_product(square, square);
      }
      return n < 0 ? ts::complex<F>(F(1)) / product : product;
    }
#if defined(__CUDA_ARCH__)
    return complex_math::pow(base, exponent);
#else
    const std::complex<F> power = std::pow(std::complex<F>(base.re, base.im), std::complex<F>(exponent.re, exponent.im));
    return {power.real(), power.imag()};
#endif
  }
}

// The element forms the pointwise template's fast blocks take (spec fields fast_when, fast_expr): for float, and
// the 16-bit floats computed in float, trig_near_ok(x) holds where sin_near and cos_near equal sin and cos; for other
// types it never holds (and the near forms are sin and cos). Here, after every overload of sin and cos.
template <typename T>
TS_HOST_DEVICE inline bool trig_near_ok(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return trig_float_near(x);
  } else {
    (void)x;
    return false;
  }
}
template <typename T>
TS_HOST_DEVICE inline T sin_near(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return sin_float_near(x);
  } else {
    return sin(x);
  }
}
template <typename T>
TS_HOST_DEVICE inline T cos_near(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return cos_float_near(x);
  } else {
    return cos(x);
  }
}

// floor_divide's and remainder's fast blocks: float operands with |x1| < 2^27 |x2| and a finite x2, whose
// quotient then truncates exactly (truncates_exactly: |q| stays below 2^28 however x1 / x2 rounds), so the
// truncating forms are the values; the check needs no division and, like the forms, no branch, so blocks
// vectorise where the per-element branch to the general path kept loops scalar. Never for other types.
template <typename T>
TS_HOST_DEVICE inline bool divmod_near_ok(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return (std::fabs(a) < 0x1p27f * std::fabs(b)) & (std::fabs(b) <= 0x1.fffffep127f);
  } else {
    (void)a;
    (void)b;
    return false;
  }
}
template <typename T>
TS_HOST_DEVICE inline T floor_divide_near(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    const double x = a, y = b;
    return detail::floor_divide_truncating(x, y, x / y);
  } else {
    return floor_divide(a, b);
  }
}
template <typename T>
TS_HOST_DEVICE inline T remainder_near(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    const double x = a, y = b;
    return detail::remainder_truncating(x, y, x / y);
  } else {
    return remainder(a, b);
  }
}

// pow's fast blocks (the spec's fast_when and fast_expr), each element's value the one pow gives it:
// - integers: exponents below 16 in four fixed steps, the value pow's loop up to the highest set bit gives,
//   without its branches (which mispredict on random exponents);
// - float: a positive finite base to a finite exponent, pow_float without its special cases, which give
//   nothing else there (x**0 and 1**y come out 1 exactly: 2**(+-0)): 1.72 -> 1.33 ns an element at the
//   AVX-512 level on one Zen 4 core;
// - double: where pow_double_near_ok holds, pow_double_near, which pow takes there too (x**0 and 1**y come out
//   1 exactly: log 1 is 0 from the table's c = 1);
// never for other types.
template <typename T>
TS_HOST_DEVICE TS_FORCE_INLINE bool pow_fast_ok(T base, T exponent) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    (void)base;
    return static_cast<std::make_unsigned_t<T>>(exponent) < 16u;
  } else if constexpr (std::is_same_v<T, float>) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    return (base > 0.0f) & (base < kInf) & (std::fabs(exponent) < kInf);  // false for NaN
  } else if constexpr (std::is_same_v<T, double>) {
    return pow_double_near_ok(base, exponent);
  } else {
    (void)base;
    (void)exponent;
    return false;
  }
}
template <typename T>
TS_HOST_DEVICE TS_FORCE_INLINE T pow_fast(T base, T exponent) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return detail::pow_by_fixed_steps<4>(base, static_cast<std::make_unsigned_t<T>>(exponent));
  } else if constexpr (std::is_same_v<T, float>) {
#if defined(__CUDA_ARCH__)
    return pow_float(base, exponent);
#else
    return detail::pow_from_log2(detail::log2_of_float(base), exponent);
#endif
  } else if constexpr (std::is_same_v<T, double>) {
    return pow_double_near(base, exponent);
  } else {
    return pow(base, exponent);
  }
}

}  // namespace ts::ops
