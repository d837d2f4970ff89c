// Array API manipulation functions that map onto the core's views. Their bindings, stubs and
// differential tests come from their specs (specs/*.yaml with `implementation:`).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

std::optional<bool> optional_bool_arg(py::handle obj, const char* what) {
  if (obj.is_none()) return std::nullopt;
  TS_CHECK(PyBool_Check(obj.ptr()), TypeError, what << " must be True, False or None, not " << type_name(obj));
  return obj.ptr() == Py_True;
}

}  // namespace

Tensor broadcast_to(const Tensor& x, py::handle shape) { return x.expand(int_sequence_arg(shape, "shape")); }

Tensor reshape(const Tensor& x, py::handle shape, py::handle copy_arg) {
  const Shape target = int_sequence_arg(shape, "shape");
  const std::optional<bool> copy = optional_bool_arg(copy_arg, "copy");
  Tensor out = x.reshape(target);
  const bool copied = out.storage() != x.storage();
  TS_CHECK(!(copied && copy == false), ValueError,
           "reshape(copy=False): this tensor of shape " << shape_str(x.shape()) << " cannot be viewed as shape "
                                                         << shape_str(target) << " (its strides require a copy)");
  return copy == true && !copied ? out.clone() : out;
}

Tensor permute_dims(const Tensor& x, py::handle axes) { return x.permute(int_sequence_arg(axes, "axes")); }

Tensor matrix_transpose(const Tensor& x) { return x.matrix_transpose(); }

Tensor expand_dims(const Tensor& x, py::handle axis) { return x.unsqueeze(int_arg(axis, "axis")); }

Tensor squeeze(const Tensor& x, py::handle axis) { return x.squeeze(int_sequence_arg(axis, "axis")); }

}  // namespace ts::python
