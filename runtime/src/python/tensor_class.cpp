// The Tensor class: metadata, views, copies, Python scalar conversions, repr
// and iteration. Indexing, numpy/DLPack interop and the generated ops add the rest.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <type_traits>

#include "bindings.h"
#include "tensorsmith/autograd.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

py::tuple int_tuple(const Shape& values) {
  py::tuple out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = py::int_(values[i]);
  return out;
}

std::vector<int64_t> ints_from_args(const py::args& args, const char* what) {
  return ints_from_arguments(&PyTuple_GET_ITEM(args.ptr(), 0), PyTuple_GET_SIZE(args.ptr()), what);
}

// The element of a one-element tensor as the Python scalar numpy's item() gives (callers check the size), read
// here by dtype: through a numpy view and its item() it took 0.4 us, most of `float(loss)`.
py::object only_element(const Tensor& t) {
  const Tensor host = t.device().type == DeviceType::CPU ? t : to_device(t, Device{});
  const char* p = host.data_ptr();  // the element itself (the data pointer includes the offset)
  return with_element_type(host.dtype(), [p](auto tag) -> py::object {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return py::bool_(*reinterpret_cast<const uint8_t*>(p) != 0);
    } else if constexpr (std::is_integral_v<T>) {
      return py::int_(*reinterpret_cast<const T*>(p));
    } else if constexpr (is_complex_v<T>) {
      const T v = *reinterpret_cast<const T*>(p);
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(v.re, v.im));
    } else if constexpr (std::is_floating_point_v<T>) {
      return py::float_(static_cast<double>(*reinterpret_cast<const T*>(p)));
    } else {  // float16, bfloat16: every value is a float's
      return py::float_(static_cast<double>(static_cast<float>(*reinterpret_cast<const T*>(p))));
    }
  });
}

// Mirrors numpy's array_repr: array2string plus the shape/dtype extras numpy
// shows when the printed values do not imply them.
std::string tensor_repr(const Tensor& t) {
  py::module_ np = py::module_::import("numpy");
  const py::dict options = np.attr("get_printoptions")();
  const std::string prefix = "tensor(";
  const std::string body = py::str(np.attr("array2string")(host_numpy(t), py::arg("separator") = ", ",
                                                           py::arg("prefix") = prefix, py::arg("suffix") = ")"));
  std::vector<std::string> extras;
  const int64_t size = t.numel();
  if ((size == 0 && t.shape() != Shape{0}) || size > options["threshold"].cast<int64_t>()) {
    extras.push_back("shape=" + std::string(py::repr(int_tuple(t.shape()))));
  }
  const bool dtype_implied = t.dtype() == DType::Bool || t.dtype() == DType::Int64 || t.dtype() == DType::Float64;
  if (!dtype_implied || size == 0) extras.push_back(std::string("dtype=") + dtype_name(t.dtype()));
  if (extras.empty()) return prefix + body + ")";

  const std::string head = prefix + body + ",";
  std::string tail;
  for (const std::string& e : extras) tail += (tail.empty() ? "" : ", ") + e;
  tail += ")";
  const size_t last_line = head.size() - (head.rfind('\n') == std::string::npos ? 0 : head.rfind('\n') + 1);
  const bool wrap = last_line + tail.size() + 1 > options["linewidth"].cast<size_t>();
  return head + (wrap ? "\n" + std::string(prefix.size(), ' ') : " ") + tail;
}

// A method's result, recorded for autograd as the catalog op `op` called with (self, arguments...): the
// methods that are views or copies differentiate as those ops do.
template <typename F, typename... A>
Tensor as_op(const char* op, const F& method, const Tensor& self, A&&... arguments) {
  if (!autograd::might_record()) return method(self, arguments...);
  return autograd::recorded(autograd::op_info(op), method, self, arguments...);
}

py::tuple reversed_axes(const Tensor& t) {
  py::tuple axes(t.ndim());
  for (int64_t i = 0; i < t.ndim(); ++i) axes[i] = t.ndim() - 1 - i;
  return axes;
}

// The methods that are not catalog ops; their formulas are tensorsmith.autograd.RUNTIME_FORMULAS.
const autograd::OpInfo kAsType{"astype", "runtime/src/python/tensor_class.cpp", autograd::Kind::Formulas,
                               {"x", "dtype", "copy", "device"}, {0}, {}, -1, false};
const autograd::OpInfo kCopy{"copy", "runtime/src/python/tensor_class.cpp", autograd::Kind::Formulas, {"x"}, {0}, {}, -1, false};
const autograd::OpInfo kToDevice{"to_device", "runtime/src/python/tensor_class.cpp", autograd::Kind::Formulas,
                                 {"x", "device"}, {0}, {}, -1, false};

