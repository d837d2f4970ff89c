#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "tensorsmith/errors.h"
#include "tensorsmith/tensor.h"
#include "tensorsmith/testing.h"

namespace ts {

namespace {

// Cache-line (and AVX-512) alignment for runtime-allocated blocks.
constexpr size_t kAlignment = 64;

// The gate's fill byte for new blocks; negative = none (see testing.h).
std::atomic<int> g_allocation_fill{-1};

void* allocate_cpu(size_t nbytes) {
  // aligned_alloc needs a size that is a positive multiple of the alignment;
  // an empty tensor still gets a real, unique pointer.
  size_t rounded = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  const int fill = g_allocation_fill.load(std::memory_order_relaxed);
  if (fill >= 0) std::memset(p, fill, rounded);
  return p;
}

}  // namespace

void testing::set_allocation_fill(std::optional<uint8_t> byte) {
  g_allocation_fill.store(byte ? int{*byte} : -1, std::memory_order_relaxed);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  TS_CHECK(device.type == DeviceType::CPU, NotImplementedError, "CUDA is not built into this tensorsmith");
  return std::make_shared<Storage>(allocate_cpu(nbytes), nbytes, device, nullptr);
}

Storage::~Storage() {
  // Only runtime-allocated (owner-less) blocks are ours to free; allocate()
  // creates CPU blocks only.
  if (owner_ == nullptr && device_.type == DeviceType::CPU) std::free(data_);
}

}  // namespace ts
