// TS_ISA: the highest instruction-set level kernels may use; TS_PREFETCH: whether bodies' prefetch hints
// are issued (tensorsmith/isa.h).
#include "tensorsmith/isa.h"

#include <cstdlib>
#include <cstring>

#include "tensorsmith/env.h"
#include "tensorsmith/errors.h"

namespace ts::isa {

Level allowed() {
  static const Level level = [] {
    const char* env = std::getenv("TS_ISA");
    if (env == nullptr) return Level::AVX512;
    for (const Level l : {Level::Baseline, Level::AVX2, Level::AVX512}) {
      if (std::strcmp(env, name(l)) == 0) return l;
    }
    throw ValueError(std::string("TS_ISA must be baseline, avx2 or avx512, got '") + env + "'");
  }();
  return level;
}

namespace {

// AMD family 0x19 (Zen 3 and Zen 4) with AVX-512, which Zen 3 lacks.
bool zen4() {
#if TS_ISA_VARIANTS
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "Auth" "enti" "cAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned base = (a >> 8) & 0xf, family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
  return family == 0x19 && hardware() == Level::AVX512;
#else
  return false;
#endif
}

}  // namespace

bool prefetch_hints() {
  static const bool hints = [] {
    if (const std::optional<int64_t> on = env_int("TS_PREFETCH", 0, 1, "0 or 1")) return *on == 1;
    return !zen4();
  }();
  return hints;
}

}  // namespace ts::isa
