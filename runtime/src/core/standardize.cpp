// The standardization engine (layer norm's rows): each row along the last axis on its own, as the map
// (x - mean) / sqrt(var + eps) or, given gradient rows g of the same shape, its vector-Jacobian product.
#include <algorithm>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

using limits::kRowGrain;

Tensor standardize(const OpDef& op, const std::vector<Tensor>& inputs, double eps) {
  TS_CHECK(inputs.size() == static_cast<size_t>(op.arity), TypeError,
           op.name << " takes " << op.arity << " tensor inputs, got " << inputs.size());
  const Device device = common_device(op, inputs);
  DTypes dtypes;
  for (const Tensor& t : inputs) {
    TS_CHECK(t.shape() == inputs[0].shape(), ValueError,
             op.name << ": the inputs must have one shape, got " << shape_str(inputs[0].shape()) << " and "
                     << shape_str(t.shape()));
    dtypes.push_back(t.dtype());
  }
  const DType dtype = kernel_dtype(op, dtypes);
  const auto kernel = reinterpret_cast<StandardizeKernel>(op.kernel(device.type, dtype));
  // Rows along the last axis, contiguous and in the kernel's dtype; a scalar is one row of one element.
  std::vector<Tensor> rows;
  for (const Tensor& t : inputs) {
    const Tensor in = t.ndim() == 0 ? t.reshape({1}) : t;
    rows.push_back(in.dtype() == dtype ? in.contiguous() : in.astype(dtype));
  }
  const Tensor& x = rows.back();  // (g, x) or (x)
  const Tensor* g = rows.size() == 2 ? &rows[0] : nullptr;
  const Tensor out = Tensor::empty(x.shape(), dtype, device);
  const int64_t cols = x.shape().back();
  if (out.numel() > 0 && device.type == DeviceType::CUDA) {
    kernel(StandardizeArgs{out.data_ptr(), x.data_ptr(), g ? g->data_ptr() : nullptr, out.numel() / cols, cols, eps,
                           device.index});
  } else if (out.numel() > 0) {
    // Rows are independent: blocks of rows in parallel give exactly the serial result.
    const int64_t row_bytes = cols * static_cast<int64_t>(out.itemsize());
    parallel_for(out.numel() / cols, std::max<int64_t>(1, kRowGrain / cols), [&](int64_t begin, int64_t end) {
      const int64_t at = begin * row_bytes;
      kernel(StandardizeArgs{out.data_ptr() + at, x.data_ptr() + at, g ? g->data_ptr() + at : nullptr, end - begin,
                             cols, eps});
    });
  }
  return inputs[0].ndim() == 0 ? out.reshape({}) : out;
}

}  // namespace ts
