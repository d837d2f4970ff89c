// The complex elementary functions (exp, log, sqrt, the trigonometric and hyperbolic functions and their
// inverses) in complex128, as host-device code: the CPU and CUDA kernels compute them with the same code, so the
// CPU gate's verdict on them holds for the device too. The C libraries they replace disagree: libcu++'s
// cuda::std::complex takes textbook formulas that overflow (asinh(0.5 + 1e300 j) is inf), lose subnormals and
// miss C99 Annex G's special values (sin(0 + 1e300 j) is NaN), where numpy calls glibc.
//
// What they compute: C99 Annex G's special values exactly as glibc gives them where the annex leaves a sign
// open (tests/runtime/test_complex_math.py compares every pair of special parts with glibc), and finite results
// within a few ulp of the element's magnitude across the whole range (subnormal to the largest parts), by
// formulas that neither overflow nor cancel where the result is not small: Kahan's for the inverse functions
// ("Branch cuts for complex elementary functions", 1987), asymptotic forms where |z| is beyond 2^28.
//
// Each function of z works in the first quadrant where it has the symmetries for it (f(conj z) = conj f(z), f
// odd or even), so its special cases are written once.
#pragma once

#include <cmath>
#include <limits>

#include "tensorsmith/complex.h"
#include "tensorsmith/macros.h"

