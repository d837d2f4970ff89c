// Tensor: a strided view over shared, reference-counted storage.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "tensorsmith/device.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/small_vector.h"

namespace ts {

// Autograd's record of a tensor (defined by the engine, runtime/src/python/autograd.cpp); the core only carries it.
struct AutogradMeta;

// Inline room for this many dims: shapes and strides of smaller tensors never touch the heap.
constexpr size_t kInlineDims = 6;
// numpy's NPY_MAXDIMS: every tensor has at most this many dims (ValueError beyond, IndexError when indexing).
constexpr size_t kMaxDims = 64;
using Shape = SmallVector<int64_t, kInlineDims>;
using Strides = SmallVector<int64_t, kInlineDims>;  // in elements, may be 0 or negative

// A block of device memory. `owner` keeps foreign memory alive (a numpy array,
// a DLPack capsule); when it is null the block was allocated by the runtime's
// allocator for `device` and is returned to it on destruction.
class Storage {
 public:
  Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Counts in-place writes to the block (every view of it shares the count): autograd refuses to use a
  // tensor saved for backward once its memory was written after it was saved.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  std::shared_ptr<void> owner_;
  std::atomic<uint64_t> version_{0};
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor; defined() is false
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides, int64_t offset);

  // A new contiguous (row-major) tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device{});

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements, into storage
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const;
  size_t itemsize() const { return ts::itemsize(dtype_); }
  bool is_contiguous() const;  // row-major contiguous (size-1 dims ignored)
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  char* data_ptr() const;  // address of element [0, ..., 0]
  // False for broadcast views (expand) and every view of one, as numpy's broadcast_to is
  // read-only: their elements share memory. Copies are writeable again.
  bool writeable() const { return writeable_; }
  // Autograd's record (requires_grad, grad, the node that made it); null for a tensor autograd does not
  // track. Copies of this Tensor value share it; views and results start without one.
  const std::shared_ptr<AutogradMeta>& autograd() const { return autograd_; }
  void set_autograd(std::shared_ptr<AutogradMeta> meta) { autograd_ = std::move(meta); }

  // Views (share storage). Axes may be negative; out-of-range axes throw AxisError.
  Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset) const;
  Tensor reshape(Shape shape) const;  // one -1 allowed; a view when strides allow, else a copy
  Tensor permute(const std::vector<int64_t>& axes) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor matrix_transpose() const;  // swaps the last two axes (Array API .mT)
  Tensor T() const;                 // reverses all axes (numpy .T)
  // Python slice semantics: start/stop are clamped, step != 0 (may be negative).
  Tensor slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const;
  Tensor select(int64_t axis, int64_t index) const;  // drops the axis; negative index counts from the end
  Tensor expand(const Shape& shape) const;           // broadcast_to, read-only; new dims get stride 0
  Tensor squeeze(std::optional<std::vector<int64_t>> axes) const;  // all size-1 axes when nullopt
  Tensor unsqueeze(int64_t axis) const;

  // Copies.
  Tensor contiguous() const;  // self when already contiguous
  Tensor clone() const;       // always a new contiguous tensor
  Tensor astype(DType dtype) const;  // always a copy (numpy astype semantics, C casts)
  // src broadcast to self's shape, cast to self's dtype; ValueError when self is not writeable.
  void copy_from(const Tensor& src);

 private:
  // A view of the same storage, as writeable as this tensor.
  Tensor view(Shape shape, Strides strides, int64_t offset) const;

  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  bool writeable_ = true;
  std::shared_ptr<AutogradMeta> autograd_;
};

// Helpers shared by the engines and the bindings.
int64_t normalize_axis(int64_t axis, int64_t ndim);  // throws AxisError
Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws ValueError naming both shapes
using ShapeRefs = SmallVector<const Shape*, 4>;  // a pointwise op's inputs fit inline
Shape broadcast_shapes(const ShapeRefs& shapes);  // throws ValueError naming all shapes
Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 3)"
// Whether the bytes two views span intersect (numpy's may_share_memory): a write to one
// may change what the other reads. Also true for two tensors made separately over one buffer.
bool may_overlap(const Tensor& a, const Tensor& b);

}  // namespace ts
