// The caching device allocator behind Storage::allocate for CUDA devices:
// per-device pools of blocks by size class, reused without cudaMalloc/cudaFree
// per tensor. Free of CUDA types (the core includes it); defined only where
// CUDA is enabled (TS_WITH_CUDA).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensorsmith/errors.h"

namespace ts::cuda {

// Sizes round up to a multiple of kSmallUnit below kLargeBlock and of
// kLargeUnit from there; a block serves only requests of its rounded size.
constexpr size_t kSmallUnit = 512;
constexpr size_t kLargeBlock = size_t{1} << 20;
constexpr size_t kLargeUnit = size_t{2} << 20;

// The device is out of memory even after the cache was emptied; Python's MemoryError.
struct OutOfMemoryError : RuntimeError { using RuntimeError::RuntimeError; };

// A block of at least `nbytes` on `device`, filled with `fill` (0..255) on the
// device's current stream unless fill is negative. Throws OutOfMemoryError.
void* allocate(size_t nbytes, int device, int fill);
// Returns a block to its pool; nbytes as passed to allocate.
void release(void* p, size_t nbytes, int device);

struct MemoryStats {
  size_t allocated_bytes = 0;       // in blocks handed out (rounded sizes)
  size_t reserved_bytes = 0;        // obtained from cudaMalloc: allocated + cached
  size_t peak_allocated_bytes = 0;  // highest allocated_bytes since start or reset
  uint64_t num_allocs = 0;          // allocate() calls
  uint64_t num_frees = 0;           // release() calls
  uint64_t cache_hits = 0;          // allocate() calls served from the pool
};
MemoryStats memory_stats(int device);  // zeros for a device never allocated on
void reset_peak_memory_stats(int device);
// Frees every cached (unused) block of every device.
void empty_cache();

}  // namespace ts::cuda
