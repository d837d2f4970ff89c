// Copies involving CUDA tensors (tensorsmith/cuda/copy.h): host <-> device through
// a contiguous staging tensor and cudaMemcpyAsync on the current stream; on one
// device, the strided cast kernel (copy.cu); between devices, a peer copy.
#include "tensorsmith/cuda/copy.h"

#include <cuda_runtime_api.h>

#include "copy_kernel.h"
#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"
#include "tensorsmith/errors.h"

namespace ts::cuda {

namespace {

size_t byte_size(const Tensor& t) { return static_cast<size_t>(t.numel()) * t.itemsize(); }

// dst's index space with size-1 axes dropped and adjacent axes merged where
// both tensors step through them as one (byte strides).
CopyLayout layout_of(const Tensor& dst, const Tensor& src) {
  CopyLayout layout;
  int64_t shape[64], out[64], in[64];  // scratch for merging, before the kernel's limit applies
  const int64_t item_out = static_cast<int64_t>(dst.itemsize()), item_in = static_cast<int64_t>(src.itemsize());
  int n = 0;
  for (int64_t d = 0; d < dst.ndim(); ++d) {
    const int64_t size = dst.shape()[d];
    if (size == 1) continue;
    const int64_t so = dst.strides()[d] * item_out, si = src.strides()[d] * item_in;
    if (n > 0 && out[n - 1] == so * size && in[n - 1] == si * size) {
      shape[n - 1] *= size;  // the previous axis steps over this one exactly: merge
      out[n - 1] = so;
      in[n - 1] = si;
      continue;
    }
    TS_CHECK(n < 64, NotImplementedError, "CUDA copy: tensors of more than 64 dimensions are not supported");
    shape[n] = size;
    out[n] = so;
    in[n] = si;
    ++n;
  }
  TS_CHECK(n <= kMaxCopyDims, NotImplementedError,
           "CUDA copy: a layout of " << n << " non-mergeable dimensions is more than the copy kernel's "
                                     << kMaxCopyDims);
  layout.ndim = n;
  for (int i = 0; i < n; ++i) {
    layout.shape[i] = shape[i];
    layout.out_strides[i] = out[i];
    layout.in_strides[i] = in[i];
  }
  return layout;
}

// Both on one CUDA device, src already of dst's shape.
void device_copy(const Tensor& dst, const Tensor& src) {
  const int device = dst.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    TS_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), byte_size(dst), cudaMemcpyDeviceToDevice, stream),
                  "copy (cudaMemcpyAsync device to device)");
    return;
  }
  const CopyLayout layout = layout_of(dst, src);
  launch_cast_copy(dst.dtype(), src.dtype(), dst.data_ptr(), src.data_ptr(), dst.numel(), layout, stream, "copy");
}

// src (of dst's shape) as a contiguous tensor of dst's dtype on src's device.
Tensor staged(const Tensor& src, DType dtype) {
  return src.dtype() == dtype && src.is_contiguous() ? src : src.astype(dtype);
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  // A source sharing memory with the destination could be overwritten before
  // it is read; copy it out first.
  const Tensor from = (src.storage() == dst.storage() ? src.clone() : src).expand(dst.shape());
  if (dst.numel() == 0) return;
  const Device to = dst.device(), at = from.device();

  if (to == at) {
    device_copy(dst, from);
  } else if (at.type == DeviceType::CPU) {  // host to device
    const Tensor host = staged(from, dst.dtype());
    const Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), to);
    DeviceGuard guard(to.index);
    // From pageable memory the call returns once the host data is staged by the
    // driver, so `host` may die on return.
    TS_CUDA_CHECK(cudaMemcpyAsync(target.data_ptr(), host.data_ptr(), byte_size(dst), cudaMemcpyHostToDevice,
                                  current_stream(to.index)),
                  "copy (cudaMemcpyAsync host to device)");
    if (!dst.is_contiguous()) device_copy(dst, target);
  } else if (to.type == DeviceType::CPU) {  // device to host: complete on return
    const Tensor device = staged(from, dst.dtype());
    const Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), to);
    DeviceGuard guard(at.index);
    cudaStream_t stream = current_stream(at.index);
    TS_CUDA_CHECK(cudaMemcpyAsync(target.data_ptr(), device.data_ptr(), byte_size(dst), cudaMemcpyDeviceToHost, stream),
                  "copy (cudaMemcpyAsync device to host)");
    TS_CUDA_CHECK(cudaStreamSynchronize(stream), "copy (cudaStreamSynchronize)");
    if (!dst.is_contiguous()) Tensor(dst).copy_from(target);  // on the host
  } else {  // between two CUDA devices
    const Tensor source = staged(from, dst.dtype());
    TS_CUDA_CHECK(cudaStreamSynchronize(current_stream(at.index)), "copy (cudaStreamSynchronize)");
    const Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), to);
    DeviceGuard guard(to.index);
    cudaStream_t stream = current_stream(to.index);
    TS_CUDA_CHECK(cudaMemcpyPeerAsync(target.data_ptr(), to.index, source.data_ptr(), at.index, byte_size(dst), stream),
                  "copy (cudaMemcpyPeerAsync)");
    // `source` returns to the other device's pool on return, where only that
    // device's stream orders its reuse: wait for the copy to have read it.
    TS_CUDA_CHECK(cudaStreamSynchronize(stream), "copy (cudaStreamSynchronize)");
    if (!dst.is_contiguous()) device_copy(dst, target);
  }
}

}  // namespace ts::cuda
