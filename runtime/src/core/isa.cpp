// TS_ISA: the highest instruction-set level kernels may use (tensorsmith/isa.h).
#include "tensorsmith/isa.h"

#include <cstdlib>
#include <cstring>

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

}  // namespace ts::isa
