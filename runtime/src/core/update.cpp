// The update engine (an optimizer's step): the op's state tensors (the parameter, then its moments) updated in
// place, element by element, from a gradient and the op's float arguments.
#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

using limits::kPointwiseGrain;

void update(const OpDef& op, const std::vector<Tensor>& operands, const std::vector<double>& scalars) {
  TS_CHECK(operands.size() == static_cast<size_t>(op.arity), TypeError,
           op.name << " takes " << op.arity << " tensors, got " << operands.size());
  TS_CHECK(scalars.size() == op.scalars.size(), TypeError,
           op.name << " takes " << op.scalars.size() << " scalar arguments, got " << scalars.size());
  const Device device = common_device(op, operands);
  const int states = op.arity - 1;
  const Tensor& param = operands[0];
  DTypes dtypes;
  for (const Tensor& t : operands) dtypes.push_back(t.dtype());
  const DType dtype = kernel_dtype(op, dtypes);  // raises for a dtype the op has no kernel for
  for (size_t k = 0; k < operands.size(); ++k) {
    const Tensor& t = operands[k];
    TS_CHECK(t.shape() == param.shape(), ValueError,
             op.name << ": every tensor must have the parameter's shape " << shape_str(param.shape()) << ", tensor "
                     << k << " has " << shape_str(t.shape()));
    // One dtype for all (the state is written back in its own), and no state in another operand's memory.
    TS_CHECK(t.dtype() == param.dtype(), TypeError,
             op.name << ": every tensor must have the parameter's dtype " << dtype_name(param.dtype()) << ", tensor "
                     << k << " is " << dtype_name(t.dtype()));
    if (static_cast<int>(k) >= states) continue;
    TS_CHECK(t.writeable(), ValueError, op.name << ": state tensor " << k << " is a read-only (broadcast) view");
    for (size_t j = 0; j < operands.size(); ++j) {
      TS_CHECK(j == k || t.numel() == 0 || !may_overlap(t, operands[j]), ValueError,
               op.name << ": state tensor " << k << " shares memory with tensor " << j);
    }
  }
  const int64_t n = param.numel();
  if (n == 0) return;
  // The kernel takes one block per tensor: a state that is a strided view is updated through a contiguous copy,
  // written back after.
  std::vector<Tensor> blocks;
  for (const Tensor& t : operands) blocks.push_back(t.contiguous());
  const auto kernel = reinterpret_cast<UpdateKernel>(op.kernel(device.type, dtype));
  // The kernel's arguments for elements [begin, begin + count).
  const auto part = [&](int64_t begin, int64_t count) {
    UpdateArgs args{};
    const int64_t at = begin * static_cast<int64_t>(param.itemsize());
    for (int k = 0; k <= states; ++k) args.data[k] = blocks[k].data_ptr() + at;
    args.states = states;
    args.n = count;
    for (size_t s = 0; s < scalars.size(); ++s) args.scalars[s] = scalars[s];
    args.device = device.index;
    return args;
  };
  if (device.type == DeviceType::CUDA) {
    kernel(part(0, n));
  } else {
    // Elements are independent: blocks of them in parallel give exactly the serial result.
    parallel_for(n, kPointwiseGrain, [&](int64_t begin, int64_t end) { kernel(part(begin, end - begin)); });
  }
  for (int k = 0; k < states; ++k) {
    if (blocks[k].data_ptr() != operands[k].data_ptr()) Tensor(operands[k]).copy_from(blocks[k]);
  }
}

}  // namespace ts
