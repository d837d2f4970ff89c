// tensorsmith/complex_math.h against glibc's complex functions (which numpy calls), compiled for the host: the
// code every CUDA complex kernel runs, checked where no GPU is. Prints one line per function,
// "name mismatches checked worst_eps", and the first mismatches; tests/runtime/test_complex_math.py reads it.
//
// A result matches where each part is NaN where glibc's is, the same infinity where glibc's is infinite, and
// otherwise within kTolerance ulps of |glibc's result| (norm-wise: numpy's complex results are judged so; of
// the smallest normal number, for subnormal results).
// pow is checked where e^(w log z) is well-conditioned: where Im(w log z) is below 2^40, so that an ulp of
// log z does not turn the result's angle (there the host keeps glibc's own cpow).
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "tensorsmith/complex_math.h"

namespace {

using Std = std::complex<double>;
using Ts = ts::complex<double>;
namespace cm = ts::complex_math;

constexpr double kTolerance = 8.0;  // ulps of |result|
constexpr double kEps = 2.220446049250313e-16;

// -1 for a special-value mismatch, else the larger part's error in ulps of |want|.
double error(Ts got, Std want) {
  const double got_parts[2] = {got.re, got.im};
  const double want_parts[2] = {want.real(), want.imag()};
  const double magnitude = std::abs(want);
  double worst = 0.0;
  for (int i = 0; i < 2; ++i) {
    const double g = got_parts[i], w = want_parts[i];
    if (std::isnan(g) || std::isnan(w)) {
      if (!(std::isnan(g) && std::isnan(w))) return -1.0;
    } else if (std::isinf(g) || std::isinf(w)) {
      if (g != w) return -1.0;
    } else if (std::isfinite(magnitude)) {
      // subnormal results carry the subnormals' absolute precision: ulps of at least the smallest normal's
      const double unit = std::fmax(magnitude, std::numeric_limits<double>::min()) * kEps;
      worst = std::fmax(worst, std::fabs(g - w) / unit);
    }
  }
  return worst;
}

std::vector<double> special_parts() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, M_PI, -M_PI, M_PI / 2, -M_PI / 2, inf, -inf, nan, -nan,
          std::numeric_limits<double>::signaling_NaN(), 1e-3, -1e-3, 2.0, -2.0, 3.0, 5e-324, -5e-324, 1e-310,
          2.2250738585072014e-308, 1e20, -1e20, 4988429.2, -4988429.2, 1e300, -1e300, 1.7976931348623157e308};
}

// Random points of every kind: normal, every magnitude of both parts, near +-1 and near +-i (branch points).
std::vector<Std> random_points(int count) {
  std::mt19937_64 rng(20261204);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-307.0, 307.0);
  std::vector<Std> points;
  for (int i = 0; i < count; ++i) {
    const double sign = i % 8 < 4 ? 1.0 : -1.0;
    switch (i % 4) {
      case 0: points.emplace_back(3 * normal(rng), 3 * normal(rng)); break;
      case 1:
        points.emplace_back(std::copysign(std::pow(10.0, exponent(rng)), normal(rng)),
                            std::copysign(std::pow(10.0, exponent(rng)), normal(rng)));
        break;
      case 2: points.emplace_back(sign + 1e-3 * normal(rng), 1e-3 * normal(rng)); break;
      default: points.emplace_back(1e-4 * normal(rng), sign + 1e-4 * normal(rng)); break;
    }
  }
  return points;
}

struct Function {
  const char* name;
  Ts (*ours)(Ts);
  Std (*glibc)(const Std&);
};

template <Std (*F)(const Std&)>
Std call(const Std& z) {
  return F(z);
}

void report(const char* name, int mismatches, int checked, double worst) {
  std::printf("%s %d %d %.3f\n", name, mismatches, checked, worst);
}

