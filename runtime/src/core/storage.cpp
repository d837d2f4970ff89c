#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
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

// Freed large blocks by rounded size. Bounded so that a burst of big
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

// The gate's fill byte for new blocks; negative = none (see testing.h).
std::atomic<int> g_allocation_fill{-1};

size_t rounded_size(size_t nbytes) {
  // aligned_alloc needs a positive multiple of the alignment; an empty tensor
  // still gets a real, unique pointer.
  const size_t unit = nbytes >= kLargeBlock ? kHugePage : kAlignment;
  return (std::max<size_t>(nbytes, 1) + unit - 1) / unit * unit;
}

void* take_cached(size_t size) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto it = c.blocks.find(size);
  if (it == c.blocks.end()) return nullptr;
  void* p = it->second;
  c.blocks.erase(it);
  c.bytes -= size;
  return p;
}

void* fresh_block(size_t size) {
  if (size < kLargeBlock) return std::aligned_alloc(kAlignment, size);
  void* p = std::aligned_alloc(kHugePage, size);
  if (p == nullptr) {
    empty_cache();  // cached blocks may be what stands between us and the limit
    p = std::aligned_alloc(kHugePage, size);
  }
  // Advice only: where THP is off or unsupported the block still works.
  if (p != nullptr) (void)madvise(p, size, MADV_HUGEPAGE);
  return p;
}

}  // namespace

void* allocate(size_t nbytes) {
  const size_t size = rounded_size(nbytes);
  void* p = size >= kLargeBlock ? take_cached(size) : nullptr;
  if (p == nullptr) p = fresh_block(size);
  if (p == nullptr) throw std::bad_alloc();
  const int fill = g_allocation_fill.load(std::memory_order_relaxed);
  if (fill >= 0) std::memset(p, fill, size);
  return p;
}

void release(void* p, size_t nbytes) {
  const size_t size = rounded_size(nbytes);
  if (size >= kLargeBlock) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + size <= kCacheLimit) {
      c.blocks.emplace(size, p);
      c.bytes += size;
      return;
    }
  }
  std::free(p);
}

Stats stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return Stats{c.blocks.size(), c.bytes, kCacheLimit};
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [size, p] : c.blocks) std::free(p);
  c.blocks.clear();
  c.bytes = 0;
}

}  // namespace allocator

void testing::set_allocation_fill(std::optional<uint8_t> byte) {
  allocator::g_allocation_fill.store(byte ? int{*byte} : -1, std::memory_order_relaxed);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.type == DeviceType::CUDA) {
#ifdef TS_WITH_CUDA
    const int fill = allocator::g_allocation_fill.load(std::memory_order_relaxed);
    return std::make_shared<Storage>(cuda::allocate(nbytes, device.index, fill), nbytes, device, nullptr);
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
