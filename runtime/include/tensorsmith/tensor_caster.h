// How pybind11 converts a ts::Tensor a binding returns (or py::cast is given) into a Python object: through
// ts::python::tensor_object (runtime/src/python/tensor_objects.cpp), which skips pybind11's search for an existing
// object and its registration of the new one. Casts from Python, and casts by pointer or under a reference policy,
// stay pybind11's.
//
// A specialization must be seen by every translation unit that converts the type: autograd.h, python.h and the
// hand-written bindings' bindings.h include this header, and they are the only ways Tensors meet pybind11.
#pragma once

#include <utility>

#include <pybind11/pybind11.h>

#include "tensorsmith/tensor.h"

namespace ts::python {

// A new Python Tensor holding `t`, as py::cast makes it but without looking for an existing object and, where
// the class's layout allows (checked once), unregistered (tensor_objects.cpp says what that changes).
pybind11::object tensor_object(Tensor t);

}  // namespace ts::python

namespace pybind11::detail {

template <>
class type_caster<ts::Tensor> : public type_caster_base<ts::Tensor> {
 public:
  using type_caster_base<ts::Tensor>::cast;

  static handle cast(ts::Tensor&& src, return_value_policy, handle) {
    return ts::python::tensor_object(std::move(src)).release();
  }

  // A new object under every policy that copies or moves (a copy shares the storage, as a move would), even for
  // the Tensor inside an existing object: tensor_object's objects are not registered, so none would be found.
  static handle cast(const ts::Tensor& src, return_value_policy policy, handle parent) {
    switch (policy) {
      case return_value_policy::automatic:
      case return_value_policy::automatic_reference:
      case return_value_policy::copy:
      case return_value_policy::move:
        return ts::python::tensor_object(src).release();
      default:
        return type_caster_base<ts::Tensor>::cast(src, policy, parent);
    }
  }
};

}  // namespace pybind11::detail
