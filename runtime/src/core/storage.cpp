#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

#include "tensorsmith/allocator.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/tensor.h"
#include "tensorsmith/testing.h"
#ifdef TS_WITH_CUDA
#include "tensorsmith/cuda/allocator.h"
#endif

namespace ts {

namespace allocator {

namespace {

// Freed medium and large blocks by rounded size. Bounded so that a burst of big
// temporaries does not pin memory: past the limit, blocks go back to the OS.
constexpr size_t kCacheLimit = size_t{256} << 20;

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> blocks;
  size_t bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may be freed during exit
  return *c;
}

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

// Whole units, so that an empty tensor still gets a real, unique pointer and a
// large block is a multiple of its alignment, as aligned_alloc requires (the
// class is that of the rounded size: just below kLargeBlock rounds up into it).
// A medium block rounds up to one of 8 classes per power of two (at most 1/8
// more memory), so that a cached block serves sizes near its own; the top class
// stays below kLargeBlock.
size_t rounded_size(size_t nbytes) {
  const size_t size = round_up(std::max<size_t>(nbytes, 1), kAlignment);
  if (size >= kLargeBlock) return round_up(size, kHugePage);
  if (size < kMediumBlock) return size;
  size_t power = kMediumBlock;
  while (power * 2 <= size) power *= 2;
  return std::min(round_up(size, power / 8), kLargeBlock - kAlignment);
}

bool is_cached_size(size_t size) { return size >= kMediumBlock; }

void* take_cached(size_t size) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  // The block of this size freed last: equal keys keep their order of insertion, so it is the last of its
  // range. Its lines are the likeliest still in cache (the first, freed longest ago, is the coldest: a GPT
  // step's 128 KiB activations each came back from memory).
  auto it = c.blocks.upper_bound(size);
  if (it == c.blocks.begin() || std::prev(it)->first != size) return nullptr;
  --it;
  void* p = it->second;
  c.blocks.erase(it);
  c.bytes -= size;
  return p;
}

// Small blocks come from malloc, kAlignment bytes larger, aligned by hand, with malloc's pointer stored just
// below the block: glibc's aligned_alloc splits a chunk to align it (25-35 ns a block, against malloc's 5, and
// the pieces slow later frees down).
void* small_block(size_t size) {
  void* raw = std::malloc(size + kAlignment);
  if (raw == nullptr) return nullptr;
  // malloc aligns to 16 bytes, so the block starts at least 16 bytes into the allocation.
  const uintptr_t block = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~uintptr_t{kAlignment - 1};
  reinterpret_cast<void**>(block)[-1] = raw;
  return reinterpret_cast<void*>(block);
}

void free_small_block(void* p) { std::free(static_cast<void**>(p)[-1]); }

void* os_block(size_t size) {
  if (size < kLargeBlock) return small_block(size);
  void* p = std::aligned_alloc(kHugePage, size);
  // Advice only: where THP is off or unsupported the block still works.
  if (p != nullptr) (void)madvise(p, size, MADV_HUGEPAGE);
  return p;
}

// A block from malloc or aligned_alloc, as its size class takes them (freed by free_block).
void free_block(void* p, size_t size) {
  if (size < kLargeBlock) {
    free_small_block(p);
  } else {
    std::free(p);
  }
}

void* fresh_block(size_t size) {
  void* p = os_block(size);
  if (p == nullptr && is_cached_size(size)) {
    empty_cache();  // cached blocks may be what stands between us and the limit
    p = os_block(size);
  }
  return p;
}

}  // namespace

void* allocate(size_t nbytes) {
  const testing::Placement placement = testing::detail::placement();
  if (placement != testing::Placement::Pooled) {  // the gate's exact or guarded blocks
    void* p = testing::detail::placed_allocate(nbytes, placement);
    testing::detail::fill(p, nbytes);
    return p;
  }
  const size_t size = rounded_size(nbytes);
  void* p = is_cached_size(size) ? take_cached(size) : nullptr;
  if (p == nullptr) p = fresh_block(size);
  if (p == nullptr) throw std::bad_alloc();
  testing::detail::fill(p, size);
  return p;
}

void release(void* p, size_t nbytes) {
  if (testing::detail::placed_release(p)) return;
  const size_t size = rounded_size(nbytes);
  if (is_cached_size(size)) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + size <= kCacheLimit) {
      c.blocks.emplace(size, p);
      c.bytes += size;
      return;
    }
  }
  free_block(p, size);
}

Stats stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return Stats{c.blocks.size(), c.bytes, kCacheLimit};
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [size, p] : c.blocks) free_block(p, size);
  c.blocks.clear();
  c.bytes = 0;
}

}  // namespace allocator

Storage::Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.type == DeviceType::CUDA) {
#ifdef TS_WITH_CUDA
    return std::make_shared<Storage>(cuda::allocate(nbytes, device.index, testing::detail::cuda_fill_byte()), nbytes, device,
                                     nullptr);
#else
    throw NotImplementedError("CUDA is not built into this tensorsmith");
#endif
  }
  return std::make_shared<Storage>(allocator::allocate(nbytes), nbytes, device, nullptr);
}

Storage::~Storage() {
  // Only runtime-allocated (owner-less) blocks are ours to free.
  if (owner_ != nullptr) return;
  if (device_.type == DeviceType::CPU) {
    allocator::release(data_, nbytes_);
#ifdef TS_WITH_CUDA
  } else if (data_ != nullptr) {
    cuda::release(data_, nbytes_, device_.index);
#endif
  }
}

}  // namespace ts
