// The engines as the bindings call them: the arguments are converted to tensors first, with the GIL, and
// the engine then runs without it when its inputs are large enough for another Python thread to gain
// (a data loader, a server). The engines touch no Python object, so results are the same either way.
#include "bindings.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/python.h"

namespace ts::python {

Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims) {
  return without_gil_if_large(x.numel(), [&] { return ts::reduce(op, x, axes, keepdims); });
}

Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  return without_gil_if_large(x.numel(), [&] { return ts::index_reduce(op, x, axis, keepdims); });
}

Tensor normalize(const OpDef& op, const Tensor& x, int64_t axis) {
  return without_gil_if_large(x.numel(), [&] { return ts::normalize(op, x, axis); });
}

Tensor contract(const OpDef& op, const Tensor& a, const Tensor& b) {
  return without_gil_if_large(a.numel() + b.numel(), [&] { return ts::contract(op, a, b); });
}

Tensor scan(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool include_initial) {
  return without_gil_if_large(x.numel(), [&] { return ts::scan(op, x, axis, include_initial); });
}

Tensor sort(const OpDef& op, const Tensor& x, int64_t axis, bool descending, bool /*stable*/) {
  return without_gil_if_large(x.numel(), [&] { return ts::sort(op, x, axis, descending); });
}

}  // namespace ts::python
