// The normalization engine (softmax family): rows along one axis.
#include <algorithm>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

using limits::kRowGrain;

Tensor normalize(const OpDef& op, const Tensor& x, int64_t axis) {
  if (x.ndim() == 0) {
    // A scalar is one row of one element (softmax of a scalar is 1).
    return normalize(op, x.reshape({1}), axis).reshape({});
  }
  const DType dtype = kernel_dtype(op, {x.dtype()});
  const auto kernel = reinterpret_cast<RowKernel>(op.kernel(x.device().type, dtype));
  axis = normalize_axis(axis, x.ndim());

  // Move the axis last so that rows are contiguous, then move it back.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != axis) perm.push_back(i);
  }
  perm.push_back(axis);
  const Tensor moved = x.permute(perm);
  const Tensor in = moved.dtype() == dtype ? moved.contiguous() : moved.astype(dtype);
  const Tensor out = Tensor::empty(in.shape(), dtype, x.device());
  const int64_t cols = x.shape()[axis];
  if (out.numel() > 0 && x.device().type == DeviceType::CUDA) {
    kernel(RowArgs{out.data_ptr(), in.data_ptr(), out.numel() / cols, cols, x.device().index});
  } else if (out.numel() > 0) {
    // Rows are independent: blocks of rows in parallel give exactly the serial result.
    const int64_t row_bytes = cols * static_cast<int64_t>(out.itemsize());
    parallel_for(out.numel() / cols, std::max<int64_t>(1, kRowGrain / cols), [&](int64_t begin, int64_t end) {
      kernel(RowArgs{out.data_ptr() + begin * row_bytes, in.data_ptr() + begin * row_bytes, end - begin, cols});
    });
  }

  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return out.permute(inverse);
}

}  // namespace ts
