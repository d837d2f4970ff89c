// Python Tensor objects made and destroyed without pybind11's per-instance bookkeeping.
//
// pybind11 registers each instance it makes in a map from the C++ pointer to the Python object (so that casting
// a reference it already wraps gives that object back), and making or destroying one it looks the type's records
// up in hash maps, saves and restores the error state and walks the layout generically: of a 4-element op's
// 340 ns that was about 90. Every binding returns tensors by value, so a tensor made here is laid out as py::cast
// lays it out (pybind11's simple layout, the Tensor owned by its default unique_ptr holder) but left
// unregistered, and the type's tp_dealloc frees such an object itself. The one thing lost: py::cast(t) of the
// Tensor inside an object makes a new object sharing it rather than giving that one back, so C++ code that needs
// an argument's object must take the py::object, and keep any object it casts alive while it holds a handle.
// Anything else (an object pybind11 made and registered, one with weak references or kept-alive patients, one
// freed while an exception is set) goes to pybind11's own tp_dealloc, which handles both kinds.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

namespace {

using Holder = std::unique_ptr<Tensor>;
static_assert(std::is_same_v<py::class_<Tensor>::holder_type, Holder>, "tensor_object builds this holder");

const py::detail::type_info& tensor_type_info() {
  static const py::detail::type_info* info = py::detail::get_type_info(typeid(Tensor));
  return *info;
}

// Set once the type's layout was checked and its tp_dealloc replaced (install_tensor_objects).
bool direct = false;
destructor pybind11_dealloc = nullptr;

Holder& holder_of(py::detail::instance* inst) {
  return *std::launder(reinterpret_cast<Holder*>(&inst->simple_value_holder[1]));
}

void tensor_dealloc(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  // pybind11's own dealloc saves a pending exception around the destructor; the rare object freed while one is
  // set goes there too.
  if (!inst->simple_layout || !inst->simple_holder_constructed || inst->simple_instance_registered ||
      inst->has_patients || inst->weakrefs != nullptr || PyErr_Occurred() != nullptr) {
    pybind11_dealloc(self);
    return;
  }
  holder_of(inst).~Holder();  // deletes the Tensor
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // a heap type's instances hold a reference to it
}

}  // namespace

const Tensor* exact_tensor(PyObject* obj) {
  if (Py_TYPE(obj) != tensor_type_info().type) return nullptr;
  return reinterpret_cast<py::detail::instance*>(obj)->get_value_and_holder().value_ptr<Tensor>();
}

py::object tensor_object(Tensor t) {
  const py::detail::type_info& info = tensor_type_info();
  if (!direct) {  // type_caster_generic::cast with the move policy, less its search of the registered instances
    py::object obj = py::reinterpret_steal<py::object>(py::detail::make_new_instance(info.type));
    auto* instance = reinterpret_cast<py::detail::instance*>(obj.ptr());
    instance->owned = true;
    instance->get_value_and_holder().value_ptr() = new Tensor(std::move(t));
    info.init_instance(instance, nullptr);
    return obj;
  }
  PyObject* obj = info.type->tp_alloc(info.type, 0);  // zero-filled: nothing constructed yet
  if (obj == nullptr) throw py::error_already_set();
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  inst->simple_layout = true;
  inst->owned = true;
  auto* value = new Tensor(std::move(t));
  inst->simple_value_holder[0] = value;
  new (&inst->simple_value_holder[1]) Holder(value);
  inst->simple_holder_constructed = true;
  return py::reinterpret_steal<py::object>(obj);
}

bool install_tensor_objects(py::handle cls) {
  const py::detail::type_info& info = tensor_type_info();
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  TS_CHECK(info.type == type && !direct, RuntimeError, "install_tensor_objects: called twice or on another class");
  // The layout written above is the one pybind11 chooses for the class; check that it does (a future pybind11 or
  // a change to the class would otherwise corrupt objects), and keep pybind11's path where it does not.
  const py::object probe = py::reinterpret_steal<py::object>(py::detail::make_new_instance(type));
  const bool simple = reinterpret_cast<py::detail::instance*>(probe.ptr())->simple_layout;
  if (!simple || info.holder_size_in_ptrs != sizeof(Holder) / sizeof(void*) || type->tp_dictoffset != 0 ||
      PyType_HasFeature(type, Py_TPFLAGS_HAVE_GC)) {
    return false;
  }
  pybind11_dealloc = type->tp_dealloc;
  type->tp_dealloc = &tensor_dealloc;
  direct = true;
  return true;
}

}  // namespace ts::python
