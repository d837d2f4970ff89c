// Array API manipulation functions that map onto the core's views.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

static Tensor reshape(const Tensor& x, py::handle shape, std::optional<bool> copy) {
  const Shape target = int_sequence_arg(shape, "shape");
  Tensor out = x.reshape(target);
  const bool copied = out.storage() != x.storage();
  TS_CHECK(!(copied && copy == false), ValueError,
           "reshape(copy=False): this tensor of shape " << shape_str(x.shape()) << " cannot be viewed as shape "
                                                         << shape_str(target) << " (its strides require a copy)");
  return copy == true && !copied ? out.clone() : out;
}

void bind_manipulation(py::module_& m) {
  m.def(
      "broadcast_to", [](const Tensor& x, py::handle shape) { return x.expand(int_sequence_arg(shape, "shape")); },
      py::arg("x"), py::pos_only(), py::arg("shape"), "A read-through view of x broadcast to `shape`.");
  m.def("reshape", &reshape, py::arg("x"), py::pos_only(), py::arg("shape"), py::kw_only(),
        py::arg("copy") = py::none(), "x with a new shape: a view when the strides allow, else a copy.");
  m.def(
      "permute_dims", [](const Tensor& x, py::handle axes) { return x.permute(int_sequence_arg(axes, "axes")); },
      py::arg("x"), py::pos_only(), py::arg("axes"));
  m.def("matrix_transpose", &Tensor::matrix_transpose, py::arg("x"), py::pos_only(), "Swap the last two axes.");
  m.def(
      "expand_dims", [](const Tensor& x, py::handle axis) { return x.unsqueeze(int_arg(axis, "axis")); },
      py::arg("x"), py::pos_only(), py::arg("axis") = 0);
  m.def(
      "squeeze", [](const Tensor& x, py::handle axis) { return x.squeeze(int_sequence_arg(axis, "axis")); },
      py::arg("x"), py::pos_only(), py::arg("axis"));
}

}  // namespace ts::python
