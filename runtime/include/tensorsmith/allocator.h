// The CPU allocator behind Storage::allocate: 64-byte aligned blocks; large
// blocks 2 MiB aligned with transparent-huge-page advice. Medium and large
// blocks are kept in a cache when freed (by size class), so that repeated ops
// reuse memory that is already faulted in: glibc maps blocks from 128 KiB
// afresh and unmaps or trims them on free, so each such temporary faulted in
// every page again (in a GPT training step's backward, tanh's and softmax's
// formulas took 3x as long as with glibc tuned to keep such blocks).
#pragma once

#include <cstddef>

namespace ts::allocator {

constexpr size_t kAlignment = 64;                 // every block
constexpr size_t kMediumBlock = size_t{128} << 10;  // from here: cached (glibc's default mmap threshold)
constexpr size_t kLargeBlock = size_t{1} << 20;   // from here: huge-page aligned
constexpr size_t kHugePage = size_t{2} << 20;

void* allocate(size_t nbytes);  // throws std::bad_alloc
void release(void* p, size_t nbytes);  // nbytes as passed to allocate

struct Stats {
  size_t cached_blocks;
  size_t cached_bytes;
  size_t cache_limit;  // bytes the cache may hold
};
Stats stats();
void empty_cache();  // frees every cached block

}  // namespace ts::allocator
