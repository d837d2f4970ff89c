// The CPU engines' thresholds: where they split work between threads, cut long rows into chunks and
// stream outputs. They decide what a kernel is handed (how long a run or a row can be, which path a call
// takes), so the gate sizes its large cases from them (validators/engine_limits.py reads this header):
// change one here and the gate's cases follow.
#pragma once

#include <cstdint>

namespace ts::limits {

// Pointwise: elements per thread below which splitting costs more than it saves.
constexpr int64_t kPointwiseGrain = 32768;
// Pointwise outputs written with non-temporal stores go through a scratch buffer of this many bytes: the
// kernel is called on pieces this long (see pointwise.cpp).
constexpr int64_t kStreamScratchBytes = 512;
// The smallest output that streams by default (half the last-level cache, but at least this).
constexpr int64_t kStreamFloorBytes = int64_t{16} << 20;

// Reductions: elements per thread below which splitting costs more than it saves.
constexpr int64_t kReduceGrain = 32768;
// Reduced extent of one partial in a split reduction. Fixed, so the result does not depend on the number
// of threads.
constexpr int64_t kSplitChunk = int64_t{1} << 15;
// Up to this many rows a long reduction is split into chunks; more rows keep the threads busy on their own
// (each row then goes to the kernel whole).
constexpr int64_t kSplitMaxRows = 16;

// Normalization (softmax family): elements per thread below which splitting costs more than it saves.
constexpr int64_t kRowGrain = 16384;

// Scans: elements per thread below which splitting costs more than it saves, and the most adjacent
// inner positions one call scans side by side (wider inner extents are cut into pieces this wide, so the
// threads share a scan over an outer axis).
constexpr int64_t kScanGrain = 32768;
constexpr int64_t kScanTile = 2048;

// Contraction: a product of fewer multiply-adds than this runs on the calling thread inside the BLAS
// (OpenBLAS threads one from about 2^20 on: 100^3 stayed on the caller, 2^20 went to its threads; half that
// keeps clear of the edge). A batch of such products is split over the pool, one product per call.
constexpr int64_t kSerialGemmProduct = int64_t{1} << 19;
// Multiply-adds per thread below which a split batch of products stays on one thread.
constexpr int64_t kGemmGrain = int64_t{1} << 15;

// Sorts: elements per thread below which splitting rows between threads costs more than it saves.
constexpr int64_t kSortGrain = 16384;

}  // namespace ts::limits
