// Array API creation functions: new tensors filled with a value (or left uninitialised). Their
// bindings, stubs and differential tests come from their specs (specs/*.yaml with `implementation:`).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

bool is_python_scalar(py::handle obj) {
  return PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr());
}

std::optional<DType> optional_dtype_arg(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return dtype_arg(obj);
}

// A tensor of `shape` on `device` holding `value` everywhere: numpy's full, whose value converts as
// np.asarray(value, dtype) does (its default dtype: bool, int64 or float64 from the value's type).
Tensor filled(const Shape& shape, py::handle value, std::optional<DType> dtype, Device device) {
  TS_CHECK(is_python_scalar(value), TypeError,
           "fill_value must be a Python bool, int or float, not " << type_name(value)
                                                                   << (PyComplex_Check(value.ptr()) ? " (no complex dtypes yet)" : ""));
  const Tensor scalar = asarray(value, dtype);
  Tensor out = Tensor::empty(shape, scalar.dtype(), device);
  out.copy_from(scalar);  // broadcast from the 0-d host tensor, onto any device
  return out;
}

}  // namespace

Tensor empty(py::handle shape, py::handle dtype, py::handle device) {
  return Tensor::empty(int_sequence_arg(shape, "shape"), optional_dtype_arg(dtype).value_or(DType::Float64),
                       device_arg(device));
}

Tensor zeros(py::handle shape, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), py::int_(0), optional_dtype_arg(dtype).value_or(DType::Float64),
                device_arg(device));
}

Tensor ones(py::handle shape, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), py::int_(1), optional_dtype_arg(dtype).value_or(DType::Float64),
                device_arg(device));
}

Tensor full(py::handle shape, py::handle fill_value, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), fill_value, optional_dtype_arg(dtype), device_arg(device));
}

// The *_like functions: x's shape, and x's dtype and device unless given.
Tensor empty_like(const Tensor& x, py::handle dtype, py::handle device) {
  return Tensor::empty(x.shape(), optional_dtype_arg(dtype).value_or(x.dtype()),
                       device.is_none() ? x.device() : device_arg(device));
}

Tensor zeros_like(const Tensor& x, py::handle dtype, py::handle device) {
  return filled(x.shape(), py::int_(0), optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

Tensor ones_like(const Tensor& x, py::handle dtype, py::handle device) {
  return filled(x.shape(), py::int_(1), optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

Tensor full_like(const Tensor& x, py::handle fill_value, py::handle dtype, py::handle device) {
  return filled(x.shape(), fill_value, optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

}  // namespace ts::python
