// Bit patterns of floats, for code that builds or takes apart IEEE values
// (the 16-bit float types, the vectorisable exp). A union: nvcc and GCC accept
// it in host and device code, and GCC still vectorises loops through it.
#pragma once

#include <cstdint>

#include "tensorsmith/macros.h"

namespace ts::bits {

TS_HOST_DEVICE inline uint32_t of(float f) {
  union {
    float f;
    uint32_t u;
  } v{f};
  return v.u;
}
TS_HOST_DEVICE inline uint64_t of(double d) {
  union {
    double d;
    uint64_t u;
  } v{d};
  return v.u;
}
TS_HOST_DEVICE inline float to_float(uint32_t u) {
  union {
    uint32_t u;
    float f;
  } v{u};
  return v.f;
}

}  // namespace ts::bits
