// The CPU scan machinery (cumulative_sum, cumulative_prod): the running fold of every (batch, inner) line of
// a ts::ScanArgs. Generated scan kernels hold only the op's identity and combine; this is the loop around
// them, shared by every scan op. Each line starts from its first element, as numpy's accumulate does (the
// identity only leads where args.initial is set: a sum of -0.0 alone is -0.0).
#pragma once

#include <cstdint>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/isa.h"

namespace ts::scanning {

constexpr int64_t kTile = 512;  // adjacent lines scanned side by side (an outer axis): one read of each step

// K: static identity() and combine(acc_t, acc_t). Inlined into each instruction-set variant of the kernel.
template <typename K, typename T, typename acc_t, typename out_t>
TS_ALWAYS_INLINE void scan_lines(const ScanArgs& args) {
  const bool adjacent = args.in_inner_stride == static_cast<int64_t>(sizeof(T)) &&
                        args.out_inner_stride == static_cast<int64_t>(sizeof(out_t));
  for (int64_t b = 0; b < args.n_batch; ++b) {
    const char* in = args.in + b * args.in_batch_stride;
    char* out = args.out + b * args.out_batch_stride;
    if (args.n_inner > 1 && adjacent) {
      for (int64_t i0 = 0; i0 < args.n_inner; i0 += kTile) {
        const int64_t width = args.n_inner - i0 < kTile ? args.n_inner - i0 : kTile;
        const char* first = in + i0 * args.in_inner_stride;
        char* target = out + i0 * args.out_inner_stride;
        if (args.initial) {
          out_t* row = reinterpret_cast<out_t*>(target);
          for (int64_t k = 0; k < width; ++k) row[k] = static_cast<out_t>(K::identity());
          target += args.out_scan_stride;
        }
        if (args.n_scan == 0) continue;
        acc_t tile[kTile];
        const T* slice = reinterpret_cast<const T*>(first);
        out_t* row = reinterpret_cast<out_t*>(target);
        for (int64_t k = 0; k < width; ++k) row[k] = static_cast<out_t>(tile[k] = static_cast<acc_t>(slice[k]));
        for (int64_t j = 1; j < args.n_scan; ++j) {
          slice = reinterpret_cast<const T*>(first + j * args.in_scan_stride);
          row = reinterpret_cast<out_t*>(target + j * args.out_scan_stride);
          for (int64_t k = 0; k < width; ++k) row[k] = static_cast<out_t>(tile[k] = K::combine(tile[k], static_cast<acc_t>(slice[k])));
        }
      }
      continue;
    }
    for (int64_t i = 0; i < args.n_inner; ++i) {
      const char* line = in + i * args.in_inner_stride;
      char* target = out + i * args.out_inner_stride;
      if (args.initial) {
        *reinterpret_cast<out_t*>(target) = static_cast<out_t>(K::identity());
        target += args.out_scan_stride;
      }
      if (args.n_scan == 0) continue;
      acc_t acc = static_cast<acc_t>(*reinterpret_cast<const T*>(line));
      *reinterpret_cast<out_t*>(target) = static_cast<out_t>(acc);
      for (int64_t j = 1; j < args.n_scan; ++j) {
        acc = K::combine(acc, static_cast<acc_t>(*reinterpret_cast<const T*>(line + j * args.in_scan_stride)));
        *reinterpret_cast<out_t*>(target + j * args.out_scan_stride) = static_cast<out_t>(acc);
      }
    }
  }
}

}  // namespace ts::scanning