void show(const char* name, const Std& z, const Std& want, Ts got, int& shown, const Std* w = nullptr) {
  if (shown++ < 4) {
    std::fprintf(stderr, "%s(%.17g%+.17gj", name, z.real(), z.imag());
    if (w != nullptr) std::fprintf(stderr, ", %.17g%+.17gj", w->real(), w->imag());
    std::fprintf(stderr, "): glibc %.17g%+.17gj, complex_math %.17g%+.17gj\n", want.real(), want.imag(), got.re, got.im);
  }
}

}  // namespace

int main() {
  const Function functions[] = {
      {"sqrt", cm::sqrt, [](const Std& z) { return std::sqrt(z); }},
      {"exp", cm::exp, [](const Std& z) { return std::exp(z); }},
      {"log", cm::log, [](const Std& z) { return std::log(z); }},
      {"sin", cm::sin, [](const Std& z) { return std::sin(z); }},
      {"cos", cm::cos, [](const Std& z) { return std::cos(z); }},
      {"tan", cm::tan, [](const Std& z) { return std::tan(z); }},
      {"sinh", cm::sinh, [](const Std& z) { return std::sinh(z); }},
      {"cosh", cm::cosh, [](const Std& z) { return std::cosh(z); }},
      {"tanh", cm::tanh, [](const Std& z) { return std::tanh(z); }},
      {"asin", cm::asin, [](const Std& z) { return std::asin(z); }},
      {"acos", cm::acos, [](const Std& z) { return std::acos(z); }},
      {"atan", cm::atan, [](const Std& z) { return std::atan(z); }},
      {"asinh", cm::asinh, [](const Std& z) { return std::asinh(z); }},
      {"acosh", cm::acosh, [](const Std& z) { return std::acosh(z); }},
      {"atanh", cm::atanh, [](const Std& z) { return std::atanh(z); }},
  };
  std::vector<Std> points;
  for (double x : special_parts()) {
    for (double y : special_parts()) points.emplace_back(x, y);
  }
  for (const Std& z : random_points(100000)) points.push_back(z);

  for (const Function& f : functions) {
    int mismatches = 0, shown = 0;
    double worst = 0.0;
    for (const Std& z : points) {
      const Std want = f.glibc(z);
      const Ts got = f.ours(Ts{z.real(), z.imag()});
      const double e = error(got, want);
      if (e < 0.0 || e > kTolerance) {
        ++mismatches;
        show(f.name, z, want, got, shown);
      } else {
        worst = std::fmax(worst, e);
      }
    }
    report(f.name, mismatches, static_cast<int>(points.size()), worst);
  }

  // pow: every pair of special bases and exponents, and random ones, where well-conditioned
  std::vector<Std> bases;
  for (double x : special_parts()) {
    for (double y : special_parts()) bases.emplace_back(x, y);
  }
  const std::vector<Std> randoms = random_points(4000);
  bases.insert(bases.end(), randoms.begin(), randoms.begin() + 2000);
  std::vector<Std> exponents = bases;
  int mismatches = 0, checked = 0, shown = 0;
  double worst = 0.0;
  for (const Std& z : bases) {
    for (size_t k = 0; k < exponents.size(); k += 7) {  // a seventh of the pairs: 10^6 of them
      const Std& w = exponents[k];
      const Ts product = cm::annex_g_product(Ts{w.real(), w.imag()}, cm::log(Ts{z.real(), z.imag()}));
      if (std::isfinite(product.im) && std::fabs(product.im) >= 0x1p40) {
        continue;  // ill-conditioned: an ulp of log z moves the result's angle by more than a turn
      }
      ++checked;
      const Std want = std::pow(z, w);
      const Ts got = cm::pow(Ts{z.real(), z.imag()}, Ts{w.real(), w.imag()});
      // e^(w log z) carries |w log z| ulps of error in glibc too: the tolerance grows with it
      const double e = error(got, want) / std::fmax(1.0, std::fabs(product.im) + std::fabs(product.re));
      if (e < 0.0 || e > kTolerance) {
        ++mismatches;
        show("pow", z, want, got, shown, &w);
      } else {
        worst = std::fmax(worst, e);
      }
    }
  }
  report("pow", mismatches, checked, worst);
  return 0;
}
