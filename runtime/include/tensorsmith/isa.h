// Instruction-set variants of generated kernels. A kernel translation unit
// compiles its body once per level (TS_TARGET_* on x86-64 with GCC/Clang) and
// registers the best level the CPU and OS support, read with cpuid at import.
// The distributed build itself targets the baseline ISA (never -march=native).
// Builds use -ffp-contract=off, so no level fuses a*b+c and float results
// are the same for every level; the AVX2 and AVX-512 levels have FMA, so an
// explicit std::fma (complex products, float64's series) is one instruction there, not a libm call.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#define TS_ISA_VARIANTS 1
#define TS_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2")))
#define TS_TARGET_AVX512 __attribute__((target("avx2,fma,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define TS_ISA_VARIANTS 0
#define TS_TARGET_AVX2
#define TS_TARGET_AVX512
#endif

#if defined(__GNUC__)
#define TS_ALWAYS_INLINE inline __attribute__((always_inline))
#define TS_CONST_FUNCTION __attribute__((const))
#else
#define TS_ALWAYS_INLINE inline
#define TS_CONST_FUNCTION
#endif

namespace ts::isa {

enum class Level : int { Baseline = 0, AVX2 = 1, AVX512 = 2 };

inline const char* name(Level level) {
  switch (level) {
    case Level::AVX512:
      return "avx512";
    case Level::AVX2:
      return "avx2";
    default:
      return "baseline";
  }
}

// The best level this CPU and OS support (no caching: kernels may hold no state).
inline Level hardware() {
#if TS_ISA_VARIANTS
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return Level::Baseline;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
  if (!osxsave || !avx || !fma) return Level::Baseline;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6) != 0x6) return Level::Baseline;  // the OS saves XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return Level::Baseline;
  const bool avx2 = (b >> 5) & 1, bmi = (b >> 3) & 1, bmi2 = (b >> 8) & 1;
  if (!(avx2 && bmi && bmi2)) return Level::Baseline;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);  // F DQ BW VL
  const bool zmm_state = (xcr0_lo & 0xe0) == 0xe0;  // opmask and ZMM state
  return avx512 && zmm_state ? Level::AVX512 : Level::AVX2;
#else
  return Level::Baseline;
#endif
}

// The highest level the process may use: env TS_ISA (baseline, avx2 or avx512; read once, ValueError for
// another value), else the highest there is. The gate runs kernels at each level this way, and a user can
// rule out a level (to compare results, or on a machine whose AVX-512 clocks down).
Level allowed();

// The level kernels are registered for: the best the hardware supports, within allowed().
inline Level detect() {
  const Level best = hardware();
  return static_cast<int>(best) < static_cast<int>(allowed()) ? best : allowed();
}

// Whether ts::prefetch_ahead issues its hints (tensorsmith/kernel_api.h): env TS_PREFETCH (0 or 1; read once,
// at import: another value is a ValueError, which the import reports), else by CPU. Off on AMD Zen 4, where the
// hardware prefetcher keeps up alone and the hints cost time (a 16M-element float32 sum in a C++ loop: 3.0 -> 3.6
// ms on one core); on elsewhere, as measured on Zen 5 (the same sum on one thread: 1.2x PyTorch's time without
// them, 0.9x with them).
// Declared const: the value never changes once read, so the compiler may hoist it out of a body's loops.
TS_CONST_FUNCTION bool prefetch_hints();

// The variant for `level`.
template <typename F>
F pick(Level level, F baseline, F avx2, F avx512) {
  switch (level) {
    case Level::AVX512:
      return avx512;
    case Level::AVX2:
      return avx2;
    default:
      return baseline;
  }
}

// Kernel struct K's loop_baseline / loop_avx2 / loop_avx512 for `level`, type-erased for the registry.
// TS_ISA_BASELINE_ONLY (the gate's sanitizer build): the baseline for every level, so the other two are
// never instantiated; ASan and UBSan check the body's source, which every level shares, in a third of the
// compile time.
template <typename K>
void* variant(Level level) {
#if defined(TS_ISA_BASELINE_ONLY)
  (void)level;
  return reinterpret_cast<void*>(&K::loop_baseline);
#else
  return reinterpret_cast<void*>(pick(level, &K::loop_baseline, &K::loop_avx2, &K::loop_avx512));
#endif
}

}  // namespace ts::isa
