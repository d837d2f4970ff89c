// Everything a generated kernel translation unit may include: the dispatch
// table and kernel signatures, dtypes, and the scalar helpers spec expressions use.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/scalar_ops.h"
#include "tensorsmith/scan_lines.h"
#include "tensorsmith/sort_rows.h"

namespace ts {

// The levels of a tree fold of 2 * kWidth lanes into lane 0: step(k, width) for k in [0, width), for width =
// kWidth, kWidth / 2, ..., 1, where a step folds lane k + width into lane k. Each level is a loop of constant
// length that the vectoriser turns into vector operations. Over a variable width it stayed scalar code through
// memory (a row of 256 float32: max in 41 ns, 27 now; sum in double 26 ns, 25 now; one core, C++ loop at -O3);
// the loop is kept rolled for the vectoriser, since at -O3 GCC unrolls loops this short into statements first,
// and a select's statements become compare-and-branch code (max 44 ns).
template <int64_t kWidth, typename Step>
TS_ALWAYS_INLINE void tree_levels(Step step) {
  if constexpr (kWidth > 0) {
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC unroll 1
#endif
    for (int64_t k = 0; k < kWidth; ++k) step(k, kWidth);
    tree_levels<kWidth / 2>(step);
  }
}

#if !defined(__CUDA_ARCH__)
// Prefetch hints for `bytes` bytes starting `ahead` bytes past p, one per 64-byte line: bodies that read
// long rows call it, since on some CPUs the hardware prefetcher alone keeps too few lines in flight; on those
// where the hints cost more than they bring, none are issued (isa::prefetch_hints). The address is computed as
// an integer: past the end of a row it names memory that may not be there, which a hint may (it never faults).
TS_ALWAYS_INLINE void prefetch_ahead(const void* p, uintptr_t ahead, int64_t bytes) {
  if (!isa::prefetch_hints()) return;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p) + ahead;
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(at + b));
}
#endif

}  // namespace ts
