#include "tensorsmith/cuda/workspace.h"

#include "tensorsmith/tensor.h"

namespace ts::cuda {

Workspace::Workspace(size_t nbytes, int device)
    : storage_(Storage::allocate(nbytes, Device{DeviceType::CUDA, device})), data_(storage_->data()) {}

Workspace::~Workspace() = default;

}  // namespace ts::cuda