// Iterates over axis 0, yielding views.
struct TensorIterator {
  Tensor tensor;
  int64_t next = 0;
};

}  // namespace

py::class_<Tensor> bind_tensor_class(py::module_& m) {
  py::class_<TensorIterator> iterator(m, "_TensorIterator", py::is_final());
  forbid_construction(iterator, "iter(tensor) makes one");
  iterator.def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](TensorIterator& it) {
        if (it.next == it.tensor.shape()[0]) throw py::stop_iteration();
        return it.tensor.select(0, it.next++);
      });

  py::class_<Tensor> cls(m, "Tensor", py::buffer_protocol(), py::is_final(),
                         "An n-dimensional array: a strided view over shared storage.");
  forbid_construction(cls, "use ts.asarray() or an op");
  // False only where pybind11 lays the class out otherwise (a future version): correct, but slower; a test asserts it.
  m.attr("_direct_tensor_objects") = py::bool_(install_tensor_objects(cls));

  // Metadata.
  cls.def_property_readonly("shape", [](const Tensor& t) { return int_tuple(t.shape()); })
      .def_property_readonly("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("size", &Tensor::numel, "Number of elements.")
      .def_property_readonly("itemsize", [](const Tensor& t) { return t.itemsize(); }, "Bytes per element.")
      .def_property_readonly("nbytes", [](const Tensor& t) { return t.numel() * static_cast<int64_t>(t.itemsize()); })
      .def_property_readonly(
          "strides",
          [](const Tensor& t) {
            Strides bytes;
            for (int64_t s : t.strides()) bytes.push_back(s * static_cast<int64_t>(t.itemsize()));
            return int_tuple(bytes);
          },
          "Strides in bytes, as numpy reports them.");

  // Views.
  // Views, recorded as the catalog ops they are.
  auto permuted = [](const Tensor& t, py::handle axes) { return t.permute(int_sequence_arg(axes, "axes")); };
  auto permute_args = [permuted](const Tensor& t, const py::args& axes) {
    std::vector<int64_t> order = ints_from_args(axes, "axes");
    if (!autograd::might_record()) return t.permute(order);
    return as_op("permute_dims", permuted, t, py::tuple(py::cast(order)));
  };
  auto reversed = [permuted](const Tensor& t) {
    return autograd::might_record() ? as_op("permute_dims", permuted, t, reversed_axes(t)) : t.T();
  };
  cls.def_property_readonly("T", reversed, "The tensor with all axes reversed.")
      .def_property_readonly(
          "mT", [](const Tensor& t) { return as_op("matrix_transpose", std::mem_fn(&Tensor::matrix_transpose), t); },
          "The tensor with its last two axes swapped.")
      .def("reshape",
           [](const Tensor& t, const py::args& shape) {
             std::vector<int64_t> extents = ints_from_args(shape, "shape");
             if (!autograd::might_record()) return t.reshape(extents);
             auto reshaped = [](const Tensor& x, py::handle s, py::handle) { return x.reshape(int_sequence_arg(s, "shape")); };
             return as_op("reshape", reshaped, t, py::tuple(py::cast(extents)), py::none());
           })
      .def("permute_dims", permute_args)
      .def(
          "transpose",
          [reversed, permute_args](const Tensor& t, const py::args& axes) {
            return axes.empty() ? reversed(t) : permute_args(t, axes);
          },
          "Permute the axes (reverse them when none are given), as numpy's transpose.")
      .def(
          "squeeze",
          [](const Tensor& t, py::handle axis) {
            auto squeezed = [](const Tensor& x, py::handle a) { return x.squeeze(axes_arg(a)); };
            return as_op("squeeze", squeezed, t, axis);
          },
          py::arg("axis") = py::none())
      .def(
          "expand_dims",
          [](const Tensor& t, py::handle axis) {
            auto expanded = [](const Tensor& x, py::handle a) { return x.unsqueeze(int_arg(a, "axis")); };
            return as_op("expand_dims", expanded, t, axis);
          },
          py::arg("axis"));

  // Copies.
  cls.def(
         "astype",
         [](const py::object& self, py::handle dtype, bool copy, py::handle device) -> py::object {
           const Tensor& t = self.cast<const Tensor&>();
           // copy=False with nothing to change: the tensor itself, the object included (the Array API's rule)
           if (!copy) {
             const bool same_device = device.is_none() || device_arg(device) == t.device();
             if (dtype_arg(dtype) == t.dtype() && same_device) return self;
           }
           auto cast = [](const Tensor& x, py::handle dtype, bool /*copy: a copy is made here*/, py::handle device) {
             const DType target = dtype_arg(dtype);
             const Device where = device.is_none() ? x.device() : device_arg(device);
             if (where != x.device()) return to_device(x.dtype() == target ? x : x.astype(target), where);
             return x.astype(target);
           };
           return py::cast(autograd::recorded(kAsType, cast, t, dtype, copy, device));
         },
         py::arg("dtype"), py::pos_only(), py::kw_only(), py::arg("copy") = true, py::arg("device") = py::none())
      .def(
          "copy", [](const Tensor& t) { return autograd::recorded(kCopy, std::mem_fn(&Tensor::clone), t); },
          "A contiguous copy.");

  // Devices.
  auto moved = [](const Tensor& t, py::handle device) { return to_device(t, device_arg(device)); };
  cls.def(
         "to", [moved](const Tensor& t, py::handle device) { return autograd::recorded(kToDevice, moved, t, device); },
         py::arg("device"), "The tensor on `device` ('cpu', 'cuda', 'cuda:1'): itself when it is there already, else a copy.")
      .def(
          "to_device",
          [moved](const Tensor& t, py::handle device, py::handle stream) {
            TS_CHECK(stream.is_none(), ValueError, "to_device: stream must be None (copies use the runtime's stream)");
            return autograd::recorded(kToDevice, moved, t, device);
          },
          py::arg("device"), py::pos_only(), py::kw_only(), py::arg("stream") = py::none(),
          "Array API to_device: the tensor on `device` (a copy unless it is there already).")
      .def(
          "cpu", [moved](const Tensor& t) { return autograd::recorded(kToDevice, moved, t, py::str("cpu")); },
          "The tensor in host memory: itself for a CPU tensor, else a copy.");

  // Python scalars and sequences; numpy's rules and messages.
  cls.def("item",
          [](const Tensor& t) {
            TS_CHECK(t.numel() == 1, ValueError, "can only convert a tensor of size 1 to a Python scalar");
            return only_element(t);
          })
      .def("tolist", [](const Tensor& t) { return host_numpy(t).attr("tolist")(); })
      .def("__bool__",
           [](const Tensor& t) {
             TS_CHECK(t.numel() != 0, ValueError, "The truth value of an empty tensor is ambiguous.");
             TS_CHECK(t.numel() == 1, ValueError,
                      "The truth value of a tensor with more than one element is ambiguous. Use any() or all()");
             return only_element(t).cast<bool>();
           })
      .def("__int__",
           [](const Tensor& t) {
             TS_CHECK(t.numel() == 1, TypeError, "only tensors of size 1 can be converted to Python scalars");
             // Not py::int_(...), which passes a bool through: __int__ must return an exact int.
             PyObject* value = PyNumber_Long(only_element(t).ptr());
             if (value == nullptr) throw py::error_already_set();
             return py::reinterpret_steal<py::int_>(value);
           })
      .def("__float__",
           [](const Tensor& t) {
             TS_CHECK(t.numel() == 1, TypeError, "only tensors of size 1 can be converted to Python scalars");
             return py::float_(only_element(t));
           })
      .def("__complex__",
           [](const Tensor& t) {
             TS_CHECK(t.numel() == 1, TypeError, "only tensors of size 1 can be converted to Python scalars");
             const Py_complex value = PyComplex_AsCComplex(only_element(t).ptr());
             if (value.real == -1.0 && PyErr_Occurred()) throw py::error_already_set();
             return py::reinterpret_steal<py::object>(PyComplex_FromCComplex(value));
           })
      .def("__index__", [](const Tensor& t) {
        TS_CHECK(t.ndim() == 0 && is_integer(t.dtype()), TypeError,
                 "only integer scalar tensors can be converted to a scalar index");
        return only_element(t);
      });

  cls.def("__len__",
          [](const Tensor& t) {
            TS_CHECK(t.ndim() > 0, TypeError, "len() of a 0-d tensor");
            return t.shape()[0];
          })
      .def("__iter__",
           [](const Tensor& t) {
             TS_CHECK(t.ndim() > 0, TypeError, "iteration over a 0-d tensor");
             return TensorIterator{t};
           })
      .def("__repr__", &tensor_repr);

  cls.def(
      "__array_namespace__",
      [](const Tensor&, py::handle api_version) {
        TS_CHECK(api_version.is_none() || std::string(py::str(api_version)) == "2024.12", ValueError,
                 "tensorsmith implements Array API version 2024.12, not " << std::string(py::repr(api_version)));
        return py::module_::import("tensorsmith");
      },
      py::kw_only(), py::arg("api_version") = py::none());

  // Tensors are mutable and == is elementwise: unhashable, like ndarray.
  cls.attr("__hash__") = py::none();
  fast_views(cls);
  fast_reshape(cls);
  fast_copies(m, cls);
  return cls;
}

}  // namespace ts::python
