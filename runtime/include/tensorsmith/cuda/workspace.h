// Scratch device memory for the launches of one op call (the split reduction's
// partials), from the caching device allocator. Freed memory goes back to the
// cache while the launches may still be queued: safe because every op of a
// device runs on its one current stream, so a later user of the block is
// ordered after them.
#pragma once

#include <cstddef>
#include <memory>

namespace ts {
class Storage;
}

namespace ts::cuda {

class Workspace {
 public:
  Workspace(size_t nbytes, int device);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return data_; }

 private:
  std::shared_ptr<Storage> storage_;
  void* data_;
};

}  // namespace ts::cuda
