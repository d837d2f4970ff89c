// Reduction engines: the input is viewed as a 2-D (kept, reduced) tensor and
// the kernel folds each row.
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"

namespace ts {

namespace {

std::vector<bool> reduced_axes(const std::optional<std::vector<int64_t>>& axes, int64_t ndim) {
  if (!axes) return std::vector<bool>(ndim, true);
  std::vector<bool> reduced(ndim, false);
  for (int64_t a : *axes) {
    a = normalize_axis(a, ndim);
    TS_CHECK(!reduced[a], ValueError, "duplicate value in 'axis'");
    reduced[a] = true;
  }
  return reduced;
}

// Runs `kernel` on x with the reduced axes moved last, as an (n_outer, n_reduce)
// matrix: a view when the kept and the reduced axes each merge into one axis,
// else a contiguous copy. Writes n_outer results to the contiguous `out`.
void run_reduce(ReduceKernel kernel, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  std::vector<int64_t> perm;
  int64_t n_outer = 1, n_reduce = 1;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (!reduced[i]) {
      perm.push_back(i);
      n_outer *= x.shape()[i];
    }
  }
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (reduced[i]) {
      perm.push_back(i);
      n_reduce *= x.shape()[i];
    }
  }
  if (n_outer == 0) return;
  const Tensor m = x.permute(perm).reshape({n_outer, n_reduce});
  const auto item = static_cast<int64_t>(m.itemsize());
  kernel(ReduceArgs{out.data_ptr(), m.data_ptr(), n_outer, n_reduce, static_cast<int64_t>(out.itemsize()),
                    m.strides()[0] * item, m.strides()[1] * item});
}

}  // namespace

Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims) {
  const std::vector<bool> reduced = reduced_axes(axes, x.ndim());
  const auto kernel = reinterpret_cast<ReduceKernel>(op.kernel(x.device().type, kernel_dtype(op, {x.dtype()})));
  Shape out_shape;
  bool empty_reduction = false;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    empty_reduction = empty_reduction || (reduced[i] && x.shape()[i] == 0);
    if (!reduced[i] || keepdims) out_shape.push_back(reduced[i] ? 1 : x.shape()[i]);
  }
  // NumPy raises even when the result is empty too.
  TS_CHECK(!empty_reduction || op.has_identity, ValueError,
           "zero-size array to reduction operation " << op.name << " which has no identity");
  Tensor out = Tensor::empty(out_shape, result_dtype(op, {x.dtype()}), x.device());
  run_reduce(kernel, x, reduced, out);
  return out;
}

Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  if (!axis) {
    // NumPy reduces the flattened tensor; keepdims then keeps every axis as 1.
    const Tensor flat = index_reduce(op, x.reshape({-1}), 0, false);
    return keepdims ? flat.reshape(Shape(x.ndim(), 1)) : flat;
  }
  if (x.ndim() == 0) {
    // NumPy treats a 0-d tensor as one element along axis 0 (or -1); the result stays 0-d.
    normalize_axis(*axis, 1);
    return index_reduce(op, x.reshape({1}), 0, false);
  }
  const auto kernel = reinterpret_cast<ReduceKernel>(op.kernel(x.device().type, kernel_dtype(op, {x.dtype()})));
  const int64_t ax = normalize_axis(*axis, x.ndim());
  TS_CHECK(x.shape()[ax] > 0, ValueError, "attempt to get " << op.name << " of an empty sequence");
  std::vector<bool> reduced(x.ndim(), false);
  reduced[ax] = true;
  Shape out_shape = x.shape();
  if (keepdims) {
    out_shape[ax] = 1;
  } else {
    out_shape.erase(out_shape.begin() + ax);
  }
  Tensor out = Tensor::empty(out_shape, result_dtype(op, {x.dtype()}), x.device());
  run_reduce(kernel, x, reduced, out);
  return out;
}

}  // namespace ts
