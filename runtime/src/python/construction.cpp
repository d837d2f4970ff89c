// One-step construction for the bound classes. pybind11 lets Python allocate an
// instance without running any constructor (Cls.__new__(Cls), or
// pybind11_object.__new__(Cls)), and every method then reads uninitialised
// memory. Here a class's __new__ either returns a complete object or raises.
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

namespace {

PyTypeObject* type_of(py::handle cls) {
  if (!PyType_Check(cls.ptr())) throw std::logic_error("construction: not a class");
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // A Python subclass would inherit the slots below but be built as its base; the classes are final.
  if ((type->tp_flags & Py_TPFLAGS_BASETYPE) != 0) throw std::logic_error("construction: the class must be final");
  return type;
}

// tp_new: calls the class's own __new__ (installed below). CPython's slot_tp_new
// does the same, but being a distinct function this one also makes CPython refuse
// pybind11_object.__new__(Cls) ("not safe"), which would allocate an empty instance.
extern "C" PyObject* call_own_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* fn = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__new__");
  if (fn == nullptr) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* full = PyTuple_New(n + 1);
  if (full == nullptr) {
    Py_DECREF(fn);
    return nullptr;
  }
  Py_INCREF(type);
  PyTuple_SET_ITEM(full, 0, reinterpret_cast<PyObject*>(type));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(args, i);
    Py_INCREF(item);
    PyTuple_SET_ITEM(full, i + 1, item);
  }
  PyObject* result = PyObject_Call(fn, full, kwargs);
  Py_DECREF(full);
  Py_DECREF(fn);
  return result;
}

// tp_init after a __new__ that built the whole object: nothing left to do.
extern "C" int already_initialised(PyObject*, PyObject*, PyObject*) { return 0; }

void install_new(py::handle cls, const py::cpp_function& fn) {
  PyTypeObject* type = type_of(cls);
  cls.attr("__new__") = py::staticmethod(fn);  // also points tp_new at CPython's slot_tp_new...
  type->tp_new = &call_own_new;                // ...which this replaces (see call_own_new)
}

}  // namespace

void forbid_construction(py::handle cls, const char* how) {
  const std::string message = std::string(py::str(cls.attr("__name__"))) + " objects cannot be created directly; " + how;
  install_new(cls, py::cpp_function([message](const py::args&, const py::kwargs&) -> py::object {
                throw ts::TypeError(message);
              },
              py::name("__new__")));
}

void construct_in_new(py::handle cls, const py::cpp_function& factory) {
  install_new(cls, factory);
  type_of(cls)->tp_init = &already_initialised;
}

}  // namespace ts::python
