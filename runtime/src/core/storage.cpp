#include <algorithm>
#include <cstdlib>
#include <new>

#include "tensorsmith/errors.h"
#include "tensorsmith/tensor.h"

namespace ts {

namespace {

// Cache-line (and AVX-512) alignment for runtime-allocated blocks.
constexpr size_t kAlignment = 64;

void* allocate_cpu(size_t nbytes) {
  // aligned_alloc needs a size that is a positive multiple of the alignment;
  // an empty tensor still gets a real, unique pointer.
  size_t rounded = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

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
