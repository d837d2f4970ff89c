// Tensors over memory owned by someone else (numpy arrays, DLPack producers).
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace ts::python {

std::shared_ptr<void> keep_alive(py::object obj) {
  return std::shared_ptr<void>(obj.release().ptr(), [](void* p) {
    if (!Py_IsInitialized()) return;  // at interpreter exit there is nothing left to release into
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

Tensor wrap_foreign_memory(char* origin, DType dtype, Shape shape, Strides strides, std::shared_ptr<void> owner,
                           Device device) {
  // Storage covers exactly the elements' extent, which may lie before `origin`
  // when strides are negative.
  int64_t lo = 0, hi = 1;  // in elements, relative to origin
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      lo = hi = 0;
      break;
    }
    (strides[i] < 0 ? lo : hi) += (shape[i] - 1) * strides[i];
  }
  const auto item = static_cast<int64_t>(itemsize(dtype));
  auto storage = std::make_shared<Storage>(origin + lo * item, static_cast<size_t>((hi - lo) * item), device,
                                           std::move(owner));
  return Tensor(std::move(storage), dtype, std::move(shape), std::move(strides), -lo);
}

}  // namespace ts::python
