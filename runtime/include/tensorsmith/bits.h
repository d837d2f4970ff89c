// Bit patterns of floats, for code that builds or takes apart IEEE values
// (the 16-bit float types, the vectorisable exp). A union: nvcc and GCC accept
// it in host and device code, and GCC still vectorises loops through it.
#pragma once

#include <cstdint>

#include "tensorsmith/macros.h"

namespace ts::bits {

// The same bytes read as another type of the same size.
template <typename To, typename From>
TS_HOST_DEVICE inline To cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
  union {
    From from;
    To to;
  } v{from};
  return v.to;
}

TS_HOST_DEVICE inline uint32_t of(float f) { return cast<uint32_t>(f); }
TS_HOST_DEVICE inline uint64_t of(double d) { return cast<uint64_t>(d); }
TS_HOST_DEVICE inline float to_float(uint32_t u) { return cast<float>(u); }

}  // namespace ts::bits
