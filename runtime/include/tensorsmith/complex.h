// Complex value types: ts::complex64 and ts::complex128, numpy's layout (the real part, then the imaginary
// part, in float or double) and numpy's arithmetic. The same code compiles for the host and for CUDA devices
// (TS_HOST_DEVICE), so a complex kernel computes alike on both; transcendental functions are in scalar_ops.h.
#pragma once

#include <cmath>
#include <type_traits>

#include "tensorsmith/half.h"
#include "tensorsmith/macros.h"

namespace ts {

template <typename F>
struct complex;

template <typename T>
struct is_complex_type : std::false_type {};
template <typename F>
struct is_complex_type<complex<F>> : std::true_type {};
template <typename T>
constexpr bool is_complex_v = is_complex_type<T>::value;

template <typename F>
struct complex {
  static_assert(std::is_floating_point_v<F>, "complex of float or double");
  using value_type = F;
  F re, im;

  complex() = default;
  TS_HOST_DEVICE constexpr complex(F real, F imag) : re(real), im(imag) {}
  // A real number (bool, integer, float, float16, bfloat16): imaginary part +0, as numpy's casts.
  template <typename R, std::enable_if_t<!is_complex_v<R>, int> = 0>
  TS_HOST_DEVICE constexpr explicit complex(R real) : re(static_cast<F>(real)), im(0) {}
  template <typename G>
  TS_HOST_DEVICE constexpr explicit complex(complex<G> z) : re(static_cast<F>(z.re)), im(static_cast<F>(z.im)) {}

  TS_HOST_DEVICE constexpr complex operator-() const { return {-re, -im}; }
  TS_HOST_DEVICE constexpr complex operator+(complex b) const { return {re + b.re, im + b.im}; }
  TS_HOST_DEVICE constexpr complex operator-(complex b) const { return {re - b.re, im - b.im}; }
  // numpy's product, the schoolbook formula with its SIMD loops' fused multiply-adds: (re b.re - im b.im) +
  // (re b.im + im b.re) j, each part one fma over the other product (so complex64's 3e38 * 2 does not overflow
  // on the way to an infinite part), and no C99 Annex G recovery of infinities from NaN parts.
  TS_HOST_DEVICE complex operator*(complex b) const {
    return {std::fma(re, b.re, -(im * b.im)), std::fma(re, b.im, im * b.re)};
  }
  // numpy's quotient: Smith's algorithm (the larger of the divisor's parts scales the other), and a zero
  // divisor divides each part by +0, giving numpy's infinities and NaNs (a NaN divisor takes the second branch).
  TS_HOST_DEVICE complex operator/(complex b) const {
    const F abs_re = std::fabs(b.re);
    const F abs_im = std::fabs(b.im);
    if (abs_re >= abs_im) {
      if (abs_re == F(0) && abs_im == F(0)) return {re / abs_re, im / abs_re};
      const F ratio = b.im / b.re;
      const F scale = F(1) / (b.re + b.im * ratio);
      return {(re + im * ratio) * scale, (im - re * ratio) * scale};
    }
    const F ratio = b.re / b.im;
    const F scale = F(1) / (b.im + b.re * ratio);
    return {(re * ratio + im) * scale, (im * ratio - re) * scale};
  }
  TS_HOST_DEVICE constexpr complex& operator+=(complex b) { return *this = *this + b; }
  TS_HOST_DEVICE complex& operator*=(complex b) { return *this = *this * b; }
  TS_HOST_DEVICE constexpr bool operator==(complex b) const { return re == b.re && im == b.im; }
  TS_HOST_DEVICE constexpr bool operator!=(complex b) const { return !(*this == b); }
  // Truth value (numpy's complex -> bool): either part nonzero; NaN parts are nonzero.
  TS_HOST_DEVICE constexpr explicit operator bool() const { return re != F(0) || im != F(0); }
};

using complex64 = complex<float>;
using complex128 = complex<double>;
static_assert(sizeof(complex64) == 8 && sizeof(complex128) == 16, "two packed parts, as numpy's");
static_assert(std::is_trivially_copyable_v<complex128>, "plain bytes");

// The real type a value's parts are held in (F for complex<F>, T itself otherwise).
template <typename T>
struct real_part_type {
  using type = T;
};
template <typename F>
struct real_part_type<complex<F>> {
  using type = F;
};
template <typename T>
using real_part_t = typename real_part_type<T>::type;

}  // namespace ts
