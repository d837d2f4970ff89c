// The scan engine (cumulative_sum, cumulative_prod): the input, made contiguous, is viewed as
// (batch, scan, inner) around the scanned axis and the result is allocated contiguous in the same layout,
// so a kernel sees rows (inner == 1) or a tile of adjacent columns scanned side by side (inner > 1).
#include <algorithm>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

using limits::kScanGrain;
using limits::kScanTile;

namespace {

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// Splits the (batch, inner) positions over threads: each call scans whole rows, so results do not depend
// on the number of threads. Inner extents wider than kScanTile are cut into tiles.
void scan_parallel(ScanKernel kernel, const ScanArgs& whole) {
  const int64_t tiles = (whole.n_inner + kScanTile - 1) / kScanTile;
  const int64_t tile_width = std::min(whole.n_inner, kScanTile);
  const int64_t work_per_task = std::max<int64_t>(1, whole.n_scan * tile_width);
  const int64_t grain = std::max<int64_t>(1, kScanGrain / work_per_task);
  if (whole.n_inner == 1) {  // rows: blocks of whole rows
    parallel_for(whole.n_batch, grain, [&](int64_t begin, int64_t end) {
      ScanArgs part = whole;
      part.out += begin * whole.out_batch_stride;
      part.in += begin * whole.in_batch_stride;
      part.n_batch = end - begin;
      kernel(part);
    });
    return;
  }
  parallel_for(whole.n_batch * tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / tiles, first = (task % tiles) * kScanTile;
      ScanArgs part = whole;
      part.out += b * whole.out_batch_stride + first * whole.out_inner_stride;
      part.in += b * whole.in_batch_stride + first * whole.in_inner_stride;
      part.n_batch = 1;
      part.n_inner = std::min(kScanTile, whole.n_inner - first);
      kernel(part);
    }
  });
}

}  // namespace

Tensor scan(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool include_initial) {
  if (x.ndim() == 0) {
    // numpy scans a 0-d tensor as one element along axis 0 (or -1).
    if (axis) normalize_axis(*axis, 1);
    return scan(op, x.reshape({1}), 0, include_initial);
  }
  TS_CHECK(axis || x.ndim() == 1, ValueError, "For arrays which have more than one dimension ``axis`` argument is required.");
  const int64_t ax = axis ? normalize_axis(*axis, x.ndim()) : 0;
  const DType dtype = kernel_dtype(op, {x.dtype()});
  const auto kernel = reinterpret_cast<ScanKernel>(op.kernel(x.device().type, dtype));
  Shape out_shape = x.shape();
  out_shape[ax] += include_initial ? 1 : 0;
  Tensor out = Tensor::empty(out_shape, result_dtype(op, {x.dtype()}), x.device());
  if (out.numel() == 0) return out;

  const Tensor in = x.dtype() == dtype ? x.contiguous() : x.astype(dtype);
  const auto axis_index = static_cast<size_t>(ax);
  const int64_t n_inner = product(x.shape(), axis_index + 1, x.shape().size());
  const int64_t n_scan = x.shape()[ax];
  const auto in_item = static_cast<int64_t>(in.itemsize()), out_item = static_cast<int64_t>(out.itemsize());
  const ScanArgs args{out.data_ptr(),
                      in.data_ptr(),
                      product(x.shape(), 0, axis_index),
                      n_scan,
                      n_inner,
                      out_shape[ax] * n_inner * out_item,
                      n_inner * out_item,
                      out_item,
                      n_scan * n_inner * in_item,
                      n_inner * in_item,
                      in_item,
                      include_initial,
                      x.device().index};
  if (x.device().type == DeviceType::CUDA) {
    kernel(args);  // one launch: the kernel spreads rows and columns over the device itself
  } else {
    scan_parallel(kernel, args);
  }
  return out;
}

}  // namespace ts