namespace ts::complex_math {

using complex128 = ts::complex<double>;

// The schoolbook product: no fused parts, no recovery of infinities (annex_g_product below): what Kahan's
// inverse functions take of finite factors, and the product inside numpy's integer complex powers, whose
// infinities and NaNs numpy shows.
template <typename F>
TS_HOST_DEVICE constexpr ts::complex<F> schoolbook_product(ts::complex<F> a, ts::complex<F> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

namespace detail {
constexpr double kPi = 3.141592653589793;
constexpr double kHalfPi = 1.5707963267948966;
constexpr double kQuarterPi = 0.7853981633974483;
constexpr double kLn2 = 0.6931471805599453;
// Beyond this magnitude z^2 + 1 is z^2 to double precision, so the inverse functions take their asymptotic forms.
constexpr double kLarge = 268435456.0;  // 2^28
// Below it (and above zero) z^3 / 6 is below half an ulp of z: asin(z) and atanh(z) are z.
constexpr double kTiny = 3.725290298461914e-09;  // 2^-28

TS_HOST_DEVICE inline double nan() { return std::numeric_limits<double>::quiet_NaN(); }
TS_HOST_DEVICE inline double inf() { return std::numeric_limits<double>::infinity(); }
TS_HOST_DEVICE inline bool is_nan(double x) { return x != x; }
TS_HOST_DEVICE inline bool is_inf(double x) { return std::fabs(x) == inf(); }
TS_HOST_DEVICE inline bool is_finite(double x) { return std::fabs(x) <= std::numeric_limits<double>::max(); }

// The result for z from the one for (|x|, |y|) of a function that is odd and has f(conj z) = conj f(z): each part
// times its own part's sign (a NaN part's sign bit counts as one).
TS_HOST_DEVICE inline complex128 signed_like(complex128 q1, double x, double y) {
  return {q1.re * std::copysign(1.0, x), q1.im * std::copysign(1.0, y)};
}

// log|z| without overflow or underflow on the way: the larger part's log plus half log1p of the ratio squared.
TS_HOST_DEVICE inline double log_abs(double x, double y) {
  const double large = std::fmax(std::fabs(x), std::fabs(y));
  const double small = std::fmin(std::fabs(x), std::fabs(y));
  if (large == 0.0) return -inf();
  const double ratio = small / large;
  return std::log(large) + 0.5 * std::log1p(ratio * ratio);
}

// e^x cos y + i e^x sin y for finite x and y; where e^x overflows but the product need not, or underflows into
// the subnormals (losing digits before the product rounds), e^(x/2) twice.
TS_HOST_DEVICE inline complex128 scaled_cis(double x, double y, double scale = 1.0) {
  const double c = std::cos(y), s = std::sin(y);
  if (x < 709.0 && x > -708.0) {
    const double e = std::exp(x) * scale;
    return {e * c, y == 0.0 ? y : e * s};
  }
  const double half = std::exp(0.5 * x);  // itself infinite beyond 1419 (inf times cos y, not inf times 0)
  return {(half * scale * c) * half, y == 0.0 ? y : (half * scale * s) * half};
}

// e^(+inf) (cos y + i sin y) as C99 Annex G gives it: inf + i y for a zero y, the infinity in y's direction
// for a finite y, and +inf + i NaN for an infinite or NaN y (glibc's sign where the annex leaves it open).
TS_HOST_DEVICE inline complex128 infinite_cis(double y) {
  if (y == 0.0) return {inf(), y};
  if (!is_finite(y)) return {inf(), nan()};
  return {std::copysign(inf(), std::cos(y)), std::copysign(inf(), std::sin(y))};
}

// sqrt(1 + z) and sqrt(1 - z)'s products in Kahan's inverse functions need sqrt of finite z.
TS_HOST_DEVICE inline complex128 sqrt_finite(double x, double y) {
  if (x == 0.0 && y == 0.0) return {0.0, y};
  // scale by an even power of two so that |x| + |z| neither overflows nor loses a subnormal's digits
  double scale = 1.0, unscale = 1.0;
  const double large = std::fmax(std::fabs(x), std::fabs(y));
  if (large > 4.49423283715579e+307) {  // 2^1022
    scale = 0.25, unscale = 2.0;
  } else if (large < 2.2250738585072014e-308 * 4503599627370496.0) {  // below 2^-970: subnormal territory
    scale = 1.2676506002282294e+30 * 1.2676506002282294e+30;  // 2^200
    unscale = 1.0 / 1.2676506002282294e+30;  // 2^-100
  }
  const double a = x * scale, b = y * scale;
  const double t = std::sqrt(0.5 * (std::fabs(a) + std::hypot(a, b)));
  if (a >= 0.0) return {t * unscale, (b / (2.0 * t)) * unscale};
  return {(std::fabs(b) / (2.0 * t)) * unscale, std::copysign(t, b) * unscale};
}


// asin of finite z with x, y >= 0 (Kahan): atan2(x, Re(sqrt(1 - z) sqrt(1 + z))) + i asinh(Im(conj(sqrt(1 - z))
// sqrt(1 + z))); beyond 2^28, (atan2(x, y), log|z| + ln 2).
TS_HOST_DEVICE inline complex128 asin_first_quadrant(double x, double y) {
  if (x < kTiny && y < kTiny) return {x, y};
  if (x > kLarge || y > kLarge) return {std::atan2(x, y), log_abs(x, y) + kLn2};
  const complex128 minus = sqrt_finite(1.0 - x, -y);
  const complex128 plus = sqrt_finite(1.0 + x, y);
  return {std::atan2(x, schoolbook_product(minus, plus).re),
          std::asinh(schoolbook_product(complex128{minus.re, -minus.im}, plus).im)};
}

// acos of finite z with x, y >= 0 (Kahan): 2 atan2(Re sqrt(1 - z), Re sqrt(1 + z)) + i asinh(Im(conj(sqrt(1 +
// z)) sqrt(1 - z))); beyond 2^28, (atan2(y, x), -(log|z| + ln 2)). The imaginary part is <= 0.
TS_HOST_DEVICE inline complex128 acos_first_quadrant(double x, double y) {
  if (x > kLarge || y > kLarge) return {std::atan2(y, x), -(log_abs(x, y) + kLn2)};
  const complex128 minus = sqrt_finite(1.0 - x, -y);
  const complex128 plus = sqrt_finite(1.0 + x, y);
  return {2.0 * std::atan2(minus.re, plus.re),
          std::asinh(schoolbook_product(complex128{plus.re, -plus.im}, minus).im)};
}

// atanh of finite z with x, y >= 0: 1/4 log1p(4x / |1 - z|^2) + i/2 atan2(2y, (1 - x)(1 + x) - y^2); near 1,
// where |1 - z|^2 would underflow, 1/2 (log|1 + z| - log|1 - z|); beyond 2^28, Re(1/z) + i (pi/2 - ...).
TS_HOST_DEVICE inline complex128 atanh_first_quadrant(double x, double y) {
  if (x < kTiny && y < kTiny) return {x, y};
  if (x > kLarge || y > kLarge) {
    // Re(1/z) = x / (x^2 + y^2), scaled by the larger part (Smith's) so that neither square overflows; the
    // imaginary part as half the sum of arg(1 + z) and -arg(1 - z), which do not cancel
    const double re = x >= y ? 1.0 / (x + y * (y / x)) : (x / y) / (y + x * (x / y));
    return {re, 0.5 * (std::atan2(y, 1.0 + x) + std::atan2(y, 1.0 - x))};
  }
  const double distance = std::hypot(1.0 - x, y);
  const double re = distance < 1.4916681462400413e-154  // 2^-511: its square would lose digits
                        ? 0.5 * (log_abs(1.0 + x, y) - std::log(distance))
                        : 0.25 * std::log1p(4.0 * x / (distance * distance));
  return {re, 0.5 * std::atan2(2.0 * y, (1.0 - x) * (1.0 + x) - y * y)};
}

// asinh in the first quadrant, every x, y >= 0 or NaN: asinh(x + iy) is asin(y + ix) with its parts swapped.
TS_HOST_DEVICE inline complex128 asinh_first_quadrant(double x, double y) {
  if (is_nan(x)) {
    if (y == 0.0) return {nan(), y};
    return {is_inf(y) ? inf() : nan(), nan()};
  }
  if (is_nan(y)) return {is_inf(x) ? inf() : nan(), nan()};
  if (is_inf(x) || is_inf(y)) return {inf(), is_inf(x) ? (is_inf(y) ? kQuarterPi : 0.0) : kHalfPi};
  const complex128 swapped = asin_first_quadrant(y, x);
  return {swapped.im, swapped.re};
}

// atanh in the first quadrant, every x, y >= 0 or NaN.
TS_HOST_DEVICE inline complex128 atanh_first_quadrant_special(double x, double y) {
  if (is_inf(x) || is_inf(y)) return {0.0, is_nan(y) ? nan() : kHalfPi};
  if (is_nan(x) || is_nan(y)) return {x == 0.0 ? 0.0 : nan(), nan()};
  return atanh_first_quadrant(x, y);
}

// acos in the first quadrant, every x, y >= 0 or NaN; its imaginary part is <= 0 (or NaN, or -inf).
TS_HOST_DEVICE inline complex128 acos_first_quadrant_special(double x, double y) {
  if (is_nan(x)) return {nan(), is_inf(y) ? -inf() : nan()};
  if (is_nan(y)) return {x == 0.0 ? kHalfPi : nan(), is_inf(x) ? -inf() : nan()};
  if (is_inf(x)) return {is_inf(y) ? kQuarterPi : 0.0, -inf()};
  if (is_inf(y)) return {kHalfPi, -inf()};
  return acos_first_quadrant(x, y);
}
}  // namespace detail

TS_HOST_DEVICE inline complex128 exp(complex128 z) {
  using namespace detail;
  const double x = z.re, y = z.im;
  if (y == 0.0) return {std::exp(x), y};  // e^x + i y for every x, NaN and infinities included
  if (is_finite(x) && is_finite(y)) return scaled_cis(x, y);
  if (is_inf(x) && x > 0.0) return infinite_cis(y);
  if (is_inf(x)) {  // -inf: a zero in the direction y gives, where it has one
    if (!is_finite(y)) return {0.0, std::copysign(0.0, y)};
    return {std::copysign(0.0, std::cos(y)), std::copysign(0.0, std::sin(y))};
  }
  return {nan(), nan()};
}

TS_HOST_DEVICE inline complex128 log(complex128 z) {
  using namespace detail;
  const double x = z.re, y = z.im;
  if (is_inf(x) || is_inf(y)) return {inf(), (is_nan(x) || is_nan(y)) ? nan() : std::atan2(y, x)};
  if (is_nan(x) || is_nan(y)) return {nan(), nan()};
  return {log_abs(x, y), std::atan2(y, x)};
}

TS_HOST_DEVICE inline complex128 sqrt(complex128 z) {
  using namespace detail;
  const double x = z.re, y = z.im;
  if (is_inf(y)) return {inf(), y};
  if (is_inf(x)) {
    if (x > 0.0) return {x, is_nan(y) ? y : std::copysign(0.0, y)};
    return {is_nan(y) ? y : 0.0, std::copysign(inf(), y)};
  }
  if (is_nan(x) || is_nan(y)) return {nan(), nan()};
  return sqrt_finite(x, y);
}

// sinh(x + iy) = sinh x cos y + i cosh x sin y; odd, and sinh(conj z) = conj sinh(z).
TS_HOST_DEVICE inline complex128 sinh(complex128 z) {
  using namespace detail;
  const double x = std::fabs(z.re), y = std::fabs(z.im);
  complex128 q;
  if (is_finite(x) && is_finite(y)) {
    if (x < 22.0) {  // below it e^-x is not negligible beside e^x
      q = {std::sinh(x) * std::cos(y), std::cosh(x) * std::sin(y)};
    } else {
      q = scaled_cis(x, y, 0.5);
    }
    if (y == 0.0) q.im = 0.0;
  } else if (is_inf(x)) {
    if (!is_finite(y)) return infinite_cis(y);  // +inf whatever x's sign (glibc's, where C99 leaves it open)
    q = infinite_cis(y);
  } else if (x == 0.0) {
    q = {0.0, nan()};  // 0 + i inf, 0 + i NaN
  } else if (is_nan(x)) {
    q = {nan(), y == 0.0 ? 0.0 : nan()};
  } else {
    q = {nan(), nan()};
  }
  return signed_like(q, z.re, z.im);
}

// cosh(x + iy) = cosh x cos y + i sinh x sin y; even, and cosh(conj z) = conj cosh(z).
TS_HOST_DEVICE inline complex128 cosh(complex128 z) {
  using namespace detail;
  const double x = std::fabs(z.re), y = std::fabs(z.im);
  // the imaginary part's sign: sinh x sin y takes x's and y's signs
  const double im_sign = std::copysign(1.0, z.re) * std::copysign(1.0, z.im);
  complex128 q;
  if (is_finite(x) && is_finite(y)) {
    if (x < 22.0) {
      q = {std::cosh(x) * std::cos(y), std::sinh(x) * std::sin(y)};
    } else {
      q = scaled_cis(x, y, 0.5);
    }
  } else if (is_inf(x)) {
    q = infinite_cis(y);
  } else if (x == 0.0) {
    q = {nan(), 0.0};  // 0 + i inf, 0 + i NaN
  } else if (is_nan(x)) {
    q = {nan(), y == 0.0 ? 0.0 : nan()};
  } else {
    q = {nan(), nan()};
  }
  return {q.re, q.im * im_sign};
}

// tanh(x + iy): Kahan's form (no cancellation near i pi/2); beyond |x| = 22, copysign(1, x) + i 4 sin y cos y
// e^-2|x|. Odd, and tanh(conj z) = conj tanh(z).
TS_HOST_DEVICE inline complex128 tanh(complex128 z) {
  using namespace detail;
  const double x = std::fabs(z.re), y = std::fabs(z.im);
  complex128 q;
  if (is_inf(x)) {
    q = {1.0, is_finite(y) ? std::copysign(0.0, std::sin(2.0 * y)) : 0.0};
  } else if (is_nan(x)) {
    q = {nan(), y == 0.0 ? 0.0 : nan()};
  } else if (!is_finite(y)) {
    q = {x == 0.0 ? 0.0 : nan(), nan()};
  } else if (x > 22.0) {
    const double e = std::exp(-2.0 * x);
    q = {1.0, 4.0 * std::sin(y) * std::cos(y) * e};
  } else {
    const double t = std::tan(y);
    const double beta = 1.0 + t * t;
    const double s = std::sinh(x);
    const double rho = std::sqrt(1.0 + s * s);
    const double denominator = 1.0 + beta * s * s;
    q = {beta * rho * s / denominator, t / denominator};
  }
  return signed_like(q, z.re, z.im);
}

TS_HOST_DEVICE inline complex128 asinh(complex128 z) {
  return detail::signed_like(detail::asinh_first_quadrant(std::fabs(z.re), std::fabs(z.im)), z.re, z.im);
}

TS_HOST_DEVICE inline complex128 atanh(complex128 z) {
  return detail::signed_like(detail::atanh_first_quadrant_special(std::fabs(z.re), std::fabs(z.im)), z.re, z.im);
}

// acos(-z) = pi - acos(z), acos(conj z) = conj acos(z).
TS_HOST_DEVICE inline complex128 acos(complex128 z) {
  using namespace detail;
  const complex128 q = acos_first_quadrant_special(std::fabs(z.re), std::fabs(z.im));
  return {std::signbit(z.re) ? kPi - q.re : q.re, std::signbit(z.im) ? -q.im : q.im};
}

// acosh(z) = i acos(z) where Im z >= 0 (sign bit clear) or NaN, -i acos(z) where it is below: its real part is
// |Im acos(z)| (acosh's real part is never negative).
TS_HOST_DEVICE inline complex128 acosh(complex128 z) {
  const complex128 a = acos(z);
  return {std::fabs(a.im), std::signbit(z.im) && !detail::is_nan(z.im) ? -a.re : a.re};
}

// C's product of two complex numbers (C99 Annex G.5.1, glibc's __muldc3): the schoolbook product, and where
// both of its parts come out NaN from an infinite factor or an overflowing partial product, the infinity
// recovered (inf * (1 + NaN j) is an infinity, not NaN + NaN j).
TS_HOST_DEVICE inline complex128 annex_g_product(complex128 u, complex128 v) {
  using namespace detail;
  double a = u.re, b = u.im, c = v.re, d = v.im;
  const double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  complex128 p{ac - bd, ad + bc};
  if (!is_nan(p.re) || !is_nan(p.im)) return p;
  bool recompute = false;
  // an infinite part is taken as +-1, the other part as +-0 (and a NaN in the other factor as +-0)
  const auto box = [](double& first, double& second) {
    first = std::copysign(is_inf(first) ? 1.0 : 0.0, first);
    second = std::copysign(is_inf(second) ? 1.0 : 0.0, second);
  };
  const auto zero_nan = [](double& part) {
    if (is_nan(part)) part = std::copysign(0.0, part);
  };
  if (is_inf(a) || is_inf(b)) {
    box(a, b), zero_nan(c), zero_nan(d);
    recompute = true;
  }
  if (is_inf(c) || is_inf(d)) {
    box(c, d), zero_nan(a), zero_nan(b);
    recompute = true;
  }
  if (!recompute && (is_inf(ac) || is_inf(bd) || is_inf(ad) || is_inf(bc))) {
    zero_nan(a), zero_nan(b), zero_nan(c), zero_nan(d);
    recompute = true;
  }
  if (recompute) p = {inf() * (a * c - b * d), inf() * (a * d + b * c)};
  return p;
}

// The C library's cpow (glibc's): e^(w log z) with C's product.
TS_HOST_DEVICE inline complex128 pow(complex128 z, complex128 w) { return exp(annex_g_product(w, log(z))); }

// The circular functions from the hyperbolic ones: f(z) = -i g(iz), iz = -y + ix.
TS_HOST_DEVICE inline complex128 times_minus_i(complex128 w) { return {w.im, -w.re}; }
TS_HOST_DEVICE inline complex128 times_i(complex128 z) { return {-z.im, z.re}; }

TS_HOST_DEVICE inline complex128 sin(complex128 z) {
  // an infinite y with a non-finite x: NaN + i inf, glibc's sign of the infinity where C99 leaves it open
  if (detail::is_inf(z.im) && !detail::is_finite(z.re)) return {detail::nan(), detail::inf()};
  return times_minus_i(sinh(times_i(z)));
}
TS_HOST_DEVICE inline complex128 cos(complex128 z) { return cosh(times_i(z)); }
TS_HOST_DEVICE inline complex128 tan(complex128 z) { return times_minus_i(tanh(times_i(z))); }
TS_HOST_DEVICE inline complex128 asin(complex128 z) { return times_minus_i(asinh(times_i(z))); }
TS_HOST_DEVICE inline complex128 atan(complex128 z) { return times_minus_i(atanh(times_i(z))); }

}  // namespace ts::complex_math
