// Python DType objects (ts.float32, ...), ts.dtype(), and the mapping to and
// from numpy dtypes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

// numpy's kind character for a dtype's elements ('V' for bfloat16, ml_dtypes' void-kind dtype).
static char numpy_kind(DType d) {
  if (is_bool(d)) return 'b';
  if (is_signed_integer(d)) return 'i';
  if (is_unsigned_integer(d)) return 'u';
  if (is_complex(d)) return 'c';
  return d == DType::BFloat16 ? 'V' : 'f';
}

DType dtype_from_numpy(const py::dtype& dt) {
  // By kind and size, read from the descriptor (its name, a Python string, took most of asarray's time); of the
  // void kind only ml_dtypes' bfloat16.
  const char kind = dt.kind();
  const auto size = static_cast<size_t>(dt.itemsize());
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    if (numpy_kind(d) != kind || itemsize(d) != size) continue;
    if (kind != 'V' || std::string(py::str(dt.attr("name"))) == "bfloat16") return d;
  }
  throw ts::TypeError("numpy dtype '" + std::string(py::str(dt)) + "' is not supported by tensorsmith");
}

py::dtype numpy_dtype(DType dtype) {
  // numpy knows "bfloat16" only through ml_dtypes, imported here on first use (not by `import tensorsmith`:
  // importing it takes about 0.6 s).
  if (dtype == DType::BFloat16) return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  return py::dtype(dtype_name(dtype));
}

DType dtype_arg(py::handle obj) {
  if (py::isinstance<DType>(obj)) return obj.cast<DType>();
  if (obj.is_none()) throw ts::TypeError("dtype must be a tensorsmith dtype, a numpy dtype or a dtype name, not None");
  // numpy parses names, scalar types and dtypes alike ("float32", np.float32, float);
  // "bfloat16" needs ml_dtypes' type.
  if (py::isinstance<py::str>(obj) && obj.cast<std::string>() == "bfloat16") return DType::BFloat16;
  return dtype_from_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(obj)));
}

// The one Python object of each dtype (ts.float32 is t.dtype): reading a tensor's dtype makes no new object, and
// `is` compares them, as numpy's builtin dtypes.
static py::object* dtype_objects[kNumDTypes];

py::object dtype_object(DType d) { return *dtype_objects[static_cast<int>(d)]; }

void bind_dtypes(py::module_& m) {
  py::class_<DType> cls(m, "DType", py::is_final(),
                        "A tensor element type, e.g. ts.float32; DType(x) takes whatever ts.dtype() takes.");
  construct_in_new(cls, py::cpp_function([](py::handle, py::handle dtype) { return dtype_arg(dtype); },
                                         py::name("__new__"), py::arg("cls"), py::arg("dtype"), py::pos_only()));
  cls.def_property_readonly("name", [](DType d) { return dtype_name(d); })
      .def_property_readonly("itemsize", [](DType d) { return itemsize(d); }, "Size of one element in bytes.")
      .def("__repr__", [](DType d) { return std::string("ts.") + dtype_name(d); })
      .def("__str__", [](DType d) { return dtype_name(d); })
      .def("__eq__",
           [](py::handle self, py::handle other) -> py::object {  // one overload: pybind11 tries each in turn
             if (self.is(other)) return py::bool_(true);             // the usual case: both are the one object
             if (!py::isinstance<DType>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(self.cast<DType>() == other.cast<DType>());
           })
      .def("__hash__", [](DType d) { return static_cast<Py_hash_t>(d) + 7919; })  // never -1, Python's error value
      // DType(name) again: pybind11's py::pickle would need an instance made by __new__ alone.
      .def("__reduce__", [](py::object self) {
        return py::make_tuple(py::type::of(self), py::make_tuple(dtype_name(self.cast<DType>())));
      });

  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    dtype_objects[i] = new py::object(py::cast(d));  // never destroyed: it would outlive the interpreter
    m.attr(dtype_name(d)) = *dtype_objects[i];
  }

  m.def("dtype", &dtype_arg, py::arg("dtype"),
        "The tensorsmith dtype for a DType, a numpy dtype, a numpy scalar type or a dtype name.");
  m.def("promote_types", &promote_types, py::arg("type1"), py::arg("type2"), py::pos_only(),
        "The dtype two tensors of these dtypes promote to (numpy.promote_types; bfloat16 as ml_dtypes').");
}

}  // namespace ts::python
